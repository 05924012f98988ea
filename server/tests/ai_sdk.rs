//! The AI SDK UI message stream (`POST /api/ai-sdk/chat`, `GET /api/ai-sdk/chat/{id}/stream`)
//! read by the real client: npm `ai` (pinned in tools/ai-sdk, installed by scripts/test.sh) runs
//! tools/ai-sdk/check.mjs against a server started here, with a fake OpenAI-compatible model
//! server for the model run. Accounts are checked here, with two users.

mod common;

use std::{path::PathBuf, process::Stdio, time::Duration};

use axum::{
    extract::Json,
    response::{IntoResponse, Response},
    routing::post,
    Router,
};
use common::*;
use serde_json::{json, Value};

const KEY_VARIABLE: &str = "GLASSBOX_TEST_AI_SDK_KEY";

/// The fake model: two calls (`grep_search` runs, `list_dir` asks), then one answer.
async fn completions(Json(body): Json<Value>) -> Response {
    let has_results = body["messages"]
        .as_array()
        .is_some_and(|messages| messages.iter().any(|m| m["role"] == "tool"));
    let frames = if has_results {
        vec![
            json!({"choices": [{"index": 0, "delta": {"content": "Found "}}]}),
            json!({"choices": [{"index": 0, "delta": {"content": "one TODO."}}]}),
            json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
            json!({"choices": [], "usage": {"prompt_tokens": 300, "completion_tokens": 5}}),
        ]
    } else {
        vec![
            json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "call_a", "type": "function", "function": {"name": "grep_search", "arguments": "{\"query\": \"TODO\"}"}}]}}]}),
            json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 1, "id": "call_b", "type": "function", "function": {"name": "list_dir", "arguments": "{\"path\": \".\"}"}}]}}]}),
            json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
            json!({"choices": [], "usage": {"prompt_tokens": 100, "completion_tokens": 20}}),
        ]
    };
    chat_completions_stream(&frames)
}

/// An AG-UI agent (`agent/streamer`) that streams a call's arguments in two deltas, gets the
/// result and answers.
async fn streaming_agent() -> Response {
    let events = [
        r#"{"type":"RUN_STARTED","threadId":"t","runId":"r"}"#,
        r#"{"type":"TOOL_CALL_START","toolCallId":"w1","toolCallName":"weather"}"#,
        r#"{"type":"TOOL_CALL_ARGS","toolCallId":"w1","delta":"{\"city\":"}"#,
        r#"{"type":"TOOL_CALL_ARGS","toolCallId":"w1","delta":"\"Paris\"}"}"#,
        r#"{"type":"TOOL_CALL_END","toolCallId":"w1"}"#,
        r#"{"type":"TOOL_CALL_RESULT","messageId":"w1-out","toolCallId":"w1","content":"sunny"}"#,
        r#"{"type":"TEXT_MESSAGE_START","messageId":"m","role":"assistant"}"#,
        r#"{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"It is sunny."}"#,
        r#"{"type":"TEXT_MESSAGE_END","messageId":"m"}"#,
        r#"{"type":"RUN_FINISHED","threadId":"t","runId":"r"}"#,
    ];
    let text: String = events
        .iter()
        .map(|event| format!("data: {event}\n\n"))
        .collect();
    ([("content-type", "text/event-stream")], text).into_response()
}

/// The fake servers' base URL: the model under `/v1`, the agent at `/agent`.
async fn start_fake() -> String {
    let router = Router::new()
        .route("/v1/chat/completions", post(completions))
        .route("/agent", post(streaming_agent));
    let base = serve_router(router).await;
    base
}

/// A server with the fake model `fake/tools`, and a slow scenario; `list_dir` asks for approval
/// when `ask` (the demo agent lists the workspace too).
async fn start(ask: bool) -> TestServer {
    let (dir, providers) = site(ask).await;
    TestServer::start_with(dir, |config| config.providers_file = Some(providers)).await
}

/// The test folder (with the scenarios) and its providers file, for [`start`].
async fn site(ask: bool) -> (std::sync::Arc<tempfile::TempDir>, PathBuf) {
    std::env::set_var(KEY_VARIABLE, "sk-test-ai-sdk-0123456789");
    let base = start_fake().await;
    let dir = test_dir();
    let providers = dir.path().join("providers.json");
    let file = json!({
        "providers": [{"name": "fake", "kind": "openai_chat", "base_url": format!("{base}/v1"),
                       "api_key_env": KEY_VARIABLE, "models": ["tools"]}],
        "agents": [{"name": "streamer", "url": format!("{base}/agent")}],
        "approval": {"tools": {"list_dir": if ask { "ask" } else { "auto" }}},
    });
    std::fs::write(&providers, file.to_string()).expect("write providers");
    write_scenario(
        &dir,
        "long",
        json!({"delta_chars": 2, "delta_interval_ms": 50, "steps": [
            {"text": "an answer long enough to be stopped before it ends, at about fifty deltas"}
        ]}),
    );
    write_scenario(
        &dir,
        "fails",
        json!({"delta_interval_ms": 1, "steps": [
            {"text": "Partial answer"},
            {"error": {"code": "provider_error", "message": "The model failed."}}
        ]}),
    );
    write_scenario(
        &dir,
        "slow",
        json!({"delta_chars": 4, "delta_interval_ms": 40, "steps": [
            {"text": "one two three four five six seven eight nine ten eleven twelve"}
        ]}),
    );
    (dir, providers)
}

fn client_dir() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tools/ai-sdk");
    assert!(
        dir.join("node_modules/ai/package.json").exists(),
        "{}/node_modules is missing: run `npm ci` in tools/ai-sdk (scripts/test.sh does)",
        dir.display()
    );
    dir
}

/// Runs one case of check.mjs against `server`; its summary line.
async fn check(server: &TestServer, case: &str) -> Value {
    check_at(&[&server.base], case).await
}

/// Runs one case of check.mjs against the servers at `bases`.
async fn check_at(bases: &[&str], case: &str) -> Value {
    let run = tokio::process::Command::new("node")
        .arg("check.mjs")
        .arg(case)
        .args(bases)
        .current_dir(client_dir())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(Duration::from_secs(60), run)
        .await
        .expect("check.mjs finished within 60 s")
        .expect("run node");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "check.mjs {case} failed:\n{}\n{stdout}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_str(stdout.trim()).expect("a JSON summary")
}

#[tokio::test]
async fn a_demo_run_reads_into_a_ui_message() {
    let server = start(false).await;
    let summary = check(&server, "demo").await;
    // The chat's conversation is the user's own, with both questions and answers.
    let id = summary["conversation_id"]
        .as_str()
        .expect("conversation id");
    let (status, conversation) = server.get_json(&format!("/api/conversations/{id}")).await;
    assert_eq!(status, 200, "{conversation}");
    assert_eq!(conversation["messages"].as_array().map(Vec::len), Some(4));
}

#[tokio::test]
async fn an_agents_streamed_arguments_arrive_as_input_deltas() {
    let server = start(false).await;
    let summary = check(&server, "agent").await;
    assert_eq!(summary["deltas"], 1, "{summary}");
}

#[tokio::test]
async fn a_model_run_with_tools_pauses_for_approval_and_continues() {
    let server = start(true).await;
    let summary = check(&server, "model").await;
    let trace = server
        .inspector(summary["trace_id"].as_str().expect("trace id"))
        .await;
    // The answer reached the run as the approval endpoint's does: recorded, with its reason.
    let listed = trace
        .as_array()
        .and_then(|steps| steps.iter().find(|step| step["tool_name"] == "list_dir"))
        .expect("the list_dir call in the trace");
    assert_eq!(listed["approval"]["decision"], "approve", "{listed}");
    assert_eq!(listed["approval"]["reason"], "fine");
    assert_eq!(listed["status"], "success");
}

#[tokio::test]
async fn the_sdk_chat_answers_an_approval_with_add_tool_approval_response() {
    let server = start(true).await;
    check(&server, "chat").await;
}

#[tokio::test]
async fn a_dropped_response_resumes_from_the_start_without_duplicates() {
    let server = start(true).await;
    check(&server, "resume").await;
}

#[tokio::test]
async fn stop_is_the_cancel_endpoint_and_the_stream_ends_with_abort() {
    let server = start(true).await;
    check(&server, "stop").await;
}

#[tokio::test]
async fn a_failed_run_ends_with_an_error_chunk_then_finish() {
    let server = start(true).await;
    check(&server, "failed").await;
}

/// Two instances on one PostgreSQL database: a run started on A is resumed, answered and
/// continued through B (B reads it from the database, A carries out the answer).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "several instances need PostgreSQL: GLASSBOX_TEST_STORE=postgres ... --include-ignored"]
async fn a_run_of_another_instance_resumes_and_takes_its_answer() {
    if postgres_only("two instances share one database") {
        return;
    }
    let (dir, providers) = site(true).await;
    let on = |name: &'static str| {
        let providers = providers.clone();
        move |config: &mut glassbox::config::Config| {
            config.providers_file = Some(providers);
            config.instance_id = Some(name.to_owned());
        }
    };
    let a = TestServer::start_with(dir.clone(), on("instance-a")).await;
    let b = TestServer::start_with(dir, on("instance-b")).await;
    check_at(&[&a.base, &b.base], "instances").await;
}

#[tokio::test]
async fn bad_requests_get_json_errors() {
    let server = start(true).await;
    check(&server, "errors").await;
}

/// Signs `name` in on the binary at `base`; their session cookie (`name=value`).
async fn sign_in(base: &str, name: &str) -> String {
    let response = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("client")
        .post(format!("{base}/auth/login"))
        .form(&[("name", name), ("password", &format!("{name}-password"))])
        .send()
        .await
        .expect("sign in");
    let cookie = response
        .headers()
        .get(reqwest::header::SET_COOKIE)
        .and_then(|value| value.to_str().ok())
        .expect("a session cookie");
    cookie.split(';').next().unwrap_or_default().to_owned()
}

/// A user of the binary at `base`, as the AI SDK's transport calls it.
struct Caller {
    base: String,
    cookie: String,
    client: reqwest::Client,
}

impl Caller {
    async fn chat(&self, body: Value) -> reqwest::Response {
        self.client
            .post(format!("{}/api/ai-sdk/chat", self.base))
            .header(reqwest::header::COOKIE, &self.cookie)
            .json(&body)
            .send()
            .await
            .expect("POST /api/ai-sdk/chat")
    }

    async fn get(&self, path: &str) -> (u16, Value) {
        let response = self
            .client
            .get(format!("{}{path}", self.base))
            .header(reqwest::header::COOKIE, &self.cookie)
            .send()
            .await
            .expect("GET");
        let status = response.status().as_u16();
        (status, response.json().await.unwrap_or(Value::Null))
    }

    async fn resume(&self, chat_id: &str) -> reqwest::Response {
        self.client
            .get(format!("{}/api/ai-sdk/chat/{chat_id}/stream", self.base))
            .header(reqwest::header::COOKIE, &self.cookie)
            .send()
            .await
            .expect("GET .../stream")
    }
}

/// Every chunk of a whole response (`[DONE]` left out).
async fn chunks(response: reqwest::Response) -> Vec<Value> {
    assert_eq!(response.status(), 200);
    let text = response.text().await.expect("body");
    assert!(text.ends_with("data: [DONE]\n\n"), "{text}");
    text.split("\n\n")
        .filter_map(|frame| frame.strip_prefix("data: "))
        .filter(|data| *data != "[DONE]")
        .map(|data| serde_json::from_str(data).expect("a JSON chunk"))
        .collect()
}

fn run_data(chunks: &[Value]) -> &Value {
    &chunks
        .iter()
        .find(|chunk| chunk["type"] == "data-glassbox-run")
        .expect("the run's part")["data"]
}

fn user_says(text: &str) -> Value {
    json!({"id": "m1", "role": "user", "parts": [{"type": "text", "text": text}]})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chat_id_is_its_users_own() {
    let dir = test_dir();
    std::fs::write(
        dir.path().join("scenarios/slow.json"),
        json!({"delta_chars": 2, "delta_interval_ms": 50, "steps": [{"text": "a slow answer that takes a while"}]})
            .to_string(),
    )
    .expect("scenario");
    for name in ["alice", "bob"] {
        let added = add_user(&dir, name, &format!("{name}-password"));
        assert!(added.status.success(), "{added:?}");
    }
    let server = launch(&dir, &["--auth", "password"]).await;
    let caller = |cookie: String| Caller {
        base: server.base.clone(),
        cookie,
        client: reqwest::Client::new(),
    };
    let alice = caller(sign_in(&server.base, "alice").await);
    let bob = caller(sign_in(&server.base, "bob").await);
    let anonymous = caller(String::new());

    let started = alice
        .chat(json!({"id": "shared", "messages": [user_says("hi")], "model": "scenario:slow"}))
        .await;
    assert_eq!(started.status(), 200);
    // While Alice's answer runs: hers to resume, nobody else's.
    assert_eq!(bob.resume("shared").await.status(), 204);
    assert_eq!(anonymous.resume("shared").await.status(), 401);
    let mine = chunks(alice.resume("shared").await).await;
    let alices = run_data(&mine)["conversation_id"]
        .as_str()
        .expect("conversation")
        .to_owned();
    assert_eq!(bob.resume(&alices).await.status(), 204);
    // Bob's answer to an approval in that chat: he has no such chat.
    let answer = json!({"id": "shared", "messages": [user_says("hi"), {"id": "a", "role": "assistant", "parts": [
        {"type": "dynamic-tool", "toolName": "list_dir", "toolCallId": "call_1", "state": "approval-responded",
         "input": {}, "approval": {"id": "call_1", "approved": true}}]}]});
    assert_eq!(bob.chat(answer).await.status(), 404);
    // The same chat id, or Alice's conversation id as a chat id: Bob's own conversation.
    for id in ["shared", alices.as_str()] {
        let body = json!({"id": id, "messages": [user_says("mine")], "model": "scenario:slow"});
        let his = chunks(bob.chat(body).await).await;
        assert_ne!(run_data(&his)["conversation_id"], alices.as_str());
    }
    chunks(started).await;
    // Alice's conversation holds her question and answer only.
    let (status, conversation) = alice.get(&format!("/api/conversations/{alices}")).await;
    assert_eq!(status, 200, "{conversation}");
    assert_eq!(conversation["messages"].as_array().map(Vec::len), Some(2));
    assert_eq!(
        bob.get(&format!("/api/conversations/{alices}")).await.0,
        404
    );
}
