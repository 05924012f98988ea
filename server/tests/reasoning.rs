//! Reasoning that survives tool calls, per-model options and Anthropic's usage and errors, against
//! fake Anthropic Messages and OpenAI Responses servers on real sockets that stream the documented
//! wire formats (`event: <type>` + `data: <json>` frames). The second request of a tool-using turn
//! must carry the thinking blocks (signatures, redacted data) and the reasoning items (encrypted
//! content) byte for byte, and so must the next question of the conversation, also after a restart.

mod common;

use std::{
    convert::Infallible,
    sync::{Arc, Mutex},
};

use app::protocol::{Event, EventKind, Message, Usage};
use axum::{
    body::{Body, Bytes},
    extract::State,
    http::HeaderMap,
    response::{IntoResponse, Response},
    routing::post,
    Json, Router,
};
use common::*;
use serde_json::{json, Value};

/// Signatures and encrypted values as the APIs send them: base64 with `+`, `/` and `=`, which
/// must come back unchanged.
const SIGNATURE_1: &str = "EqQBCkgIARABGAIiQH+/1a2b3c4d5e6f7g8h9i0j/k+l=mN0pQrStUvWxYz==";
const SIGNATURE_2: &str = "ErcBCkgIAhABGAIiQJ/+zz9yy8xx7ww6vv5uu4tt3ss2rr1qq0pp==";
const REDACTED_DATA: &str = "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpPkNRj2YfWXGmKDxH4mPnZ5sQ7vB5URj";
const ENCRYPTED: &str = "gAAAAABoISQ24OyVRYbkYfukq/+eR1tlA3qZ8Ab+xw==";
/// A credential the model read and repeats in its thinking.
const LEAKED_KEY: &str = "sk-ant-api03-Zq8vLr2XwT5nB7mK1pJ4hG6fD9sA0cE3uY";

#[derive(Clone, Default)]
struct Fake {
    requests: Arc<Mutex<Vec<(HeaderMap, Value)>>>,
}

impl Fake {
    fn requests(&self) -> Vec<(HeaderMap, Value)> {
        self.requests
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    fn record(&self, headers: HeaderMap, body: &Value) {
        self.requests
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push((headers, body.clone()));
    }
}

/// `event: <type>` + `data: <json>` frames.
fn sse(events: Vec<Value>) -> Response {
    let frames = events.into_iter().map(|event| {
        let frame = format!(
            "event: {}\ndata: {event}\n\n",
            event["type"].as_str().unwrap_or_default()
        );
        Ok::<_, Infallible>(Bytes::from(frame))
    });
    Response::builder()
        .header("content-type", "text/event-stream")
        .body(Body::from_stream(futures::stream::iter(frames)))
        .unwrap_or_default()
}

/// Whether the last message of an Anthropic request holds tool results (the turn after a call).
fn after_tool(body: &Value) -> bool {
    body["messages"]
        .as_array()
        .and_then(|messages| messages.last())
        .and_then(|last| last["content"].as_array())
        .is_some_and(|blocks| blocks.iter().any(|b| b["type"] == "tool_result"))
}

fn block(index: u64, content: Value) -> Value {
    json!({"type": "content_block_start", "index": index, "content_block": content})
}

fn delta(index: u64, delta: Value) -> Value {
    json!({"type": "content_block_delta", "index": index, "delta": delta})
}

fn stop(index: u64) -> Value {
    json!({"type": "content_block_stop", "index": index})
}

/// `message_start` with `start`'s usage, `message_delta` with `end`'s (cumulative), `message_stop`.
fn message(start: Value, content: Vec<Value>, reason: &str, end: Value) -> Vec<Value> {
    let mut events = vec![
        json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant", "content": [], "usage": start}}),
    ];
    events.extend(content);
    events.push(json!({"type": "message_delta", "delta": {"stop_reason": reason, "stop_sequence": null}, "usage": end}));
    events.push(json!({"type": "message_stop"}));
    events
}

/// Thinking, a redacted block and a tool call; after the tool, thinking again and the answer.
fn thinking_turn(body: &Value) -> Vec<Value> {
    if !after_tool(body) {
        return message(
            json!({"input_tokens": 50, "cache_creation_input_tokens": 1000, "cache_read_input_tokens": 0, "output_tokens": 1}),
            vec![
                block(
                    0,
                    json!({"type": "thinking", "thinking": "", "signature": ""}),
                ),
                delta(
                    0,
                    json!({"type": "thinking_delta", "thinking": "I should search "}),
                ),
                delta(
                    0,
                    json!({"type": "thinking_delta", "thinking": "for TODO."}),
                ),
                delta(
                    0,
                    json!({"type": "signature_delta", "signature": &SIGNATURE_1[..20]}),
                ),
                delta(
                    0,
                    json!({"type": "signature_delta", "signature": &SIGNATURE_1[20..]}),
                ),
                stop(0),
                block(
                    1,
                    json!({"type": "redacted_thinking", "data": REDACTED_DATA}),
                ),
                stop(1),
                block(
                    2,
                    json!({"type": "tool_use", "id": "toolu_1", "name": "grep_search", "input": {}}),
                ),
                delta(
                    2,
                    json!({"type": "input_json_delta", "partial_json": "{\"query\": \"TODO\"}"}),
                ),
                stop(2),
            ],
            "tool_use",
            json!({"input_tokens": 50, "cache_creation_input_tokens": 1000, "cache_read_input_tokens": 0, "output_tokens": 40}),
        );
    }
    message(
        json!({"input_tokens": 60, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 1000, "output_tokens": 1}),
        vec![
            block(
                0,
                json!({"type": "thinking", "thinking": "", "signature": ""}),
            ),
            delta(
                0,
                json!({"type": "thinking_delta", "thinking": "Found it in notes.md."}),
            ),
            delta(
                0,
                json!({"type": "signature_delta", "signature": SIGNATURE_2}),
            ),
            stop(0),
            block(1, json!({"type": "text", "text": ""})),
            delta(
                1,
                json!({"type": "text_delta", "text": "One TODO, in notes.md."}),
            ),
            stop(1),
        ],
        "end_turn",
        json!({"input_tokens": 60, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 1000, "output_tokens": 20}),
    )
}

async fn messages(
    State(fake): State<Fake>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    fake.record(headers, &body);
    let overloaded =
        json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}});
    match body["model"].as_str().unwrap_or_default() {
        "busy" => (
            axum::http::StatusCode::from_u16(529).unwrap_or_default(),
            Json(overloaded),
        )
            .into_response(),
        "overloaded" => sse(vec![
            json!({"type": "message_start", "message": {"id": "msg_1", "usage": {"input_tokens": 5, "output_tokens": 1}}}),
            block(0, json!({"type": "text", "text": ""})),
            delta(0, json!({"type": "text_delta", "text": "Half an "})),
            overloaded,
        ]),
        "leaky" if !after_tool(&body) => sse(message(
            json!({"input_tokens": 5, "output_tokens": 1}),
            vec![
                block(
                    0,
                    json!({"type": "thinking", "thinking": "", "signature": ""}),
                ),
                delta(
                    0,
                    json!({"type": "thinking_delta", "thinking": format!("The key is {LEAKED_KEY} here.")}),
                ),
                delta(
                    0,
                    json!({"type": "signature_delta", "signature": SIGNATURE_1}),
                ),
                stop(0),
                block(
                    1,
                    json!({"type": "tool_use", "id": "toolu_9", "name": "list_dir", "input": {"path": "."}}),
                ),
                stop(1),
            ],
            "tool_use",
            json!({"output_tokens": 9}),
        )),
        "leaky" => sse(message(
            json!({"input_tokens": 5, "output_tokens": 1}),
            vec![
                block(0, json!({"type": "text", "text": ""})),
                delta(0, json!({"type": "text_delta", "text": "Listed."})),
                stop(0),
            ],
            "end_turn",
            json!({"output_tokens": 3}),
        )),
        _ => sse(thinking_turn(&body)),
    }
}

/// The reasoning item the Responses fake sends, exactly as it should come back.
fn reasoning_item() -> Value {
    json!({"type": "reasoning", "id": "rs_1", "status": "completed", "encrypted_content": ENCRYPTED,
           "summary": [{"type": "summary_text", "text": "Searching the notes."}]})
}

async fn responses(
    State(fake): State<Fake>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    fake.record(headers, &body);
    let after_tool = body["input"]
        .as_array()
        .and_then(|items| items.last())
        .is_some_and(|item| item["type"] == "function_call_output");
    let completed = |input: u64, output: u64| json!({"type": "response.completed", "response": {"id": "resp_1", "status": "completed", "usage": {"input_tokens": input, "output_tokens": output, "output_tokens_details": {"reasoning_tokens": 7}}}});
    if after_tool {
        return sse(vec![
            json!({"type": "response.output_item.added", "output_index": 0, "item": {"type": "reasoning", "id": "rs_2", "summary": []}}),
            json!({"type": "response.reasoning_text.delta", "item_id": "rs_2", "output_index": 0, "content_index": 0, "delta": "The notes have one."}),
            json!({"type": "response.output_item.done", "output_index": 0, "item": {"type": "reasoning", "id": "rs_2", "summary": [], "content": [{"type": "reasoning_text", "text": "The notes have one."}]}}),
            json!({"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 1, "content_index": 0, "delta": "One TODO."}),
            completed(30, 10),
        ]);
    }
    sse(vec![
        json!({"type": "response.output_item.added", "output_index": 0, "item": {"type": "reasoning", "id": "rs_1", "summary": []}}),
        json!({"type": "response.reasoning_summary_part.added", "item_id": "rs_1", "output_index": 0, "summary_index": 0, "part": {"type": "summary_text", "text": ""}}),
        json!({"type": "response.reasoning_summary_text.delta", "item_id": "rs_1", "output_index": 0, "summary_index": 0, "delta": "Searching the notes."}),
        json!({"type": "response.output_item.done", "output_index": 0, "item": reasoning_item()}),
        json!({"type": "response.output_item.added", "output_index": 1, "item": {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "grep_search", "arguments": ""}}),
        json!({"type": "response.function_call_arguments.done", "item_id": "fc_1", "output_index": 1, "arguments": "{\"query\": \"TODO\"}"}),
        json!({"type": "response.output_item.done", "output_index": 1, "item": {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "grep_search", "arguments": "{\"query\": \"TODO\"}"}}),
        completed(20, 15),
    ])
}

/// The fake on a free port, and its `/v1` URL.
async fn start_fake() -> (Fake, String) {
    let fake = Fake::default();
    let router = Router::new()
        .route("/v1/messages", post(messages))
        .route("/v1/responses", post(responses))
        .with_state(fake.clone());
    let base = format!("{}/v1", serve_router(router).await);
    (fake, base)
}

/// The providers file: Anthropic models with and without options, Responses models.
fn providers_file(base: &str) -> Value {
    json!({"providers": [
        {"name": "anth", "kind": "anthropic", "base_url": base,
         "options": {"headers": {"x-team": "glass"}},
         "models": [
            {"id": "think", "thinking_budget": 2048, "max_output_tokens": 6000, "interleaved_thinking": true,
             "extra_body": {"metadata": {"user_id": "u-1"}}, "headers": {"x-extra": "yes"}},
            "claude-sonnet-4-5", "plain", "overloaded", "busy", {"id": "leaky", "thinking_budget": 1024},
            {"id": "claude-opus-4-6", "reasoning_effort": "medium"}]},
        {"name": "gw", "kind": "anthropic", "base_url": base,
         "options": {"headers": {"Authorization": "Bearer ${GLASSBOX_TEST_GATEWAY_KEY}"}},
         "models": [{"id": "gw-sonnet", "thinking_budget": 4096}]},
        {"name": "resp", "kind": "openai_responses", "base_url": base,
         "models": [{"id": "think", "reasoning": true, "reasoning_effort": "high", "max_output_tokens": 3000}, "gpt-4o"]}
    ], "max_steps": 4})
}

async fn start_in(dir: Arc<tempfile::TempDir>, base: &str) -> TestServer {
    let path = dir.path().join("providers.json");
    std::fs::write(&path, providers_file(base).to_string()).expect("write providers file");
    TestServer::start_with(dir, |config| config.providers_file = Some(path)).await
}

/// Asks `content` in `conversation` (a new one when None): the run's events, checked.
async fn ask(
    server: &TestServer,
    conversation: Option<&str>,
    model: &str,
    content: &str,
) -> Vec<Event> {
    let mut body = json!({"content": content, "model": model});
    if let Some(id) = conversation {
        body["conversation_id"] = json!(id);
    }
    let response = server
        .client
        .post(server.url("/api/chat"))
        .header("accept", "text/event-stream")
        .json(&body)
        .send()
        .await
        .expect("POST /api/chat");
    assert_eq!(response.status(), 200);
    let events = SseStream::new(response).collect().await;
    assert_invariants(&events);
    events
}

fn ids(events: &[Event]) -> (String, String) {
    match &events[0].kind {
        EventKind::MessageStarted {
            conversation_id,
            trace_id,
            ..
        } => (conversation_id.clone(), trace_id.clone()),
        other => panic!("not a start: {other:?}"),
    }
}

fn terminal(events: &[Event]) -> (&str, &Message) {
    match &events.last().expect("events").kind {
        EventKind::MessageFinal { message, .. } => ("final", message),
        EventKind::MessageError { message, .. } => ("error", message),
        EventKind::MessageCancelled { message, .. } => ("cancelled", message),
        other => panic!("not terminal: {other:?}"),
    }
}

fn error_of(events: &[Event]) -> (String, String) {
    match &events.last().expect("events").kind {
        EventKind::MessageError { code, error, .. } => (code.to_string(), error.clone()),
        other => panic!("not an error: {other:?}"),
    }
}

/// The completed reasoning parts' texts, in order.
fn reasoning_parts(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .filter_map(|event| match &event.kind {
            EventKind::ReasoningPartCompleted { final_text, .. } => final_text.clone(),
            _ => None,
        })
        .collect()
}

/// The Anthropic blocks the first turn must come back with, byte for byte.
fn first_turn_blocks() -> Vec<Value> {
    vec![
        json!({"type": "thinking", "thinking": "I should search for TODO.", "signature": SIGNATURE_1}),
        json!({"type": "redacted_thinking", "data": REDACTED_DATA}),
    ]
}

/// The assistant messages' thinking blocks of an Anthropic request, in order.
fn sent_thinking(body: &Value) -> Vec<Value> {
    body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["role"] == "assistant")
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .filter(|b| b["type"] == "thinking" || b["type"] == "redacted_thinking")
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn anthropic_thinking_survives_tool_calls_the_next_question_and_a_restart() {
    let (fake, base) = start_fake().await;
    let dir = test_dir();
    let server = start_in(dir.clone(), &base).await;
    let events = ask(&server, None, "anth/think", "Where are the TODOs?").await;
    let (status, message) = terminal(&events);
    assert_eq!(status, "final", "{:?}", events.last());
    assert_eq!(
        reasoning_parts(&events),
        [
            "I should search for TODO.",
            "redacted reasoning",
            "Found it in notes.md."
        ],
        "thinking before and after the tool, the redacted block shown as such"
    );
    assert_eq!(message.text(), "One TODO, in notes.md.");
    let shown = serde_json::to_string(&message.segments).expect("JSON");
    assert!(!shown.contains(REDACTED_DATA) && !shown.contains(SIGNATURE_1));

    let requests = fake.requests();
    assert_eq!(requests.len(), 2);
    let (headers, first) = &requests[0];
    assert_eq!(
        first["thinking"],
        json!({"type": "enabled", "budget_tokens": 2048})
    );
    assert_eq!(first["max_tokens"], 6000);
    assert_eq!(
        first["metadata"],
        json!({"user_id": "u-1"}),
        "extra_body merged"
    );
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    assert_eq!(
        header("anthropic-beta").as_deref(),
        Some("interleaved-thinking-2025-05-14")
    );
    assert_eq!(header("x-extra").as_deref(), Some("yes"));
    assert_eq!(
        header("x-team").as_deref(),
        Some("glass"),
        "the provider's headers too"
    );
    // The second request: the assistant turn starts with the thinking blocks, then its tool_use.
    let second = &requests[1].1;
    let assistant = &second["messages"][1];
    assert_eq!(assistant["role"], "assistant");
    let content = assistant["content"].as_array().expect("blocks");
    assert_eq!(
        content[..2],
        first_turn_blocks()[..],
        "byte for byte, in order"
    );
    assert_eq!(content[2]["type"], "tool_use");
    assert_eq!(second["messages"][2]["content"][0]["type"], "tool_result");

    // The next question sends both turns' blocks back.
    let (conversation, _) = ids(&events);
    let next = ask(
        &server,
        Some(&conversation),
        "anth/think",
        "And the other notes?",
    )
    .await;
    assert_eq!(terminal(&next).0, "final");
    let mut expected = first_turn_blocks();
    expected.push(
        json!({"type": "thinking", "thinking": "Found it in notes.md.", "signature": SIGNATURE_2}),
    );
    assert_eq!(sent_thinking(&fake.requests()[2].1), expected);

    // So does a question after a restart, read from the database.
    server.stop().await;
    let server = start_in(dir, &base).await;
    let after = ask(&server, Some(&conversation), "anth/think", "Once more?").await;
    assert_eq!(terminal(&after).0, "final");
    let sent = sent_thinking(&fake.requests()[4].1);
    assert_eq!(sent.len(), 6, "two questions' worth of blocks");
    assert_eq!(sent[..3], expected[..]);

    // The exports and the conversation as the browser reads it carry none of them.
    let (_, trace_id) = ids(&events);
    let inspector = server.inspector(&trace_id).await.to_string();
    assert!(!inspector.contains(SIGNATURE_1) && !inspector.contains(REDACTED_DATA));
    let (_, thoughtflow) = server
        .get_json(&format!("/thoughtflow/{conversation}.json"))
        .await;
    assert!(!thoughtflow.to_string().contains(SIGNATURE_1));
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_two_turn_anthropic_run_with_cache_reads_gives_the_exact_billed_totals() {
    let (_fake, base) = start_fake().await;
    let server = start_in(test_dir(), &base).await;
    let events = ask(&server, None, "anth/think", "Where are the TODOs?").await;
    // Turn one: 50 + 1,000 written; turn two: 60 + 1,000 read. Output: 40 + 20.
    let expected = Usage {
        input_tokens: 2110,
        output_tokens: 60,
        reasoning_tokens: None,
        cache_read_tokens: Some(1000),
        cache_write_tokens: Some(1000),
    };
    assert_eq!(terminal(&events).1.usage, Some(expected));
    let usages: Vec<Usage> = events
        .iter()
        .filter_map(|event| match &event.kind {
            EventKind::Usage(usage) => Some(*usage),
            _ => None,
        })
        .collect();
    assert_eq!(
        usages[0].input_tokens, 1050,
        "message_delta's cumulative counts"
    );
    assert_eq!(usages[0].output_tokens, 40);
    let (conversation, trace_id) = ids(&events);
    let (_, trace) = server.get_json(&format!("/api/traces/{trace_id}")).await;
    assert_eq!(
        (
            trace["input_tokens"].as_i64(),
            trace["output_tokens"].as_i64()
        ),
        (Some(2110), Some(60))
    );
    let (_, stored) = server
        .get_json(&format!("/api/conversations/{conversation}"))
        .await;
    let usage: Usage =
        serde_json::from_value(stored["messages"][1]["usage"].clone()).expect("usage");
    assert_eq!(usage, expected);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn responses_reasoning_items_go_back_with_their_encrypted_content() {
    let (fake, base) = start_fake().await;
    let server = start_in(test_dir(), &base).await;
    let events = ask(&server, None, "resp/think", "Where are the TODOs?").await;
    let (status, message) = terminal(&events);
    assert_eq!(status, "final", "{:?}", events.last());
    assert_eq!(
        reasoning_parts(&events),
        ["Searching the notes.", "The notes have one."],
        "a summary, then full reasoning text"
    );
    assert_eq!(message.text(), "One TODO.");
    let requests = fake.requests();
    let first = &requests[0].1;
    assert_eq!(
        first["reasoning"],
        json!({"summary": "auto", "effort": "high"})
    );
    assert_eq!(first["include"], json!(["reasoning.encrypted_content"]));
    assert_eq!(first["store"], false);
    assert_eq!(first["max_output_tokens"], 3000);
    let input = requests[1].1["input"].as_array().expect("input").clone();
    let at = |kind: &str| input.iter().position(|item| item["type"] == kind);
    assert_eq!(
        input[at("reasoning").expect("the item")],
        reasoning_item(),
        "byte for byte"
    );
    assert!(
        at("reasoning") < at("function_call"),
        "before the call that followed it"
    );

    let (conversation, _) = ids(&events);
    ask(&server, Some(&conversation), "resp/think", "More?").await;
    let input = fake.requests()[2].1["input"].clone();
    let items: Vec<&Value> = input
        .as_array()
        .into_iter()
        .flatten()
        .filter(|i| i["type"] == "reasoning")
        .collect();
    assert_eq!(items.len(), 2, "both turns' items");
    assert_eq!(items[0], &reasoning_item());
    assert_eq!(items[1]["content"][0]["text"], "The notes have one.");

    // The inspector reads the recorded requests, reasoning items and all, and shows none of them.
    let (_, trace_id) = ids(&events);
    let inspector = server.inspector(&trace_id).await;
    let requests: Vec<&Value> = inspector
        .as_array()
        .into_iter()
        .flatten()
        .filter(|entry| entry["type"] == "llm_request")
        .collect();
    assert_eq!(requests.len(), 2);
    assert!(requests[1]["conversation"]
        .as_array()
        .is_some_and(|messages| messages.iter().any(|m| m["role"] == "tool")));
    assert!(!inspector.to_string().contains(ENCRYPTED));

    // A model that does not reason by name is asked for no reasoning.
    ask(&server, None, "resp/gpt-4o", "Hi").await;
    let requests = fake.requests();
    let plain = &requests.last().expect("request").1;
    assert!(
        plain.get("reasoning").is_none() && plain.get("include").is_none(),
        "{plain}"
    );
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thinking_is_on_by_default_where_the_model_takes_it() {
    let (fake, base) = start_fake().await;
    let server = start_in(test_dir(), &base).await;
    ask(&server, None, "anth/claude-sonnet-4-5", "Hi").await;
    ask(&server, None, "anth/plain", "Hi").await;
    let requests = fake.requests();
    let (headers, body) = &requests[0];
    assert_eq!(
        body["thinking"],
        json!({"type": "enabled", "budget_tokens": 8192})
    );
    assert!(
        body["max_tokens"].as_u64() > Some(8192),
        "max_tokens exceeds the budget"
    );
    assert!(headers.get("anthropic-beta").is_none());
    let plain = &requests.last().expect("request").1;
    assert!(plain.get("thinking").is_none(), "{plain}");
    assert_eq!(plain["max_tokens"], 8192);

    // Claude 4.6 decides for itself; the effort goes in output_config.
    ask(&server, None, "anth/claude-opus-4-6", "Hi").await;
    let requests = fake.requests();
    let adaptive = &requests[requests.len() - 2].1;
    assert_eq!(adaptive["thinking"], json!({"type": "adaptive"}));
    assert_eq!(adaptive["output_config"], json!({"effort": "medium"}));
    assert_eq!(adaptive["max_tokens"], 16384);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_anthropic_compatible_gateway_gets_its_own_key_header_and_configured_thinking() {
    // The same value in every run of this test, so setting it is harmless.
    std::env::set_var("GLASSBOX_TEST_GATEWAY_KEY", "gw-secret-123");
    let (fake, base) = start_fake().await;
    let server = start_in(test_dir(), &base).await;
    let events = ask(&server, None, "gw/gw-sonnet", "Where are the TODOs?").await;
    assert_eq!(terminal(&events).0, "final");
    let requests = fake.requests();
    let (headers, body) = &requests[0];
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    assert_eq!(
        header("authorization"),
        Some("Bearer gw-secret-123"),
        "${{NAME}} read from the environment"
    );
    assert_eq!(header("x-api-key"), None);
    assert_eq!(
        body["thinking"],
        json!({"type": "enabled", "budget_tokens": 4096})
    );
    assert_eq!(body["max_tokens"], 4096 + 8192);
    assert_eq!(sent_thinking(&requests[1].1), first_turn_blocks());
    // The key is in no event and no stored turn.
    let (_, trace_id) = ids(&events);
    let (_, turns) = server
        .get_json(&format!("/api/traces/{trace_id}/model-turns"))
        .await;
    assert!(!turns.to_string().contains("gw-secret-123"));
    assert!(!serde_json::to_string(&events)
        .expect("JSON")
        .contains("gw-secret-123"));
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn anthropic_overloaded_in_the_stream_or_as_529_ends_with_a_clear_code() {
    let (_fake, base) = start_fake().await;
    let server = start_in(test_dir(), &base).await;
    let events = ask(&server, None, "anth/overloaded", "Hi").await;
    let (code, error) = error_of(&events);
    assert_eq!(code, "overloaded");
    assert!(
        error.contains("overloaded_error") && error.contains("Overloaded"),
        "{error}"
    );
    assert_eq!(
        terminal(&events).1.text(),
        "Half an ",
        "the partial answer is kept"
    );

    let events = ask(&server, None, "anth/busy", "Hi").await;
    let (code, error) = error_of(&events);
    assert_eq!(code, "overloaded");
    assert!(
        error.contains("529") && error.contains("Overloaded"),
        "{error}"
    );
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_model_options_are_refused_at_start_with_what_is_wrong() {
    let dir = test_dir();
    // The binary looks for its site before it reads the providers file.
    std::fs::write(dir.path().join("site/pkg/glassbox.js"), "").expect("write a site");
    let cases = [
        (
            json!({"id": "m", "thinking_budget": 512}),
            "minimum of 1024",
        ),
        (
            json!({"id": "m", "reasoning_effort": "huge"}),
            "reasoning_effort 'huge'",
        ),
        (
            json!({"id": "m", "thinking_budget": 4096, "max_output_tokens": 2000}),
            "larger than thinking_budget",
        ),
        (
            json!({"id": "m", "temprature": 1}),
            "unknown field `temprature`",
        ),
        (
            json!({"id": "m", "thinking_budget": 2048, "temperature": 0.5}),
            "Anthropic takes none",
        ),
        (
            json!({"id": "m", "headers": {"Content-Type": "text/plain"}}),
            "set by Glassbox",
        ),
    ];
    for (model, expected) in cases {
        let path = dir.path().join("bad.json");
        let file = json!({"providers": [{"name": "anth", "kind": "anthropic", "base_url": "http://127.0.0.1:9/v1", "models": [model]}]});
        std::fs::write(&path, file.to_string()).expect("write");
        let output = tokio::process::Command::new(env!("CARGO_BIN_EXE_glassbox"))
            .args(["--addr", "127.0.0.1:0", "--data-dir"])
            .arg(dir.path().join("data"))
            .arg("--site-root")
            .arg(dir.path().join("site"))
            .arg("--providers-file")
            .arg(&path)
            .output()
            .await
            .expect("run glassbox");
        assert!(!output.status.success(), "{expected}: started");
        let error = String::from_utf8_lossy(&output.stderr).to_string()
            + &String::from_utf8_lossy(&output.stdout);
        assert!(error.contains(expected), "{expected}: {error}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thinking_with_a_credential_goes_back_in_its_run_but_is_never_stored() {
    let (fake, base) = start_fake().await;
    let dir = test_dir();
    let server = start_in(dir.clone(), &base).await;
    let events = ask(&server, None, "anth/leaky", "List the folder").await;
    assert_eq!(terminal(&events).0, "final");
    let streamed = serde_json::to_string(&events).expect("JSON");
    assert!(
        !streamed.contains(LEAKED_KEY),
        "the stream shows the thinking redacted"
    );
    // The run's own next turn needs the block exactly as signed.
    let thinking = sent_thinking(&fake.requests()[1].1);
    assert_eq!(thinking.len(), 1);
    assert!(thinking[0]["thinking"]
        .as_str()
        .is_some_and(|t| t.contains(LEAKED_KEY)));
    assert_eq!(thinking[0]["signature"], SIGNATURE_1);
    let (conversation, _) = ids(&events);
    server.stop().await;
    let stored = stored_bytes(&dir).await;
    assert!(
        !String::from_utf8_lossy(&stored).contains(LEAKED_KEY),
        "the database holds no copy of the credential"
    );
    let server = start_in(dir, &base).await;
    ask(&server, Some(&conversation), "anth/leaky", "Again").await;
    assert!(
        sent_thinking(&fake.requests()[2].1).is_empty(),
        "the earlier turn goes back without the block it could not keep"
    );
    server.stop().await;
}

/// The whole body of a POST that answers with a stream.
async fn streamed_text(server: &TestServer, path: &str, body: Value) -> String {
    let response = server
        .client
        .post(server.url(path))
        .json(&body)
        .send()
        .await
        .expect("POST");
    assert_eq!(response.status(), 200, "{path}");
    response.text().await.expect("the stream")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_ai_sdk_and_ag_ui_streams_show_the_thinking_and_never_the_blocks() {
    let (_fake, base) = start_fake().await;
    let server = start_in(test_dir(), &base).await;
    let ai_sdk = streamed_text(
        &server,
        "/api/ai-sdk/chat",
        json!({"id": "chat-1", "model": "anth/think",
               "messages": [{"role": "user", "parts": [{"type": "text", "text": "Where are the TODOs?"}]}]}),
    )
    .await;
    let ag_ui = streamed_text(
        &server,
        "/api/ag-ui",
        json!({"threadId": "thread-1", "runId": "run-1", "state": {}, "tools": [], "context": [],
               "forwardedProps": {"model": "anth/think"},
               "messages": [{"id": "m1", "role": "user", "content": "Where are the TODOs?"}]}),
    )
    .await;
    for (name, text) in [("AI SDK", &ai_sdk), ("AG-UI", &ag_ui)] {
        // Deltas arrive a word later (redaction holds the last word back), so in pieces.
        for piece in [
            "I should search",
            "redacted ",
            "Found it in ",
            "One TODO, in ",
        ] {
            assert!(text.contains(piece), "{name} lacks {piece:?}: {text}");
        }
        for opaque in [SIGNATURE_1, SIGNATURE_2, REDACTED_DATA] {
            assert!(!text.contains(opaque), "{name} carries {opaque}");
        }
    }
    server.stop().await;
}
