//! Command-line options. Every option can also come from the environment as `GLASSBOX_<NAME>`.

use std::{net::SocketAddr, path::PathBuf, time::Duration};

use clap::Parser;

#[derive(Clone, Debug, Parser)]
#[command(
    name = "glassbox",
    version,
    about = "Watch an AI agent work: every reasoning step and tool call, live."
)]
pub struct Config {
    /// Address to listen on.
    #[arg(long, env = "GLASSBOX_ADDR", default_value = "127.0.0.1:3000")]
    pub addr: SocketAddr,

    /// Directory for Glassbox's own files (the default SQLite database); created when missing.
    #[arg(long, env = "GLASSBOX_DATA_DIR", default_value = "data")]
    pub data_dir: PathBuf,

    /// Database URL. Default: a SQLite file `glassbox.db` in the data directory.
    #[arg(long, env = "GLASSBOX_DATABASE_URL")]
    pub database_url: Option<String>,

    /// The built site (the `pkg/` folder and static assets). Default: `LEPTOS_SITE_ROOT`, else
    /// `target/site` under the current directory, else beside the binary's `target/` folder.
    #[arg(long, env = "GLASSBOX_SITE_ROOT")]
    pub site_root: Option<PathBuf>,

    /// The folder the built-in tools may read; paths outside it are refused.
    #[arg(long, env = "GLASSBOX_WORKSPACE", default_value = ".")]
    pub workspace: PathBuf,

    /// Folder of scenario files; a run whose model is `scenario:<name>` plays `<name>.json`.
    #[arg(long, env = "GLASSBOX_SCENARIOS_DIR")]
    pub scenarios_dir: Option<PathBuf>,

    /// JSON file of model providers (see docs/providers.md). Without it, only the demo agent (and
    /// scenarios) are available.
    #[arg(long, env = "GLASSBOX_PROVIDERS_FILE")]
    pub providers_file: Option<PathBuf>,

    /// Adds tools that exist only for tests and benchmarks (`sleep`, `fail`).
    #[arg(long, env = "GLASSBOX_ENABLE_TEST_TOOLS")]
    pub enable_test_tools: bool,

    /// How long one tool call may run before it ends with a timeout error.
    #[arg(long, env = "GLASSBOX_TOOL_TIMEOUT_SECS", default_value_t = 120)]
    pub tool_timeout_secs: u64,

    /// How long a whole run may take before it is cancelled with `cancelled_by: timeout`, not
    /// counting time spent waiting for a person to approve a tool call.
    #[arg(long, env = "GLASSBOX_RUN_TIMEOUT_SECS", default_value_t = 1800)]
    pub run_timeout_secs: u64,

    /// Runs going at once; a start beyond it answers 429 with `Retry-After`.
    #[arg(long, env = "GLASSBOX_MAX_RUNS", default_value_t = 4_000)]
    pub max_runs: usize,

    /// Memory for the event logs of all runs held in memory, in MiB. A start answers 429 while it
    /// is used up; a run that needs more ends with `memory_exhausted`.
    #[arg(long, env = "GLASSBOX_RUN_MEMORY_MIB", default_value_t = 1024)]
    pub run_memory_mib: usize,

    /// Connections open at once; past it the server stops accepting until one closes. Lowered
    /// to what the open-files limit allows.
    #[arg(long, env = "GLASSBOX_MAX_CONNECTIONS", default_value_t = 10_000)]
    pub max_connections: usize,

    /// A connection that does not send a whole request head within this many seconds (idle
    /// keep-alive connections included) is closed.
    #[arg(long, env = "GLASSBOX_HEADER_READ_TIMEOUT_SECS", default_value_t = 10,
          value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub header_read_timeout_secs: u64,

    /// A request whose body has not arrived whole within this many seconds of its head is
    /// answered 408 and closed (a body sent a byte at a time holds a connection otherwise).
    #[arg(long, env = "GLASSBOX_BODY_READ_TIMEOUT_SECS", default_value_t = 30,
          value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub body_read_timeout_secs: u64,

    /// This instance's name among several on one PostgreSQL database; it must stay the same
    /// across restarts and differ between instances. Default: `<host name>:<port>`.
    #[arg(long, env = "GLASSBOX_INSTANCE_ID")]
    pub instance_id: Option<String>,

    /// On SIGTERM or Ctrl-C: seconds for runs to end and store, then as many for open connections
    /// to finish; then the server exits whatever clients hold open.
    #[arg(long, env = "GLASSBOX_SHUTDOWN_DRAIN_SECS", default_value_t = 3)]
    pub shutdown_drain_secs: u64,

    /// File and folder names the built-in tools never read, list or search, comma-separated
    /// globs (`*`, `?`); replaces the default list (environment files, `.git`, keys).
    #[arg(long, env = "GLASSBOX_DENY_FILES", value_delimiter = ',', default_value = crate::tools::DEFAULT_DENY_FILES)]
    pub deny_files: Vec<String>,

    /// The URL people reach this server by (behind a proxy, say): its host name is served
    /// besides the loopback names (DNS rebinding protection answers other names 421).
    #[arg(long, env = "GLASSBOX_PUBLIC_URL")]
    pub public_url: Option<String>,

    /// More host names to serve, comma-separated (the loopback names, the listening IP and the
    /// public URL's host always are).
    #[arg(long, env = "GLASSBOX_ALLOWED_HOSTS", value_delimiter = ',')]
    pub allowed_hosts: Vec<String>,

    /// The model a new conversation uses when the request names none.
    #[arg(long, env = "GLASSBOX_DEFAULT_MODEL", default_value = "demo")]
    pub default_model: String,

    /// Who may use the server: `none` (one local user; only while listening on loopback),
    /// `password` (accounts made with `glassbox users add NAME`, signed in with a session cookie)
    /// or `proxy` (the user a trusted authenticating proxy names in a header).
    #[arg(long, env = "GLASSBOX_AUTH", value_enum, default_value = "none")]
    pub auth: AuthMode,

    /// Allows `--auth none` on an address other than loopback: anyone who reaches the port can
    /// read every conversation and run the agent.
    #[arg(long, env = "GLASSBOX_INSECURE_NO_AUTH")]
    pub insecure_no_auth: bool,

    /// Days a sign-in lasts (`--auth password`).
    #[arg(long, env = "GLASSBOX_SESSION_DAYS", default_value_t = 30,
          value_parser = clap::value_parser!(u64).range(1..=3650))]
    pub session_days: u64,

    /// The header an authenticating proxy names the user in (`--auth proxy`).
    #[arg(
        long,
        env = "GLASSBOX_PROXY_USER_HEADER",
        default_value = "X-Forwarded-User"
    )]
    pub proxy_user_header: String,

    /// Addresses the proxy connects from, comma-separated; the header is ignored from any other.
    #[arg(
        long,
        env = "GLASSBOX_TRUSTED_PROXIES",
        value_delimiter = ',',
        default_value = "127.0.0.1,::1"
    )]
    pub trusted_proxies: Vec<std::net::IpAddr>,

    /// Addresses of reverse proxies whose `X-Forwarded-For` names the client, comma-separated
    /// (none by default: a client cannot choose the address it is counted by). Sign-in throttling
    /// counts the nearest address in that header that is not one of these.
    #[arg(long, env = "GLASSBOX_REAL_IP_FROM", value_delimiter = ',')]
    pub real_ip_from: Vec<std::net::IpAddr>,

    /// Runs one signed-in user may have going at once (0: no limit). Not applied to the single
    /// user of `--auth none`, whom `--max-runs` bounds.
    #[arg(long, env = "GLASSBOX_USER_MAX_RUNS", default_value_t = 4)]
    pub user_max_runs: usize,

    /// Runs one signed-in user may start per minute (0: no limit).
    #[arg(long, env = "GLASSBOX_USER_RUNS_PER_MINUTE", default_value_t = 30)]
    pub user_runs_per_minute: usize,

    /// Exports every finished run as OpenTelemetry GenAI spans over OTLP/HTTP (protobuf) to this
    /// base URL, `/v1/traces` appended (see docs/observability.md). Without it the standard
    /// `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (used as given) or `OTEL_EXPORTER_OTLP_ENDPOINT` (base)
    /// turn the export on.
    #[arg(long, env = "GLASSBOX_OTLP_ENDPOINT")]
    pub otlp_endpoint: Option<String>,

    /// Puts content in the exported spans: tool arguments and results, the model turns' input and
    /// output messages, the answer (always after redaction). Off: names, times, ids, counts only.
    #[arg(long, env = "GLASSBOX_OTLP_CONTENT")]
    pub otlp_content: bool,

    #[command(subcommand)]
    pub command: Option<Command>,
}

/// Who may use the server (`--auth`); the `auth` module serves each mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum AuthMode {
    None,
    Password,
    Proxy,
}

/// Administration, run instead of the server.
#[derive(Clone, Debug, clap::Subcommand)]
pub enum Command {
    /// Local accounts for `--auth password`.
    #[command(subcommand)]
    Users(UsersCommand),
}

#[derive(Clone, Debug, clap::Subcommand)]
pub enum UsersCommand {
    /// Adds a user; the password is read from standard input (one line).
    Add { name: String },
}

impl Config {
    /// Where finished runs go as OTLP spans, if anywhere: `--otlp-endpoint` (a base URL), else the
    /// standard variables, the traces one as given, the general one as a base.
    pub fn otlp_traces_endpoint(&self) -> Option<String> {
        let from_env = |name: &str| std::env::var(name).ok().filter(|value| !value.is_empty());
        let traces_of = |base: &str| format!("{}/v1/traces", base.trim_end_matches('/'));
        match &self.otlp_endpoint {
            Some(base) if !base.is_empty() => Some(traces_of(base)),
            _ => from_env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
                .or_else(|| from_env("OTEL_EXPORTER_OTLP_ENDPOINT").map(|base| traces_of(&base))),
        }
    }

    pub fn tool_timeout(&self) -> Duration {
        Duration::from_secs(self.tool_timeout_secs.max(1))
    }

    pub fn run_timeout(&self) -> Duration {
        Duration::from_secs(self.run_timeout_secs.max(1))
    }

    pub fn run_limits(&self) -> crate::runs::RunLimits {
        crate::runs::RunLimits {
            max_running: self.max_runs.max(1),
            memory_budget: self.run_memory_mib.max(1).saturating_mul(1024 * 1024),
            per_user: self.user_limits(),
        }
    }

    /// Refuses `--auth none` on an address other than loopback, unless told it is on purpose.
    pub fn check_auth(&self) -> Result<(), String> {
        let open = self.auth == AuthMode::None;
        if open && !self.addr.ip().is_loopback() && !self.insecure_no_auth {
            return Err(format!(
                "refusing to serve {} without authentication: use --auth password or --auth proxy, \
                 or --insecure-no-auth if anyone who reaches this address may use it",
                self.addr
            ));
        }
        Ok(())
    }

    pub fn user_limits(&self) -> crate::runs::UserLimits {
        crate::runs::UserLimits {
            max_running: self.user_max_runs,
            per_minute: self.user_runs_per_minute,
        }
    }

    pub fn shutdown_drain(&self) -> Duration {
        Duration::from_secs(self.shutdown_drain_secs.max(1))
    }

    pub fn instance_id(&self) -> String {
        if let Some(id) = &self.instance_id {
            return id.clone();
        }
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
            .ok()
            .map(|name| name.trim().to_owned())
            .filter(|name| !name.is_empty())
            .unwrap_or_else(|| "localhost".to_owned());
        format!("{host}:{}", self.addr.port())
    }

    pub fn database_url(&self) -> String {
        match &self.database_url {
            Some(url) => url.clone(),
            None => format!("sqlite://{}", self.data_dir.join("glassbox.db").display()),
        }
    }

    /// Where the built site is; the first candidate that holds the hydration bundle wins.
    pub fn site_root_candidates(&self) -> Vec<PathBuf> {
        if let Some(root) = &self.site_root {
            return vec![root.clone()];
        }
        if let Ok(root) = std::env::var("LEPTOS_SITE_ROOT") {
            return vec![PathBuf::from(root)];
        }
        let mut candidates = vec![PathBuf::from("target/site")];
        // target/{debug,release}/glassbox -> target/site
        if let Some(target_dir) = std::env::current_exe()
            .ok()
            .and_then(|exe| Some(exe.parent()?.parent()?.to_path_buf()))
        {
            candidates.push(target_dir.join("site"));
        }
        candidates
    }
}
