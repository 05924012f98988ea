//! The model agent loop against a fake OpenAI-compatible server that streams Chat Completions in
//! the real wire format (`data: {chunk}` lines, `data: [DONE]`).

mod common;

use std::{
    convert::Infallible,
    sync::{
        atomic::{AtomicBool, AtomicUsize, Ordering},
        Arc, Mutex,
    },
    time::Duration,
};

use app::protocol::{EventKind, Segment, ToolCallStatus};
use axum::{
    body::{Body, Bytes},
    extract::State,
    http::{HeaderMap, StatusCode},
    response::{IntoResponse, Response},
    routing::post,
    Json, Router,
};
use common::*;
use serde_json::{json, Value};

const KEY_VARIABLE: &str = "GLASSBOX_TEST_PROVIDER_KEY";
const KEY: &str = "sk-test-0123456789-never-leak";
/// The MCP tool the `mcp` model calls, and its arguments.
const MCP_TOOL: &str = "everything__echo";
const MCP_ARGS: &str = "{\"message\": \"hi from the model\"}";

#[derive(Clone, Default)]
struct Fake {
    requests: Arc<Mutex<Vec<(HeaderMap, Value)>>>,
    flaky_calls: Arc<AtomicUsize>,
    slow_stream_closed: Arc<AtomicBool>,
}

fn chunk(delta: Value) -> String {
    let body = json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "m",
                      "choices": [{"index": 0, "delta": delta, "finish_reason": null}]});
    format!("data: {body}\n\n")
}

fn finish(reason: &str, usage: Option<Value>) -> String {
    let mut out = format!(
        "data: {}\n\n",
        json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {}, "finish_reason": reason}]})
    );
    if let Some(usage) = usage {
        out.push_str(&format!("data: {}\n\n", json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "choices": [], "usage": usage})));
    }
    out.push_str("data: [DONE]\n\n");
    out
}

fn sse(frames: Vec<String>) -> Response {
    let stream = futures::stream::iter(
        frames
            .into_iter()
            .map(|frame| Ok::<_, Infallible>(Bytes::from(frame))),
    );
    Response::builder()
        .header("content-type", "text/event-stream")
        .body(Body::from_stream(stream))
        .unwrap_or_default()
}

impl Fake {
    /// The bodies of the last `n` requests, oldest first.
    fn last_bodies(&self, n: usize) -> Vec<Value> {
        let requests = self.requests.lock().unwrap_or_else(|p| p.into_inner());
        let from = requests.len().saturating_sub(n);
        requests[from..]
            .iter()
            .map(|(_, body)| body.clone())
            .collect()
    }
}

/// Closes its flag when the response body is dropped: the client went away.
struct DropFlag(Arc<AtomicBool>);
impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

async fn completions(
    State(fake): State<Fake>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    fake.requests
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .push((headers, body.clone()));
    let model = body["model"].as_str().unwrap_or_default().to_owned();
    let has_tool_results = body["messages"]
        .as_array()
        .is_some_and(|m| m.iter().any(|m| m["role"] == "tool"));
    match model.as_str() {
        "tools" if !has_tool_results => sse(vec![
            chunk(json!({"role": "assistant", "content": null})),
            chunk(
                json!({"tool_calls": [{"index": 0, "id": "call_a", "type": "function", "function": {"name": "grep_search", "arguments": ""}}]}),
            ),
            chunk(json!({"tool_calls": [{"index": 0, "function": {"arguments": "{\"que"}}]})),
            chunk(
                json!({"tool_calls": [{"index": 1, "id": "call_b", "type": "function", "function": {"name": "list_dir", "arguments": "{\"path\""}}]}),
            ),
            chunk(
                json!({"tool_calls": [{"index": 0, "function": {"arguments": "ry\": \"TODO\"}"}}]}),
            ),
            chunk(json!({"tool_calls": [{"index": 1, "function": {"arguments": ": \".\"}"}}]})),
            finish(
                "tool_calls",
                Some(json!({"prompt_tokens": 100, "completion_tokens": 20})),
            ),
        ]),
        // An MCP tool of the everything server, by its `<server>__<tool>` name.
        "mcp" if !has_tool_results => sse(vec![
            chunk(
                json!({"tool_calls": [{"index": 0, "id": "call_m", "type": "function", "function": {"name": MCP_TOOL, "arguments": MCP_ARGS}}]}),
            ),
            finish("tool_calls", None),
        ]),
        "mcp" => sse(vec![
            chunk(json!({"content": "Echoed."})),
            finish("stop", None),
        ]),
        "tools" => sse(vec![
            chunk(json!({"content": "Found "})),
            chunk(json!({"content": "one TODO."})),
            finish(
                "stop",
                Some(json!({"prompt_tokens": 300, "completion_tokens": 5})),
            ),
        ]),
        // Credentials everywhere a model can put them, each split across two chunks.
        "leaky" if !has_tool_results => sse(vec![
            chunk(json!({"reasoning_content": "The key sk-proj-AbCdEfGh"})),
            chunk(json!({"reasoning_content": "IjKlMnOpQrStUvWxYz0123456789 is set. "})),
            chunk(
                json!({"tool_calls": [{"index": 0, "id": "call_a", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\": \"prod.txt\", \"password\": \"plain-"}}]}),
            ),
            chunk(
                json!({"tool_calls": [{"index": 0, "function": {"arguments": "words-hunter2"}}]}),
            ),
            chunk(
                json!({"tool_calls": [{"index": 1, "id": "call_b", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\": \"prod.txt\"}"}}]}),
            ),
            finish("tool_calls", None),
        ]),
        "leaky" => sse(vec![
            chunk(json!({"content": "Your token is ghp_AbCdEfGhIjKlMn"})),
            chunk(json!({"content": "OpQrStUvWxYz0123456789 and more."})),
            finish("stop", None),
        ]),
        "reasoning" => sse(vec![
            chunk(json!({"reasoning_content": "Let me "})),
            chunk(json!({"reasoning_content": "think."})),
            chunk(json!({"content": "Done thinking."})),
            finish(
                "stop",
                Some(
                    json!({"prompt_tokens": 10, "completion_tokens": 8, "completion_tokens_details": {"reasoning_tokens": 4}}),
                ),
            ),
        ]),
        // Three calls; the first one's tool panics before it returns its future.
        "panicky" if !has_tool_results => sse(vec![
            chunk(
                json!({"tool_calls": [{"index": 0, "id": "call_a", "type": "function", "function": {"name": "fail", "arguments": "{\"panic_early\": true}"}}]}),
            ),
            chunk(
                json!({"tool_calls": [{"index": 1, "id": "call_b", "type": "function", "function": {"name": "list_dir", "arguments": "{\"path\": \".\"}"}}]}),
            ),
            chunk(
                json!({"tool_calls": [{"index": 2, "id": "call_c", "type": "function", "function": {"name": "fail", "arguments": "{\"message\": \"third\"}"}}]}),
            ),
            finish("tool_calls", None),
        ]),
        "panicky" => sse(vec![
            chunk(json!({"content": "Recovered."})),
            finish("stop", None),
        ]),
        // Bookkeeping no provider should send: a negative and an oversized count.
        "wild" => sse(vec![
            chunk(json!({"content": "Counted badly."})),
            finish(
                "stop",
                Some(
                    json!({"prompt_tokens": -5, "completion_tokens": 1e30, "completion_tokens_details": {"reasoning_tokens": 2e20}}),
                ),
            ),
        ]),
        "think" => sse(vec![
            chunk(json!({"content": "<thi"})),
            chunk(json!({"content": "nk>I should plan</th"})),
            chunk(json!({"content": "ink>The answer."})),
            finish("stop", None),
        ]),
        "malformed" => sse(vec![
            chunk(json!({"content": "Partial "})),
            "data: {not json\n\n".to_owned(),
        ]),
        "reset" => {
            // One chunk, a pause (so it is flushed), then the connection breaks.
            let stream = futures::stream::unfold(0u8, |step| async move {
                match step {
                    0 => Some((
                        Ok::<_, std::io::Error>(Bytes::from(chunk(
                            json!({"content": "Half an answer"}),
                        ))),
                        1,
                    )),
                    1 => {
                        tokio::time::sleep(Duration::from_millis(200)).await;
                        Some((Err(std::io::Error::other("connection reset")), 2))
                    }
                    _ => None,
                }
            });
            Response::builder()
                .header("content-type", "text/event-stream")
                .body(Body::from_stream(stream))
                .unwrap_or_default()
        }
        "slow" => {
            let flag = DropFlag(fake.slow_stream_closed.clone());
            let stream = futures::stream::unfold((0u32, flag), |(n, flag)| async move {
                tokio::time::sleep(Duration::from_millis(100)).await;
                Some((
                    Ok::<_, Infallible>(Bytes::from(chunk(
                        json!({"content": format!("word{n} ")}),
                    ))),
                    (n + 1, flag),
                ))
            });
            Response::builder()
                .header("content-type", "text/event-stream")
                .body(Body::from_stream(stream))
                .unwrap_or_default()
        }
        "flaky" if fake.flaky_calls.fetch_add(1, Ordering::SeqCst) == 0 => (
            StatusCode::TOO_MANY_REQUESTS,
            Json(json!({"error": {"message": "slow down"}})),
        )
            .into_response(),
        "flaky" => sse(vec![
            chunk(json!({"content": "Second time lucky."})),
            finish("stop", None),
        ]),
        "auth" => (
            StatusCode::UNAUTHORIZED,
            Json(json!({"error": {"message": "Incorrect API key provided."}})),
        )
            .into_response(),
        _ => (
            StatusCode::NOT_FOUND,
            Json(json!({"error": {"message": format!("The model `{model}` does not exist")}})),
        )
            .into_response(),
    }
}

/// `event: <type>` + `data: <json>` frames, as the Responses and Anthropic APIs send them.
fn typed(events: Vec<Value>) -> Vec<String> {
    events
        .into_iter()
        .map(|event| {
            format!(
                "event: {}\ndata: {event}\n\n",
                event["type"].as_str().unwrap_or_default()
            )
        })
        .collect()
}

/// Streams `frames`; for `reset` sends the first then breaks the connection; for `slow` never ends.
fn typed_response(
    model: &str,
    fake: &Fake,
    frames: Vec<String>,
    slow_frame: fn(u32) -> String,
) -> Response {
    match model {
        "reset" => {
            let first = frames.concat();
            let stream = futures::stream::unfold(0u8, move |step| {
                let first = first.clone();
                async move {
                    match step {
                        0 => Some((Ok::<_, std::io::Error>(Bytes::from(first)), 1)),
                        1 => {
                            tokio::time::sleep(Duration::from_millis(200)).await;
                            Some((Err(std::io::Error::other("connection reset")), 2))
                        }
                        _ => None,
                    }
                }
            });
            Response::builder()
                .header("content-type", "text/event-stream")
                .body(Body::from_stream(stream))
                .unwrap_or_default()
        }
        "slow" => {
            let flag = DropFlag(fake.slow_stream_closed.clone());
            let stream = futures::stream::unfold((0u32, flag), move |(n, flag)| async move {
                tokio::time::sleep(Duration::from_millis(100)).await;
                Some((
                    Ok::<_, Infallible>(Bytes::from(slow_frame(n))),
                    (n + 1, flag),
                ))
            });
            Response::builder()
                .header("content-type", "text/event-stream")
                .body(Body::from_stream(stream))
                .unwrap_or_default()
        }
        _ => sse(frames),
    }
}

fn responses_text(delta: &str) -> Value {
    json!({"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 0, "content_index": 0, "delta": delta})
}

fn responses_completed(input: u64, output: u64) -> Value {
    json!({"type": "response.completed", "response": {"status": "completed",
           "usage": {"input_tokens": input, "output_tokens": output, "output_tokens_details": {"reasoning_tokens": 3}}}})
}

async fn responses(
    State(fake): State<Fake>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    fake.requests
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .push((headers, body.clone()));
    let model = body["model"].as_str().unwrap_or_default().to_owned();
    let has_outputs = body["input"]
        .as_array()
        .is_some_and(|items| items.iter().any(|i| i["type"] == "function_call_output"));
    let (text, completed) = (responses_text, responses_completed);
    let frames = match model.as_str() {
        "tools" if !has_outputs => typed(vec![
            json!({"type": "response.created", "response": {"status": "in_progress"}}),
            json!({"type": "response.output_item.added", "output_index": 0, "item": {"type": "function_call", "id": "fc_1", "call_id": "call_a", "name": "grep_search", "arguments": ""}}),
            json!({"type": "response.function_call_arguments.delta", "item_id": "fc_1", "output_index": 0, "delta": "{\"query\":"}),
            json!({"type": "response.output_item.added", "output_index": 1, "item": {"type": "function_call", "id": "fc_2", "call_id": "call_b", "name": "list_dir", "arguments": ""}}),
            json!({"type": "response.function_call_arguments.delta", "item_id": "fc_1", "output_index": 0, "delta": " \"TODO\"}"}),
            json!({"type": "response.function_call_arguments.done", "item_id": "fc_2", "output_index": 1, "arguments": "{\"path\": \".\"}"}),
            completed(100, 20),
        ]),
        "tools" => typed(vec![text("Found "), text("one TODO."), completed(300, 5)]),
        "mcp" if !has_outputs => typed(vec![
            json!({"type": "response.output_item.added", "output_index": 0, "item": {"type": "function_call", "id": "fc_m", "call_id": "call_m", "name": MCP_TOOL, "arguments": MCP_ARGS}}),
            completed(10, 2),
        ]),
        "mcp" => typed(vec![text("Echoed."), completed(10, 2)]),
        "reasoning" => typed(vec![
            json!({"type": "response.reasoning_summary_part.added", "item_id": "rs_1", "output_index": 0, "summary_index": 0}),
            json!({"type": "response.reasoning_summary_text.delta", "item_id": "rs_1", "output_index": 0, "summary_index": 0, "delta": "Let me "}),
            json!({"type": "response.reasoning_summary_text.delta", "item_id": "rs_1", "output_index": 0, "summary_index": 0, "delta": "think."}),
            json!({"type": "response.reasoning_summary_text.delta", "item_id": "rs_1", "output_index": 0, "summary_index": 1, "delta": "Second part."}),
            text("Done thinking."),
            completed(10, 8),
        ]),
        "malformed" => vec![
            typed(vec![text("Partial ")]).concat(),
            "data: {not json\n\n".to_owned(),
        ],
        _ => typed(vec![text("Half an answer")]),
    };
    typed_response(&model, &fake, frames, |n| {
        typed(vec![responses_text(&format!("word{n} "))]).concat()
    })
}

fn anthropic_text(index: u64, text: &str) -> Value {
    json!({"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": text}})
}

async fn messages(
    State(fake): State<Fake>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    fake.requests
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .push((headers, body.clone()));
    let model = body["model"].as_str().unwrap_or_default().to_owned();
    let has_results = body["messages"].as_array().is_some_and(|m| {
        m.iter().any(|m| {
            m["content"]
                .as_array()
                .is_some_and(|c| c.iter().any(|b| b["type"] == "tool_result"))
        })
    });
    let start = |input: u64| json!({"type": "message_start", "message": {"id": "msg_1", "role": "assistant", "usage": {"input_tokens": input, "output_tokens": 1}}});
    let block = |index: u64, content: Value| json!({"type": "content_block_start", "index": index, "content_block": content});
    let delta = |index: u64, delta: Value| json!({"type": "content_block_delta", "index": index, "delta": delta});
    let stop = |index: u64| json!({"type": "content_block_stop", "index": index});
    let end = |reason: &str, output: u64| {
        vec![
            json!({"type": "message_delta", "delta": {"stop_reason": reason}, "usage": {"output_tokens": output}}),
            json!({"type": "message_stop"}),
        ]
    };
    let text = anthropic_text;
    let frames = match model.as_str() {
        "mcp" if !has_results => typed(
            [
                vec![
                    start(10),
                    block(
                        0,
                        json!({"type": "tool_use", "id": "call_m", "name": MCP_TOOL, "input": {}}),
                    ),
                    delta(
                        0,
                        json!({"type": "input_json_delta", "partial_json": MCP_ARGS}),
                    ),
                    stop(0),
                ],
                end("tool_use", 2),
            ]
            .concat(),
        ),
        "mcp" => typed(
            [
                vec![
                    start(10),
                    block(0, json!({"type": "text", "text": ""})),
                    text(0, "Echoed."),
                    stop(0),
                ],
                end("end_turn", 2),
            ]
            .concat(),
        ),
        "tools" if !has_results => typed(
            [
                vec![start(100), json!({"type": "ping"})],
                vec![block(
                    0,
                    json!({"type": "tool_use", "id": "call_a", "name": "grep_search", "input": {}}),
                )],
                vec![
                    delta(
                        0,
                        json!({"type": "input_json_delta", "partial_json": "{\"query\":"}),
                    ),
                    delta(
                        0,
                        json!({"type": "input_json_delta", "partial_json": " \"TODO\"}"}),
                    ),
                    stop(0),
                ],
                vec![block(
                    1,
                    json!({"type": "tool_use", "id": "call_b", "name": "list_dir", "input": {}}),
                )],
                vec![
                    delta(
                        1,
                        json!({"type": "input_json_delta", "partial_json": "{\"path\": \".\"}"}),
                    ),
                    stop(1),
                ],
                end("tool_use", 20),
            ]
            .concat(),
        ),
        "tools" => typed(
            [
                vec![
                    start(300),
                    block(0, json!({"type": "text", "text": ""})),
                    text(0, "Found "),
                    text(0, "one TODO."),
                    stop(0),
                ],
                end("end_turn", 5),
            ]
            .concat(),
        ),
        "reasoning" => typed(
            [
                vec![
                    start(10),
                    block(0, json!({"type": "thinking", "thinking": ""})),
                ],
                vec![
                    delta(0, json!({"type": "thinking_delta", "thinking": "Let me "})),
                    delta(0, json!({"type": "thinking_delta", "thinking": "think."})),
                    delta(0, json!({"type": "signature_delta", "signature": "abc"})),
                    stop(0),
                ],
                vec![
                    block(1, json!({"type": "thinking", "thinking": ""})),
                    delta(
                        1,
                        json!({"type": "thinking_delta", "thinking": "Second part."}),
                    ),
                    stop(1),
                ],
                vec![
                    block(2, json!({"type": "text", "text": ""})),
                    text(2, "Done thinking."),
                    stop(2),
                ],
                end("end_turn", 8),
            ]
            .concat(),
        ),
        "malformed" => vec![
            typed(vec![
                start(1),
                block(0, json!({"type": "text", "text": ""})),
                text(0, "Partial "),
            ])
            .concat(),
            "data: {not json\n\n".to_owned(),
        ],
        _ => typed(vec![
            start(1),
            block(0, json!({"type": "text", "text": ""})),
            text(0, "Half an answer"),
        ]),
    };
    typed_response(&model, &fake, frames, |n| {
        let mut events = Vec::new();
        if n == 0 {
            events.push(json!({"type": "message_start", "message": {"usage": {"input_tokens": 1, "output_tokens": 1}}}));
            events.push(json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}));
        }
        events.push(anthropic_text(0, &format!("word{n} ")));
        typed(events).concat()
    })
}

async fn start() -> (TestServer, Fake) {
    start_with(json!({})).await
}

/// [`start`] with `extra` members added to the providers file.
async fn start_with(extra: Value) -> (TestServer, Fake) {
    let (fake, base) = start_fake().await;
    // The same value in every test, so setting it from parallel tests is harmless.
    std::env::set_var(KEY_VARIABLE, KEY);
    let dir = test_dir();
    let providers = write_providers(dir.path(), &base);
    let mut file: Value =
        serde_json::from_str(&std::fs::read_to_string(&providers).expect("read")).expect("JSON");
    if let (Some(file), Some(extra)) = (file.as_object_mut(), extra.as_object()) {
        file.extend(extra.clone());
    }
    std::fs::write(&providers, file.to_string()).expect("write");
    let server =
        TestServer::start_with(dir, |config| config.providers_file = Some(providers)).await;
    (server, fake)
}

/// The fake model server on a free port, and its `/v1` URL.
async fn start_fake() -> (Fake, String) {
    let fake = Fake::default();
    let router = Router::new()
        .route("/v1/chat/completions", post(completions))
        .route("/v1/responses", post(responses))
        .route("/v1/messages", post(messages))
        .with_state(fake.clone());
    let base = format!("{}/v1", serve_router(router).await);
    (fake, base)
}

/// `providers.json` in `dir`: the fake server under three wire formats.
fn write_providers(dir: &std::path::Path, base: &str) -> std::path::PathBuf {
    let providers = dir.join("providers.json");
    std::fs::write(
        &providers,
json!({"providers": [
            {"name": "fake", "kind": "openai_chat", "base_url": base, "api_key_env": KEY_VARIABLE,
             "models": ["tools", "mcp", "leaky", "reasoning", "wild", "panicky", "think", "malformed", "reset", "slow", "flaky", "auth", "missing"]},
            {"name": "resp", "kind": "openai_responses", "base_url": base, "api_key_env": KEY_VARIABLE,
             "models": ["tools", "mcp", "reasoning", "malformed", "reset", "slow"]},
            {"name": "anth", "kind": "anthropic", "base_url": base, "api_key_env": KEY_VARIABLE,
             "models": ["tools", "mcp", "reasoning", "malformed", "reset", "slow"]}
        ], "max_steps": 4})
        .to_string(),
    )
    .expect("write providers file");
    providers
}

/// Runs `model` on `prompt` to its end: the events, checked against the stream's invariants.
async fn run_checked(server: &TestServer, model: &str, prompt: &str) -> Vec<app::protocol::Event> {
    let events = server.chat_stream(model, prompt).await.collect().await;
    assert_invariants(&events);
    events
}

fn final_message(events: &[app::protocol::Event]) -> &app::protocol::Message {
    match &events.last().expect("events").kind {
        EventKind::MessageFinal { message, .. }
        | EventKind::MessageError { message, .. }
        | EventKind::MessageCancelled { message, .. } => message,
        other => panic!("not terminal: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_two_step_loop_runs_the_requested_tools_and_sends_their_results_back() {
    let (server, fake) = start().await;
    let events = run_checked(&server, "fake/tools", "Where are the TODOs?").await;
    assert!(matches!(
        events.last().map(|e| &e.kind),
        Some(EventKind::MessageFinal { .. })
    ));
    let message = final_message(&events);
    let calls: Vec<_> = message.tool_calls().collect();
    assert_eq!(calls.len(), 2, "both tool calls of the turn ran");
    assert_eq!(
        (calls[0].name.as_str(), &calls[0].args),
        ("grep_search", &json!({"query": "TODO"})),
        "fragments joined by index"
    );
    assert_eq!(
        (calls[1].name.as_str(), &calls[1].args),
        ("list_dir", &json!({"path": "."}))
    );
    assert!(calls
        .iter()
        .all(|call| call.status == ToolCallStatus::Success));
    assert!(calls[0].output.contains("notes.md:2"));
    assert_eq!(message.text(), "Found one TODO.");
    assert_eq!(
        message.usage.map(|u| (u.input_tokens, u.output_tokens)),
        Some((400, 25)),
        "usage of both turns"
    );

    let requests = fake
        .requests
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clone();
    assert_eq!(requests.len(), 2);
    let (headers, first) = &requests[0];
    assert_eq!(
        headers.get("authorization").and_then(|v| v.to_str().ok()),
        Some(format!("Bearer {KEY}").as_str())
    );
    assert_eq!(first["stream"], true);
    assert!(first["tools"]
        .as_array()
        .is_some_and(|t| t.iter().any(|t| t["function"]["name"] == "read_file")));
    let second = &requests[1].1["messages"];
    let tool_results: Vec<&Value> = second
        .as_array()
        .expect("messages")
        .iter()
        .filter(|m| m["role"] == "tool")
        .collect();
    assert_eq!(tool_results.len(), 2);
    assert_eq!(tool_results[0]["tool_call_id"], "call_a");
    assert!(tool_results[0]["content"]
        .as_str()
        .is_some_and(|c| c.contains("notes.md:2")));

    // Each turn is recorded, in OpenAI format, for the inspector.
    let EventKind::MessageFinal { trace_id, .. } = &events.last().expect("events").kind else {
        unreachable!()
    };
    let turns = server
        .store
        .model_turns(trace_id)
        .await
        .expect("model turns");
    assert_eq!(turns.len(), 2);
    assert_eq!(
        turns[0].response["choices"][0]["message"]["tool_calls"][0]["function"]["name"],
        "grep_search"
    );
    assert_eq!(
        turns[0].response["choices"][0]["finish_reason"],
        "tool_calls"
    );
    assert_eq!(
        turns[1].request["messages"]
            .as_array()
            .map(|m| m.iter().filter(|m| m["role"] == "tool").count()),
        Some(2)
    );
    assert_eq!(
        turns[1].response["choices"][0]["message"]["content"],
        "Found one TODO."
    );

    // The inspector export: model turn, its two tool calls, the answering turn.
    let inspector = server.inspector(trace_id).await;
    let entries = inspector.as_array().expect("a list");
    let kinds: Vec<&str> = entries.iter().filter_map(|e| e["type"].as_str()).collect();
    assert_eq!(
        kinds,
        ["llm_request", "tool_call", "tool_call", "llm_request"]
    );
    assert_eq!(entries[0]["model"], "tools");
    assert_eq!(entries[0]["conversation"][0]["role"], "user");
    assert_eq!(
        entries[0]["response"]["choices"][0]["message"]["tool_calls"][1]["function"]["name"],
        "list_dir"
    );
    assert_eq!(entries[1]["tool_name"], "grep_search");
    assert_eq!(entries[1]["arguments"], json!({"query": "TODO"}));
    assert!(entries[1]["result"]
        .as_str()
        .is_some_and(|r| r.contains("notes.md:2")));
    assert!(entries[1]["cli_output"]
        .as_str()
        .is_some_and(|r| r.contains("notes.md:2")));
    assert_eq!(
        entries[3]["response"]["choices"][0]["message"]["content"],
        "Found one TODO."
    );
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reasoning_fields_and_think_tags_become_reasoning_and_never_leak_into_the_answer() {
    let (server, _) = start().await;
    for (model, reasoning, answer) in [
        ("fake/reasoning", "Let me think.", "Done thinking."),
        ("fake/think", "I should plan", "The answer."),
    ] {
        let events = run_checked(&server, model, "Think").await;
        let message = final_message(&events);
        let Some(Segment::Reasoning(segment)) = message.segments.first() else {
            panic!("{model}: reasoning first: {message:?}")
        };
        assert_eq!(segment.combined_text, reasoning, "{model}");
        assert!(segment.parts.iter().all(|p| p.is_complete));
        assert_eq!(message.text(), answer, "{model}");
        assert!(
            !message.text().contains("<think") && !message.text().contains("think>"),
            "{model}: no tag in the answer"
        );
    }
    server.stop().await;
}

/// Issue 30: a negative or oversized usage number failed the run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wild_usage_numbers_from_a_provider_do_not_fail_the_run() {
    let (server, _) = start().await;
    let events = run_checked(&server, "fake/wild", "Count").await;
    assert!(
        matches!(
            events.last().map(|e| &e.kind),
            Some(EventKind::MessageFinal { .. })
        ),
        "the run completes: {:?}",
        events.last()
    );
    assert_eq!(final_message(&events).text(), "Counted badly.");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_chunk_or_a_reset_ends_the_run_with_a_readable_error_and_keeps_the_partial_answer(
) {
    let (server, _) = start().await;
    for (model, code, partial) in [
        ("fake/malformed", "malformed_stream", "Partial "),
        ("fake/reset", "stream_interrupted", "Half an answer"),
    ] {
        let events = run_checked(&server, model, "Go").await;
        let EventKind::MessageError {
            code: got,
            error,
            message,
        } = &events.last().expect("events").kind
        else {
            panic!("{model}")
        };
        assert_eq!(got.as_str(), code, "{model}: {error}");
        assert!(!error.is_empty());
        assert_eq!(message.text(), partial, "{model}");
    }
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_closes_the_connection_to_the_provider() {
    let (server, fake) = start().await;
    let started = server.start_run("fake/slow", "Ramble").await;
    let run_id = started["run_id"].as_str().expect("run").to_owned();
    let mut stream = server.subscribe(&run_id, None).await;
    stream.until(|event| is_type(event, "text_delta")).await;
    assert!(!fake.slow_stream_closed.load(Ordering::SeqCst));
    let (status, _) = server
        .post_json(&format!("/api/runs/{run_id}/cancel"), json!({}))
        .await;
    assert_eq!(status, 200);
    let deadline = std::time::Instant::now() + Duration::from_secs(3);
    while !fake.slow_stream_closed.load(Ordering::SeqCst) && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        fake.slow_stream_closed.load(Ordering::SeqCst),
        "the provider saw its connection close"
    );
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rate_limits_are_retried_and_bad_keys_and_models_end_with_clear_errors() {
    let (server, fake) = start().await;
    let events = server
        .chat_stream("fake/flaky", "Try")
        .await
        .collect()
        .await;
    assert_eq!(final_message(&events).text(), "Second time lucky.");
    assert_eq!(fake.flaky_calls.load(Ordering::SeqCst), 2);

    for (model, code, says) in [
        ("fake/auth", "provider_auth", "Incorrect API key"),
        ("fake/missing", "unknown_model", "does not exist"),
    ] {
        let events = server.chat_stream(model, "Go").await.collect().await;
        let EventKind::MessageError {
            code: got, error, ..
        } = &events.last().expect("events").kind
        else {
            panic!("{model}")
        };
        assert_eq!(got.as_str(), code);
        assert!(error.contains(says), "{error}");
    }

    let (status, models) = server.get_json("/api/models").await;
    assert_eq!(status, 200);
    let listed = models.to_string();
    assert!(listed.contains("fake/tools") && listed.contains("\"demo\""));
    assert!(
        !listed.contains("127.0.0.1") && !listed.contains(KEY),
        "no URL or key reaches the browser"
    );
    let stored = stored_bytes(server).await;
    assert!(
        !stored.windows(KEY.len()).any(|w| w == KEY.as_bytes()),
        "the key is not in the database"
    );
}

/// Credentials the model and a workspace file hand to the run, none of which may be stored, sent
/// or shown: provider key shapes in reasoning and answer text (split across chunks), a secret in
/// malformed tool arguments, an AWS key, a private key block and a URL password in tool output.
const PLANTED: &[&str] = &[
    "sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
    "AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
    "plain-words-hunter2",
    "AKIAIOSFODNN7EXAMPLE",
    "MIIEpAIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun",
    "s3cr3t-pw",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn credentials_in_model_text_reasoning_arguments_and_tool_output_never_reach_the_stream_or_the_database(
) {
    let (server, _fake) = start().await;
    std::fs::write(
        server.dir.path().join("workspace/prod.txt"),
        "aws_access_key_id = AKIAIOSFODNN7EXAMPLE\n\
         db = postgres://app:s3cr3t-pw@db.internal:5432/app\n\
         -----BEGIN RSA PRIVATE KEY-----\n\
         MIIEpAIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun\n\
         -----END RSA PRIVATE KEY-----\n",
    )
    .expect("write the workspace file");
    let events = run_checked(&server, "fake/leaky", "Check the production settings").await;
    let streamed = serde_json::to_string(&events).expect("events as JSON");
    let message = final_message(&events);
    assert!(
        message
            .text()
            .contains("Your token is [redacted] and more."),
        "{}",
        message.text()
    );
    let calls: Vec<_> = message.tool_calls().collect();
    assert_eq!(calls.len(), 2);
    assert!(
        calls[1]
            .output
            .contains("postgres://app:[redacted]@db.internal"),
        "{}",
        calls[1].output
    );
    let EventKind::MessageFinal { trace_id, .. } = &events.last().expect("events").kind else {
        panic!("the run did not complete")
    };
    let turns = server
        .store
        .model_turns(trace_id)
        .await
        .expect("model turns");
    let turns = serde_json::to_string(
        &turns
            .iter()
            .map(|t| (&t.request, &t.response))
            .collect::<Vec<_>>(),
    )
    .expect("turns as JSON");
    let (_, trace) = server.get_json(&format!("/api/traces/{trace_id}")).await;
    let (_, inspector) = server
        .get_json(&format!("/api/traces/{trace_id}/inspector.json"))
        .await;
    let stored = stored_bytes(server).await;
    for secret in PLANTED {
        for (place, text) in [
            ("stream", &streamed),
            ("model turns", &turns),
            ("trace", &trace.to_string()),
            ("inspector export", &inspector.to_string()),
        ] {
            assert!(!text.contains(secret), "{secret} reached the {place}");
        }
        assert!(
            !stored.windows(secret.len()).any(|w| w == secret.as_bytes()),
            "{secret} reached the database"
        );
    }
    assert!(turns.contains("[redacted]") && streamed.contains("[redacted]"));
}

/// Stops the server and answers every byte its data folder holds (database, WAL, journal).
async fn stored_bytes(server: TestServer) -> Vec<u8> {
    let data = server.dir.path().join("data");
    let _keep_dir = server.dir.clone();
    server.stop().await;
    let mut stored = Vec::new();
    for entry in std::fs::read_dir(data).expect("data dir") {
        stored.extend(std::fs::read(entry.expect("entry").path()).expect("read"));
    }
    stored
}

/// The same behaviour through the Responses API and Anthropic Messages wire formats.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn responses_and_anthropic_adapters_map_tools_reasoning_parts_and_failures() {
    let (server, fake) = start().await;
    for provider in ["resp", "anth"] {
        // A two-step loop with two tool calls whose arguments stream in fragments.
        let events = run_checked(
            &server,
            &format!("{provider}/tools"),
            "Where are the TODOs?",
        )
        .await;
        let message = final_message(&events);
        let calls: Vec<_> = message.tool_calls().collect();
        assert_eq!(calls.len(), 2, "{provider}: {:?}", events.last());
        assert_eq!(
            (calls[0].name.as_str(), &calls[0].args),
            ("grep_search", &json!({"query": "TODO"})),
            "{provider}"
        );
        assert_eq!(
            (calls[1].name.as_str(), &calls[1].args),
            ("list_dir", &json!({"path": "."})),
            "{provider}"
        );
        assert!(
            calls.iter().all(|c| c.status == ToolCallStatus::Success),
            "{provider}"
        );
        assert_eq!(message.text(), "Found one TODO.", "{provider}");
        assert_eq!(
            message.usage.map(|u| u.input_tokens),
            Some(400),
            "{provider}"
        );
        let last_request = fake
            .requests
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .last()
            .cloned()
            .expect("requests");
        let sent = last_request.1.to_string();
        assert!(
            sent.contains("call_a") && sent.contains("notes.md:2"),
            "{provider}: results went back: {sent}"
        );
        let auth = if provider == "anth" {
            "x-api-key"
        } else {
            "authorization"
        };
        assert!(
            last_request
                .0
                .get(auth)
                .and_then(|v| v.to_str().ok())
                .is_some_and(|v| v.ends_with(KEY)),
            "{provider}: {auth}"
        );

        // Reasoning parts keep their summary_index.
        let events = run_checked(&server, &format!("{provider}/reasoning"), "Think").await;
        let message = final_message(&events);
        let Some(Segment::Reasoning(segment)) = message.segments.first() else {
            panic!("{provider}: {message:?}")
        };
        let parts: Vec<(u32, &str)> = segment
            .parts
            .iter()
            .map(|p| (p.summary_index, p.text.as_str()))
            .collect();
        assert_eq!(
            parts,
            [(0, "Let me think."), (1, "Second part.")],
            "{provider}"
        );
        assert_eq!(message.text(), "Done thinking.", "{provider}");

        // A malformed chunk and a broken connection end with readable errors, partial text kept.
        for (model, code, partial) in [
            ("malformed", "malformed_stream", "Partial "),
            ("reset", "stream_interrupted", "Half an answer"),
        ] {
            let events = server
                .chat_stream(&format!("{provider}/{model}"), "Go")
                .await
                .collect()
                .await;
            let EventKind::MessageError {
                code: got, message, ..
            } = &events.last().expect("events").kind
            else {
                panic!("{provider}/{model}")
            };
            assert_eq!(
                (got.as_str(), message.text().as_str()),
                (code, partial),
                "{provider}/{model}"
            );
        }

        // Stop closes the connection to the provider.
        fake.slow_stream_closed.store(false, Ordering::SeqCst);
        let started = server
            .start_run(&format!("{provider}/slow"), "Ramble")
            .await;
        let run_id = started["run_id"].as_str().expect("run").to_owned();
        server
            .subscribe(&run_id, None)
            .await
            .until(|event| is_type(event, "text_delta"))
            .await;
        let (status, _) = server
            .post_json(&format!("/api/runs/{run_id}/cancel"), json!({}))
            .await;
        assert_eq!(status, 200);
        let deadline = std::time::Instant::now() + Duration::from_secs(3);
        while !fake.slow_stream_closed.load(Ordering::SeqCst)
            && std::time::Instant::now() < deadline
        {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(
            fake.slow_stream_closed.load(Ordering::SeqCst),
            "{provider}: the provider saw its connection close"
        );
    }
    server.stop().await;
}

/// The real binary at `RUST_LOG=trace`, its log captured: runs whose question, model text,
/// reasoning, tool arguments and tool output carry credentials and private words, a provider that
/// refuses the key, one that sends malformed chunks. The log says what happened (run and trace
/// ids, errors) and never what anyone wrote: no content, no credential, no provider key.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_log_holds_no_content_no_credential_and_no_provider_key() {
    let (_fake, base) = start_fake().await;
    let dir = test_dir();
    std::fs::write(
        dir.path().join("workspace/prod.txt"),
        "aws_access_key_id = AKIAIOSFODNN7EXAMPLE\n\
         db = postgres://app:s3cr3t-pw@db.internal:5432/app\n\
         -----BEGIN RSA PRIVATE KEY-----\n\
         MIIEpAIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun\n\
         -----END RSA PRIVATE KEY-----\n",
    )
    .expect("workspace file");
    let providers = write_providers(dir.path(), &base);
    let log_path = dir.path().join("glassbox.log");
    let log = std::fs::File::create(&log_path).expect("log file");
    let server = launch_with(
        &dir,
        &["--providers-file", providers.to_str().expect("path")],
        &[(KEY_VARIABLE, KEY), ("RUST_LOG", "trace")],
        log.into(),
    )
    .await;
    let client = reqwest::Client::new();
    for model in ["fake/leaky", "fake/auth", "fake/malformed", "fake/tools"] {
        let response = client
            .post(format!("{}/api/chat", server.base))
            .json(&json!({"model": model, "content": "Zebra-umbrella question: my password=planted-by-the-user"}))
            .send()
            .await
            .expect("POST /api/chat");
        assert_eq!(response.status(), 200, "{model}");
        assert_invariants(&SseStream::new(response).collect().await);
    }
    drop(server);
    let log = std::fs::read_to_string(&log_path).expect("read the log");
    assert_eq!(
        log.matches("run ended").count(),
        4,
        "the log tells about runs: {log}"
    );
    for never in PLANTED.iter().copied().chain([
        KEY,
        "planted-by-the-user",
        "Zebra-umbrella",
        "Your token is",
        "is set.",
        "db.internal",
        "hunter2",
    ]) {
        assert!(!log.contains(never), "the log holds {never:?}:\n{log}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_denied_call_is_reported_to_the_model_and_the_loop_goes_on() {
    let (server, fake) = start_with(json!({"approval": {"tools": {"list_dir": "deny"}}})).await;
    let events = run_checked(&server, "fake/tools", "Where are the TODOs?").await;
    let message = final_message(&events);
    let statuses: Vec<_> = message.tool_calls().map(|call| call.status).collect();
    assert_eq!(statuses, [ToolCallStatus::Success, ToolCallStatus::Denied]);
    assert_eq!(message.text(), "Found one TODO.", "the loop went on");
    let requests = fake
        .requests
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clone();
    let told = requests[1].1["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .filter(|m| m["role"] == "tool")
        .filter_map(|m| m["content"].as_str())
        .any(|content| content.starts_with("Error (denied)"));
    assert!(told, "the model reads that the call was denied");
    server.stop().await;
}

/// Each model turn is recorded as the body that went out, in its provider's wire format, and the
/// inspector still reads it back as an OpenAI chat conversation.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_turn_is_recorded_exactly_as_sent_and_the_inspector_reads_every_format() {
    let (server, fake) = start().await;
    for (provider, format) in [
        ("fake", "openai_chat"),
        ("resp", "openai_responses"),
        ("anth", "anthropic"),
    ] {
        let events = server
            .chat_stream(&format!("{provider}/tools"), "Where are the TODOs?")
            .await
            .collect()
            .await;
        let EventKind::MessageFinal { trace_id, .. } = &events.last().expect("events").kind else {
            panic!("{provider}: {:?}", events.last())
        };
        let sent = fake.last_bodies(2);
        let (status, turns) = server
            .get_json(&format!("/api/traces/{trace_id}/model-turns"))
            .await;
        assert_eq!(status, 200, "{provider}");
        let turns = turns.as_array().expect("turns");
        assert_eq!(turns.len(), 2, "{provider}");
        for (turn, body) in turns.iter().zip(&sent) {
            assert_eq!(turn["format"], format, "{provider}");
            assert_eq!(&turn["request"], body, "{provider}: recorded as sent");
        }

        let (_, inspector) = server
            .get_json(&format!("/api/traces/{trace_id}/inspector.json"))
            .await;
        let requests: Vec<&Value> = inspector
            .as_array()
            .expect("a list")
            .iter()
            .filter(|entry| entry["type"] == "llm_request")
            .collect();
        let conversation = requests[1]["conversation"].as_array().expect("messages");
        let roles: Vec<&str> = conversation
            .iter()
            .filter_map(|m| m["role"].as_str())
            .collect();
        assert_eq!(roles, ["user", "assistant", "tool", "tool"], "{provider}");
        assert_eq!(
            conversation[1]["tool_calls"][0]["function"]["name"], "grep_search",
            "{provider}"
        );
        assert_eq!(
            serde_json::from_str::<Value>(
                conversation[1]["tool_calls"][0]["function"]["arguments"]
                    .as_str()
                    .unwrap_or_default()
            )
            .ok(),
            Some(json!({"query": "TODO"})),
            "{provider}"
        );
        assert_eq!(conversation[2]["tool_call_id"], "call_a", "{provider}");
        assert!(
            conversation[2]["content"]
                .as_str()
                .is_some_and(|c| c.contains("notes.md:2")),
            "{provider}"
        );
    }
    server.stop().await;
}

/// An MCP tool reaches the model in each wire format with its server's schema; the model's call
/// runs on the real everything server and its result goes back to the model.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_model_calls_an_mcp_tool_in_every_wire_format() {
    let server_path = everything_mcp_server();
    let (server, fake) = start_with(json!({
        "mcp_servers": {"everything": {"command": "node", "args": [server_path, "stdio"]}},
        "approval": {"mcp": "auto"},
    }))
    .await;
    until_mcp_started(&server.client, &server.base).await;
    for provider in ["fake", "resp", "anth"] {
        let events = run_checked(&server, &format!("{provider}/mcp"), "Echo something").await;
        let message = final_message(&events);
        let calls: Vec<_> = message.tool_calls().collect();
        assert_eq!(calls.len(), 1, "{provider}: {:?}", events.last());
        assert_eq!(calls[0].name, MCP_TOOL, "{provider}");
        assert_eq!(calls[0].status, ToolCallStatus::Success, "{provider}");
        assert!(
            calls[0].output.contains("Echo: hi from the model"),
            "{provider}: {}",
            calls[0].output
        );
        assert_eq!(message.text(), "Echoed.", "{provider}");
        let requests = fake.last_bodies(2);
        let first = requests[0].to_string();
        assert!(
            first.contains(MCP_TOOL) && first.contains("Message to echo"),
            "{provider}: the tool and its schema were offered: {first}"
        );
        assert!(
            requests[1].to_string().contains("Echo: hi from the model"),
            "{provider}: the result went back"
        );
    }
    server.stop().await;
}

/// Issue 30: a share link to a later turn showed the earlier turns' questions and answers through
/// the model turns' request bodies and the Inspector.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_share_link_shows_its_own_turn_unless_it_includes_the_conversation_before_it() {
    let (server, _) = start().await;
    let first = server
        .start_run("fake/reasoning", "Earlier secret question")
        .await;
    let run = first["run_id"].as_str().expect("run");
    assert_invariants(&server.subscribe(run, None).await.collect().await);
    let second: Value = server
        .client
        .post(server.url("/api/chat"))
        .header("accept", "application/json")
        .json(
            &json!({"content": "This question", "model": "fake/reasoning",
                      "conversation_id": first["conversation_id"]}),
        )
        .send()
        .await
        .expect("POST")
        .json()
        .await
        .expect("JSON");
    let run = second["run_id"].as_str().expect("run");
    assert_invariants(&server.subscribe(run, None).await.collect().await);
    let trace = second["trace_id"].as_str().expect("trace");
    let shares = format!("/api/traces/{trace}/shares");
    for (include_history, shown) in [(false, false), (true, true)] {
        let (status, link) = server
            .post_json(&shares, json!({"include_history": include_history}))
            .await;
        assert_eq!(status, 201, "{link}");
        assert_eq!(link["include_history"], include_history);
        let token = link["token"].as_str().expect("token");
        for path in ["model-turns", "inspector.json"] {
            let (status, body) = server
                .get_json(&format!("/api/traces/{trace}/{path}?share={token}"))
                .await;
            assert_eq!(status, 200, "{path}");
            let text = body.to_string();
            assert!(text.contains("This question"), "{path}: {text}");
            assert_eq!(
                text.contains("Earlier secret question"),
                shown,
                "{path} with include_history {include_history}: {text}"
            );
        }
    }
    // The owner reads every turn as it was sent.
    let (_, turns) = server
        .get_json(&format!("/api/traces/{trace}/model-turns"))
        .await;
    assert!(turns.to_string().contains("Earlier secret question"));
    server.stop().await;
}

/// Issue 31: one outcome per tool call, paired by its id. A task that panicked outside the tool was
/// dropped, every later result moved onto the wrong call, and the failed call stayed running.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_that_panics_early_ends_its_own_call_and_no_other() {
    let (server, fake) = start().await;
    let events = run_checked(&server, "fake/panicky", "Go").await;
    let message = final_message(&events);
    assert_eq!(message.text(), "Recovered.");
    let results: Vec<_> = events
        .iter()
        .filter_map(|event| match &event.kind {
            EventKind::ToolResult { error, .. } => {
                Some(error.as_ref().map(|error| error.kind.clone()))
            }
            _ => None,
        })
        .collect();
    assert_eq!(results.len(), 3, "one result per call: {results:?}");
    let sent = fake.last_bodies(1).remove(0);
    let tool_messages: Vec<(String, String)> = sent["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| {
            let id = m["tool_call_id"].as_str().unwrap_or_default().to_owned();
            (id, m["content"].as_str().unwrap_or_default().to_owned())
        })
        .collect();
    let content = |id: &str| {
        tool_messages
            .iter()
            .find(|(call, _)| call == id)
            .map(|(_, content)| content.clone())
            .unwrap_or_else(|| panic!("no result for {id}: {tool_messages:?}"))
    };
    assert!(
        content("call_a").starts_with("Error (panic)"),
        "{tool_messages:?}"
    );
    assert!(!content("call_b").starts_with("Error"), "{tool_messages:?}");
    assert!(content("call_c").contains("third"), "{tool_messages:?}");
    let trace_id = message.trace_id.clone().expect("trace");
    let (_, trace) = server.get_json(&format!("/api/traces/{trace_id}")).await;
    assert!(
        !trace.to_string().contains("\"running\""),
        "no call stays running in the stored trace: {trace}"
    );
    server.stop().await;
}
