//! Every common server of docs/providers.md's Compatibility table, as it really streams: for each
//! row a stream in that server's framing (written from its published API reference), replayed by
//! a fake server on a real socket, with the reasoning, text, tool calls, usage and terminal event
//! Glassbox must make of it. Then what goes wrong on the way: a kept-alive connection the server
//! closed, `Retry-After`, 529, errors inside a stream; and `"models": "discover"`.

mod common;

use std::{
    collections::BTreeMap,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use app::protocol::{ErrorCode, Event, EventKind, Segment, Usage};
use axum::{
    body::{Body, Bytes},
    extract::State,
    http::{HeaderMap, StatusCode, Uri},
    response::{IntoResponse, Response},
    routing::{get, post},
    Json, Router,
};
use common::*;
use serde_json::{json, Value};

const KEY_VARIABLE: &str = "GLASSBOX_TEST_SERVERS_KEY";
const KEY: &str = "sk-servers-0123456789-never-leak";

/// One request as the fake received it.
#[derive(Clone, Debug)]
struct Received {
    uri: String,
    headers: HeaderMap,
    body: Value,
}

/// Replays each model's script: the first turn, then (once tool results come back) the second.
#[derive(Clone, Default)]
struct Fake {
    scripts: Arc<BTreeMap<String, Script>>,
    requests: Arc<Mutex<Vec<Received>>>,
    listings: Arc<std::sync::atomic::AtomicUsize>,
}

#[derive(Clone, Default)]
struct Script {
    first: Vec<String>,
    second: Vec<String>,
    /// Answers before the streams: (status, headers, body), one per request.
    refusals: Vec<Refusal>,
}

/// A status, its headers and its JSON body.
type Refusal = (u16, Vec<(&'static str, &'static str)>, Value);

impl Fake {
    fn received(&self) -> Vec<Received> {
        self.requests
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    fn received_for(&self, model: &str) -> Vec<Received> {
        self.received()
            .into_iter()
            .filter(|r| r.body["model"] == model)
            .collect()
    }
}

/// `data: {chunk}` of a Chat Completions chunk with one choice.
fn delta(delta: Value) -> String {
    raw(
        json!({"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "m",
               "choices": [{"index": 0, "delta": delta, "finish_reason": null}]}),
    )
}

fn finish(reason: &str) -> String {
    raw(
        json!({"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "m",
               "choices": [{"index": 0, "delta": {}, "finish_reason": reason}]}),
    )
}

/// The usage-only last chunk (`stream_options.include_usage`), with empty `choices`.
fn usage_chunk(usage: Value) -> String {
    raw(json!({"id": "c1", "object": "chat.completion.chunk", "choices": [], "usage": usage}))
}

fn raw(value: Value) -> String {
    format!("data: {value}\n\n")
}

const DONE: &str = "data: [DONE]\n\n";

fn sse(frames: Vec<String>) -> Response {
    let stream = futures::stream::iter(
        frames
            .into_iter()
            .map(|frame| Ok::<_, std::convert::Infallible>(Bytes::from(frame))),
    );
    Response::builder()
        .header("content-type", "text/event-stream")
        .body(Body::from_stream(stream))
        .unwrap_or_default()
}

async fn answer(State(fake): State<Fake>, uri: Uri, headers: HeaderMap, body: Bytes) -> Response {
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let model = body["model"].as_str().unwrap_or_default().to_owned();
    let seen = {
        let mut requests = fake.requests.lock().unwrap_or_else(|p| p.into_inner());
        requests.push(Received {
            uri: uri.to_string(),
            headers,
            body: body.clone(),
        });
        requests.iter().filter(|r| r.body["model"] == model).count()
    };
    let Some(script) = fake.scripts.get(&model) else {
        return (
            StatusCode::NOT_FOUND,
            Json(json!({"error": {"message": "no such model"}})),
        )
            .into_response();
    };
    if let Some((status, headers, body)) = script.refusals.get(seen - 1) {
        let mut response = (
            StatusCode::from_u16(*status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
            Json(body.clone()),
        )
            .into_response();
        for (name, value) in headers {
            if let Ok(value) = value.parse() {
                response.headers_mut().insert(*name, value);
            }
        }
        return response;
    }
    let has_results = has_results(&body);
    sse(if has_results {
        script.second.clone()
    } else {
        script.first.clone()
    })
}

/// Whether a request carries tool results: chat `tool` messages, Responses
/// `function_call_output` items, Anthropic `tool_result` blocks.
fn has_results(body: &Value) -> bool {
    let items = |key: &str| body[key].as_array().cloned().unwrap_or_default();
    items("messages").iter().any(|m| {
        m["role"] == "tool"
            || m["content"]
                .as_array()
                .is_some_and(|c| c.iter().any(|b| b["type"] == "tool_result"))
    }) || items("input")
        .iter()
        .any(|i| i["type"] == "function_call_output")
}

async fn model_list(State(fake): State<Fake>, headers: HeaderMap) -> Response {
    if headers.get("authorization").and_then(|v| v.to_str().ok())
        != Some(format!("Bearer {KEY}").as_str())
    {
        return StatusCode::UNAUTHORIZED.into_response();
    }
    // A model pulled since the first listing shows from the second on.
    let asked = fake
        .listings
        .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let mut data = vec![
        json!({"id": "qwen3:8b", "object": "model", "created": 1, "owned_by": "library"}),
        json!({"id": "llama3.2:3b", "object": "model", "created": 1, "owned_by": "library"}),
    ];
    if asked > 0 {
        data.push(
            json!({"id": "gemma3:4b", "object": "model", "created": 2, "owned_by": "library"}),
        );
    }
    Json(json!({"object": "list", "data": data})).into_response()
}

/// The fake on a free port: every POST replays its model's script; `GET /v1/models` lists two.
async fn start_fake(scripts: BTreeMap<String, Script>) -> (Fake, String) {
    let fake = Fake {
        scripts: Arc::new(scripts),
        ..Fake::default()
    };
    let router = Router::new()
        .route("/v1/models", get(model_list))
        .fallback(post(answer))
        .with_state(fake.clone());
    let base = serve_router(router).await;
    (fake, base)
}

async fn start_glassbox(providers: Value) -> TestServer {
    std::env::set_var(KEY_VARIABLE, KEY);
    let dir = test_dir();
    let path = dir.path().join("providers.json");
    std::fs::write(&path, providers.to_string()).expect("write providers file");
    TestServer::start_with(dir, |config| config.providers_file = Some(path)).await
}

async fn run(server: &TestServer, model: &str, prompt: &str) -> Vec<Event> {
    let events = server.chat_stream(model, prompt).await.collect().await;
    assert_invariants(&events);
    events
}

fn terminal(events: &[Event]) -> &EventKind {
    &events.last().expect("events").kind
}

fn final_message(events: &[Event]) -> &app::protocol::Message {
    match terminal(events) {
        EventKind::MessageFinal { message, .. }
        | EventKind::MessageError { message, .. }
        | EventKind::MessageCancelled { message, .. } => message,
        other => panic!("not terminal: {other:?}"),
    }
}

fn reasoning_of(message: &app::protocol::Message) -> String {
    message
        .segments
        .iter()
        .filter_map(|segment| match segment {
            Segment::Reasoning(reasoning) => Some(reasoning.combined_text.clone()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("|")
}

fn usage(input: u64, output: u64, cached: Option<u64>, reasoning: Option<u64>) -> Usage {
    Usage {
        input_tokens: input,
        output_tokens: output,
        reasoning_tokens: reasoning,
        cache_read_tokens: cached,
        cache_write_tokens: None,
    }
}

/// One row of the table: its script and what the run must show.
struct Row {
    server: &'static str,
    script: Script,
    reasoning: &'static str,
    text: &'static str,
    /// `(name, arguments)` of each call, in order.
    calls: Vec<(&'static str, Value)>,
    usage: Option<Usage>,
}

/// The second turn most rows share: a plain answer.
fn answered(text: &str, usage: Option<Value>) -> Vec<String> {
    let mut frames = vec![delta(json!({"content": text})), finish("stop")];
    frames.extend(usage.map(usage_chunk));
    frames.push(DONE.into());
    frames
}

fn list_call(id: &str) -> Value {
    json!({"index": 0, "id": id, "type": "function", "function": {"name": "list_dir", "arguments": "{\"path\": \".\"}"}})
}

/// OpenAI itself: reasoning models send no reasoning text on Chat Completions; tool call
/// fragments joined by `index`, the id in the first only; usage in a last chunk with empty
/// `choices`, with cached and reasoning tokens.
fn openai() -> Row {
    Row {
        server: "openai",
        script: Script {
            first: vec![
                delta(json!({"role": "assistant", "content": null, "refusal": null})),
                delta(
                    json!({"tool_calls": [{"index": 0, "id": "call_1", "type": "function", "function": {"name": "list_dir", "arguments": ""}}]}),
                ),
                delta(json!({"tool_calls": [{"index": 0, "function": {"arguments": "{\"pa"}}]})),
                delta(
                    json!({"tool_calls": [{"index": 0, "function": {"arguments": "th\": \".\"}"}}]}),
                ),
                finish("tool_calls"),
                usage_chunk(
                    json!({"prompt_tokens": 1200, "completion_tokens": 40, "total_tokens": 1240,
                    "prompt_tokens_details": {"cached_tokens": 1024, "audio_tokens": 0},
                    "completion_tokens_details": {"reasoning_tokens": 32, "audio_tokens": 0}}),
                ),
                DONE.into(),
            ],
            second: answered(
                "Listed.",
                Some(json!({"prompt_tokens": 1300, "completion_tokens": 10,
                "prompt_tokens_details": {"cached_tokens": 1152}, "completion_tokens_details": {"reasoning_tokens": 0}})),
            ),
            ..Script::default()
        },
        reasoning: "",
        text: "Listed.",
        calls: vec![("list_dir", json!({"path": "."}))],
        usage: Some(usage(2500, 50, Some(2176), Some(32))),
    }
}

/// OpenAI declining: the refusal streams in `delta.refusal` and is the answer.
fn refusal() -> Row {
    Row {
        server: "refusal",
        script: Script {
            first: vec![
                delta(json!({"role": "assistant", "content": null, "refusal": ""})),
                delta(json!({"refusal": "I can't help "})),
                delta(json!({"refusal": "with that."})),
                finish("stop"),
                DONE.into(),
            ],
            ..Script::default()
        },
        reasoning: "",
        text: "I can't help with that.",
        calls: vec![],
        usage: None,
    }
}

/// Azure OpenAI: a first chunk with empty `choices` carrying the prompt filter results, content
/// filter results on every chunk.
fn azure() -> Row {
    let filtered = json!({"hate": {"filtered": false, "severity": "safe"}});
    Row {
        server: "azure",
        script: Script {
            first: vec![
                raw(
                    json!({"id": "", "object": "", "created": 0, "model": "", "choices": [],
                    "prompt_filter_results": [{"prompt_index": 0, "content_filter_results": filtered}]}),
                ),
                raw(
                    json!({"id": "c1", "object": "chat.completion.chunk", "model": "gpt-4o",
                    "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": null, "content_filter_results": {}}]}),
                ),
                raw(
                    json!({"id": "c1", "object": "chat.completion.chunk", "model": "gpt-4o",
                    "choices": [{"index": 0, "delta": {"content": "Hello from Azure."}, "finish_reason": null, "content_filter_results": filtered}]}),
                ),
                finish("stop"),
                usage_chunk(
                    json!({"prompt_tokens": 20, "completion_tokens": 4, "total_tokens": 24}),
                ),
                DONE.into(),
            ],
            ..Script::default()
        },
        reasoning: "",
        text: "Hello from Azure.",
        calls: vec![],
        usage: Some(usage(20, 4, None, None)),
    }
}

/// Ollama: `reasoning` for a thinking model; a tool call whole in one chunk, and `finish_reason`
/// `stop` although it called a tool; usage in the finishing chunk.
fn ollama() -> Row {
    Row {
        server: "ollama",
        script: Script {
            first: vec![
                delta(json!({"role": "assistant", "content": "", "reasoning": "The user wants "})),
                delta(json!({"role": "assistant", "content": "", "reasoning": "a listing."})),
                delta(
                    json!({"role": "assistant", "content": "", "tool_calls": [list_call("call_olla")]}),
                ),
                raw(
                    json!({"id": "c1", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": "stop"}],
                    "usage": {"prompt_tokens": 300, "completion_tokens": 30, "total_tokens": 330}}),
                ),
                DONE.into(),
            ],
            second: vec![
                delta(json!({"role": "assistant", "content": "Two files."})),
                raw(
                    json!({"id": "c1", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": "stop"}],
                    "usage": {"prompt_tokens": 400, "completion_tokens": 5, "total_tokens": 405}}),
                ),
                DONE.into(),
            ],
            ..Script::default()
        },
        reasoning: "The user wants a listing.",
        text: "Two files.",
        calls: vec![("list_dir", json!({"path": "."}))],
        usage: Some(usage(700, 35, None, None)),
    }
}

/// LM Studio: `reasoning_content` (its "separate reasoning" setting); no usage at all.
fn lm_studio() -> Row {
    Row {
        server: "lmstudio",
        script: Script {
            first: vec![
                delta(json!({"role": "assistant", "reasoning_content": "Short "})),
                delta(json!({"reasoning_content": "thought."})),
                delta(json!({"content": "Hi."})),
                finish("stop"),
                DONE.into(),
            ],
            ..Script::default()
        },
        reasoning: "Short thought.",
        text: "Hi.",
        calls: vec![],
        usage: None,
    }
}

/// vLLM: `reasoning_content` and `reasoning` both (versions in between send the same text
/// twice), two calls in one chunk by index, `continuous_usage_stats` (the usage so far in every
/// chunk: the last counts).
fn vllm() -> Row {
    let so_far =
        |n: u64| json!({"prompt_tokens": 50, "completion_tokens": n, "total_tokens": 50 + n});
    let with_usage = |delta: Value, n: u64| {
        raw(
            json!({"id": "c1", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta, "finish_reason": null}], "usage": so_far(n)}),
        )
    };
    Row {
        server: "vllm",
        script: Script {
            first: vec![
                with_usage(json!({"role": "assistant", "content": ""}), 0),
                with_usage(
                    json!({"reasoning_content": "Both.", "reasoning": "Both."}),
                    2,
                ),
                with_usage(
                    json!({"tool_calls": [
                        {"index": 0, "id": "chatcmpl-tool-a", "type": "function", "function": {"name": "list_dir", "arguments": "{\"path\": \".\"}"}},
                        {"index": 1, "id": "chatcmpl-tool-b", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\": \"x.md\"}"}}
                    ]}),
                    9,
                ),
                raw(
                    json!({"id": "c1", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}], "usage": so_far(10)}),
                ),
                DONE.into(),
            ],
            second: answered(
                "Done.",
                Some(json!({"prompt_tokens": 90, "completion_tokens": 2})),
            ),
            ..Script::default()
        },
        reasoning: "Both.",
        text: "Done.",
        calls: vec![
            ("list_dir", json!({"path": "."})),
            ("read_file", json!({"path": "x.md"})),
        ],
        usage: Some(usage(140, 12, None, None)),
    }
}

/// llama.cpp's server: `reasoning_content`, call fragments repeating the id, usage and
/// `timings` in the finishing chunk.
fn llama_cpp() -> Row {
    Row {
        server: "llamacpp",
        script: Script {
            first: vec![
                delta(json!({"reasoning_content": "Let me look."})),
                delta(
                    json!({"tool_calls": [{"index": 0, "id": "abc123", "type": "function", "function": {"name": "list_dir", "arguments": "{\"path\":"}}]}),
                ),
                delta(
                    json!({"tool_calls": [{"index": 0, "id": "abc123", "type": "function", "function": {"arguments": " \".\"}"}}]}),
                ),
                raw(
                    json!({"id": "c1", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}],
                    "usage": {"prompt_tokens": 80, "completion_tokens": 12, "total_tokens": 92},
                    "timings": {"prompt_n": 80, "predicted_n": 12, "cache_n": 64}}),
                ),
                DONE.into(),
            ],
            second: answered("Seen.", None),
            ..Script::default()
        },
        reasoning: "Let me look.",
        text: "Seen.",
        calls: vec![("list_dir", json!({"path": "."}))],
        usage: Some(usage(80, 12, None, None)),
    }
}

/// OpenRouter: SSE comments while it waits, `reasoning` beside `reasoning_details` (the same
/// text once), usage last with cached and reasoning counts.
fn openrouter() -> Row {
    Row {
        server: "openrouter",
        script: Script {
            first: vec![
                ": OPENROUTER PROCESSING\n\n".into(),
                delta(
                    json!({"role": "assistant", "content": "", "reasoning": "Weighing it.",
                    "reasoning_details": [{"type": "reasoning.text", "text": "Weighing it.", "format": "unknown", "index": 0}]}),
                ),
                delta(json!({"content": "", "reasoning": null,
                    "reasoning_details": [{"type": "reasoning.encrypted", "data": "gAAAAB…", "format": "openai-responses-v1", "index": 1}]})),
                delta(json!({"content": "Answer."})),
                finish("stop"),
                usage_chunk(
                    json!({"prompt_tokens": 500, "completion_tokens": 60, "total_tokens": 560, "cost": 0.001,
                    "prompt_tokens_details": {"cached_tokens": 256}, "completion_tokens_details": {"reasoning_tokens": 48}}),
                ),
                DONE.into(),
            ],
            ..Script::default()
        },
        reasoning: "Weighing it.",
        text: "Answer.",
        calls: vec![],
        usage: Some(usage(500, 60, Some(256), Some(48))),
    }
}

/// Groq: `reasoning` (with `reasoning_format: parsed`), usage under `x_groq` in the last chunk.
fn groq() -> Row {
    Row {
        server: "groq",
        script: Script {
            first: vec![
                delta(json!({"role": "assistant", "content": ""})),
                delta(json!({"reasoning": "Quick."})),
                delta(json!({"content": "Fast answer."})),
                raw(
                    json!({"id": "c1", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
                    "x_groq": {"id": "req_1", "usage": {"prompt_tokens": 30, "completion_tokens": 9, "total_tokens": 39}}}),
                ),
                DONE.into(),
            ],
            ..Script::default()
        },
        reasoning: "Quick.",
        text: "Fast answer.",
        calls: vec![],
        usage: Some(usage(30, 9, None, None)),
    }
}

/// Mistral's Magistral: `content` as typed parts, thinking with its own text parts; a tool call
/// whole in one chunk; usage in the finishing chunk.
fn mistral() -> Row {
    Row {
        server: "mistral",
        script: Script {
            first: vec![
                delta(
                    json!({"role": "assistant", "content": [{"type": "thinking", "thinking": [{"type": "text", "text": "Plan: "}]}]}),
                ),
                delta(
                    json!({"content": [{"type": "thinking", "thinking": [{"type": "text", "text": "list it."}]}]}),
                ),
                delta(
                    json!({"content": [{"type": "text", "text": "Listing "}, {"type": "reference", "reference_ids": [1]}]}),
                ),
                raw(
                    json!({"id": "c1", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"tool_calls": [
                    {"id": "D681PevKs", "function": {"name": "list_dir", "arguments": "{\"path\": \".\"}"}, "index": 0}]}, "finish_reason": "tool_calls"}],
                    "usage": {"prompt_tokens": 70, "completion_tokens": 20, "total_tokens": 90}}),
                ),
                DONE.into(),
            ],
            second: vec![
                delta(json!({"content": [{"type": "text", "text": "now: done."}]})),
                raw(
                    json!({"id": "c1", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"content": ""}, "finish_reason": "stop"}],
                    "usage": {"prompt_tokens": 100, "completion_tokens": 4, "total_tokens": 104}}),
                ),
                DONE.into(),
            ],
            ..Script::default()
        },
        reasoning: "Plan: list it.",
        text: "Listing now: done.",
        calls: vec![("list_dir", json!({"path": "."}))],
        usage: Some(usage(170, 24, None, None)),
    }
}

/// DeepSeek: `reasoning_content`, its cache counts (`prompt_cache_hit_tokens`).
fn deepseek() -> Row {
    Row {
        server: "deepseek",
        script: Script {
            first: vec![
                delta(json!({"role": "assistant", "content": null, "reasoning_content": ""})),
                delta(json!({"content": null, "reasoning_content": "Hmm."})),
                delta(json!({"content": "Yes.", "reasoning_content": null})),
                raw(
                    json!({"id": "c1", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"content": ""}, "finish_reason": "stop"}],
                    "usage": {"prompt_tokens": 64, "completion_tokens": 20, "total_tokens": 84, "prompt_cache_hit_tokens": 40, "prompt_cache_miss_tokens": 24,
                              "completion_tokens_details": {"reasoning_tokens": 15}}}),
                ),
                DONE.into(),
            ],
            ..Script::default()
        },
        reasoning: "Hmm.",
        text: "Yes.",
        calls: vec![],
        usage: Some(usage(64, 20, Some(40), Some(15))),
    }
}

/// Together and Fireworks: `<think>` inline (DeepSeek-R1, Qwen3), usage in the finishing chunk.
fn together() -> Row {
    Row {
        server: "together",
        script: Script {
            first: vec![
                raw(
                    json!({"id": "c1", "object": "chat.completion.chunk", "choices": [{"index": 0, "text": "<think>", "delta": {"role": "assistant", "content": "<think>"}, "finish_reason": null}]}),
                ),
                delta(json!({"content": "Inline.</think>"})),
                delta(json!({"content": "Out."})),
                raw(
                    json!({"id": "c1", "object": "chat.completion.chunk", "choices": [{"index": 0, "text": "", "delta": {"content": ""}, "finish_reason": "stop"}],
                    "usage": {"prompt_tokens": 12, "completion_tokens": 7, "total_tokens": 19}}),
                ),
                DONE.into(),
            ],
            ..Script::default()
        },
        reasoning: "Inline.",
        text: "Out.",
        calls: vec![],
        usage: Some(usage(12, 7, None, None)),
    }
}

/// Gemini's OpenAI-compatible endpoint: thought summaries in `<thought>` tags, two calls whole
/// in one chunk without `index`.
fn gemini() -> Row {
    Row {
        server: "gemini",
        script: Script {
            first: vec![
                delta(json!({"role": "assistant", "content": "<thought>Two tools.</thought>"})),
                raw(
                    json!({"id": "c1", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"role": "assistant", "tool_calls": [
                    {"id": "function-call-1", "type": "function", "function": {"name": "list_dir", "arguments": "{\"path\":\".\"}"}},
                    {"id": "function-call-2", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\":\"y.md\"}"}}
                ]}, "finish_reason": "stop"}], "usage": {"prompt_tokens": 33, "completion_tokens": 11, "total_tokens": 44}}),
                ),
                DONE.into(),
            ],
            second: answered(
                "Both ran.",
                Some(json!({"prompt_tokens": 60, "completion_tokens": 3, "total_tokens": 63})),
            ),
            ..Script::default()
        },
        reasoning: "Two tools.",
        text: "Both ran.",
        calls: vec![
            ("list_dir", json!({"path": "."})),
            ("read_file", json!({"path": "y.md"})),
        ],
        usage: Some(usage(93, 14, None, None)),
    }
}

/// The OpenAI Responses API: a summary, cached and reasoning counts.
fn responses() -> Row {
    let typed = |event: Value| {
        format!(
            "event: {}\ndata: {event}\n\n",
            event["type"].as_str().unwrap_or_default()
        )
    };
    Row {
        server: "responses",
        script: Script {
            first: vec![
                typed(
                    json!({"type": "response.created", "sequence_number": 0, "response": {"id": "resp_1", "status": "in_progress"}}),
                ),
                typed(
                    json!({"type": "response.reasoning_summary_text.delta", "sequence_number": 1, "item_id": "rs_1", "output_index": 0, "summary_index": 0, "delta": "Summary."}),
                ),
                typed(
                    json!({"type": "response.output_text.delta", "sequence_number": 2, "item_id": "msg_1", "output_index": 1, "content_index": 0, "delta": "Responded."}),
                ),
                typed(
                    json!({"type": "response.completed", "sequence_number": 3, "response": {"id": "resp_1", "status": "completed",
                    "usage": {"input_tokens": 2048, "input_tokens_details": {"cached_tokens": 1920}, "output_tokens": 300, "output_tokens_details": {"reasoning_tokens": 256}, "total_tokens": 2348}}}),
                ),
            ],
            ..Script::default()
        },
        reasoning: "Summary.",
        text: "Responded.",
        calls: vec![],
        usage: Some(usage(2048, 300, Some(1920), Some(256))),
    }
}

/// An Anthropic-compatible gateway (a proxy in front of Anthropic, or a vendor's Anthropic
/// endpoint): Messages events under its own base URL, the key in `x-api-key`.
fn anthropic_gateway() -> Row {
    let typed = |event: Value| {
        format!(
            "event: {}\ndata: {event}\n\n",
            event["type"].as_str().unwrap_or_default()
        )
    };
    Row {
        server: "gateway",
        script: Script {
            first: vec![
                typed(
                    json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude", "content": [],
                    "stop_reason": null, "usage": {"input_tokens": 25, "output_tokens": 1}}}),
                ),
                typed(
                    json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
                ),
                typed(json!({"type": "ping"})),
                typed(
                    json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Through the gateway."}}),
                ),
                typed(json!({"type": "content_block_stop", "index": 0})),
                typed(
                    json!({"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": null}, "usage": {"output_tokens": 9}}),
                ),
                typed(json!({"type": "message_stop"})),
            ],
            ..Script::default()
        },
        reasoning: "",
        text: "Through the gateway.",
        calls: vec![],
        usage: Some(usage(25, 9, None, None)),
    }
}

fn rows() -> Vec<Row> {
    vec![
        openai(),
        refusal(),
        azure(),
        ollama(),
        lm_studio(),
        vllm(),
        llama_cpp(),
        openrouter(),
        groq(),
        mistral(),
        deepseek(),
        together(),
        gemini(),
        responses(),
        anthropic_gateway(),
    ]
}

/// Each row's provider entry, as docs/providers.md shows it, pointed at the fake.
fn provider_entry(server: &str, base: &str) -> Value {
    let model = json!([server]);
    match server {
        "azure" => json!({"name": server, "kind": "openai_chat",
            "base_url": format!("{base}/openai/deployments/{{model}}"),
            "query": {"api-version": "2024-10-21"}, "api_key_header": "api-key",
            "api_key_env": KEY_VARIABLE, "models": model}),
        "responses" => {
            json!({"name": server, "kind": "openai_responses", "base_url": format!("{base}/v1"),
            "api_key_env": KEY_VARIABLE, "models": model})
        }
        "gateway" => {
            json!({"name": server, "kind": "anthropic", "base_url": format!("{base}/anthropic/v1"),
            "api_key_env": KEY_VARIABLE, "models": model})
        }
        _ => json!({"name": server, "kind": "openai_chat", "base_url": format!("{base}/v1"),
            "api_key_env": KEY_VARIABLE, "models": model}),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_server_of_the_table_streams_its_reasoning_text_calls_and_usage() {
    let rows = rows();
    let scripts = rows
        .iter()
        .map(|row| (row.server.to_owned(), row.script.clone()))
        .collect();
    let (fake, base) = start_fake(scripts).await;
    let providers: Vec<Value> = rows
        .iter()
        .map(|row| provider_entry(row.server, &base))
        .collect();
    let server = start_glassbox(json!({"providers": providers, "max_steps": 3})).await;
    for row in &rows {
        let model = format!("{0}/{0}", row.server);
        let events = run(&server, &model, "List the folder").await;
        assert!(
            matches!(terminal(&events), EventKind::MessageFinal { .. }),
            "{}: {:?}",
            row.server,
            terminal(&events)
        );
        let message = final_message(&events);
        assert_eq!(
            reasoning_of(message),
            row.reasoning,
            "{}: reasoning",
            row.server
        );
        assert_eq!(message.text(), row.text, "{}: text", row.server);
        let calls: Vec<(&str, &Value)> = message
            .tool_calls()
            .map(|call| (call.name.as_str(), &call.args))
            .collect();
        let expected: Vec<(&str, &Value)> = row.calls.iter().map(|(n, a)| (*n, a)).collect();
        assert_eq!(calls, expected, "{}: tool calls", row.server);
        assert_eq!(message.usage, row.usage, "{}: usage", row.server);
    }
    // Azure: the deployment in the path, `api-version` in the query, the key in `api-key` only.
    let azure = fake.received_for("azure");
    assert_eq!(
        azure[0].uri,
        "/openai/deployments/azure/chat/completions?api-version=2024-10-21"
    );
    assert_eq!(
        azure[0]
            .headers
            .get("api-key")
            .and_then(|v| v.to_str().ok()),
        Some(KEY)
    );
    assert!(azure[0].headers.get("authorization").is_none());
    let openai = fake.received_for("openai");
    assert_eq!(
        openai[0]
            .headers
            .get("authorization")
            .and_then(|v| v.to_str().ok()),
        Some(format!("Bearer {KEY}").as_str())
    );
    assert_eq!(openai[0].body["stream_options"]["include_usage"], true);
    let gateway = fake.received_for("gateway");
    assert_eq!(gateway[0].uri, "/anthropic/v1/messages");
    assert_eq!(
        gateway[0]
            .headers
            .get("x-api-key")
            .and_then(|v| v.to_str().ok()),
        Some(KEY)
    );
    server.stop().await;
}

fn error_of(events: &[Event]) -> (ErrorCode, String) {
    match terminal(events) {
        EventKind::MessageError { code, error, .. } => (code.clone(), error.clone()),
        other => panic!("not an error: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_error_inside_a_stream_ends_the_run_with_the_providers_message_and_a_code() {
    let typed = |event: Value| {
        format!(
            "event: {}\ndata: {event}\n\n",
            event["type"].as_str().unwrap_or_default()
        )
    };
    let script = |first: Vec<String>| Script {
        first,
        ..Script::default()
    };
    let scripts = BTreeMap::from([
        (
            "context".to_owned(),
            script(vec![
                delta(json!({"content": "Part"})),
                raw(
                    json!({"error": {"message": "This model's maximum context length is 8192 tokens.", "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}}),
                ),
            ]),
        ),
        // OpenRouter: a numeric code beside a choice finished with `error`.
        (
            "upstream".to_owned(),
            script(vec![
                delta(json!({"content": "Part"})),
                raw(
                    json!({"id": "c1", "object": "chat.completion.chunk", "error": {"code": 502, "message": "Provider returned error"},
                       "choices": [{"index": 0, "delta": {"content": ""}, "finish_reason": "error"}]}),
                ),
            ]),
        ),
        // Azure's content filter stops the answer.
        (
            "filtered".to_owned(),
            script(vec![
                delta(json!({"content": "Part"})),
                finish("content_filter"),
                DONE.into(),
            ]),
        ),
        (
            "resp-error".to_owned(),
            script(vec![
                typed(json!({"type": "response.output_text.delta", "delta": "Part"})),
                typed(
                    json!({"type": "error", "code": "rate_limit_exceeded", "message": "Rate limit reached for o4-mini.", "param": null, "sequence_number": 2}),
                ),
            ]),
        ),
        (
            "resp-failed".to_owned(),
            script(vec![
                typed(json!({"type": "response.output_text.delta", "delta": "Part"})),
                typed(
                    json!({"type": "response.failed", "response": {"status": "failed", "error": {"code": "server_error", "message": "The server had an error."}}}),
                ),
            ]),
        ),
    ]);
    let (_fake, base) = start_fake(scripts).await;
    let server = start_glassbox(json!({"providers": [
        {"name": "chat", "kind": "openai_chat", "base_url": format!("{base}/v1"), "models": ["context", "upstream", "filtered"]},
        {"name": "resp", "kind": "openai_responses", "base_url": format!("{base}/v1"), "models": ["resp-error", "resp-failed"]}
    ]}))
    .await;
    for (model, code, said) in [
        (
            "chat/context",
            ErrorCode::ContextLength,
            "maximum context length is 8192",
        ),
        (
            "chat/upstream",
            ErrorCode::ProviderUnavailable,
            "Provider returned error",
        ),
        ("chat/filtered", ErrorCode::ContentFilter, "content filter"),
        (
            "resp/resp-error",
            ErrorCode::RateLimited,
            "Rate limit reached for o4-mini.",
        ),
        (
            "resp/resp-failed",
            ErrorCode::ProviderUnavailable,
            "The server had an error.",
        ),
    ] {
        let events = run(&server, model, "Go").await;
        let (got, error) = error_of(&events);
        assert_eq!(got, code, "{model}: {error}");
        assert!(error.contains(said), "{model}: {error}");
        assert_eq!(
            final_message(&events).text(),
            "Part",
            "{model}: the partial answer is kept"
        );
    }
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retry_after_is_waited_for_and_529_ends_as_overloaded() {
    let overloaded =
        json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}});
    let scripts = BTreeMap::from([
        (
            "limited".to_owned(),
            Script {
                refusals: vec![(
                    429,
                    vec![("retry-after", "2")],
                    json!({"error": {"message": "Rate limit reached", "code": "rate_limit_exceeded"}}),
                )],
                first: answered("After the wait.", None),
                ..Script::default()
            },
        ),
        (
            "busy".to_owned(),
            Script {
                refusals: vec![(529, vec![("retry-after", "0")], overloaded.clone()); 4],
                ..Script::default()
            },
        ),
        (
            "patient".to_owned(),
            Script {
                refusals: vec![(
                    429,
                    vec![("retry-after", "3600")],
                    json!({"error": {"message": "Come back in an hour"}}),
                )],
                ..Script::default()
            },
        ),
    ]);
    let (fake, base) = start_fake(scripts).await;
    let server = start_glassbox(json!({"providers": [
        {"name": "chat", "kind": "openai_chat", "base_url": format!("{base}/v1"), "models": ["limited", "busy", "patient"]}
    ]}))
    .await;

    let started = Instant::now();
    let events = run(&server, "chat/limited", "Go").await;
    let waited = started.elapsed();
    assert!(
        matches!(terminal(&events), EventKind::MessageFinal { .. }),
        "{:?}",
        terminal(&events)
    );
    assert_eq!(final_message(&events).text(), "After the wait.");
    assert!(
        waited >= Duration::from_millis(1900) && waited < Duration::from_secs(5),
        "waited {waited:?}"
    );
    assert_eq!(fake.received_for("limited").len(), 2);
    // The wait is an event, folded into the live message until the answer arrives.
    let retrying: Vec<&EventKind> = events
        .iter()
        .map(|e| &e.kind)
        .filter(|kind| matches!(kind, EventKind::Retrying { .. }))
        .collect();
    assert_eq!(
        retrying,
        [&EventKind::Retrying {
            attempt: 1,
            delay_ms: 2000,
            reason: ErrorCode::RateLimited
        }]
    );
    let at = events
        .iter()
        .position(|e| matches!(e.kind, EventKind::Retrying { .. }))
        .unwrap_or_default();
    let live = app::protocol::fold(&events[..=at]).expect("a message");
    assert_eq!(
        live.retrying.map(|r| r.delay_ms),
        Some(2000),
        "shown while it waits"
    );
    let answered = app::protocol::fold(&events[..events.len() - 1]).expect("a message");
    assert_eq!(answered.retrying, None, "cleared when text arrives");
    assert_eq!(final_message(&events).retrying, None);

    let events = run(&server, "chat/busy", "Go").await;
    let (code, error) = error_of(&events);
    assert_eq!(code, ErrorCode::Overloaded, "{error}");
    assert!(
        error.contains("529") && error.contains("Overloaded"),
        "{error}"
    );
    assert_eq!(
        fake.received_for("busy").len(),
        4,
        "the first try and three retries"
    );

    // Asked to wait longer than the cap: no wait, the provider's message.
    let started = Instant::now();
    let events = run(&server, "chat/patient", "Go").await;
    let (code, error) = error_of(&events);
    assert_eq!(code, ErrorCode::RateLimited);
    assert!(error.contains("Come back in an hour"), "{error}");
    assert!(started.elapsed() < Duration::from_secs(2));
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn discovered_models_come_from_the_servers_list() {
    let (_fake, base) = start_fake(BTreeMap::new()).await;
    let server = start_glassbox(json!({"providers": [
        {"name": "local", "kind": "openai_chat", "base_url": format!("{base}/v1"), "api_key_env": KEY_VARIABLE, "models": "discover"}
    ]}))
    .await;
    let mut models = Value::Null;
    for _ in 0..100 {
        let (_, list) = server.get_json("/api/models").await;
        models = list["models"].clone();
        if models.as_array().is_some_and(|m| m.len() > 1) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let ids: Vec<&str> = models
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        ids.contains(&"local/qwen3:8b") && ids.contains(&"local/llama3.2:3b"),
        "{models}"
    );
    assert!(!ids.contains(&"local/gemma3:4b"));
    // The settings panel's button: the list again, with the model pulled since.
    let (status, list) = server.post_json("/api/models/reload", json!({})).await;
    assert_eq!(status, 200, "{list}");
    assert!(
        list["models"]
            .as_array()
            .is_some_and(|m| m.contains(&json!("local/gemma3:4b"))),
        "{list}"
    );
    let (_, list) = server.get_json("/api/models").await;
    assert!(
        list["models"]
            .as_array()
            .is_some_and(|m| m.contains(&json!("local/gemma3:4b"))),
        "{list}"
    );
    server.stop().await;
}

/// Reads one HTTP/1.1 request (head and `Content-Length` body); None when the peer closed.
async fn read_request(stream: &mut tokio::net::TcpStream, buffer: &mut Vec<u8>) -> Option<()> {
    use tokio::io::AsyncReadExt;
    loop {
        if let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buffer[..end]).to_ascii_lowercase();
            let length: usize = head
                .lines()
                .find_map(|line| line.strip_prefix("content-length:"))
                .and_then(|n| n.trim().parse().ok())
                .unwrap_or(0);
            if buffer.len() >= end + 4 + length {
                buffer.drain(..end + 4 + length);
                return Some(());
            }
        }
        let mut chunk = [0u8; 8192];
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return None,
            Ok(n) => buffer.extend_from_slice(&chunk[..n]),
        }
    }
}

/// A server that keeps each connection alive after its first answer but, like one whose idle
/// timeout fired just as the next request arrived, closes it on the second request without a
/// byte of answer. Counts connections and requests.
async fn start_closing_server(requests: Arc<Mutex<Vec<(usize, usize)>>>) -> String {
    use tokio::io::AsyncWriteExt;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let base = format!("http://{}/v1", listener.local_addr().expect("address"));
    tokio::spawn(async move {
        let mut connection = 0;
        while let Ok((mut stream, _)) = listener.accept().await {
            connection += 1;
            let requests = requests.clone();
            tokio::spawn(async move {
                let mut buffer = Vec::new();
                let mut count = 0;
                while read_request(&mut stream, &mut buffer).await.is_some() {
                    count += 1;
                    requests
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .push((connection, count));
                    if count > 1 {
                        return; // closed without notice
                    }
                    let body = answered("Still here.", None).concat();
                    let head = format!("HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\n\r\n", body.len());
                    if stream
                        .write_all(format!("{head}{body}").as_bytes())
                        .await
                        .is_err()
                    {
                        return;
                    }
                }
            });
        }
    });
    base
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_lost_on_a_connection_the_server_closed_is_sent_again_on_a_fresh_one() {
    let requests = Arc::new(Mutex::new(Vec::new()));
    let base = start_closing_server(requests.clone()).await;
    let server = start_glassbox(json!({"providers": [
        {"name": "local", "kind": "openai_chat", "base_url": base, "models": ["m"]}
    ]}))
    .await;
    for turn in ["first", "second"] {
        let events = run(&server, "local/m", "Hello").await;
        assert!(
            matches!(terminal(&events), EventKind::MessageFinal { .. }),
            "{turn}: {:?}",
            terminal(&events)
        );
        assert_eq!(final_message(&events).text(), "Still here.", "{turn}");
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    let requests = requests.lock().unwrap_or_else(|p| p.into_inner()).clone();
    assert_eq!(
        requests,
        [(1, 1), (1, 2), (2, 1)],
        "the second turn's request went out on the kept-alive connection, was lost, and was sent once more on a new one"
    );
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cached_and_reasoning_tokens_reach_the_message_the_trace_and_the_exports() {
    let row = openai();
    let (_fake, base) = start_fake(BTreeMap::from([(
        row.server.to_owned(),
        row.script.clone(),
    )]))
    .await;
    let server = start_glassbox(json!({"providers": [provider_entry(row.server, &base)]})).await;
    let events = run(&server, "openai/openai", "List the folder").await;
    let expected = usage(2500, 50, Some(2176), Some(32));
    assert_eq!(final_message(&events).usage, Some(expected));
    let EventKind::MessageStarted {
        conversation_id,
        trace_id,
        ..
    } = &events[0].kind
    else {
        panic!("first event: {:?}", events[0])
    };

    let (status, trace) = server.get_json(&format!("/api/traces/{trace_id}")).await;
    assert_eq!(status, 200);
    assert_eq!(
        (
            &trace["input_tokens"],
            &trace["output_tokens"],
            &trace["cache_read_tokens"],
            &trace["reasoning_tokens"]
        ),
        (&json!(2500), &json!(50), &json!(2176), &json!(32)),
        "{trace}"
    );
    assert!(
        trace.get("cache_write_tokens").is_none(),
        "not reported, not shown: {trace}"
    );

    let inspector = server.inspector(trace_id).await;
    let first_turn = &inspector[0]["response"]["usage"];
    assert_eq!(first_turn["prompt_tokens"], 1200, "{inspector}");
    assert_eq!(first_turn["prompt_tokens_details"]["cached_tokens"], 1024);
    assert_eq!(
        first_turn["completion_tokens_details"]["reasoning_tokens"],
        32
    );

    let (status, flow) = server
        .get_json(&format!("/thoughtflow/{conversation_id}.json"))
        .await;
    assert_eq!(status, 200);
    assert_eq!(
        flow["runs"][0]["usage"],
        json!({"input_tokens": 2500, "output_tokens": 50, "cache_read_tokens": 2176, "reasoning_tokens": 32})
    );

    // The pages as the server renders them: the message footer and the trace's header.
    let summary = "2500 in (2176 cached) · 50 out (32 reasoning) tokens";
    for page in [format!("/c/{conversation_id}"), format!("/t/{trace_id}")] {
        let html = server
            .client
            .get(server.url(&page))
            .send()
            .await
            .expect("GET the page")
            .text()
            .await
            .expect("its HTML");
        assert!(html.contains(summary), "{page}: no {summary:?}");
    }
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_config_of_the_compatibility_table_loads() {
    let docs =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/providers.md"))
            .expect("docs/providers.md");
    let table = docs
        .split("## Compatibility")
        .nth(1)
        .expect("a Compatibility section");
    // Every `{"name": ...}` entry in the table's config column, as written.
    let entries: Vec<Value> = table
        .split('`')
        .filter(|cell| cell.starts_with("{\"name\""))
        .map(|cell| serde_json::from_str(cell).unwrap_or_else(|e| panic!("{cell}: {e}")))
        .collect();
    assert!(entries.len() >= 15, "{} configs", entries.len());
    let listed: Vec<String> = entries
        .iter()
        .filter(|entry| entry["models"].is_array())
        .flat_map(|entry| {
            let name = entry["name"].as_str().unwrap_or_default().to_owned();
            entry["models"]
                .as_array()
                .cloned()
                .unwrap_or_default()
                .into_iter()
                .filter_map(move |m| m.as_str().map(|m| format!("{name}/{m}")))
        })
        .collect();
    let server = start_glassbox(json!({"providers": entries})).await;
    let (_, list) = server.get_json("/api/models").await;
    for id in &listed {
        assert!(
            list["models"]
                .as_array()
                .is_some_and(|m| m.contains(&json!(id))),
            "{id}: {list}"
        );
    }
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redirect_is_not_followed_so_the_key_goes_nowhere_else() {
    // Where a redirect would take the key: it must never be asked.
    let (elsewhere, elsewhere_base) = start_fake(BTreeMap::new()).await;
    let target = format!("{elsewhere_base}/steal");
    let router = Router::new().fallback(post(move || {
        let target = target.clone();
        async move { (StatusCode::TEMPORARY_REDIRECT, [("location", target)]).into_response() }
    }));
    let base = serve_router(router).await;
    let server = start_glassbox(json!({"providers": [
        {"name": "azure", "kind": "openai_chat", "base_url": format!("{base}/v1"), "api_key_header": "api-key",
         "api_key_env": KEY_VARIABLE, "models": ["m"]}
    ]}))
    .await;
    let events = run(&server, "azure/m", "Hello").await;
    let (code, error) = error_of(&events);
    assert_eq!(code, ErrorCode::ProviderError, "{error}");
    assert!(error.contains("307"), "{error}");
    assert!(elsewhere.received().is_empty(), "the redirect was followed");
    server.stop().await;
}
