//! MCP tool servers, through the official Rust SDK (`rmcp`). Each server configured in the
//! providers file (`mcp_servers`) is started at start-up, in the background (Glassbox listens at
//! once; a server's tools join when it has listed them), and restarted with backoff when it dies;
//! `notifications/tools/list_changed` lists its tools again; its stderr goes to our logs; its tools reach the model as `<server>__<tool>` beside the
//! built-in ones. A server that fails to start is logged and reported by `GET /api/tools`; the
//! rest works.
//!
//! A stdio server gets only [`INHERITED_ENV`] of Glassbox's environment plus its own `env`: never
//! the provider keys or anything else Glassbox was given. What `GET /api/tools` says of a failed
//! server is a fixed phrase ([`Failure::shown`]); the detail (the library's error, the command,
//! the URL without its path) goes to the log only.

mod call;
mod content;
mod stdio;

use std::{
    collections::BTreeMap,
    path::PathBuf,
    sync::{atomic::Ordering, Arc, RwLock},
    time::{Duration, Instant},
};

use rmcp::{
    handler::client::progress::ProgressDispatcher,
    model::{ClientCapabilities, ClientConfig, Implementation, ProgressNotificationParam},
    service::{NotificationContext, RunningService},
    transport::{
        streamable_http_client::StreamableHttpClientTransportConfig, StreamableHttpClientTransport,
    },
    ClientHandler, Peer, RoleClient, ServiceExt,
};
use serde::{Deserialize, Serialize};
use tokio::{
    io::AsyncBufReadExt,
    process::{Child, ChildStdin, ChildStdout},
};

pub use call::McpTool;

/// Separates the server's name from its tool's in the name the model sees.
pub const NAME_SEPARATOR: &str = "__";
/// How long a server gets to start and list its tools.
const START_TIMEOUT: Duration = Duration::from_secs(30);
/// Restart delays after a server dies or fails to start, doubling up to the last.
const FIRST_RESTART_DELAY: Duration = Duration::from_secs(1);
const MAX_RESTART_DELAY: Duration = Duration::from_secs(60);
/// A server that stayed up this long restarts after the first delay again.
const STABLE_AFTER: Duration = Duration::from_secs(60);

/// The variables of Glassbox's environment a stdio server inherits: the default set of the
/// official MCP SDKs (TypeScript, Python). Anything else it needs is named in its `env`.
#[cfg(windows)]
pub const INHERITED_ENV: &[&str] = &[
    "APPDATA",
    "HOMEDRIVE",
    "HOMEPATH",
    "LOCALAPPDATA",
    "PATH",
    "PROCESSOR_ARCHITECTURE",
    "SYSTEMDRIVE",
    "SYSTEMROOT",
    "TEMP",
    "USERNAME",
    "USERPROFILE",
    "PROGRAMFILES",
];
#[cfg(not(windows))]
pub const INHERITED_ENV: &[&str] = &["HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER"];

/// What a stdio server is read and written through.
type StdioTransport = (stdio::LineCap<ChildStdout>, ChildStdin);
/// A running service, and a stdio server's process (killed when dropped).
type Connected = (RunningService<RoleClient, Handler>, Option<Child>);

/// Why a server is not usable: a fixed phrase for users, and the detail for the log.
struct Failure {
    /// What `GET /api/tools` shows: no command, URL or library type.
    shown: &'static str,
    detail: String,
}

fn failure(shown: &'static str, detail: impl std::fmt::Display) -> Failure {
    Failure {
        shown,
        detail: detail.to_string(),
    }
}

/// One server of `mcp_servers`, in the shape other MCP clients use: a command (stdio) or a URL.
#[derive(Clone, Debug, Deserialize)]
#[serde(untagged)]
pub enum McpServerConfig {
    Stdio(StdioConfig),
    Http(HttpConfig),
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StdioConfig {
    pub command: String,
    #[serde(default)]
    pub args: Vec<String>,
    /// Added to the server's environment. A value `${NAME}` is read from Glassbox's own
    /// environment, so secrets need not be written into the file. Values are never logged.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    #[serde(default)]
    pub cwd: Option<PathBuf>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HttpConfig {
    pub url: String,
    /// Sent with every request, e.g. `{"Authorization": "Bearer ${GITHUB_TOKEN}"}`; `${NAME}`
    /// values as in `env`. Never logged.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
}

/// Whether a server is usable, as `GET /api/tools` reports it.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum ServerStatus {
    #[default]
    Starting,
    /// `pid` is the process of a stdio server.
    Running {
        tools: usize,
        pid: Option<u32>,
    },
    Failed {
        error: String,
    },
}

/// Checks a server name: letters, digits, `-` and `_`, without the separator.
pub fn check_server_name(name: &str) -> Result<(), String> {
    let valid = !name.is_empty()
        && name.len() <= 32
        && !name.contains(NAME_SEPARATOR)
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if valid {
        Ok(())
    } else {
        Err(format!(
            "MCP server name '{name}' is not allowed: use at most 32 letters, digits, '-' and '_', \
             without '__'"
        ))
    }
}

/// Receives what a server sends on its own: the progress of our calls, and that its tools changed.
#[derive(Clone)]
struct Handler {
    progress: ProgressDispatcher,
    server: std::sync::Weak<McpServer>,
}

impl ClientHandler for Handler {
    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.progress.handle_notification(params).await;
    }

    async fn on_tool_list_changed(&self, context: NotificationContext<RoleClient>) {
        if let Some(server) = self.server.upgrade() {
            server.refresh_tools(&context.peer).await;
        }
    }

    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("glassbox", env!("CARGO_PKG_VERSION")),
        )
    }
}

/// The server's state, and what it offers while it runs.
#[derive(Default)]
struct Connection {
    peer: Option<Peer<RoleClient>>,
    tools: Vec<Arc<McpTool>>,
    status: ServerStatus,
}

/// One configured server and its current connection.
pub struct McpServer {
    name: String,
    config: McpServerConfig,
    handler: Handler,
    connection: RwLock<Connection>,
    /// Its tools changed while it was still starting: list them again once it runs.
    relist: std::sync::atomic::AtomicBool,
}

impl McpServer {
    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn status(&self) -> ServerStatus {
        self.connection
            .read()
            .map(|connection| connection.status.clone())
            .unwrap_or_default()
    }

    fn peer(&self) -> Option<Peer<RoleClient>> {
        self.connection.read().ok()?.peer.clone()
    }

    fn tools(&self) -> Vec<Arc<McpTool>> {
        self.connection
            .read()
            .map(|connection| connection.tools.clone())
            .unwrap_or_default()
    }

    /// One tool by the name the model sees.
    fn tool(&self, name: &str) -> Option<Arc<McpTool>> {
        let connection = self.connection.read().ok()?;
        connection
            .tools
            .iter()
            .find(|tool| tool.full_name() == name)
            .cloned()
    }

    fn set(&self, connection: Connection) {
        if let Ok(mut slot) = self.connection.write() {
            *slot = connection;
        }
    }

    /// Starts the server, lists its tools, and publishes them. A stdio server's process comes
    /// back with the service: it is killed when dropped.
    async fn connect(self: &Arc<Self>) -> Result<Connected, Failure> {
        let (service, child) = match &self.config {
            McpServerConfig::Stdio(config) => {
                let (transport, child) = self.spawn(config)?;
                (self.handler.clone().serve(transport).await, Some(child))
            }
            McpServerConfig::Http(config) => {
                let transport = http_transport(config)?;
                (self.handler.clone().serve(transport).await, None)
            }
        };
        let pid = child.as_ref().and_then(tokio::process::Child::id);
        let service = service.map_err(|error| {
            failure(
                "it did not complete the MCP handshake",
                format!("the MCP handshake failed: {error}"),
            )
        })?;
        self.relist.store(false, Ordering::SeqCst);
        let listed = service.peer().list_all_tools().await.map_err(|error| {
            failure(
                "it did not list its tools",
                format!("listing its tools failed: {error}"),
            )
        })?;
        let tools = self.model_tools(listed);
        let count = tools.len();
        self.set(Connection {
            peer: Some(service.peer().clone()),
            tools,
            status: ServerStatus::Running { tools: count, pid },
        });
        if self.relist.swap(false, Ordering::SeqCst) {
            self.refresh_tools(service.peer()).await;
        }
        Ok((service, child))
    }

    /// The listed tools as the model sees them.
    fn model_tools(self: &Arc<Self>, listed: Vec<rmcp::model::Tool>) -> Vec<Arc<McpTool>> {
        let mut tools: Vec<Arc<McpTool>> = Vec::new();
        for tool in listed {
            let tool = Arc::new(McpTool::new(self.clone(), tool));
            // Two names made the same by the model's rules: the first keeps it.
            if tools
                .iter()
                .any(|known| known.full_name() == tool.full_name())
            {
                tracing::warn!(server = %self.name, tool = %tool.full_name(), "two MCP tools share a name; the second is left out");
                continue;
            }
            tools.push(tool);
        }
        tools
    }

    /// Lists the tools again (`notifications/tools/list_changed`) and publishes them, if the
    /// server still runs.
    async fn refresh_tools(self: &Arc<Self>, peer: &Peer<RoleClient>) {
        let running = self
            .connection
            .read()
            .is_ok_and(|connection| matches!(connection.status, ServerStatus::Running { .. }));
        if !running {
            // Still starting: `connect` lists them again when it has published its list.
            self.relist.store(true, Ordering::SeqCst);
            return;
        }
        let listed = match peer.list_all_tools().await {
            Ok(listed) => listed,
            Err(error) => {
                let error = self.loggable(&error);
                tracing::warn!(server = %self.name, %error, "listing its changed tools failed");
                return;
            }
        };
        let tools = self.model_tools(listed);
        let count = tools.len();
        if let Ok(mut connection) = self.connection.write() {
            if let ServerStatus::Running { pid, .. } = connection.status {
                connection.status = ServerStatus::Running { tools: count, pid };
                connection.tools = tools;
            }
        }
        tracing::info!(server = %self.name, tools = count, "MCP server's tools changed");
    }

    /// Spawns a stdio server with its stderr read into our logs, in the safe base environment
    /// ([`INHERITED_ENV`]) plus its `env`; its output is read through [`stdio::LineCap`]. It dies
    /// with us (Linux), and when its process handle is dropped.
    fn spawn(&self, config: &StdioConfig) -> Result<(StdioTransport, Child), Failure> {
        use std::process::Stdio;
        let mut command = tokio::process::Command::new(&config.command);
        command
            .args(&config.args)
            .kill_on_drop(true)
            .env_clear()
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for name in INHERITED_ENV {
            match std::env::var_os(name) {
                // A shell function exported as a variable (`() { ...`) is not passed on.
                Some(value) if !value.to_string_lossy().starts_with("()") => {
                    command.env(name, value);
                }
                _ => {}
            }
        }
        for (key, value) in &config.env {
            command.env(key, expand_env(value));
        }
        if let Some(cwd) = &config.cwd {
            command.current_dir(cwd);
        }
        die_with_parent(&mut command);
        let mut child = command.spawn().map_err(|error| {
            // The program only: its arguments may carry a secret.
            failure(
                "its command could not be started",
                format!("cannot start `{}`: {error}", config.command),
            )
        })?;
        let (Some(stdout), Some(stdin)) = (child.stdout.take(), child.stdin.take()) else {
            return Err(failure(
                "its command could not be started",
                "its standard input or output could not be opened",
            ));
        };
        if let Some(stderr) = child.stderr.take() {
            let server = self.name.clone();
            tokio::spawn(async move {
                let mut lines = tokio::io::BufReader::new(stderr).lines();
                while let Ok(Some(line)) = lines.next_line().await {
                    let line = crate::redact::redact_text(&line);
                    tracing::info!(target: "glassbox::mcp", server = %server, "{line}");
                }
            });
        }
        Ok(((stdio::LineCap::new(stdout), stdin), child))
    }

    /// Keeps the server running: restarts it with backoff whenever it ends or fails to start.
    async fn supervise(self: Arc<Self>) {
        let mut delay = FIRST_RESTART_DELAY;
        loop {
            let started = Instant::now();
            let attempt = tokio::time::timeout(START_TIMEOUT, self.connect()).await;
            let service = match attempt {
                Ok(Ok(connected)) => Some(connected),
                Ok(Err(failure)) => {
                    self.failed(failure);
                    None
                }
                Err(_) => {
                    self.failed(failure(
                        "it did not start in time",
                        format!("it did not start within {} s", START_TIMEOUT.as_secs()),
                    ));
                    None
                }
            };
            if let Some((service, _process)) = service {
                tracing::info!(server = %self.name, tools = self.tools().len(), "MCP server started");
                let reason = service.waiting().await;
                self.failed(failure("it stopped", format!("it stopped ({reason:?})")));
                if started.elapsed() > STABLE_AFTER {
                    delay = FIRST_RESTART_DELAY;
                }
            }
            tracing::warn!(server = %self.name, delay_s = delay.as_secs(), "restarting the MCP server");
            tokio::time::sleep(delay).await;
            delay = (delay * 2).min(MAX_RESTART_DELAY);
        }
    }

    /// An error of this server as the log may hold it: redacted, and without its URL's path and
    /// query (the library's errors name the URL, and hosted MCP URLs often carry a token there).
    pub(super) fn loggable(&self, error: &dyn std::fmt::Display) -> String {
        let error = crate::redact::redact_text(&error.to_string()).into_owned();
        match &self.config {
            McpServerConfig::Http(config) => without_url_path(&error, &config.url),
            McpServerConfig::Stdio(_) => error,
        }
    }

    /// Logs the detail (without secrets or a URL's path) and shows the fixed phrase.
    fn failed(&self, failure: Failure) {
        let error = self.loggable(&failure.detail);
        tracing::error!(server = %self.name, %error, "MCP server unavailable");
        // Its tools stay known (the model may call them: `mcp_unavailable`) until it lists
        // them again.
        if let Ok(mut connection) = self.connection.write() {
            connection.peer = None;
            connection.status = ServerStatus::Failed {
                error: failure.shown.to_owned(),
            };
        }
    }
}

/// `text` with the path and query of `url` (hosted MCP URLs often carry a token there) replaced
/// by `/…`: the log still says which host failed.
fn without_url_path(text: &str, url: &str) -> String {
    let after_scheme = url.find("://").map_or(0, |at| at + 3);
    match url[after_scheme..].find(['/', '?']) {
        Some(at) if url.len() > after_scheme + at + 1 => {
            text.replace(&url[after_scheme + at..], "/…")
        }
        _ => text.to_owned(),
    }
}

/// A Streamable HTTP connection to `config.url`, with its headers.
fn http_transport(
    config: &HttpConfig,
) -> Result<StreamableHttpClientTransport<reqwest_mcp::Client>, Failure> {
    let invalid = |detail: String| failure("its connection settings are not valid", detail);
    use reqwest_mcp::header::{HeaderName, HeaderValue};
    let mut headers = std::collections::HashMap::new();
    for (name, value) in &config.headers {
        let name = HeaderName::try_from(name.as_str())
            .map_err(|_| invalid(format!("'{name}' is not a valid header name")))?;
        let value = HeaderValue::try_from(expand_env(value))
            .map_err(|_| invalid(format!("the value of header '{name}' is not valid")))?;
        headers.insert(name, value);
    }
    // The process-wide TLS provider: ring, as for the model providers' client.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest_mcp::Client::builder()
        .connect_timeout(Duration::from_secs(10))
        .build()
        .map_err(|error| invalid(format!("cannot build the HTTP client: {error}")))?;
    let transport_config =
        StreamableHttpClientTransportConfig::with_uri(config.url.as_str()).custom_headers(headers);
    Ok(StreamableHttpClientTransport::with_client(
        client,
        transport_config,
    ))
}

/// Every `${NAME}` (letters, digits, `_`) is replaced by that variable of our environment (empty
/// when unset), anywhere in the value: `Bearer ${TOKEN}`. Anything else is taken as written.
/// Written here because the crates that expand variables also expand `$NAME` and `~`, which a
/// header or an argument may contain as such.
pub fn expand_env(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    let mut rest = value;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let name_len = after
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(after.len());
        if name_len > 0 && after[name_len..].starts_with('}') {
            out.push_str(&std::env::var(&after[..name_len]).unwrap_or_default());
            rest = &after[name_len + 1..];
        } else {
            out.push_str("${");
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

#[cfg(target_os = "linux")]
fn die_with_parent(command: &mut tokio::process::Command) {
    // SAFETY: prctl is async-signal-safe; nothing else runs between fork and exec.
    unsafe {
        command.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
            Ok(())
        });
    }
}

#[cfg(not(target_os = "linux"))]
fn die_with_parent(_command: &mut tokio::process::Command) {}

/// Every configured MCP server.
#[derive(Default)]
pub struct McpHub {
    servers: Vec<Arc<McpServer>>,
}

impl McpHub {
    /// Starts every server in the background, without waiting: a server that is slow, or never
    /// answers `initialize`, cannot hold Glassbox's start (its state is `starting` until its first
    /// attempt ends, at most [`START_TIMEOUT`]); its tools join when it has listed them. Failures
    /// are logged, not fatal.
    pub fn start(configs: BTreeMap<String, McpServerConfig>) -> Self {
        let mut servers = Vec::new();
        for (name, config) in configs {
            let server = Arc::new_cyclic(|server| McpServer {
                handler: Handler {
                    progress: ProgressDispatcher::new(),
                    server: server.clone(),
                },
                name,
                config,
                connection: RwLock::new(Connection::default()),
                relist: Default::default(),
            });
            tokio::spawn(server.clone().supervise());
            servers.push(server);
        }
        McpHub { servers }
    }

    pub fn servers(&self) -> &[Arc<McpServer>] {
        &self.servers
    }

    /// A tool by the name the model sees (`<server>__<tool>`).
    pub fn tool(&self, name: &str) -> Option<Arc<McpTool>> {
        let (server, _) = name.split_once(NAME_SEPARATOR)?;
        let server = self.servers.iter().find(|s| s.name == server)?;
        server.tool(name)
    }

    /// Every tool of every server, as it last listed them: a server that is down (restarting)
    /// keeps its tools, whose calls end with `mcp_unavailable`.
    pub fn tools(&self) -> Vec<Arc<McpTool>> {
        self.servers
            .iter()
            .flat_map(|server| server.tools())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::expand_env;

    #[test]
    fn variables_are_expanded_anywhere_in_a_value() {
        std::env::set_var("GLASSBOX_EXPAND_TEST", "s3cret");
        for (written, expanded) in [
            ("${GLASSBOX_EXPAND_TEST}", "s3cret"),
            ("Bearer ${GLASSBOX_EXPAND_TEST}", "Bearer s3cret"),
            (
                "${GLASSBOX_EXPAND_TEST}-${GLASSBOX_EXPAND_TEST}",
                "s3cret-s3cret",
            ),
            ("${GLASSBOX_EXPAND_UNSET_VARIABLE}x", "x"),
            ("$HOME ~ ${ not closed", "$HOME ~ ${ not closed"),
            ("${with space} ${}", "${with space} ${}"),
        ] {
            assert_eq!(expand_env(written), expanded, "{written}");
        }
    }
}
