//! AG-UI agents run in Glassbox: the example pydantic-ai and LangGraph agents (real frameworks,
//! scripted models, no network) started on free ports, and small servers that break the protocol
//! in each way the issue lists. Every run is read through the real binary's HTTP API.

mod common;

use std::{
    io::{BufRead, BufReader},
    path::PathBuf,
    process::{Child, Command, Stdio},
    sync::Arc,
    time::{Duration, Instant},
};

use app::protocol::{Event, EventKind, Segment, ToolCallStatus, ToolResultStatus};
use common::*;
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The example agents' Python: `GLASSBOX_AGENT_PYTHON` (scripts/lib/setup.sh's `ensure_agent_venv`
/// sets it), else the venv that function makes.
fn agent_python() -> PathBuf {
    if let Some(python) = std::env::var_os("GLASSBOX_AGENT_PYTHON") {
        return PathBuf::from(python);
    }
    let python = repo_root().join("target/agents-venv/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run `source scripts/lib/setup.sh && ensure_agent_venv` (scripts/test.sh does)",
        python.display()
    );
    python
}

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace")
        .to_path_buf()
}

/// An example agent, killed when dropped.
struct PythonAgent {
    child: Child,
    url: String,
    log: PathBuf,
}

impl Drop for PythonAgent {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl PythonAgent {
    /// Starts `examples/agents/<script>` on a free port and waits for its `listening` line.
    fn start(script: &str, dir: &tempfile::TempDir) -> PythonAgent {
        let log = dir.path().join(format!("{script}.log"));
        let mut child = Command::new(agent_python())
            .arg(repo_root().join("examples/agents").join(script))
            .args(["--port", "0"])
            .env("GLASSBOX_AGENT_LOG", &log)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start the example agent");
        let stdout = child.stdout.take().expect("its stdout");
        // Its first line, within 60 s (a Python that hangs on import must not hang the test).
        let (line_in, line_out) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(stdout).read_line(&mut line);
            let _ = line_in.send(line);
        });
        let line = line_out
            .recv_timeout(Duration::from_secs(60))
            .unwrap_or_else(|_| panic!("{script} did not start within 60 s"));
        let address = line
            .trim()
            .strip_prefix("listening on ")
            .unwrap_or_else(|| panic!("{script} did not start: {line:?}"))
            .to_owned();
        PythonAgent {
            child,
            url: format!("http://{address}/"),
            log,
        }
    }
}

/// A server whose providers file lists `agents` (name → URL, idle timeout).
async fn server_with_agents(agents: &[(&str, &str, u64)]) -> TestServer {
    let dir = test_dir();
    let file = dir.path().join("providers.json");
    let agents: Vec<Value> = agents
        .iter()
        .map(|(name, url, idle)| json!({"name": name, "url": url, "idle_timeout_secs": idle, "connect_timeout_secs": 2}))
        .collect();
    std::fs::write(&file, json!({ "agents": agents }).to_string()).expect("write");
    TestServer::start_with(dir, move |config| config.providers_file = Some(file)).await
}

fn message_of(events: &[Event]) -> app::protocol::Message {
    match &events.last().expect("events").kind {
        EventKind::MessageFinal { message, .. }
        | EventKind::MessageCancelled { message, .. }
        | EventKind::MessageError { message, .. } => message.clone(),
        other => panic!("not a terminal event: {other:?}"),
    }
}

fn calls(message: &app::protocol::Message) -> Vec<&app::protocol::ToolCallSegment> {
    message
        .segments
        .iter()
        .filter_map(|segment| match segment {
            Segment::ToolCall(call) => Some(call),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_pydantic_ai_run_streams_reasoning_a_tool_call_and_text() {
    let dir = test_dir();
    let agent = PythonAgent::start("pydantic_agent.py", &dir);
    let server = server_with_agents(&[("pyd", &agent.url, 30)]).await;
    let models = server.get_json("/api/models").await.1;
    assert!(models.to_string().contains("agent/pyd"), "{models}");
    let events = server
        .chat_stream("agent/pyd", "What is the weather in Paris?")
        .await
        .collect()
        .await;
    assert_invariants(&events);
    assert!(
        is_type(events.last().expect("end"), "message_final"),
        "{events:#?}"
    );
    let message = message_of(&events);
    let reasoning: Vec<String> = message
        .segments
        .iter()
        .filter_map(|segment| match segment {
            Segment::Reasoning(reasoning) => Some(reasoning.combined_text.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(reasoning.len(), 2, "{reasoning:?}");
    assert!(
        reasoning[0].contains("I should look up the weather in Paris."),
        "{reasoning:?}"
    );
    let calls = calls(&message);
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].name, "get_weather");
    assert_eq!(calls[0].args, json!({"city": "Paris"}));
    assert_eq!(calls[0].status, ToolCallStatus::Success);
    assert_eq!(calls[0].output, "Sunny, 21 °C");
    assert!(
        calls[0].args_text.is_empty(),
        "the streamed text gives way to the arguments"
    );
    assert_eq!(message.text(), "It is sunny in Paris, 21 °C.");
    // The arguments streamed in before they were whole.
    let partial = events.iter().any(|event| {
        matches!(&event.kind, EventKind::ToolCallUpdate { args_text: Some(text), .. } if text == "{\"city\":")
    });
    assert!(partial, "the arguments stream in");
    assert!(
        message.usage.is_some(),
        "RUN_FINISHED's usage is the message's"
    );
    // The trace keeps the request and what the chat does not show.
    let trace_id = message.trace_id.clone().expect("a trace");
    let (status, turns) = server
        .get_json(&format!("/api/traces/{trace_id}/model-turns"))
        .await;
    assert_eq!(status, 200, "{turns}");
    let text = turns.to_string();
    assert!(
        text.contains("ag_ui") && text.contains("RUN_STARTED"),
        "{text}"
    );
}

#[tokio::test]
async fn parallel_calls_and_a_follow_up_that_sees_the_conversation() {
    let dir = test_dir();
    let agent = PythonAgent::start("pydantic_agent.py", &dir);
    let server = server_with_agents(&[("pyd", &agent.url, 30)]).await;
    let events = server
        .chat_stream("agent/pyd", "parallel weather please")
        .await
        .collect()
        .await;
    assert_invariants(&events);
    let message = message_of(&events);
    let calls = calls(&message);
    assert_eq!(calls.len(), 2, "{message:#?}");
    assert!(calls
        .iter()
        .all(|call| call.status == ToolCallStatus::Success));
    assert_eq!(calls[1].output, "Snow, -3 °C");
    let conversation = events[0].kind.clone();
    let EventKind::MessageStarted {
        conversation_id, ..
    } = conversation
    else {
        panic!("message_started first");
    };
    let response = server
        .client
        .post(server.url("/api/chat"))
        .header("accept", "text/event-stream")
        .json(&json!({"content": "hello again", "conversation_id": conversation_id}))
        .send()
        .await
        .expect("follow-up");
    assert_eq!(response.status(), 200);
    let events = SseStream::new(response).collect().await;
    assert_invariants(&events);
    let text = message_of(&events).text();
    assert!(text.contains("(user messages seen: 2)"), "{text}");
}

/// Starts the `delete` run and waits for its approval request: (run id, call id, stream).
async fn until_approval(server: &TestServer) -> (String, String, SseStream) {
    let mut stream = server
        .chat_stream("agent/pyd", "Please delete notes.txt")
        .await;
    let events = stream
        .until(|event| is_type(event, "tool_approval_requested"))
        .await;
    let Some(EventKind::ToolApprovalRequested {
        call_id,
        name,
        args,
    }) = events.last().map(|event| event.kind.clone())
    else {
        panic!("no approval request: {events:#?}");
    };
    assert_eq!(name, "delete_file");
    assert_eq!(args, json!({"path": "notes.txt"}));
    (events[0].run_id.clone(), call_id, stream)
}

#[tokio::test]
async fn an_interrupt_is_an_approval_and_the_answer_resumes_the_agent() {
    let dir = test_dir();
    let agent = PythonAgent::start("pydantic_agent.py", &dir);
    let server = server_with_agents(&[("pyd", &agent.url, 30)]).await;
    for (decision, text, status) in [
        ("approve", "Deleted notes.txt.", ToolResultStatus::Success),
        (
            "deny",
            "I did not delete notes.txt.",
            ToolResultStatus::Denied,
        ),
    ] {
        let (run_id, call_id, stream) = until_approval(&server).await;
        // Answered from a second tab: a request of its own, not the stream that started the run.
        let (code, body) = server
            .post_json(
                &format!("/api/runs/{run_id}/approvals/{call_id}"),
                json!({"decision": decision, "reason": "not today"}),
            )
            .await;
        assert_eq!(code, 200, "{body}");
        let mut events = server.subscribe(&run_id, None).await.collect().await;
        drop(stream);
        assert_invariants(&events);
        assert!(
            is_type(events.last().expect("end"), "message_final"),
            "{events:#?}"
        );
        let results: Vec<ToolResultStatus> = events
            .drain(..)
            .filter_map(|event| match event.kind {
                EventKind::ToolResult { status, .. } => Some(status),
                EventKind::MessageFinal { message, .. } => {
                    assert_eq!(message.text(), text);
                    None
                }
                _ => None,
            })
            .collect();
        assert_eq!(results, [status], "exactly one tool_result for {decision}");
    }
}

#[tokio::test]
async fn stop_closes_the_connection_and_the_agent_cancels_its_tool() {
    let dir = test_dir();
    let agent = PythonAgent::start("pydantic_agent.py", &dir);
    let server = server_with_agents(&[("pyd", &agent.url, 30)]).await;
    let mut stream = server.chat_stream("agent/pyd", "sleep for a while").await;
    let events = stream
        .until(|event| matches!(&event.kind, EventKind::ToolCallUpdate { args: Some(_), .. }))
        .await;
    let run_id = events[0].run_id.clone();
    // Stopped before the tool starts, the agent would have nothing to cancel.
    until_logged(&agent, "started slow_task").await;
    let asked = Instant::now();
    let (code, _) = server
        .post_json(&format!("/api/runs/{run_id}/cancel"), json!({}))
        .await;
    assert!(code == 200 || code == 202, "{code}");
    let rest = stream.collect().await;
    let took = asked.elapsed();
    assert!(
        is_type(rest.last().expect("end"), "message_cancelled"),
        "{rest:#?}"
    );
    assert!(took < Duration::from_secs(2), "Stop took {took:?}");
    // The agent saw the disconnect: pydantic-ai cancelled the running tool.
    until_logged(&agent, "cancelled slow_task").await;
}

#[tokio::test]
async fn run_error_ends_with_the_agents_message() {
    let dir = test_dir();
    let agent = PythonAgent::start("pydantic_agent.py", &dir);
    let server = server_with_agents(&[("pyd", &agent.url, 30)]).await;
    let events = server
        .chat_stream("agent/pyd", "please fail")
        .await
        .collect()
        .await;
    assert_invariants(&events);
    let EventKind::MessageError { error, code, .. } = &events.last().expect("end").kind else {
        panic!("not an error: {events:#?}");
    };
    // The agent's RUN_ERROR, not a protocol error of Glassbox's reading.
    assert_ne!(code.as_str(), "agent_protocol", "{error}");
    assert!(error.contains("scripted failure"), "{error}");
}

#[tokio::test]
async fn a_langgraph_run_with_steps_a_tool_call_and_state() {
    let dir = test_dir();
    let agent = PythonAgent::start("langgraph_agent.py", &dir);
    let server = server_with_agents(&[("graph", &agent.url, 30)]).await;
    let events = server
        .chat_stream("agent/graph", "What is the weather in Paris?")
        .await
        .collect()
        .await;
    assert_invariants(&events);
    assert!(
        is_type(events.last().expect("end"), "message_final"),
        "{events:#?}"
    );
    let message = message_of(&events);
    let calls = calls(&message);
    assert_eq!(calls.len(), 1, "{message:#?}");
    assert_eq!(calls[0].name, "get_weather");
    assert_eq!(calls[0].status, ToolCallStatus::Success);
    assert!(
        message.text().contains("It is sunny in Paris, 21 °C."),
        "{}",
        message.text()
    );
    let trace_id = message.trace_id.clone().expect("a trace");
    let turns = server
        .get_json(&format!("/api/traces/{trace_id}/model-turns"))
        .await
        .1
        .to_string();
    // Each kept event has its time (`at_ms`): the timeline draws the steps from them.
    assert!(
        turns.contains("STEP_STARTED")
            && turns.contains("STATE_SNAPSHOT")
            && turns.contains("at_ms"),
        "{turns}"
    );
}

/// A one-connection-at-a-time HTTP server that answers every request with `answer` (after the
/// request head and body are read), then holds the connection for `hold`.
async fn canned_agent(answer: Vec<u8>, hold: Duration) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("http://{}/", listener.local_addr().expect("address"));
    let answer = Arc::new(answer);
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let answer = answer.clone();
            tokio::spawn(async move {
                if read_request(&mut socket).await.is_none() {
                    return;
                }
                let _ = socket.write_all(&answer).await;
                tokio::time::sleep(hold).await;
            });
        }
    });
    url
}

/// Reads one request until its JSON body is whole (these bodies end with `}`); `None` when the
/// connection closed first.
async fn read_request(socket: &mut tokio::net::TcpStream) -> Option<String> {
    let mut request = Vec::new();
    let mut buffer = [0u8; 8192];
    while let Ok(read) = socket.read(&mut buffer).await {
        if read == 0 {
            return None;
        }
        request.extend_from_slice(&buffer[..read]);
        if request.ends_with(b"}") {
            return Some(String::from_utf8_lossy(&request).into_owned());
        }
    }
    None
}

/// An agent that answers its requests with `answers`, one per connection in order, and passes
/// each request (head and body) on.
async fn recording_agent(
    answers: Vec<Vec<u8>>,
) -> (String, tokio::sync::mpsc::UnboundedReceiver<String>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("http://{}/", listener.local_addr().expect("address"));
    let (bodies_in, bodies) = tokio::sync::mpsc::unbounded_channel::<String>();
    tokio::spawn(async move {
        for answer in answers {
            let Ok((mut socket, _)) = listener.accept().await else {
                return;
            };
            let request = read_request(&mut socket).await.unwrap_or_default();
            let _ = bodies_in.send(request);
            let _ = socket.write_all(&answer).await;
        }
    });
    (url, bodies)
}

/// Runs the canned agent that answers `events` (as a 200 event stream) under `name`: the server
/// (for further reads) and the run's events, whose invariants hold.
async fn run_canned(name: &str, events: &[&str]) -> (TestServer, Vec<Event>) {
    let url = canned_agent(sse_answer(events), Duration::ZERO).await;
    let server = server_with_agents(&[(name, &url, 30)]).await;
    let events = server
        .chat_stream(&format!("agent/{name}"), "hello")
        .await
        .collect()
        .await;
    assert_invariants(&events);
    (server, events)
}

fn sse_answer(events: &[&str]) -> Vec<u8> {
    let mut body = String::new();
    for event in events {
        body.push_str(&format!("data: {event}\n\n"));
    }
    format!(
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

const STARTED: &str = r#"{"type":"RUN_STARTED","threadId":"t","runId":"r"}"#;
const FINISHED: &str = r#"{"type":"RUN_FINISHED","threadId":"t","runId":"r"}"#;
const TEXT: [&str; 2] = [
    r#"{"type":"TEXT_MESSAGE_START","messageId":"m","role":"assistant"}"#,
    r#"{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"kept"}"#,
];

/// Runs the agent at `url` and returns its events; the run must end with `message_error` of
/// `code`, keeping the text sent before the fault.
async fn fails_with(url: &str, code: &str, idle: u64) -> Vec<Event> {
    let server = server_with_agents(&[("bad", url, idle)]).await;
    let events = tokio::time::timeout(
        Duration::from_secs(30),
        server.chat_stream("agent/bad", "hello").await.collect(),
    )
    .await
    .expect("the run ends");
    assert_invariants(&events);
    let EventKind::MessageError { code: got, .. } = &events.last().expect("end").kind else {
        panic!("not an error: {events:#?}");
    };
    assert_eq!(got.as_str(), code, "{events:#?}");
    events
}

#[tokio::test]
async fn bad_agents_end_with_a_clear_error_and_keep_what_came_before() {
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec![STARTED, TEXT[0], TEXT[1]], "stream_interrupted"),
        (
            vec![STARTED, TEXT[0], TEXT[1], "{not json"],
            "agent_protocol",
        ),
        (
            vec![
                STARTED,
                TEXT[0],
                TEXT[1],
                r#"{"type":"TEXT_MESSAGE_CONTENT","messageId":"other","delta":"x"}"#,
            ],
            "agent_protocol",
        ),
        (
            vec![STARTED, TEXT[0], TEXT[1], STARTED, FINISHED],
            "agent_protocol",
        ),
        (
            vec![
                STARTED,
                TEXT[0],
                TEXT[1],
                r#"{"type":"TOOL_CALL_ARGS","toolCallId":"nope","delta":"{}"}"#,
            ],
            "agent_protocol",
        ),
    ];
    for (events, code) in cases {
        let url = canned_agent(sse_answer(&events), Duration::ZERO).await;
        let got = fails_with(&url, code, 30).await;
        let message = message_of(&got);
        assert_eq!(message.text(), "kept", "{events:?}");
    }
}

#[tokio::test]
async fn refusals_wrong_types_and_silence_are_errors_not_hangs() {
    let refused = b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\ncontent-length: 27\r\nconnection: close\r\n\r\n{\"message\":\"overloaded :(\"}".to_vec();
    let url = canned_agent(refused, Duration::ZERO).await;
    let events = fails_with(&url, "agent_refused", 30).await;
    let EventKind::MessageError { error, .. } = &events.last().expect("end").kind else {
        unreachable!()
    };
    assert!(
        error.contains("503") && error.contains("overloaded"),
        "{error}"
    );
    let html = b"HTTP/1.1 200 OK\r\ncontent-type: text/html\r\ncontent-length: 2\r\nconnection: close\r\n\r\nhi".to_vec();
    let url = canned_agent(html, Duration::ZERO).await;
    fails_with(&url, "agent_protocol", 30).await;
    // Accepts, answers the head, then sends nothing: the idle timeout (1 s here) ends it.
    let head = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\r\n".to_vec();
    let url = canned_agent(head, Duration::from_secs(60)).await;
    let started = Instant::now();
    fails_with(&url, "agent_timeout", 1).await;
    assert!(started.elapsed() < Duration::from_secs(10));
    // Accepts the connection and never answers at all.
    let url = canned_agent(Vec::new(), Duration::from_secs(60)).await;
    fails_with(&url, "agent_timeout", 1).await;
}

#[tokio::test]
async fn unknown_event_types_are_dropped_and_counted_in_the_trace() {
    let (server, events) = run_canned(
        "odd",
        &[
            STARTED,
            r#"{"type":"SOMETHING_NEW","x":1}"#,
            // A user message the agent echoes is not its answer.
            r#"{"type":"TEXT_MESSAGE_START","messageId":"u","role":"user"}"#,
            r#"{"type":"TEXT_MESSAGE_CONTENT","messageId":"u","delta":"echo"}"#,
            r#"{"type":"TEXT_MESSAGE_END","messageId":"u"}"#,
            r#"{"type":"SOMETHING_NEW","x":2}"#,
            TEXT[0],
            TEXT[1],
            r#"{"type":"TEXT_MESSAGE_END","messageId":"m"}"#,
            FINISHED,
        ],
    )
    .await;
    let message = message_of(&events);
    assert_eq!(message.text(), "kept");
    let trace_id = message.trace_id.clone().expect("trace");
    let turns = server
        .get_json(&format!("/api/traces/{trace_id}/model-turns"))
        .await
        .1;
    assert!(
        turns.to_string().contains(r#""SOMETHING_NEW":2"#),
        "{turns}"
    );
}

#[tokio::test]
async fn stop_while_a_call_waits_for_approval_ends_the_run_cancelled() {
    let dir = test_dir();
    let agent = PythonAgent::start("pydantic_agent.py", &dir);
    let server = server_with_agents(&[("pyd", &agent.url, 30)]).await;
    let (run_id, _call_id, stream) = until_approval(&server).await;
    let (code, _) = server
        .post_json(&format!("/api/runs/{run_id}/cancel"), json!({}))
        .await;
    assert!(code == 200 || code == 202, "{code}");
    let events = tokio::time::timeout(Duration::from_secs(5), stream.collect())
        .await
        .expect("the run ends");
    assert!(
        is_type(events.last().expect("end"), "message_cancelled"),
        "{events:#?}"
    );
    let all = server.subscribe(&run_id, None).await.collect().await;
    assert_invariants(&all);
    let results = all
        .iter()
        .filter(|event| is_type(event, "tool_result"))
        .count();
    assert_eq!(results, 1, "the waiting call ends once, cancelled");
}

/// Waits until the agent's log has `line` in it.
async fn until_logged(agent: &PythonAgent, line: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let log = std::fs::read_to_string(&agent.log).unwrap_or_default();
        if log.contains(line) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the agent never logged {line:?}: {log:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs PostgreSQL: GLASSBOX_TEST_STORE=postgres with --include-ignored (scripts/test.sh)"]
async fn a_run_on_one_instance_is_followed_and_stopped_from_another() {
    if postgres_only("several instances share a PostgreSQL database") {
        return;
    }
    let dir = test_dir();
    let agent = PythonAgent::start("pydantic_agent.py", &dir);
    let file = dir.path().join("providers.json");
    let agents = json!({"agents": [{"name": "pyd", "url": agent.url}]});
    std::fs::write(&file, agents.to_string()).expect("write");
    let file = file.to_str().expect("path");
    let a = launch(&dir, &["--instance-id", "a", "--providers-file", file]).await;
    let b = launch(&dir, &["--instance-id", "b", "--providers-file", file]).await;
    let client = reqwest::Client::new();
    let started: Value = client
        .post(format!("{}/api/chat", a.base))
        .header("accept", "application/json")
        .json(&json!({"content": "sleep for a while", "model": "agent/pyd"}))
        .send()
        .await
        .expect("start on A")
        .json()
        .await
        .expect("JSON");
    let run_id = started["run_id"].as_str().expect("run").to_owned();
    until_logged(&agent, "started slow_task").await;
    let response = client
        .get(format!("{}/api/runs/{run_id}/events", b.base))
        .send()
        .await
        .expect("follow on B");
    let mut on_b = SseStream::new(response);
    let seen = on_b
        .until(|event| matches!(&event.kind, EventKind::ToolCallUpdate { args: Some(_), .. }))
        .await;
    assert!(!seen.is_empty(), "B follows A's run");
    let stop = client
        .post(format!("{}/api/runs/{run_id}/cancel", b.base))
        .json(&json!({}))
        .send()
        .await
        .expect("Stop on B");
    assert!(stop.status().is_success(), "{}", stop.status());
    let rest = tokio::time::timeout(Duration::from_secs(15), on_b.collect())
        .await
        .expect("the run ends");
    assert!(
        is_type(rest.last().expect("end"), "message_cancelled"),
        "{rest:#?}"
    );
    // A closed its connection: the agent cancelled its tool.
    until_logged(&agent, "cancelled slow_task").await;
}

#[tokio::test]
async fn a_call_left_without_a_result_ends_with_an_error_when_the_agent_finishes() {
    let (_server, events) = run_canned(
        "open",
        &[
            STARTED,
            r#"{"type":"TOOL_CALL_START","toolCallId":"c1","toolCallName":"frontend_tool"}"#,
            r#"{"type":"TOOL_CALL_ARGS","toolCallId":"c1","delta":"{}"}"#,
            r#"{"type":"TOOL_CALL_END","toolCallId":"c1"}"#,
            FINISHED,
        ],
    )
    .await;
    assert!(is_type(events.last().expect("end"), "message_final"));
    let message = message_of(&events);
    let calls = calls(&message);
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].status, ToolCallStatus::Error, "{message:#?}");
}

#[tokio::test]
async fn an_interrupt_of_another_reason_is_a_question_in_the_chat() {
    // The first request pauses on a question; the resume request finishes with text.
    let paused = sse_answer(&[
        STARTED,
        r#"{"type":"RUN_FINISHED","threadId":"t","runId":"r","outcome":{"type":"interrupt","interrupts":[{"id":"q1","reason":"confirm_plan","message":"Go ahead with the plan?"}]}}"#,
    ]);
    let resumed = sse_answer(&[STARTED, TEXT[0], TEXT[1], FINISHED]);
    let (url, mut bodies) = recording_agent(vec![paused, resumed]).await;
    let server = server_with_agents(&[("asks", &url, 30)]).await;
    let mut stream = server.chat_stream("agent/asks", "plan it").await;
    let events = stream
        .until(|event| is_type(event, "tool_approval_requested"))
        .await;
    let Some(EventKind::ToolApprovalRequested { call_id, name, .. }) =
        events.last().map(|event| event.kind.clone())
    else {
        panic!("no question: {events:#?}");
    };
    assert_eq!(name, "confirm_plan");
    let run_id = events[0].run_id.clone();
    let (code, _) = server
        .post_json(
            &format!("/api/runs/{run_id}/approvals/{call_id}"),
            json!({"decision": "approve"}),
        )
        .await;
    assert_eq!(code, 200);
    let rest = stream.collect().await;
    assert!(
        is_type(rest.last().expect("end"), "message_final"),
        "{rest:#?}"
    );
    let message = message_of(&rest);
    assert_eq!(message.text(), "kept");
    assert_eq!(calls(&message)[0].status, ToolCallStatus::Success);
    let _first = bodies.recv().await.expect("the first request");
    let resume = bodies.recv().await.expect("the resume request");
    assert!(
        resume.contains(
            r#""resume":[{"interruptId":"q1","status":"resolved","payload":{"approved":true}}]"#
        ),
        "{resume}"
    );
}

#[tokio::test]
async fn encrypted_values_go_back_with_their_message_and_call_in_the_next_run() {
    // The first run reasons, calls a tool and answers, each with an encrypted value; the second
    // run's request must carry each value on what it belongs to.
    let first = sse_answer(&[
        STARTED,
        r#"{"type":"REASONING_START","messageId":"r1"}"#,
        r#"{"type":"REASONING_MESSAGE_START","messageId":"r1","role":"reasoning"}"#,
        r#"{"type":"REASONING_MESSAGE_CONTENT","messageId":"r1","delta":"thinking"}"#,
        r#"{"type":"REASONING_MESSAGE_END","messageId":"r1"}"#,
        r#"{"type":"REASONING_ENCRYPTED_VALUE","subtype":"message","entityId":"r1","encryptedValue":"enc-reasoning"}"#,
        r#"{"type":"REASONING_END","messageId":"r1"}"#,
        r#"{"type":"TOOL_CALL_START","toolCallId":"c1","toolCallName":"look"}"#,
        r#"{"type":"TOOL_CALL_ARGS","toolCallId":"c1","delta":"{\"q\":1}"}"#,
        r#"{"type":"TOOL_CALL_END","toolCallId":"c1"}"#,
        r#"{"type":"REASONING_ENCRYPTED_VALUE","subtype":"tool-call","entityId":"c1","encryptedValue":"enc-call"}"#,
        r#"{"type":"TOOL_CALL_RESULT","messageId":"t1","toolCallId":"c1","content":"found"}"#,
        TEXT[0],
        TEXT[1],
        r#"{"type":"TEXT_MESSAGE_END","messageId":"m"}"#,
        FINISHED,
    ]);
    let second = sse_answer(&[STARTED, TEXT[0], TEXT[1], FINISHED]);
    let (url, mut bodies) = recording_agent(vec![first, second]).await;
    let server = server_with_agents(&[("enc", &url, 30)]).await;
    let events = server
        .chat_stream("agent/enc", "first")
        .await
        .collect()
        .await;
    assert_invariants(&events);
    let message = message_of(&events);
    // Each text, reasoning part, call and result keeps the agent's id; two also their values.
    assert_eq!(message.agent_state.len(), 4, "{:?}", message.agent_state);
    let EventKind::MessageStarted {
        conversation_id, ..
    } = events[0].kind.clone()
    else {
        panic!("message_started first");
    };
    let response = server
        .client
        .post(server.url("/api/chat"))
        .header("accept", "text/event-stream")
        .json(&json!({"content": "second", "conversation_id": conversation_id}))
        .send()
        .await
        .expect("the next run");
    let events = SseStream::new(response).collect().await;
    assert!(
        is_type(events.last().expect("end"), "message_final"),
        "{events:#?}"
    );
    let _first = bodies.recv().await.expect("the first request");
    let next = bodies.recv().await.expect("the next request");
    let body: Value =
        serde_json::from_str(&next[next.find("\r\n\r\n").expect("a body") + 4..]).expect("JSON");
    assert_sent_back(body["messages"].as_array().expect("messages"));
}

/// The next request's messages carry the first run's, under the agent's ids, each with its
/// encrypted value, then the new question.
fn assert_sent_back(messages: &[Value]) {
    let reasoning = messages
        .iter()
        .find(|m| m["role"] == "reasoning")
        .expect("the reasoning message");
    assert_eq!(reasoning["content"], "thinking");
    assert_eq!(reasoning["id"], "r1", "the agent's own id");
    assert_eq!(reasoning["encryptedValue"], "enc-reasoning");
    let call = messages
        .iter()
        .find_map(|m| m["toolCalls"].get(0))
        .expect("the call");
    assert_eq!(call["encryptedValue"], "enc-call");
    assert_eq!(call["id"], "c1");
    assert_eq!(call["function"]["arguments"], "{\"q\":1}");
    let result = messages
        .iter()
        .find(|m| m["role"] == "tool")
        .expect("result");
    assert_eq!(result["content"], "found");
    assert_eq!(result["id"], "t1");
    assert_eq!(result["toolCallId"], "c1");
    assert!(messages
        .iter()
        .any(|m| m["role"] == "assistant" && m["id"] == "m" && m["content"] == "kept"));
    assert_eq!(messages.last().expect("last")["content"], "second");
}

#[tokio::test]
async fn after_a_stop_during_approval_the_next_run_cancels_the_interrupt_and_goes_on() {
    let dir = test_dir();
    let agent = PythonAgent::start("pydantic_agent.py", &dir);
    let server = server_with_agents(&[("pyd", &agent.url, 30)]).await;
    let (run_id, _call_id, stream) = until_approval(&server).await;
    let conversation_id = match &server.subscribe(&run_id, None).await.next_event().await {
        Some(Event {
            kind: EventKind::MessageStarted {
                conversation_id, ..
            },
            ..
        }) => conversation_id.clone(),
        other => panic!("message_started first: {other:?}"),
    };
    server
        .post_json(&format!("/api/runs/{run_id}/cancel"), json!({}))
        .await;
    stream.collect().await;
    // The agent (stateless pydantic-ai) gets the pending call back with its interrupt cancelled,
    // and answers the new question.
    let response = server
        .client
        .post(server.url("/api/chat"))
        .header("accept", "text/event-stream")
        .json(&json!({"content": "hello again", "conversation_id": conversation_id}))
        .send()
        .await
        .expect("the next run");
    let events = SseStream::new(response).collect().await;
    assert_invariants(&events);
    assert!(
        is_type(events.last().expect("end"), "message_final"),
        "{events:#?}"
    );
    let text = message_of(&events).text();
    assert!(
        text.contains("hello again") || text.contains("did not delete"),
        "{text}"
    );
}

#[tokio::test]
async fn a_stopped_request_is_in_the_trace() {
    let dir = test_dir();
    let agent = PythonAgent::start("pydantic_agent.py", &dir);
    let server = server_with_agents(&[("pyd", &agent.url, 30)]).await;
    let mut stream = server.chat_stream("agent/pyd", "sleep for a while").await;
    let events = stream
        .until(|event| matches!(&event.kind, EventKind::ToolCallUpdate { args: Some(_), .. }))
        .await;
    let run_id = events[0].run_id.clone();
    server
        .post_json(&format!("/api/runs/{run_id}/cancel"), json!({}))
        .await;
    let rest = stream.collect().await;
    let trace_id = message_of(&rest).trace_id.expect("a trace");
    let turns = server
        .get_json(&format!("/api/traces/{trace_id}/model-turns"))
        .await
        .1;
    let text = turns.to_string();
    assert!(
        text.contains("sleep for a while") && text.contains("stopped"),
        "{text}"
    );
}
