//! A real server on a real socket, and a real SSE client, for integration tests. Every test runs
//! against SQLite, or against a real PostgreSQL with `GLASSBOX_TEST_STORE=postgres` (see
//! [`postgres`]); `scripts/test.sh` runs the suite both ways.
#![allow(dead_code)]

pub mod migrations;
pub mod postgres;

use std::{io::Write as _, path::PathBuf, process::Stdio, sync::Arc, time::Duration};

use app::protocol::{Event, EventKind};
use futures::StreamExt;
use glassbox::{config::Config, runs::Engine, store::Store};
use serde_json::{json, Value};
use tempfile::TempDir;

pub struct TestServer {
    pub base: String,
    pub client: reqwest::Client,
    pub dir: Arc<TempDir>,
    pub engine: Arc<Engine>,
    pub store: Store,
    task: tokio::task::JoinHandle<()>,
}

/// Folders under one temporary directory: `data/`, `scenarios/`, `workspace/`.
pub fn test_dir() -> Arc<TempDir> {
    let dir = tempfile::tempdir().expect("temporary directory");
    for sub in ["data", "scenarios", "workspace", "site/pkg"] {
        std::fs::create_dir_all(dir.path().join(sub)).expect("create test folders");
    }
    std::fs::write(dir.path().join("site/pkg/glassbox.js"), "// test bundle")
        .expect("write fake bundle");
    std::fs::write(
        dir.path().join("workspace/notes.md"),
        "# Notes\nTODO: write the docs\nnothing here\n",
    )
    .expect("write workspace file");
    Arc::new(dir)
}

pub fn config_for(dir: &TempDir) -> Config {
    use clap::Parser;
    let mut config = Config::parse_from(["glassbox"]);
    config.addr = "127.0.0.1:0".parse().expect("address");
    config.data_dir = dir.path().join("data");
    config.workspace = dir.path().join("workspace");
    config.scenarios_dir = Some(dir.path().join("scenarios"));
    config.enable_test_tools = true;
    config.tool_timeout_secs = 30;
    config.database_url = database_url(dir);
    config
}

/// The database of the test directory `dir`: `None` for the default SQLite file in `data/`.
pub fn database_url(dir: &TempDir) -> Option<String> {
    postgres::enabled().then(|| postgres::database_url(dir.path()))
}

/// The binary's options for the test directory's database (none for the default SQLite file).
pub fn store_args(dir: &TempDir) -> Vec<String> {
    database_url(dir)
        .map(|url| vec!["--database-url".to_owned(), url])
        .unwrap_or_default()
}

/// Says why a test does not run against this store, for tests of SQLite's own behaviour.
pub fn sqlite_only(why: &str) -> bool {
    if postgres::enabled() {
        eprintln!("skipped on PostgreSQL: {why}");
        return true;
    }
    false
}

/// Says why a test does not run on SQLite, for tests of several instances and of PostgreSQL's own
/// behaviour.
pub fn postgres_only(why: &str) -> bool {
    if !postgres::enabled() {
        eprintln!("skipped on SQLite: {why}");
        return true;
    }
    false
}

/// A second handle on the test directory's database (the server's own is closed or elsewhere).
pub async fn open_store(dir: &TempDir) -> Store {
    let url = database_url(dir).unwrap_or_else(|| format!("sqlite://{}", db_path(dir).display()));
    Store::connect(&url).await.expect("open the test database")
}

impl TestServer {
    pub async fn start() -> Self {
        Self::start_in(test_dir()).await
    }

    pub async fn start_in(dir: Arc<TempDir>) -> Self {
        Self::start_with(dir, |_| {}).await
    }

    /// Starts with a configuration adjusted by `change`.
    pub async fn start_with(dir: Arc<TempDir>, change: impl FnOnce(&mut Config)) -> Self {
        let mut config = config_for(&dir);
        change(&mut config);
        let server = glassbox::build(&config, dir.path().join("site"))
            .await
            .expect("build the server");
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let base = format!("http://{}", listener.local_addr().expect("address"));
        // The binary's own accept loop (connection cap, header timeout, peer address), not
        // axum::serve, so these tests exercise what the binary serves with.
        let router = server.router;
        let limits = glassbox::http::serve::ConnectionLimits::from_config(&config, 65_536);
        let task = tokio::spawn(glassbox::http::serve::serve(
            listener,
            router,
            limits,
            std::future::pending(),
        ));
        TestServer {
            base,
            client: reqwest::Client::builder()
                .timeout(Duration::from_secs(60))
                .build()
                .expect("client"),
            dir,
            engine: server.engine,
            store: server.store,
            task,
        }
    }

    pub fn scenario(&self, name: &str, scenario: Value) {
        write_scenario(&self.dir, name, scenario);
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// `POST /api/chat`, as JSON (`json`) or as an event stream, whatever the status.
    pub async fn post_chat(&self, model: &str, content: &str, json: bool) -> reqwest::Response {
        let accept = if json {
            "application/json"
        } else {
            "text/event-stream"
        };
        self.client
            .post(self.url("/api/chat"))
            .header("accept", accept)
            .json(&json!({ "content": content, "model": model }))
            .send()
            .await
            .expect("POST /api/chat")
    }

    /// `POST /api/chat` answered as JSON.
    pub async fn start_run(&self, model: &str, content: &str) -> Value {
        let response = self.post_chat(model, content, true).await;
        assert_eq!(response.status(), 201, "start a run");
        response.json().await.expect("JSON reply")
    }

    /// `POST /api/chat` with any `body`, answered as JSON: the status and the answer.
    pub async fn chat_json(&self, body: Value) -> (u16, Value) {
        chat_json_at(&self.client, &self.base, body).await
    }

    /// `POST /api/chat` answered as an event stream.
    pub async fn chat_stream(&self, model: &str, content: &str) -> SseStream {
        let response = self.post_chat(model, content, false).await;
        assert_eq!(response.status(), 200);
        SseStream::new(response)
    }

    pub async fn subscribe(&self, run_id: &str, last_event_id: Option<u64>) -> SseStream {
        let mut request = self
            .client
            .get(self.url(&format!("/api/runs/{run_id}/events")));
        if let Some(id) = last_event_id {
            request = request.header("last-event-id", id.to_string());
        }
        let response = request.send().await.expect("GET events");
        assert_eq!(response.status(), 200, "subscribe to {run_id}");
        SseStream::new(response)
    }

    pub async fn get_json(&self, path: &str) -> (u16, Value) {
        let response = self.client.get(self.url(path)).send().await.expect("GET");
        let status = response.status().as_u16();
        (status, response.json().await.unwrap_or(Value::Null))
    }

    /// The message `message_id` of conversation `id`, as the conversation's read carries it.
    pub async fn message_of(&self, id: &str, message_id: &str) -> Value {
        let (_, conversation) = self.get_json(&format!("/api/conversations/{id}")).await;
        conversation["messages"]
            .as_array()
            .expect("messages")
            .iter()
            .find(|message| message["id"] == message_id)
            .expect("the message")
            .clone()
    }

    /// The trace's Agent Inspector export, checked to be written as it always was: each object's
    /// keys in the order a `serde_json::Value` writes them (sorted), so the bytes stay the same.
    pub async fn inspector(&self, trace_id: &str) -> Value {
        let path = format!("/api/traces/{trace_id}/inspector.json");
        let response = self.client.get(self.url(&path)).send().await.expect("GET");
        assert_eq!(response.status(), 200, "{path}");
        let text = response.text().await.expect("the export");
        let export: Value = serde_json::from_str(&text).expect("JSON");
        assert_eq!(export.to_string(), text, "the inspector export's bytes");
        export
    }

    pub async fn post_json(&self, path: &str, body: Value) -> (u16, Value) {
        let response = self
            .client
            .post(self.url(path))
            .json(&body)
            .send()
            .await
            .expect("POST");
        let status = response.status().as_u16();
        (status, response.json().await.unwrap_or(Value::Null))
    }

    /// A request of any method, with a JSON body when given: its status and JSON answer (`Null`
    /// when there is none, as for 204).
    pub async fn send_json(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> (u16, Value) {
        let mut request = self.client.request(method, self.url(path));
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request.send().await.expect("request");
        let status = response.status().as_u16();
        (status, response.json().await.unwrap_or(Value::Null))
    }

    /// How many rows `sql` (a `SELECT COUNT(*)`) counts, on whichever database this is.
    pub async fn count(&self, sql: &str) -> i64 {
        let counted = match (self.store.sqlite(), self.store.postgres()) {
            (Some(sqlite), _) => sqlx::query_scalar(sql).fetch_one(sqlite.pool()).await,
            (_, Some(postgres)) => sqlx::query_scalar(sql).fetch_one(postgres.pool()).await,
            _ => unreachable!("a store is SQLite or PostgreSQL"),
        };
        counted.expect("count rows")
    }

    pub async fn stop(self) {
        self.engine.shutdown(Duration::from_secs(10)).await;
        self.task.abort();
        self.store.close().await;
    }
}

pub fn write_scenario(dir: &TempDir, name: &str, scenario: Value) {
    std::fs::write(
        dir.path().join(format!("scenarios/{name}.json")),
        scenario.to_string(),
    )
    .expect("write scenario");
}

/// One SSE frame as the client saw it.
#[derive(Clone, Debug)]
pub struct Frame {
    pub id: Option<String>,
    pub data: String,
}

/// A minimal, strict SSE reader over a real HTTP response body. Bytes are decoded as UTF-8 only
/// once a frame is whole, so a character split across two reads is read whole, and invalid UTF-8
/// fails the test instead of passing as U+FFFD.
pub struct SseStream {
    body: futures::stream::BoxStream<'static, reqwest::Result<bytes::Bytes>>,
    buffer: Vec<u8>,
    /// The comment lines read so far (heartbeats), without the colon.
    pub comments: Vec<String>,
}

impl SseStream {
    pub fn new(response: reqwest::Response) -> Self {
        let content_type = response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_owned();
        assert!(
            content_type.starts_with("text/event-stream"),
            "content type {content_type}"
        );
        SseStream {
            body: response.bytes_stream().boxed(),
            buffer: Vec::new(),
            comments: Vec::new(),
        }
    }

    /// The next frame, or `None` at the end of the stream.
    pub async fn next_frame(&mut self) -> Option<Frame> {
        loop {
            if let Some(end) = self.buffer.windows(2).position(|pair| pair == b"\n\n") {
                let bytes: Vec<u8> = self.buffer.drain(..end + 2).collect();
                let block = String::from_utf8(bytes).expect("an SSE frame is UTF-8");
                let mut frame = Frame {
                    id: None,
                    data: String::new(),
                };
                let mut has_data = false;
                for line in block.lines() {
                    if let Some(comment) = line.strip_prefix(':') {
                        self.comments.push(comment.trim().to_owned());
                    } else if let Some(id) = line.strip_prefix("id:") {
                        frame.id = Some(id.trim().to_owned());
                    } else if let Some(data) = line.strip_prefix("data:") {
                        if has_data {
                            frame.data.push('\n');
                        }
                        frame.data.push_str(data.strip_prefix(' ').unwrap_or(data));
                        has_data = true;
                    }
                }
                if has_data {
                    return Some(frame);
                }
                continue;
            }
            match self.body.next().await {
                Some(Ok(bytes)) => self.buffer.extend_from_slice(&bytes),
                _ => return None,
            }
        }
    }

    /// The next event, checking that the frame's id is its seq.
    pub async fn next_event(&mut self) -> Option<Event> {
        let frame = self.next_frame().await?;
        let event: Event = serde_json::from_str(&frame.data)
            .unwrap_or_else(|error| panic!("bad event {}: {error}", frame.data));
        assert_eq!(
            frame.id.as_deref(),
            Some(event.seq.to_string().as_str()),
            "SSE id is the seq"
        );
        Some(event)
    }

    /// Reads until the stream ends.
    pub async fn collect(mut self) -> Vec<Event> {
        let mut events = Vec::new();
        while let Some(event) = tokio::time::timeout(Duration::from_secs(60), self.next_event())
            .await
            .expect("stream stalled")
        {
            events.push(event);
        }
        events
    }

    /// Reads until an event matches; returns every event read.
    pub async fn until(&mut self, mut stop: impl FnMut(&Event) -> bool) -> Vec<Event> {
        let mut events = Vec::new();
        loop {
            let event = tokio::time::timeout(Duration::from_secs(60), self.next_event())
                .await
                .expect("stream stalled")
                .expect("stream ended before the awaited event");
            let done = stop(&event);
            events.push(event);
            if done {
                return events;
            }
        }
    }
}

pub fn is_type(event: &Event, name: &str) -> bool {
    event.kind.type_name() == name
}

/// The invariants every run's events keep.
pub fn assert_invariants(events: &[Event]) {
    assert!(!events.is_empty(), "a run has events");
    for (index, event) in events.iter().enumerate() {
        assert_eq!(
            event.seq,
            index as u64 + 1,
            "seq counts 1, 2, 3 ... with no gaps"
        );
        assert_eq!(event.run_id, events[0].run_id, "one run id");
        assert!(
            app::protocol::parse_rfc3339_millis(&event.ts).is_some(),
            "ts is RFC 3339: {}",
            event.ts
        );
        assert!(
            event.ts.len() == 24 && event.ts.ends_with('Z'),
            "ts has milliseconds: {}",
            event.ts
        );
    }
    assert!(
        matches!(events[0].kind, EventKind::MessageStarted { .. }),
        "message_started comes first"
    );
    let terminals = events
        .iter()
        .filter(|event| event.kind.is_terminal())
        .count();
    assert_eq!(terminals, 1, "exactly one terminal event");
    let last = events.last().expect("non-empty");
    assert!(last.kind.is_terminal(), "the terminal event is last");
    let carried = match &last.kind {
        EventKind::MessageFinal { message, .. }
        | EventKind::MessageCancelled { message, .. }
        | EventKind::MessageError { message, .. } => message,
        _ => unreachable!(),
    };
    let folded = app::protocol::fold(&events[..events.len() - 1]).expect("folds");
    let cut = carried
        .ended_reason
        .as_deref()
        .is_some_and(|reason| reason.contains("was cut to fit"));
    if cut {
        // Cut to fit the memory left: each text is the start of what the events built.
        let texts = |message: &app::protocol::Message| {
            serde_json::to_value(&message.segments).expect("segments")
        };
        assert_prefixes(&texts(carried), &texts(&folded));
    } else {
        assert_eq!(
            folded.segments, carried.segments,
            "the terminal message is what the reducer builds from the events"
        );
    }
}

/// `cut` is `whole` with some strings shortened (a cut message's segments), or with no segments.
fn assert_prefixes(cut: &Value, whole: &Value) {
    match (cut, whole) {
        (Value::String(cut), Value::String(whole)) => {
            assert!(whole.starts_with(cut.as_str()), "a cut text is a prefix")
        }
        (Value::Array(cut), Value::Array(whole)) => {
            assert!(
                cut.is_empty() || cut.len() == whole.len(),
                "segments kept or dropped"
            );
            for (cut, whole) in cut.iter().zip(whole) {
                assert_prefixes(cut, whole);
            }
        }
        (Value::Object(cut), Value::Object(whole)) => {
            for (key, value) in cut {
                if key != "truncated" && key != "full_length" {
                    assert_prefixes(value, whole.get(key).unwrap_or(&Value::Null));
                }
            }
        }
        (cut, whole) => assert_eq!(cut, whole),
    }
}

/// Waits until no MCP server of the instance at `base` is still `starting` (start-up does not
/// wait for them); answers `GET /api/tools` then.
pub async fn until_mcp_started(client: &reqwest::Client, base: &str) -> Value {
    let deadline = std::time::Instant::now() + Duration::from_secs(40);
    loop {
        let listed = get_json_at(client, format!("{base}/api/tools")).await;
        let starting = listed["mcp_servers"]
            .as_array()
            .is_some_and(|servers| servers.iter().any(|s| s["state"] == "starting"));
        if !starting {
            return listed;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "an MCP server is still starting: {listed}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

pub fn db_path(dir: &TempDir) -> PathBuf {
    dir.path().join("data/glassbox.db")
}

// The real binary, for what only `glassbox::run` sets up (signals, connection limits).

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("free port")
}

pub async fn get_json_at(client: &reqwest::Client, url: String) -> Value {
    client
        .get(url)
        .send()
        .await
        .expect("GET")
        .json()
        .await
        .expect("JSON")
}

/// The `glassbox` binary serving `dir`'s folders on a free port.
pub struct Binary {
    pub child: tokio::process::Child,
    /// `127.0.0.1:<port>`
    pub address: String,
    /// `http://127.0.0.1:<port>`
    pub base: String,
}

/// `glassbox users add NAME` on the test directory's database, the password on standard input.
pub fn add_user(dir: &tempfile::TempDir, name: &str, password: &str) -> std::process::Output {
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_glassbox"))
        .arg("--data-dir")
        .arg(dir.path().join("data"))
        .args(store_args(dir))
        .args(["users", "add", name])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start glassbox users add");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(format!("{password}\n").as_bytes())
        .expect("write the password");
    child.wait_with_output().expect("users add")
}

/// Starts the binary with test tools and `extra` options, and waits until it answers.
pub async fn launch(dir: &tempfile::TempDir, extra: &[&str]) -> Binary {
    launch_with(dir, extra, &[], Stdio::null()).await
}

/// [`launch`] with environment variables, and its log (standard output) going to `log`.
pub async fn launch_with(
    dir: &tempfile::TempDir,
    extra: &[&str],
    env: &[(&str, &str)],
    log: Stdio,
) -> Binary {
    let address = format!("127.0.0.1:{}", free_port());
    let child = tokio::process::Command::new(env!("CARGO_BIN_EXE_glassbox"))
        .envs(env.iter().copied())
        .args(extra)
        .args(["--addr", &address])
        .arg("--data-dir")
        .arg(dir.path().join("data"))
        .arg("--site-root")
        .arg(dir.path().join("site"))
        .arg("--workspace")
        .arg(dir.path().join("workspace"))
        .arg("--scenarios-dir")
        .arg(dir.path().join("scenarios"))
        .arg("--enable-test-tools")
        .args(store_args(dir))
        .args(if extra.contains(&"--instance-id") {
            Vec::new()
        } else {
            // A binary started again in the same folder is the same instance, as one restarted
            // on the same host and port is (the default name is `<host>:<port>`).
            vec!["--instance-id", "the-test-instance"]
        })
        .stdout(log)
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("start glassbox");
    let base = format!("http://{address}");
    let client = reqwest::Client::new();
    for _ in 0..200 {
        if client.get(format!("{base}/healthz")).send().await.is_ok() {
            return Binary {
                child,
                address,
                base,
            };
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("glassbox did not start");
}

/// The entry point of `@modelcontextprotocol/server-everything`, the real MCP server the tests
/// use; the test command installs it in `tools/mcp/`.
pub fn everything_mcp_server() -> std::path::PathBuf {
    let path = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../tools/mcp/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    assert!(
        path.exists(),
        "{} is missing: run `npm ci` in tools/mcp (scripts/test.sh does)",
        path.display()
    );
    path
}

/// The SQL condition that picks the checkpoint chunks of the traces whose ids are in `set` (a
/// parenthesized list or subquery): SQLite's chunks name their trace by its `chunk_key`,
/// PostgreSQL's by its id.
pub fn chunks_of_traces_in(set: &str) -> String {
    if postgres::enabled() {
        format!("trace_id IN {set}")
    } else {
        format!("trace_key IN (SELECT chunk_key FROM agent_traces WHERE trace_id IN {set})")
    }
}

/// Everything the database holds: SQLite's files, or every row of PostgreSQL's tables as text.
pub async fn stored_bytes(dir: &tempfile::TempDir) -> Vec<u8> {
    let mut stored = Vec::new();
    if postgres::enabled() {
        let store = open_store(dir).await;
        let pool = store.postgres().expect("PostgreSQL").pool();
        for table in [
            "conversations",
            "messages",
            "agent_traces",
            "trace_event_chunks",
            "model_turns",
        ] {
            let rows: Vec<String> =
                sqlx::query_scalar(&format!("SELECT row_to_json(t)::text FROM {table} t"))
                    .fetch_all(pool)
                    .await
                    .expect("read a table");
            stored.extend(rows.concat().into_bytes());
        }
        store.close().await;
        return stored;
    }
    for entry in std::fs::read_dir(dir.path().join("data")).expect("data dir") {
        stored.extend(std::fs::read(entry.expect("entry").path()).expect("read database file"));
    }
    stored
}

/// `POST /api/chat` with `body` to the server at `base`, answered as JSON: the status and the
/// answer (`Null` when it is not JSON).
pub async fn chat_json_at(client: &reqwest::Client, base: &str, body: Value) -> (u16, Value) {
    let response = client
        .post(format!("{base}/api/chat"))
        .header("accept", "application/json")
        .json(&body)
        .send()
        .await
        .expect("POST /api/chat");
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

/// Serves `router` (a fake provider, agent or collector) on a free loopback port for the rest of
/// the test; its `http://host:port`.
pub async fn serve_router(router: axum::Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind a test server");
    let base = format!("http://{}", listener.local_addr().expect("address"));
    tokio::spawn(async move {
        let _ = axum::serve(listener, router).await;
    });
    base
}

/// A fake Chat Completions model's streamed answer: each frame as a `data:` event, then
/// `data: [DONE]`, as the real wire format ends.
pub fn chat_completions_stream(frames: &[Value]) -> axum::response::Response {
    use axum::response::IntoResponse;
    let mut text: String = frames
        .iter()
        .map(|frame| format!("data: {frame}\n\n"))
        .collect();
    text.push_str("data: [DONE]\n\n");
    ([("content-type", "text/event-stream")], text).into_response()
}
