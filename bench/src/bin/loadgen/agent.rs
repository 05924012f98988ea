//! An AG-UI agent for the benchmarks, in its own process (`loadgen ag-ui-agent`): every POST gets
//! a run that streams clock-stamped `TEXT_MESSAGE_CONTENT` deltas at a set rate for an hour, the
//! same stamps `clock_text` scenarios carry, so `streams --agent` measures the agent's write to the
//! client's read through Glassbox's AG-UI mapping, beside the same load from a scenario.

use std::{
    io::Write,
    path::Path,
    process::{Child, Command, Stdio},
    time::Duration,
};

use axum::{body::Body, http::header, response::Response, routing::post, Router};
use futures::StreamExt;

use crate::client::unix_micros;

/// Serves the agent on 127.0.0.1:`port` (one thread) until killed.
pub fn serve(port: u16, rate: u32) -> Result<(), String> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|error| error.to_string())?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
            .await
            .map_err(|error| format!("bind 127.0.0.1:{port}: {error}"))?;
        println!("listening on 127.0.0.1:{port}");
        let _ = std::io::stdout().flush();
        let app = Router::new().route("/", post(move || async move { run(rate) }));
        axum::serve(listener, app)
            .await
            .map_err(|error| error.to_string())
    })
}

/// One run: started, one text message, then a stamped delta every 1/rate s.
fn run(rate: u32) -> Response {
    let head = concat!(
        "data: {\"type\":\"RUN_STARTED\",\"threadId\":\"t\",\"runId\":\"r\"}\n\n",
        "data: {\"type\":\"TEXT_MESSAGE_START\",\"messageId\":\"m\",\"role\":\"assistant\"}\n\n"
    );
    let interval = Duration::from_micros(1_000_000 / u64::from(rate.max(1)));
    let ticks = tokio_stream::wrappers::IntervalStream::new(tokio::time::interval(interval));
    let deltas = ticks.map(|_| {
        Ok::<_, std::convert::Infallible>(format!(
            "data: {{\"type\":\"TEXT_MESSAGE_CONTENT\",\"messageId\":\"m\",\"delta\":\"{} \"}}\n\n",
            unix_micros()
        ))
    });
    let body = futures::stream::once(async move { Ok(head.to_owned()) }).chain(deltas);
    Response::builder()
        .header(header::CONTENT_TYPE, "text/event-stream")
        .body(Body::from_stream(body))
        .unwrap_or_default()
}

/// The agent process, killed when dropped.
pub struct AgentProcess {
    child: Child,
    pub url: String,
}

impl Drop for AgentProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl AgentProcess {
    /// Starts `loadgen ag-ui-agent` on a free port and waits until it listens.
    pub fn start(rate: u32) -> Result<Self, String> {
        let port = crate::server::free_port()?;
        let exe = std::env::current_exe().map_err(|error| error.to_string())?;
        let child = Command::new(exe)
            .args([
                "ag-ui-agent",
                "--port",
                &port.to_string(),
                "--rate",
                &rate.to_string(),
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|error| format!("start the AG-UI agent: {error}"))?;
        for _ in 0..200 {
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return Ok(AgentProcess {
                    child,
                    url: format!("http://127.0.0.1:{port}/"),
                });
            }
            std::thread::sleep(Duration::from_millis(25));
        }
        Err("the AG-UI agent did not start".into())
    }

    /// A providers file in `dir` that names this agent `load` (the model `agent/load`).
    pub fn providers_file(&self, dir: &Path) -> Result<std::path::PathBuf, String> {
        let path = dir.join("providers.json");
        let file = serde_json::json!({"agents": [{"name": "load", "url": self.url}]});
        std::fs::write(&path, file.to_string()).map_err(|error| error.to_string())?;
        Ok(path)
    }
}
