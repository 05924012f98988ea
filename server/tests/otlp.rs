//! The OpenTelemetry export: the real binary sends its finished runs over OTLP/HTTP (protobuf) to a
//! receiver this test runs, which decodes them with the protocol's own types. A demo run, a model
//! run with two tools through a fake OpenAI-compatible server, a cancelled and a failed run arrive
//! as GenAI spans with their parents, times and attributes, without secrets and, unless asked,
//! without content; a collector that is down or never answers slows no run and is reported by
//! `/healthz`; a run a crash cut off is exported once by the next start.

mod common;

use std::{
    collections::HashMap,
    convert::Infallible,
    process::Stdio,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use axum::{
    body::{Body, Bytes},
    extract::State,
    response::Response,
    routing::post,
    Json, Router,
};
use common::*;
use opentelemetry_proto::tonic::{
    collector::trace::v1::{ExportTraceServiceRequest, ExportTraceServiceResponse},
    common::v1::{any_value, AnyValue, KeyValue},
    trace::v1::{status::StatusCode, Span},
};
use prost::Message as _;
use serde_json::{json, Value};

const KEY_VARIABLE: &str = "GLASSBOX_TEST_PROVIDER_KEY";
const KEY: &str = "sk-test-0123456789-never-leak";
/// Secrets where a run can carry them: a workspace file a tool reads, tool arguments, the answer.
const SECRET_FILE: &str = "db:\n  host: db.internal\n  password: otlp-pass-001\n";
const SECRET_MARKERS: [&str; 3] = ["pass-001", "key-002", "AbCdEfGhIjKlMnOpQrStUvWxYz012345"];
/// What the model run's prompt and answer say: content, never exported without `--otlp-content`.
const PROMPT: &str = "Where are the TODOs of the otlp test?";
const ANSWER: &str = "Found one TODO in the notes.";

// ---- the OTLP receiver ----

/// What the receiver got: each request's raw bytes and its spans.
#[derive(Clone, Default)]
struct Receiver {
    bodies: Arc<Mutex<Vec<Vec<u8>>>>,
    headers: Arc<Mutex<Vec<axum::http::HeaderMap>>>,
    spans: Arc<Mutex<Vec<Span>>>,
}

async fn traces(
    State(receiver): State<Receiver>,
    headers: axum::http::HeaderMap,
    body: Bytes,
) -> Response {
    let Ok(request) = ExportTraceServiceRequest::decode(body.clone()) else {
        return Response::builder()
            .status(400)
            .body(Body::empty())
            .unwrap_or_default();
    };
    receiver.bodies.lock().expect("lock").push(body.to_vec());
    receiver.headers.lock().expect("lock").push(headers);
    let spans = request
        .resource_spans
        .into_iter()
        .flat_map(|resource| resource.scope_spans)
        .flat_map(|scope| scope.spans);
    receiver.spans.lock().expect("lock").extend(spans);
    Response::builder()
        .header("content-type", "application/x-protobuf")
        .body(Body::from(
            ExportTraceServiceResponse::default().encode_to_vec(),
        ))
        .unwrap_or_default()
}

/// Starts a receiver; answers it and its base URL.
async fn start_receiver() -> (Receiver, String) {
    let receiver = Receiver::default();
    let router = Router::new()
        .route("/v1/traces", post(traces))
        .with_state(receiver.clone());
    let base = serve_router(router).await;
    (receiver, base)
}

impl Receiver {
    /// The spans of `trace_id` (a Glassbox trace id), once `count` of them have arrived.
    async fn spans_of(&self, trace_id: &str, count: usize) -> Vec<Span> {
        let otel_id = otel_trace_id(trace_id);
        for _ in 0..200 {
            let spans: Vec<Span> = self
                .spans
                .lock()
                .expect("lock")
                .iter()
                .filter(|span| span.trace_id == otel_id)
                .cloned()
                .collect();
            if spans.len() >= count {
                return spans;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("fewer than {count} spans of {trace_id} arrived");
    }

    /// Every byte the receiver got.
    fn raw(&self) -> Vec<u8> {
        self.bodies.lock().expect("lock").concat()
    }
}

fn otel_trace_id(trace_id: &str) -> Vec<u8> {
    let hex = trace_id.rsplit('_').next().expect("hex");
    u128::from_str_radix(hex, 16)
        .expect("a Glassbox trace id is hex")
        .to_be_bytes()
        .to_vec()
}

// ---- the fake OpenAI-compatible server ----

fn chunk(delta: Value) -> String {
    let body = json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "tools",
                      "choices": [{"index": 0, "delta": delta, "finish_reason": null}]});
    format!("data: {body}\n\n")
}

fn finish(reason: &str, usage: Value) -> String {
    let end = json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {}, "finish_reason": reason}]});
    let usage = json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "choices": [], "usage": usage});
    format!("data: {end}\n\ndata: {usage}\n\ndata: [DONE]\n\n")
}

fn sse(frames: Vec<String>) -> Response {
    let stream = futures::stream::iter(
        frames
            .into_iter()
            .map(|f| Ok::<_, Infallible>(Bytes::from(f))),
    );
    Response::builder()
        .header("content-type", "text/event-stream")
        .body(Body::from_stream(stream))
        .unwrap_or_default()
}

/// `tools`: two tool calls (one reads the secret file with a secret argument), then the answer;
/// `auth`: the provider refuses the key.
async fn completions(Json(body): Json<Value>) -> Response {
    let has_results = body["messages"]
        .as_array()
        .is_some_and(|m| m.iter().any(|m| m["role"] == "tool"));
    match (body["model"].as_str(), has_results) {
        (Some("tools"), false) => sse(vec![
            chunk(json!({"role": "assistant", "content": null})),
            chunk(
                json!({"tool_calls": [{"index": 0, "id": "call_a", "type": "function", "function": {"name": "grep_search", "arguments": "{\"query\": \"TODO\"}"}}]}),
            ),
            chunk(
                json!({"tool_calls": [{"index": 1, "id": "call_b", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\": \"app.yaml\", \"api_key\": \"otlp-key-002\"}"}}]}),
            ),
            finish(
                "tool_calls",
                json!({"prompt_tokens": 100, "completion_tokens": 20}),
            ),
        ]),
        (Some("tools"), true) => sse(vec![
            chunk(json!({"content": "Found one TODO "})),
            chunk(json!({"content": "in the notes."})),
            finish(
                "stop",
                json!({"prompt_tokens": 300, "completion_tokens": 5,
                       "prompt_tokens_details": {"cached_tokens": 256},
                       "completion_tokens_details": {"reasoning_tokens": 3}}),
            ),
        ]),
        _ => Response::builder()
            .status(401)
            .header("content-type", "application/json")
            .body(Body::from(
                json!({"error": {"message": "Incorrect API key provided."}}).to_string(),
            ))
            .unwrap_or_default(),
    }
}

async fn start_fake() -> String {
    let router = Router::new().route("/v1/chat/completions", post(completions));
    let base = format!("{}/v1", serve_router(router).await);
    base
}

// ---- the binary and its runs ----

/// A test directory with the secret file, a slow and a secret-carrying scenario, and a providers
/// file naming the fake.
async fn prepared_dir() -> Arc<tempfile::TempDir> {
    let dir = test_dir();
    std::fs::write(dir.path().join("workspace/app.yaml"), SECRET_FILE).expect("secret file");
    write_scenario(
        &dir,
        "slow",
        json!({"delta_interval_ms": 0, "steps": [
            {"text": "Working."},
            {"tool_calls": [{"name": "sleep", "args": {"seconds": 60}}]}
        ]}),
    );
    write_scenario(
        &dir,
        "quick",
        json!({"delta_interval_ms": 0, "steps": [
            {"tool_calls": [{"name": "read_file", "args": {"path": "app.yaml", "token": "otlp-key-002"}}]},
            {"text": "The key sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz012345 is set."}
        ]}),
    );
    write_scenario(
        &dir,
        "ask",
        json!({"delta_interval_ms": 0, "steps": [
            {"tool_calls": [{"name": "fail", "args": {"message": "otlp-boom"}}]},
            {"text": "It failed."}
        ]}),
    );
    let fake = start_fake().await;
    let providers = json!({"providers": [
        {"name": "fake", "kind": "openai_chat", "base_url": fake, "api_key_env": KEY_VARIABLE,
         "models": ["tools", "auth"]}
    ], "max_steps": 4, "approval": {"tools": {"fail": "ask"}}});
    std::fs::write(dir.path().join("providers.json"), providers.to_string()).expect("providers");
    dir
}

/// The binary exporting to `endpoint`, with `extra` options and a 1 s export timeout.
async fn launch_exporting(dir: &tempfile::TempDir, endpoint: &str, extra: &[&str]) -> Binary {
    let providers = dir.path().join("providers.json");
    let providers = providers.to_str().expect("path");
    let mut args = vec!["--otlp-endpoint", endpoint, "--providers-file", providers];
    args.extend_from_slice(extra);
    launch_with(
        dir,
        &args,
        &[(KEY_VARIABLE, KEY), ("OTEL_EXPORTER_OTLP_TIMEOUT", "1000")],
        Stdio::null(),
    )
    .await
}

/// The binary exporting with `--otlp-content`, told where by the standard variables only: the
/// general endpoint (a base URL) and headers.
async fn launch_by_standard_variables(dir: &tempfile::TempDir, base: &str) -> Binary {
    let providers = dir.path().join("providers.json");
    let providers = providers.to_str().expect("path");
    launch_with(
        dir,
        &["--otlp-content", "--providers-file", providers],
        &[
            (KEY_VARIABLE, KEY),
            ("OTEL_EXPORTER_OTLP_ENDPOINT", base),
            (
                "OTEL_EXPORTER_OTLP_HEADERS",
                "x-otlp-test=from-the-variable",
            ),
        ],
        Stdio::null(),
    )
    .await
}

/// Starts a run of `model` and follows it; answers what the start said and the stream.
async fn start(base: &str, model: &str, prompt: &str) -> (Value, SseStream) {
    let client = reqwest::Client::new();
    let started: Value = client
        .post(format!("{base}/api/chat"))
        .header("accept", "application/json")
        .json(&json!({"content": prompt, "model": model}))
        .send()
        .await
        .expect("POST /api/chat")
        .json()
        .await
        .expect("JSON");
    let run_id = started["run_id"].as_str().expect("run id");
    let response = client
        .get(format!("{base}/api/runs/{run_id}/events"))
        .send()
        .await
        .expect("GET events");
    (started, SseStream::new(response))
}

/// Runs `model` to its end; answers its trace id.
async fn run(base: &str, model: &str, prompt: &str) -> String {
    let (started, stream) = start(base, model, prompt).await;
    let events = stream.collect().await;
    assert!(
        events.last().is_some_and(|e| e.kind.is_terminal()),
        "{model} ended"
    );
    started["trace_id"].as_str().expect("trace id").to_owned()
}

/// Starts the slow scenario, stops it once its tool runs; answers its trace id.
async fn cancelled_run(base: &str) -> String {
    let (started, mut stream) = start(base, "scenario:slow", "take your time").await;
    stream
        .until(|event| is_type(event, "tool_call_started"))
        .await;
    let run_id = started["run_id"].as_str().expect("run id");
    let response = reqwest::Client::new()
        .post(format!("{base}/api/runs/{run_id}/cancel"))
        .json(&json!({}))
        .send()
        .await
        .expect("cancel");
    assert_eq!(response.status(), 200);
    stream.collect().await;
    started["trace_id"].as_str().expect("trace id").to_owned()
}

async fn health(base: &str) -> Value {
    get_json_at(&reqwest::Client::new(), format!("{base}/healthz")).await
}

// ---- reading spans ----

fn attribute<'a>(span: &'a Span, key: &str) -> Option<&'a any_value::Value> {
    span.attributes
        .iter()
        .find(|kv: &&KeyValue| kv.key == key)
        .and_then(|kv| kv.value.as_ref())
        .and_then(|value: &AnyValue| value.value.as_ref())
}

fn text(span: &Span, key: &str) -> Option<String> {
    match attribute(span, key)? {
        any_value::Value::StringValue(text) => Some(text.clone()),
        _ => None,
    }
}

fn int(span: &Span, key: &str) -> Option<i64> {
    match attribute(span, key)? {
        any_value::Value::IntValue(n) => Some(*n),
        _ => None,
    }
}

fn texts(span: &Span, key: &str) -> Vec<String> {
    match attribute(span, key) {
        Some(any_value::Value::ArrayValue(array)) => array
            .values
            .iter()
            .filter_map(|value| match &value.value {
                Some(any_value::Value::StringValue(text)) => Some(text.clone()),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// The run's span and its children, checked: one root, every other span its child, every time
/// ordered and within the root's, every span with the conversation id. Answers (root, children).
fn checked_tree(spans: &[Span]) -> (Span, Vec<Span>) {
    let roots: Vec<&Span> = spans
        .iter()
        .filter(|s| s.parent_span_id.is_empty())
        .collect();
    assert_eq!(roots.len(), 1, "one invoke_agent span: {spans:#?}");
    let root = roots[0].clone();
    assert!(root.name.starts_with("invoke_agent "), "{}", root.name);
    assert_eq!(
        text(&root, "gen_ai.operation.name").as_deref(),
        Some("invoke_agent")
    );
    let conversation = text(&root, "gen_ai.conversation.id").expect("conversation id");
    let mut ids: Vec<&Vec<u8>> = spans.iter().map(|s| &s.span_id).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), spans.len(), "each span once");
    let children: Vec<Span> = spans
        .iter()
        .filter(|s| !s.parent_span_id.is_empty())
        .cloned()
        .collect();
    assert!(root.start_time_unix_nano > 0 && root.start_time_unix_nano <= root.end_time_unix_nano);
    for child in &children {
        assert_eq!(
            child.parent_span_id, root.span_id,
            "{} is the run's child",
            child.name
        );
        assert!(
            child.start_time_unix_nano <= child.end_time_unix_nano,
            "{}",
            child.name
        );
        assert!(
            child.start_time_unix_nano >= root.start_time_unix_nano,
            "{}",
            child.name
        );
        assert!(
            child.end_time_unix_nano <= root.end_time_unix_nano,
            "{}",
            child.name
        );
        assert_eq!(
            text(child, "gen_ai.conversation.id").as_ref(),
            Some(&conversation)
        );
    }
    (root, children)
}

fn status_code(span: &Span) -> i32 {
    span.status.as_ref().map_or(0, |status| status.code)
}

fn named<'a>(spans: &'a [Span], name: &str) -> Vec<&'a Span> {
    spans.iter().filter(|span| span.name == name).collect()
}

// ---- the tests ----

/// The model run: two `chat tools` turns with their model, provider, finish reasons, tokens and
/// time to first chunk; two `execute_tool` spans with their call ids; totals on the run.
fn check_model_run(spans: &[Span]) {
    let (root, children) = checked_tree(spans);
    assert_eq!(root.name, "invoke_agent glassbox");
    assert_eq!(status_code(&root), StatusCode::Unset as i32);
    assert_eq!(int(&root, "gen_ai.usage.input_tokens"), Some(400));
    assert_eq!(int(&root, "gen_ai.usage.output_tokens"), Some(25));
    // Cached and reasoning tokens: parts of the totals, under the GenAI semconv names.
    assert_eq!(
        int(&root, "gen_ai.usage.cache_read.input_tokens"),
        Some(256)
    );
    assert_eq!(int(&root, "gen_ai.usage.reasoning.output_tokens"), Some(3));
    let turns = named(&children, "chat tools");
    assert_eq!(turns.len(), 2, "{children:#?}");
    let mut turns = turns;
    turns.sort_by_key(|span| span.start_time_unix_nano);
    for (turn, (reason, input, output)) in turns
        .iter()
        .zip([("tool_calls", 100, 20), ("stop", 300, 5)])
    {
        assert_eq!(text(turn, "gen_ai.operation.name").as_deref(), Some("chat"));
        assert_eq!(text(turn, "gen_ai.request.model").as_deref(), Some("tools"));
        assert_eq!(
            text(turn, "gen_ai.provider.name").as_deref(),
            Some("openai")
        );
        assert_eq!(texts(turn, "gen_ai.response.finish_reasons"), [reason]);
        assert_eq!(int(turn, "gen_ai.usage.input_tokens"), Some(input));
        assert_eq!(int(turn, "gen_ai.usage.output_tokens"), Some(output));
    }
    assert_eq!(int(turns[0], "gen_ai.usage.cache_read.input_tokens"), None);
    assert_eq!(
        int(turns[1], "gen_ai.usage.cache_read.input_tokens"),
        Some(256)
    );
    // The answering turn streamed its text: when its first chunk came. (The first turn streamed
    // tool calls only, which the run shows once the turn has ended.)
    assert!(
        matches!(attribute(turns[1], "gen_ai.response.time_to_first_chunk"), Some(any_value::Value::DoubleValue(s)) if *s >= 0.0),
        "time to first chunk"
    );
    let mut tools: Vec<&Span> = children
        .iter()
        .filter(|s| s.name.starts_with("execute_tool "))
        .collect();
    tools.sort_by_key(|span| span.name.clone());
    let seen: Vec<(&str, Option<String>)> = tools
        .iter()
        .map(|s| (s.name.as_str(), text(s, "gen_ai.tool.type")))
        .collect();
    let function = Some("function".to_owned());
    assert_eq!(
        seen,
        [
            ("execute_tool grep_search", function.clone()),
            ("execute_tool read_file", function)
        ]
    );
    // Each call's id, as the run's events name it.
    let ids: Vec<String> = tools
        .iter()
        .filter_map(|s| text(s, "gen_ai.tool.call.id"))
        .collect();
    assert!(ids.len() == 2 && ids[0] != ids[1] && ids.iter().all(|id| id.starts_with("call_")));
    // The tools ran after the first turn and before the second.
    assert!(tools
        .iter()
        .all(|t| t.start_time_unix_nano >= turns[0].end_time_unix_nano
            && t.end_time_unix_nano <= turns[1].start_time_unix_nano));
}

/// The demo run: an `invoke_agent demo` span and one `execute_tool` span per tool call.
fn check_demo_run(spans: &[Span]) {
    let (root, children) = checked_tree(spans);
    assert_eq!(root.name, "invoke_agent demo");
    assert_eq!(status_code(&root), StatusCode::Unset as i32);
    let calls = int(&root, "glassbox.tool_calls").expect("tool call count");
    assert!(calls > 0, "the demo agent calls tools");
    assert_eq!(children.len() as i64, calls, "{children:#?}");
    for child in &children {
        assert!(child.name.starts_with("execute_tool "), "{}", child.name);
        assert!(text(child, "gen_ai.tool.call.id").is_some());
        assert_eq!(text(child, "gen_ai.tool.type").as_deref(), Some("function"));
    }
}

/// The stopped run: an error, `cancelled` by the user, and its tool call cancelled too.
fn check_cancelled_run(spans: &[Span]) {
    let (root, children) = checked_tree(spans);
    assert_eq!(status_code(&root), StatusCode::Error as i32);
    assert!(
        !root.status.as_ref().expect("status").message.is_empty(),
        "says why"
    );
    assert_eq!(text(&root, "error.type").as_deref(), Some("cancelled"));
    assert_eq!(
        text(&root, "glassbox.cancelled_by").as_deref(),
        Some("user")
    );
    let sleep = named(&children, "execute_tool sleep");
    assert_eq!(sleep.len(), 1);
    assert_eq!(status_code(sleep[0]), StatusCode::Error as i32);
    assert_eq!(text(sleep[0], "error.type").as_deref(), Some("cancelled"));
}

/// The refused run: an error with the run's error code, and its failed turn.
fn check_failed_run(spans: &[Span]) {
    let (root, children) = checked_tree(spans);
    assert_eq!(status_code(&root), StatusCode::Error as i32);
    let error_type = text(&root, "error.type").expect("error.type");
    assert!(
        !error_type.is_empty() && error_type != "cancelled",
        "{error_type}"
    );
    assert!(
        !root.status.as_ref().expect("status").message.is_empty(),
        "says why"
    );
    let turns = named(&children, "chat auth");
    assert_eq!(turns.len(), 1, "{children:#?}");
    assert_eq!(status_code(turns[0]), StatusCode::Error as i32);
}

/// Nothing of the runs' content, and no secret, is in what the receiver got.
fn assert_no_content_and_no_secret(raw: &[u8], spans: &[Span]) {
    let raw = String::from_utf8_lossy(raw);
    for secret in SECRET_MARKERS.iter().chain([&KEY]) {
        assert!(!raw.contains(secret), "a secret was exported: {secret}");
    }
    for content in [
        PROMPT,
        ANSWER,
        "TODO",
        "app.yaml",
        "db.internal",
        "Working.",
    ] {
        assert!(
            !raw.contains(content),
            "content was exported without --otlp-content: {content}"
        );
    }
    for key in [
        "gen_ai.tool.call.arguments",
        "gen_ai.tool.call.result",
        "gen_ai.input.messages",
        "gen_ai.output.messages",
    ] {
        assert!(
            spans.iter().all(|span| attribute(span, key).is_none()),
            "{key} was exported"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn demo_model_cancelled_and_failed_runs_arrive_as_genai_spans_without_content() {
    let dir = prepared_dir().await;
    let (receiver, endpoint) = start_receiver().await;
    let binary = launch_exporting(&dir, &endpoint, &[]).await;
    let base = binary.base.clone();
    let demo = run(&base, "demo", "Where do checkpoints run?").await;
    let model = run(&base, "fake/tools", PROMPT).await;
    let cancelled = cancelled_run(&base).await;
    let failed = run(&base, "fake/auth", "hello").await;

    let model_spans = receiver.spans_of(&model, 5).await;
    check_model_run(&model_spans);
    check_demo_run(&receiver.spans_of(&demo, 2).await);
    check_cancelled_run(&receiver.spans_of(&cancelled, 2).await);
    check_failed_run(&receiver.spans_of(&failed, 2).await);
    let all = receiver.spans.lock().expect("lock").clone();
    assert_no_content_and_no_secret(&receiver.raw(), &all);

    let otlp = &health(&base).await["otlp"];
    assert_eq!(otlp["sent"], 4, "{otlp}");
    assert_eq!(otlp["dropped"], 0, "{otlp}");
    assert_eq!(otlp["last_error"], Value::Null, "{otlp}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_otlp_content_tool_calls_and_messages_are_exported_redacted() {
    let dir = prepared_dir().await;
    let (receiver, endpoint) = start_receiver().await;
    let binary = launch_by_standard_variables(&dir, &endpoint).await;
    let quick = run(&binary.base, "scenario:quick", "read the settings").await;
    let model = run(&binary.base, "fake/tools", PROMPT).await;
    let quick_spans = receiver.spans_of(&quick, 2).await;
    let model_spans = receiver.spans_of(&model, 5).await;
    check_model_run(&model_spans);

    let read = named(&quick_spans, "execute_tool read_file");
    let arguments = text(read[0], "gen_ai.tool.call.arguments").expect("arguments");
    assert!(arguments.contains("app.yaml"), "{arguments}");
    let result = text(read[0], "gen_ai.tool.call.result").expect("result");
    assert!(result.contains("db.internal"), "{result}");
    let (root, _) = checked_tree(&quick_spans);
    let answer = text(&root, "gen_ai.output.messages").expect("the answer");
    assert!(answer.contains("is set."), "{answer}");
    let prompt = text(&root, "gen_ai.input.messages").expect("the prompt");
    assert!(prompt.contains("read the settings"), "{prompt}");
    let turn = model_spans
        .iter()
        .find(|span| {
            span.name == "chat tools" && texts(span, "gen_ai.response.finish_reasons") == ["stop"]
        })
        .expect("the second turn");
    let input = text(turn, "gen_ai.input.messages").expect("input messages");
    assert!(
        input.contains(PROMPT) && input.contains("tool_call_response"),
        "{input}"
    );
    let output = text(turn, "gen_ai.output.messages").expect("output messages");
    assert!(output.contains("in the notes."), "{output}");

    let raw = String::from_utf8_lossy(&receiver.raw()).into_owned();
    for secret in SECRET_MARKERS.iter().chain([&KEY]) {
        assert!(!raw.contains(secret), "a secret was exported: {secret}");
    }
    let headers = receiver.headers.lock().expect("lock").clone();
    assert!(headers.iter().all(|h| h
        .get("x-otlp-test")
        .is_some_and(|v| v == "from-the-variable")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_stopped_by_a_shutdown_is_exported_before_the_server_exits() {
    let dir = prepared_dir().await;
    let (receiver, endpoint) = start_receiver().await;
    let mut binary = launch_exporting(&dir, &endpoint, &[]).await;
    let (started, mut stream) = start(&binary.base, "scenario:slow", "go").await;
    stream
        .until(|event| is_type(event, "tool_call_started"))
        .await;
    let pid = binary.child.id().expect("pid").to_string();
    let status = std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .expect("kill -TERM");
    assert!(status.success());
    let exited = tokio::time::timeout(Duration::from_secs(15), binary.child.wait()).await;
    assert!(exited.is_ok(), "the server exited");
    // Arrived before the exit: no waiting now.
    let otel_id = otel_trace_id(started["trace_id"].as_str().expect("trace id"));
    let spans: Vec<Span> = receiver
        .spans
        .lock()
        .expect("lock")
        .iter()
        .filter(|span| span.trace_id == otel_id)
        .cloned()
        .collect();
    let (root, _) = checked_tree(&spans);
    assert_eq!(
        text(&root, "glassbox.cancelled_by").as_deref(),
        Some("shutdown")
    );
}

/// Runs of the quick scenario, each timed; none may take a second.
async fn timed_runs(base: &str, count: usize) -> Vec<String> {
    let mut traces = Vec::new();
    for _ in 0..count {
        let began = Instant::now();
        traces.push(run(base, "scenario:quick", "read the settings").await);
        let took = began.elapsed();
        assert!(took < Duration::from_secs(1), "a run took {took:?}");
    }
    traces
}

/// Waits until `/healthz` has dropped `count` runs with a reason; answers its `otlp`.
async fn until_dropped(base: &str, count: u64) -> Value {
    for _ in 0..150 {
        let otlp = health(base).await["otlp"].clone();
        if otlp["dropped"].as_u64() >= Some(count) && otlp["last_error"].is_string() {
            return otlp;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the dropped runs were not reported: {}", health(base).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_collector_that_is_down_or_hangs_slows_no_run_and_is_reported() {
    // Down: nothing listens on the port.
    let dir = prepared_dir().await;
    let down = format!("http://127.0.0.1:{}", free_port());
    let binary = launch_exporting(&dir, &down, &[]).await;
    timed_runs(&binary.base, 5).await;
    let otlp = until_dropped(&binary.base, 5).await;
    assert_eq!(otlp["sent"], 0, "{otlp}");
    drop(binary);

    // Hangs: takes the connection and never answers.
    let dir = prepared_dir().await;
    let hanging = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let endpoint = format!("http://{}", hanging.local_addr().expect("address"));
    let held = Arc::new(Mutex::new(Vec::new()));
    let keep = held.clone();
    tokio::spawn(async move {
        while let Ok((socket, _)) = hanging.accept().await {
            keep.lock().expect("lock").push(socket);
        }
    });
    let binary = launch_exporting(&dir, &endpoint, &[]).await;
    timed_runs(&binary.base, 5).await;
    let otlp = until_dropped(&binary.base, 5).await;
    assert_eq!(otlp["sent"], 0, "{otlp}");
    assert!(
        !held.lock().expect("lock").is_empty(),
        "the exporter did connect"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_an_endpoint_healthz_says_null() {
    let dir = prepared_dir().await;
    let binary = launch(&dir, &[]).await;
    let health = health(&binary.base).await;
    assert_eq!(health["otlp"], Value::Null, "{health}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_cut_off_by_a_crash_is_exported_once_as_interrupted_by_the_next_start() {
    let dir = prepared_dir().await;
    let (receiver, endpoint) = start_receiver().await;
    let mut binary = launch_exporting(&dir, &endpoint, &[]).await;
    let (started, mut stream) = start(&binary.base, "scenario:slow", "go").await;
    stream
        .until(|event| is_type(event, "tool_call_started"))
        .await;
    // Past one checkpoint window (250 ms), so the events are stored.
    tokio::time::sleep(Duration::from_millis(700)).await;
    binary.child.start_kill().expect("SIGKILL");
    let _ = binary.child.wait().await;
    let trace_id = started["trace_id"].as_str().expect("trace id");
    assert!(
        receiver.spans.lock().expect("lock").is_empty(),
        "nothing ended yet"
    );

    let binary = launch_exporting(&dir, &endpoint, &[]).await;
    let spans = receiver.spans_of(trace_id, 2).await;
    let (root, children) = checked_tree(&spans);
    assert_eq!(status_code(&root), StatusCode::Error as i32);
    assert_eq!(text(&root, "error.type").as_deref(), Some("interrupted"));
    assert_eq!(named(&children, "execute_tool sleep").len(), 1);
    // Once: a later start exports it no more.
    let mut binary = binary;
    binary.child.start_kill().expect("SIGKILL");
    let _ = binary.child.wait().await;
    let binary = launch_exporting(&dir, &endpoint, &[]).await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let roots: HashMap<Vec<u8>, usize> = receiver
        .spans
        .lock()
        .expect("lock")
        .iter()
        .filter(|span| span.parent_span_id.is_empty())
        .fold(HashMap::new(), |mut seen, span| {
            *seen.entry(span.trace_id.clone()).or_default() += 1;
            seen
        });
    assert_eq!(
        roots.values().copied().collect::<Vec<_>>(),
        [1],
        "exported once"
    );
    assert_eq!(health(&binary.base).await["otlp"]["sent"], 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_of_a_lost_instance_is_exported_once_by_the_survivors() {
    if postgres_only("several instances share a PostgreSQL database") {
        return;
    }
    let dir = prepared_dir().await;
    let (receiver, endpoint) = start_receiver().await;
    let mut a = launch_exporting(&dir, &endpoint, &["--instance-id", "a"]).await;
    let b = launch_exporting(&dir, &endpoint, &["--instance-id", "b"]).await;
    let c = launch_exporting(&dir, &endpoint, &["--instance-id", "c"]).await;
    let (started, mut stream) = start(&a.base, "scenario:slow", "go").await;
    stream
        .until(|event| is_type(event, "tool_call_started"))
        .await;
    tokio::time::sleep(Duration::from_millis(700)).await;
    a.child.start_kill().expect("SIGKILL A");
    let _ = a.child.wait().await;
    // B and C both look for lost runs every 2 s once A's 6 s lease is out: one closes it.
    let trace_id = started["trace_id"].as_str().expect("trace id");
    let spans = receiver.spans_of(trace_id, 2).await;
    let (root, _) = checked_tree(&spans);
    assert_eq!(text(&root, "error.type").as_deref(), Some("interrupted"));
    // Both have looked again since: still one export.
    tokio::time::sleep(Duration::from_secs(5)).await;
    let roots = receiver
        .spans
        .lock()
        .expect("lock")
        .iter()
        .filter(|span| span.parent_span_id.is_empty())
        .count();
    assert_eq!(roots, 1, "exported once");
    let sent = |otlp: &Value| otlp["sent"].as_u64().unwrap_or(0);
    let both = sent(&health(&b.base).await["otlp"]) + sent(&health(&c.base).await["otlp"]);
    assert_eq!(both, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_that_waited_for_approval_carries_the_answer_the_wait_and_its_error() {
    let dir = prepared_dir().await;
    let (receiver, endpoint) = start_receiver().await;
    let binary = launch_exporting(&dir, &endpoint, &[]).await;
    let (started, mut stream) = start(&binary.base, "scenario:ask", "list").await;
    let asked = stream
        .until(|event| is_type(event, "tool_approval_requested"))
        .await;
    let Some(app::protocol::EventKind::ToolApprovalRequested { call_id, .. }) =
        asked.last().map(|event| &event.kind)
    else {
        panic!("asked: {asked:?}");
    };
    tokio::time::sleep(Duration::from_millis(200)).await;
    let run_id = started["run_id"].as_str().expect("run id");
    let response = reqwest::Client::new()
        .post(format!(
            "{}/api/runs/{run_id}/approvals/{call_id}",
            binary.base
        ))
        .json(&json!({"decision": "approve"}))
        .send()
        .await
        .expect("approve");
    assert_eq!(response.status(), 200);
    stream.collect().await;
    let spans = receiver
        .spans_of(started["trace_id"].as_str().expect("trace id"), 2)
        .await;
    let (_, children) = checked_tree(&spans);
    let call = named(&children, "execute_tool fail")[0];
    assert_eq!(
        text(call, "glassbox.approval.decision").as_deref(),
        Some("approve")
    );
    assert_eq!(text(call, "glassbox.approval.by").as_deref(), Some("user"));
    assert!(int(call, "glassbox.approval.wait_ms").is_some_and(|ms| ms >= 200));
    // Approved, then failed: an error with the tool error's kind, its message (content) left out.
    assert_eq!(status_code(call), StatusCode::Error as i32);
    assert_eq!(text(call, "error.type").as_deref(), Some("failed"));
    assert!(!String::from_utf8_lossy(&receiver.raw()).contains("otlp-boom"));
}
