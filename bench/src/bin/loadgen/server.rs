//! The real `glassbox` binary in its own process on loopback, and what /proc says it costs.

use std::{
    net::TcpListener,
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use serde_json::Value;

use crate::Env;

pub struct ServerProcess {
    pub base: String,
    pub dir: PathBuf,
    binary: PathBuf,
    site_root: PathBuf,
    port: u16,
    extra: Vec<String>,
    child: Child,
    /// The data, scenarios and workspace folders; removed with the server.
    _temporary: tempfile::TempDir,
}

/// CPU seconds (user + system) and resident memory of a process, read from /proc.
#[derive(Clone, Copy, Debug, Default)]
pub struct Usage {
    pub cpu_seconds: f64,
    pub rss_bytes: u64,
}

/// Bytes a server wrote so far (`/proc/<pid>/io`): `wchar` is what it passed to `write` and
/// `pwrite` (any file or socket), `write_bytes` what it sent towards the disk, and `wal` the
/// `wchar` of Glassbox's writer thread alone (`glassbox-writer`), which writes nothing but the
/// SQLite WAL (the database file is written by the WAL checkpoint's connection). Zero for a
/// server without such a thread (the Node.js reference).
#[derive(Clone, Copy, Debug, Default)]
pub struct Written {
    pub wchar: u64,
    pub write_bytes: u64,
    pub wal: u64,
}

impl Written {
    /// What was written between `earlier` and `self`.
    pub fn since(self, earlier: Written) -> Written {
        Written {
            wchar: self.wchar.saturating_sub(earlier.wchar),
            write_bytes: self.write_bytes.saturating_sub(earlier.write_bytes),
            wal: self.wal.saturating_sub(earlier.wal),
        }
    }
}

impl ServerProcess {
    /// Starts the binary in a fresh temporary folder (data, scenarios, workspace) with the given
    /// scenarios.
    pub fn start(env: &Env, scenarios: &[(&str, Value)]) -> Result<Self, String> {
        Self::start_with(env, scenarios, &[])
    }

    /// [`ServerProcess::start`] with more options (another database, an instance id).
    pub fn start_with(
        env: &Env,
        scenarios: &[(&str, Value)],
        extra: &[&str],
    ) -> Result<Self, String> {
        let temporary = tempfile::tempdir().map_err(|error| error.to_string())?;
        let dir = temporary.path();
        for sub in ["data", "scenarios", "workspace"] {
            std::fs::create_dir_all(dir.join(sub)).map_err(|error| error.to_string())?;
        }
        for (name, scenario) in scenarios {
            std::fs::write(
                dir.join("scenarios").join(format!("{name}.json")),
                scenario.to_string(),
            )
            .map_err(|error| error.to_string())?;
        }
        let port = free_port()?;
        let extra: Vec<String> = env
            .server_args
            .iter()
            .cloned()
            .chain(extra.iter().map(|arg| arg.to_string()))
            .collect();
        let child = spawn(&env.binary, &env.site_root, dir, port, &extra)?;
        let mut server = ServerProcess {
            base: format!("http://127.0.0.1:{port}"),
            dir: dir.to_owned(),
            binary: env.binary.clone(),
            site_root: env.site_root.clone(),
            port,
            extra,
            child,
            _temporary: temporary,
        };
        server.wait_healthy()?;
        Ok(server)
    }

    /// Starts the same server again on the same data folder (after a kill).
    pub fn restart(&mut self) -> Result<(), String> {
        self.child = spawn(
            &self.binary,
            &self.site_root,
            &self.dir,
            self.port,
            &self.extra,
        )?;
        self.wait_healthy()
    }

    fn wait_healthy(&mut self) -> Result<(), String> {
        let deadline = Instant::now() + Duration::from_secs(30);
        let address = format!("127.0.0.1:{}", self.port);
        while Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(format!(
                    "glassbox exited ({status}); its log is {}",
                    self.dir.join("server.log").display()
                ));
            }
            if std::net::TcpStream::connect(&address).is_ok() {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Err("glassbox did not listen within 30 s".into())
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The server's usage with its child processes' (the Node reference runs two workers).
    pub fn usage(&self) -> Usage {
        family(self.pid())
            .iter()
            .map(|pid| process_usage(&format!("/proc/{pid}")))
            .fold(Usage::default(), |sum, one| Usage {
                cpu_seconds: sum.cpu_seconds + one.cpu_seconds,
                rss_bytes: sum.rss_bytes + one.rss_bytes,
            })
    }

    /// What the server (with its child processes) has written so far.
    pub fn written(&self) -> Written {
        let mut written = Written::default();
        for pid in family(self.pid()) {
            let (wchar, write_bytes) = io_counters(&format!("/proc/{pid}/io"));
            written.wchar += wchar;
            written.write_bytes += write_bytes;
            let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
                continue;
            };
            for task in tasks.flatten() {
                let comm = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
                if comm.trim_end() == "glassbox-writer" {
                    written.wal += io_counters(&task.path().join("io").to_string_lossy()).0;
                }
            }
        }
        written
    }

    /// SIGKILL: nothing is flushed, as in a crash or an OOM kill.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// SIGTERM, then waits for the graceful shutdown.
    pub fn terminate(&mut self) {
        // SAFETY: sending a signal to our own child process by its pid.
        unsafe {
            libc::kill(self.child.id() as i32, libc::SIGTERM);
        }
        let _ = self.child.wait();
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        self.kill();
    }
}

fn spawn(
    binary: &Path,
    site_root: &Path,
    dir: &Path,
    port: u16,
    extra: &[String],
) -> Result<Child, String> {
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join("server.log"))
        .map_err(|error| error.to_string())?;
    let log_err = log.try_clone().map_err(|error| error.to_string())?;
    Command::new(binary)
        .arg("--addr")
        .arg(format!("127.0.0.1:{port}"))
        .arg("--data-dir")
        .arg(dir.join("data"))
        .arg("--scenarios-dir")
        .arg(dir.join("scenarios"))
        .arg("--workspace")
        .arg(dir.join("workspace"))
        .arg("--site-root")
        .arg(site_root)
        .arg("--enable-test-tools")
        .args(extra)
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(log_err)
        .spawn()
        .map_err(|error| format!("cannot start {}: {error}", binary.display()))
}

pub fn free_port() -> Result<u16, String> {
    let probe = TcpListener::bind("127.0.0.1:0").map_err(|error| error.to_string())?;
    probe
        .local_addr()
        .map(|address| address.port())
        .map_err(|error| error.to_string())
}

/// `pid` and its descendants, from `/proc/<pid>/task/<tid>/children`.
fn family(pid: u32) -> Vec<u32> {
    let mut all = vec![pid];
    let mut next = 0;
    while let Some(&parent) = all.get(next) {
        next += 1;
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{parent}/task")) else {
            continue;
        };
        for task in tasks.flatten() {
            let children =
                std::fs::read_to_string(task.path().join("children")).unwrap_or_default();
            all.extend(
                children
                    .split_whitespace()
                    .filter_map(|child| child.parse::<u32>().ok()),
            );
        }
    }
    all
}

/// Usage of `/proc/<pid>` (or `/proc/self`).
pub fn process_usage(proc_dir: &str) -> Usage {
    let ticks = clock_ticks();
    let cpu_seconds = std::fs::read_to_string(format!("{proc_dir}/stat"))
        .ok()
        .and_then(|stat| {
            // Fields after the command name, which ends at the last ')': utime is the 12th, stime the 13th.
            let rest = &stat[stat.rfind(')')? + 2..];
            let fields: Vec<&str> = rest.split_whitespace().collect();
            let user: f64 = fields.get(11)?.parse().ok()?;
            let system: f64 = fields.get(12)?.parse().ok()?;
            Some((user + system) / ticks)
        })
        .unwrap_or(0.0);
    let rss_bytes = std::fs::read_to_string(format!("{proc_dir}/status"))
        .ok()
        .and_then(|status| {
            let line = status.lines().find(|line| line.starts_with("VmRSS:"))?;
            let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
            Some(kib * 1024)
        })
        .unwrap_or(0);
    Usage {
        cpu_seconds,
        rss_bytes,
    }
}

/// `wchar` and `write_bytes` of a `/proc/.../io` file (zeros when it cannot be read).
fn io_counters(path: &str) -> (u64, u64) {
    let io = std::fs::read_to_string(path).unwrap_or_default();
    let field = |name: &str| {
        io.lines()
            .find_map(|line| line.strip_prefix(name))
            .and_then(|value| value.trim().parse().ok())
            .unwrap_or(0)
    };
    (field("wchar:"), field("write_bytes:"))
}

fn clock_ticks() -> f64 {
    // SAFETY: sysconf only reads a constant of the system.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if ticks > 0 {
        ticks as f64
    } else {
        100.0
    }
}
