//! A real PostgreSQL for the integration tests, when `GLASSBOX_TEST_STORE=postgres`: one server
//! per test binary, from the machine's PostgreSQL binaries (Debian's `postgresql` package, which
//! `scripts/test.sh` installs when missing), in a temporary data directory, on a free port, as
//! an unprivileged user when the tests run as root (PostgreSQL refuses root). Each test directory
//! gets a database of its own. A watcher removes the server and its files when the test binary
//! exits, however it exits.

use std::{
    collections::HashMap,
    path::{Path, PathBuf},
    process::Command,
    sync::{Mutex, OnceLock},
    time::Duration,
};

/// Whether this test run is against PostgreSQL.
pub fn enabled() -> bool {
    std::env::var("GLASSBOX_TEST_STORE").is_ok_and(|store| store == "postgres")
}

struct Cluster {
    port: u16,
    /// Database URL per test directory.
    databases: Mutex<HashMap<PathBuf, String>>,
}

static CLUSTER: OnceLock<Cluster> = OnceLock::new();

/// The URL of `dir`'s own database, created on first use.
pub fn database_url(dir: &Path) -> String {
    let cluster = CLUSTER.get_or_init(start);
    let mut databases = cluster.databases.lock().expect("databases");
    if let Some(url) = databases.get(dir) {
        return url.clone();
    }
    let name = format!("glassbox_{}", databases.len() + 1);
    let admin = cluster.url("postgres");
    let statement = format!("CREATE DATABASE {name}");
    // A thread of its own: this is called from inside the tests' runtime.
    std::thread::spawn(move || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime")
            .block_on(async move {
                use sqlx::{Connection, Executor};
                // Retried: a server that has just opened its port may still be starting up.
                let mut attempts = 0;
                let mut connection = loop {
                    match sqlx::PgConnection::connect(&admin).await {
                        Ok(connection) => break connection,
                        Err(error) if attempts > 100 => panic!("the test PostgreSQL: {error}"),
                        Err(_) => {
                            attempts += 1;
                            tokio::time::sleep(Duration::from_millis(100)).await;
                        }
                    }
                };
                connection
                    .execute(statement.as_str())
                    .await
                    .expect("create a test database");
            })
    })
    .join()
    .expect("create a test database");
    let url = cluster.url(&name);
    databases.insert(dir.to_owned(), url.clone());
    url
}

impl Cluster {
    fn url(&self, database: &str) -> String {
        format!("postgres://glassbox@127.0.0.1:{}/{database}", self.port)
    }
}

/// The directory of `initdb` and `postgres`: `GLASSBOX_PG_BIN`, else the newest of Debian's.
fn bin_dir() -> PathBuf {
    if let Ok(dir) = std::env::var("GLASSBOX_PG_BIN") {
        return PathBuf::from(dir);
    }
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .expect("PostgreSQL is not installed (/usr/lib/postgresql); scripts/test.sh installs it")
        .filter_map(|entry| {
            let entry = entry.ok()?;
            let version = entry.file_name().to_str()?.parse().ok()?;
            Some((version, entry.path().join("bin")))
        })
        .collect();
    versions.sort();
    versions.pop().expect("a PostgreSQL version").1
}

/// `sh -c script` as the unprivileged `postgres` user when we are root, else as ourselves.
fn as_server_user(script: &str) -> Command {
    let root = Command::new("id")
        .arg("-u")
        .output()
        .map(|out| String::from_utf8_lossy(&out.stdout).trim() == "0")
        .unwrap_or(false);
    let mut command = if root {
        let mut command = Command::new("runuser");
        command.args(["-u", "postgres", "--", "sh", "-c", script]);
        command
    } else {
        let mut command = Command::new("sh");
        command.args(["-c", script]);
        command
    };
    command.current_dir("/tmp");
    command
}

fn start() -> Cluster {
    let bin = bin_dir();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|address| address.port())
        .expect("free port");
    let made = as_server_user("mktemp -d /tmp/glassbox-pg-XXXXXX")
        .output()
        .expect("mktemp");
    let dir = String::from_utf8_lossy(&made.stdout).trim().to_owned();
    assert!(made.status.success() && !dir.is_empty(), "mktemp failed");
    let bin = bin.display();
    let init = as_server_user(&format!(
        "{bin}/initdb -D {dir}/data -U glassbox --auth=trust -E UTF8 --no-sync >{dir}/initdb.log 2>&1"
    ))
    .status()
    .expect("initdb");
    assert!(init.success(), "initdb failed: see {dir}/initdb.log");
    // The watcher: while this test binary lives, the server runs; then it stops and is removed.
    let parent = std::process::id();
    as_server_user(&format!(
        "{bin}/postgres -D {dir}/data -p {port} -k {dir} -c listen_addresses=127.0.0.1 \
           -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=300 \
           >{dir}/server.log 2>&1 & pg=$!; \
         while [ -d /proc/{parent} ] && kill -0 $pg 2>/dev/null; do sleep 0.5; done; \
         kill -INT $pg 2>/dev/null; wait $pg; rm -rf {dir}"
    ))
    .spawn()
    .map(|mut watcher| std::thread::spawn(move || watcher.wait()))
    .expect("start PostgreSQL");
    for _ in 0..200 {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return Cluster {
                port,
                databases: Mutex::new(HashMap::new()),
            };
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("PostgreSQL did not start: see {dir}/server.log");
}
