//! A finished run as OpenTelemetry spans with the GenAI semantic conventions (Development status,
//! open-telemetry/semantic-conventions `gen-ai`): one `invoke_agent {agent}` span per run, a
//! `chat {model}` span per model turn and an `execute_tool {tool}` span per tool call, both children
//! of the run's span, timed by the run's events. Pure, like the other exports: built from the
//! run's folded message, its model turns and a few times read from its events ([`Timings`]),
//! either as a run ends (its message already folded, its events read as logged, without decoding
//! them) or from a stored trace (a run recovered after a crash); `crate::otel` sends them.
//!
//! Ids: the OTel trace id is the Glassbox trace id's 32 hex digits, so a backend finds a run by the
//! id the UI shows; span ids are derived from the trace id and the turn or call, so exporting a
//! trace twice gives the same spans. Content (tool arguments and results, messages) is only added
//! when asked, and passes through redaction again on the way out.

use std::{
    borrow::Cow,
    collections::HashMap,
    sync::Arc,
    time::{Duration, SystemTime},
};

use app::protocol::{
    fold, parse_rfc3339_millis, ApprovalDecision, Event, EventKind, Message, ResolvedBy, Segment,
    ToolCallSegment, ToolCallStatus, TraceStatus,
};
use opentelemetry::{
    trace::{SpanContext, SpanId, SpanKind, Status, TraceFlags, TraceId, TraceState},
    Array, InstrumentationScope, KeyValue, StringValue, Value as OtelValue,
};
use opentelemetry_sdk::trace::{SpanData, SpanEvents, SpanLinks};
use serde::Deserialize;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::{
    providers::ChatMessage,
    records::ProviderKind,
    redact::redact_text,
    store::{ModelTurn, Trace},
    tools::mcp::NAME_SEPARATOR,
};

/// What content the spans carry: none, or the run's (with the user's message, when known).
#[derive(Clone, Copy, Debug)]
pub enum SpanContent<'a> {
    None,
    With { prompt: Option<&'a str> },
}

/// What a run's spans are made of.
pub struct SpanSource<'a> {
    /// The trace's row: its ids, times, totals and ending (its `events` are not read).
    pub trace: &'a Trace,
    /// The run's message, folded by the reducer.
    pub message: Option<&'a Message>,
    pub turns: &'a [ModelTurn],
    pub timings: &'a Timings,
}

/// The spans of a stored trace (a run recovered after a crash): its events folded and timed here.
pub fn otel_spans(trace: &Trace, turns: &[ModelTurn], content: SpanContent<'_>) -> Vec<SpanData> {
    let message = fold(&trace.events);
    let timings = Timings::of_events(&trace.events, turns);
    let source = SpanSource {
        trace,
        message: message.as_ref(),
        turns,
        timings: &timings,
    };
    run_spans(&source, content)
}

/// The spans of a finished run: the run's own first, then its model turns, then its tool calls.
pub fn run_spans(source: &SpanSource<'_>, content: SpanContent<'_>) -> Vec<SpanData> {
    let frame = Frame::new(source, content);
    let mut spans = vec![frame.run_span(source.turns)];
    spans.extend(
        source
            .turns
            .iter()
            .enumerate()
            .map(|(index, turn)| frame.chat_span(index, turn)),
    );
    if let Some(message) = source.message {
        spans.extend(message.tool_calls().map(|call| frame.tool_span(call)));
    }
    spans
}

/// When things happened in a run, as its spans need them: each model turn's first output, each
/// call's result and the last event, as unix milliseconds.
#[derive(Debug, Default)]
pub struct Timings {
    /// Per model turn, in order: the first reasoning, text or call after its request went out.
    first_output: Vec<Option<i64>>,
    results: HashMap<String, i64>,
    last: Option<i64>,
}

/// What the timings read of one event.
struct Mark<'a> {
    seq: u64,
    ts: Cow<'a, str>,
    kind: Cow<'a, str>,
    call_id: Option<Cow<'a, str>>,
}

/// An event's [`Mark`] as the run's log holds it: the rest of the JSON is skipped, not built.
#[derive(Deserialize)]
struct LoggedMark<'a> {
    seq: u64,
    #[serde(borrow)]
    ts: Cow<'a, str>,
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(default, borrow)]
    call_id: Option<Cow<'a, str>>,
}

impl Timings {
    /// From a run's events as logged (JSON, in seq order): the run ending now.
    pub fn of_logged(events: &[Arc<str>], turns: &[ModelTurn]) -> Self {
        let marks = events.iter().filter_map(|json| {
            let mark: LoggedMark<'_> = serde_json::from_str(json).ok()?;
            Some(Mark {
                seq: mark.seq,
                ts: mark.ts,
                kind: mark.kind,
                call_id: mark.call_id,
            })
        });
        Self::of_marks(marks, turns)
    }

    /// From a stored trace's decoded events.
    pub fn of_events(events: &[Event], turns: &[ModelTurn]) -> Self {
        let marks = events.iter().map(|event| Mark {
            seq: event.seq,
            ts: Cow::Borrowed(event.ts.as_str()),
            kind: Cow::Borrowed(event.kind.type_name()),
            call_id: match &event.kind {
                EventKind::ToolResult { call_id, .. } => Some(Cow::Borrowed(call_id.as_str())),
                _ => None,
            },
        });
        Self::of_marks(marks, turns)
    }

    /// One pass: an output event is the first of every turn whose request went out before it
    /// and has none yet (the turns are in request order).
    fn of_marks<'a>(marks: impl Iterator<Item = Mark<'a>>, turns: &[ModelTurn]) -> Self {
        let mut timings = Timings {
            first_output: vec![None; turns.len()],
            ..Timings::default()
        };
        let (mut waiting, mut last_ts) = (0, None);
        for mark in marks {
            match (mark.kind.as_ref(), mark.call_id) {
                (
                    "reasoning_part_started"
                    | "reasoning_part_delta"
                    | "text_delta"
                    | "tool_call_started",
                    _,
                ) => {
                    let ms = parse_rfc3339_millis(&mark.ts);
                    while waiting < turns.len() && turns[waiting].after_seq < mark.seq {
                        timings.first_output[waiting] = ms;
                        waiting += 1;
                    }
                }
                ("tool_result", Some(call_id)) => {
                    if let Some(ms) = parse_rfc3339_millis(&mark.ts) {
                        timings.results.insert(call_id.into_owned(), ms);
                    }
                }
                _ => {}
            }
            last_ts = Some(mark.ts);
        }
        timings.last = last_ts.as_deref().and_then(parse_rfc3339_millis);
        timings
    }
}

/// What every span of one run shares.
struct Frame<'a> {
    trace: &'a Trace,
    message: Option<&'a Message>,
    timings: &'a Timings,
    trace_id: TraceId,
    root: SpanId,
    start_ms: i64,
    end_ms: i64,
    content: bool,
    prompt: Option<&'a str>,
}

/// A span's own parts, before the run's are added.
struct SpanParts {
    key: String,
    name: String,
    kind: SpanKind,
    start_ms: i64,
    end_ms: i64,
    attributes: Vec<KeyValue>,
    status: Status,
}

impl<'a> Frame<'a> {
    fn new(source: &SpanSource<'a>, content: SpanContent<'a>) -> Self {
        let trace = source.trace;
        let start_ms = parse_rfc3339_millis(&trace.started_at).unwrap_or(0);
        let end_ms = trace
            .completed_at
            .as_deref()
            .and_then(parse_rfc3339_millis)
            .or(source.timings.last)
            .unwrap_or(start_ms)
            .max(start_ms);
        Frame {
            trace,
            message: source.message,
            timings: source.timings,
            trace_id: trace_id_of(&trace.trace_id),
            root: span_id_of(&trace.trace_id, "run"),
            start_ms,
            end_ms,
            content: matches!(content, SpanContent::With { .. }),
            prompt: match content {
                SpanContent::With { prompt } => prompt,
                SpanContent::None => None,
            },
        }
    }

    /// A time of the run, kept within it.
    fn clamp(&self, ms: i64) -> i64 {
        ms.clamp(self.start_ms, self.end_ms)
    }

    fn time_of(&self, ts: &str) -> i64 {
        self.clamp(parse_rfc3339_millis(ts).unwrap_or(self.end_ms))
    }

    fn span(&self, parts: SpanParts) -> SpanData {
        let is_root = parts.key == "run";
        let span_id = if is_root {
            self.root
        } else {
            span_id_of(&self.trace.trace_id, &parts.key)
        };
        let mut attributes = parts.attributes;
        attributes.push(KeyValue::new(
            "gen_ai.conversation.id",
            self.trace.conversation_id.clone(),
        ));
        let start_ms = self.clamp(parts.start_ms);
        SpanData {
            span_context: SpanContext::new(
                self.trace_id,
                span_id,
                TraceFlags::SAMPLED,
                false,
                TraceState::default(),
            ),
            parent_span_id: if is_root { SpanId::INVALID } else { self.root },
            parent_span_is_remote: false,
            span_kind: parts.kind,
            name: Cow::Owned(parts.name),
            start_time: system_time(start_ms),
            end_time: system_time(self.clamp(parts.end_ms).max(start_ms)),
            attributes,
            dropped_attributes_count: 0,
            events: SpanEvents::default(),
            links: SpanLinks::default(),
            status: parts.status,
            instrumentation_scope: scope(),
        }
    }

    /// `invoke_agent {agent}`: the whole run, its totals, and why it did not complete.
    fn run_span(&self, turns: &[ModelTurn]) -> SpanData {
        let trace = self.trace;
        let agent = agent_name(&trace.model);
        let mut attributes = vec![
            KeyValue::new("gen_ai.operation.name", "invoke_agent"),
            KeyValue::new("gen_ai.agent.name", agent.to_owned()),
            KeyValue::new("gen_ai.request.model", trace.model.clone()),
            KeyValue::new("glassbox.trace.id", trace.trace_id.clone()),
            KeyValue::new("glassbox.run.id", trace.run_id.clone()),
            KeyValue::new("glassbox.status", trace.status.as_str()),
            KeyValue::new("glassbox.tool_calls", trace.total_tool_calls),
        ];
        if let Some(turn) = turns.first() {
            attributes.push(KeyValue::new(
                "gen_ai.provider.name",
                provider_name(turn.format),
            ));
        }
        let usage = [
            ("gen_ai.usage.input_tokens", trace.input_tokens),
            ("gen_ai.usage.output_tokens", trace.output_tokens),
            (
                "gen_ai.usage.reasoning.output_tokens",
                trace.reasoning_tokens,
            ),
            (
                "gen_ai.usage.cache_read.input_tokens",
                trace.cache_read_tokens,
            ),
            (
                "gen_ai.usage.cache_creation.input_tokens",
                trace.cache_write_tokens,
            ),
        ];
        attributes.extend(
            usage
                .into_iter()
                .filter_map(|(key, count)| count.map(|count| KeyValue::new(key, count))),
        );
        let status = self.run_status(&mut attributes);
        if self.content {
            attributes.extend(self.run_messages());
        }
        self.span(SpanParts {
            key: "run".to_owned(),
            name: format!("invoke_agent {agent}"),
            kind: SpanKind::Internal,
            start_ms: self.start_ms,
            end_ms: self.end_ms,
            attributes,
            status,
        })
    }

    /// The run's status: unset when it completed, else an error that says why.
    fn run_status(&self, attributes: &mut Vec<KeyValue>) -> Status {
        let trace = self.trace;
        let error_type = match trace.status {
            TraceStatus::Completed | TraceStatus::Running => return Status::Unset,
            TraceStatus::Cancelled => {
                if let Some(by) = trace.cancelled_by {
                    attributes.push(KeyValue::new("glassbox.cancelled_by", by.as_str()));
                }
                "cancelled".to_owned()
            }
            TraceStatus::Interrupted => "interrupted".to_owned(),
            TraceStatus::Error => trace
                .error_code
                .as_ref()
                .map_or_else(|| "error".to_owned(), |code| code.as_str().to_owned()),
        };
        attributes.push(KeyValue::new("error.type", error_type.clone()));
        let why = trace.cancellation_reason.clone().unwrap_or(error_type);
        Status::error(redact_text(&why).into_owned())
    }

    /// The run's input (the user's message) and output (the answer), in the conventions' shape.
    fn run_messages(&self) -> Vec<KeyValue> {
        let mut attributes = Vec::new();
        if let Some(prompt) = self.prompt {
            let input = json!([{"role": "user", "parts": [{"type": "text", "content": prompt}]}]);
            attributes.push(KeyValue::new(
                "gen_ai.input.messages",
                content(&input.to_string()),
            ));
        }
        if let Some(answer) = self.answer() {
            let output =
                json!([{"role": "assistant", "parts": [{"type": "text", "content": answer}]}]);
            attributes.push(KeyValue::new(
                "gen_ai.output.messages",
                content(&output.to_string()),
            ));
        }
        attributes
    }

    /// The answer's text, as the reducer folds it.
    fn answer(&self) -> Option<String> {
        let text: String = self
            .message?
            .segments
            .iter()
            .filter_map(|segment| match segment {
                Segment::Text(text) => Some(text.text.as_str()),
                _ => None,
            })
            .collect();
        (!text.is_empty()).then(|| redact_text(&text).into_owned())
    }

    /// `chat {model}`: one model turn, from its request going out to its response's end.
    fn chat_span(&self, index: usize, turn: &ModelTurn) -> SpanData {
        let start_ms = parse_rfc3339_millis(&turn.started_at).unwrap_or(self.start_ms);
        let end_ms = parse_rfc3339_millis(&turn.completed_at).unwrap_or(self.end_ms);
        let response = &turn.response;
        // A request to an AG-UI agent of its own is a call of a remote agent, not a chat.
        let operation = match turn.format {
            ProviderKind::AgUi => "invoke_agent",
            _ => "chat",
        };
        let mut attributes = vec![
            KeyValue::new("gen_ai.operation.name", operation),
            KeyValue::new("gen_ai.request.model", turn.model.clone()),
            KeyValue::new("gen_ai.provider.name", provider_name(turn.format)),
            KeyValue::new("glassbox.turn.index", index as i64),
        ];
        if let Some(model) = response.get("model").and_then(Value::as_str) {
            attributes.push(KeyValue::new("gen_ai.response.model", model.to_owned()));
        }
        let reasons: Vec<StringValue> = choices(response)
            .filter_map(|choice| choice.get("finish_reason").and_then(Value::as_str))
            .map(|reason| StringValue::from(reason.to_owned()))
            .collect();
        if !reasons.is_empty() {
            attributes.push(KeyValue::new(
                "gen_ai.response.finish_reasons",
                OtelValue::Array(Array::String(reasons)),
            ));
        }
        attributes.extend(turn_usage(response));
        let first_chunk = self.timings.first_output.get(index).copied().flatten();
        if let Some(first_ms) = first_chunk.filter(|ms| *ms <= end_ms) {
            let seconds = (first_ms - start_ms).max(0) as f64 / 1000.0;
            attributes.push(KeyValue::new(
                "gen_ai.response.time_to_first_chunk",
                seconds,
            ));
        }
        let status = turn_status(response, &mut attributes);
        if self.content {
            attributes.extend(turn_messages(turn));
        }
        self.span(SpanParts {
            key: format!("turn/{index}"),
            name: format!("{operation} {}", turn.model),
            kind: SpanKind::Client,
            start_ms,
            end_ms,
            attributes,
            status,
        })
    }

    /// `execute_tool {tool}`: one call, from its start to its result.
    fn tool_span(&self, call: &ToolCallSegment) -> SpanData {
        let ended = self.timings.results.get(&call.call_id).copied();
        let (server, tool) = match call.name.split_once(NAME_SEPARATOR) {
            Some((server, tool)) => (Some(server), tool),
            None => (None, call.name.as_str()),
        };
        let mut attributes = vec![
            KeyValue::new("gen_ai.operation.name", "execute_tool"),
            KeyValue::new("gen_ai.tool.name", tool.to_owned()),
            KeyValue::new("gen_ai.tool.call.id", call.call_id.clone()),
            KeyValue::new(
                "gen_ai.tool.type",
                if server.is_some() {
                    "extension"
                } else {
                    "function"
                },
            ),
            KeyValue::new("glassbox.tool.status", tool_status_name(call.status)),
        ];
        if let Some(server) = server {
            attributes.push(KeyValue::new("mcp.method.name", "tools/call"));
            attributes.push(KeyValue::new("glassbox.mcp.server", server.to_owned()));
        }
        attributes.extend(self.approval_attributes(call));
        let status = self.tool_status(call, &mut attributes);
        if self.content {
            let args = content(&call.args.to_string());
            attributes.push(KeyValue::new("gen_ai.tool.call.arguments", args));
            let output = content(&call.output);
            attributes.push(KeyValue::new("gen_ai.tool.call.result", output));
        }
        self.span(SpanParts {
            key: format!("call/{}", call.call_id),
            name: format!("execute_tool {tool}"),
            kind: SpanKind::Internal,
            start_ms: self.time_of(&call.started_at),
            end_ms: ended.map_or(self.end_ms, |ms| self.clamp(ms)),
            attributes,
            status,
        })
    }

    /// Whether the call waited for a person, what they answered and how long it waited.
    fn approval_attributes(&self, call: &ToolCallSegment) -> Vec<KeyValue> {
        let Some(approval) = &call.approval else {
            return Vec::new();
        };
        let decision = match approval.decision {
            Some(ApprovalDecision::Approve) => "approve",
            Some(ApprovalDecision::Deny) => "deny",
            None => "none",
        };
        let mut attributes = vec![
            KeyValue::new("glassbox.approval.required", true),
            KeyValue::new("glassbox.approval.decision", decision),
        ];
        if let Some(by) = &approval.by {
            let by = match by {
                ResolvedBy::User(_) => "user",
                ResolvedBy::Timeout => "timeout",
            };
            attributes.push(KeyValue::new("glassbox.approval.by", by));
        }
        let asked = parse_rfc3339_millis(&approval.requested_at);
        let answered = approval
            .resolved_at
            .as_deref()
            .and_then(parse_rfc3339_millis);
        if let (Some(asked), Some(answered)) = (asked, answered) {
            let wait = (answered - asked).max(0);
            attributes.push(KeyValue::new("glassbox.approval.wait_ms", wait));
        }
        if let (true, Some(reason)) = (self.content, &approval.reason) {
            let reason = content(reason);
            attributes.push(KeyValue::new("glassbox.approval.reason", reason));
        }
        attributes
    }

    /// A call that did not succeed is an error span; its message only with content (a tool's
    /// error can quote its arguments).
    fn tool_status(&self, call: &ToolCallSegment, attributes: &mut Vec<KeyValue>) -> Status {
        let error_type = match (call.status, &call.error) {
            (ToolCallStatus::Success, _) => return Status::Unset,
            (ToolCallStatus::Error, Some(error)) => error.kind.as_str().to_owned(),
            (status, _) => tool_status_name(status).to_owned(),
        };
        attributes.push(KeyValue::new("error.type", error_type.clone()));
        match (&call.error, self.content) {
            (Some(error), true) => Status::error(redact_text(&error.message).into_owned()),
            _ => Status::error(error_type),
        }
    }
}

/// The choices of a response recorded as a chat completion.
fn choices(response: &Value) -> impl Iterator<Item = &Value> {
    response
        .get("choices")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

/// A turn's token counts, as its response recorded them.
fn turn_usage(response: &Value) -> Vec<KeyValue> {
    let Some(usage) = response.get("usage") else {
        return Vec::new();
    };
    [
        ("/prompt_tokens", "gen_ai.usage.input_tokens"),
        ("/completion_tokens", "gen_ai.usage.output_tokens"),
        (
            "/prompt_tokens_details/cached_tokens",
            "gen_ai.usage.cache_read.input_tokens",
        ),
        (
            "/prompt_tokens_details/cache_write_tokens",
            "gen_ai.usage.cache_creation.input_tokens",
        ),
        (
            "/completion_tokens_details/reasoning_tokens",
            "gen_ai.usage.reasoning.output_tokens",
        ),
    ]
    .into_iter()
    .filter_map(|(field, key)| {
        let count = usage.pointer(field).and_then(Value::as_i64)?;
        Some(KeyValue::new(key, count))
    })
    .collect()
}

/// A failed turn's error (the provider's code and message, recorded after redaction).
fn turn_status(response: &Value, attributes: &mut Vec<KeyValue>) -> Status {
    let Some(error) = response.get("error") else {
        return Status::Unset;
    };
    let code = error
        .get("code")
        .and_then(Value::as_str)
        .unwrap_or("error")
        .to_owned();
    attributes.push(KeyValue::new("error.type", code.clone()));
    let message = error
        .get("message")
        .and_then(Value::as_str)
        .unwrap_or(&code);
    Status::error(redact_text(message).into_owned())
}

/// `gen_ai.input.messages` (the conversation as sent) and `gen_ai.output.messages` (the answer),
/// in the conventions' message shape.
fn turn_messages(turn: &ModelTurn) -> Vec<KeyValue> {
    let input: Vec<Value> = crate::providers::conversation(turn.format, &turn.request)
        .unwrap_or_default()
        .into_iter()
        .map(input_message)
        .collect();
    let output: Vec<Value> = choices(&turn.response)
        .filter_map(|choice| {
            let message = choice.get("message")?;
            let mut parts = Vec::new();
            if let Some(text) = message.get("reasoning_content").and_then(Value::as_str) {
                parts.push(json!({"type": "reasoning", "content": text}));
            }
            if let Some(text) = message.get("content").and_then(Value::as_str) {
                parts.push(json!({"type": "text", "content": text}));
            }
            for call in message
                .get("tool_calls")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let function = call.get("function").unwrap_or(&Value::Null);
                parts.push(json!({"type": "tool_call", "id": call.get("id"),
                    "name": function.get("name"), "arguments": function.get("arguments")}));
            }
            Some(json!({"role": "assistant", "parts": parts,
                "finish_reason": choice.get("finish_reason")}))
        })
        .collect();
    [
        ("gen_ai.input.messages", input),
        ("gen_ai.output.messages", output),
    ]
    .into_iter()
    .map(|(key, messages)| {
        let text = Value::Array(messages).to_string();
        KeyValue::new(key, content(&text))
    })
    .collect()
}

/// One message of a request in the conventions' shape: text, tool calls, a tool's response.
fn input_message(message: ChatMessage) -> Value {
    let mut parts = Vec::new();
    match (&message.tool_call_id, message.content) {
        (Some(id), content) => parts.push(
            json!({"type": "tool_call_response", "id": id, "response": content.unwrap_or_default()}),
        ),
        (None, Some(content)) => parts.push(json!({"type": "text", "content": content})),
        (None, None) => {}
    }
    for call in message.tool_calls {
        parts.push(json!({"type": "tool_call", "id": call.id, "name": call.name, "arguments": call.arguments}));
    }
    json!({"role": message.role, "parts": parts})
}

/// `gen_ai.agent.name`: the demo agent, a scenario, an AG-UI agent by its name (`agent/<name>`),
/// or Glassbox's agent loop over a model.
fn agent_name(model: &str) -> &str {
    if model == crate::agents::DEMO_MODEL {
        "demo"
    } else if model.starts_with("scenario:") {
        "scenario"
    } else if let Some(name) = model.strip_prefix("agent/") {
        name
    } else {
        "glassbox"
    }
}

/// `gen_ai.provider.name` of a wire format (an OpenAI-compatible server speaks `openai`; an
/// AG-UI agent of its own is `ag_ui`, not a value the conventions list).
fn provider_name(format: ProviderKind) -> &'static str {
    match format {
        ProviderKind::OpenaiChat | ProviderKind::OpenaiResponses => "openai",
        ProviderKind::Anthropic => "anthropic",
        ProviderKind::AgUi => "ag_ui",
    }
}

fn tool_status_name(status: ToolCallStatus) -> &'static str {
    match status {
        ToolCallStatus::Running => "running",
        ToolCallStatus::AwaitingApproval => "awaiting_approval",
        ToolCallStatus::Success => "success",
        ToolCallStatus::Error => "error",
        ToolCallStatus::Cancelled => "cancelled",
        ToolCallStatus::Denied => "denied",
    }
}

/// The OTel trace id of a Glassbox trace id (`trc_` and 32 hex digits); any other is hashed.
fn trace_id_of(trace_id: &str) -> TraceId {
    let hex = trace_id.rsplit('_').next().unwrap_or(trace_id);
    match u128::from_str_radix(hex, 16) {
        Ok(id) if hex.len() == 32 && id != 0 => TraceId::from(id),
        _ => {
            let digest = Sha256::digest(trace_id.as_bytes());
            let mut bytes = [0u8; 16];
            bytes.copy_from_slice(&digest[..16]);
            bytes[15] |= 1;
            TraceId::from_bytes(bytes)
        }
    }
}

/// A span id derived from the trace and what the span is (never the invalid all-zero id).
fn span_id_of(trace_id: &str, key: &str) -> SpanId {
    let digest = Sha256::digest(format!("{trace_id}/{key}").as_bytes());
    let mut bytes = [0u8; 8];
    bytes.copy_from_slice(&digest[..8]);
    bytes[7] |= 1;
    SpanId::from_bytes(bytes)
}

/// The most bytes of one content attribute; a longer text is cut at a character boundary and ends
/// with `…[truncated]`.
const MAX_CONTENT_BYTES: usize = 64 * 1024;

/// Content as it leaves: redacted (again), and cut to [`MAX_CONTENT_BYTES`].
fn content(text: &str) -> String {
    let redacted = redact_text(text);
    if redacted.len() <= MAX_CONTENT_BYTES {
        return redacted.into_owned();
    }
    let mut end = MAX_CONTENT_BYTES;
    while !redacted.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…[truncated]", &redacted[..end])
}

fn system_time(unix_ms: i64) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_millis(unix_ms.max(0) as u64)
}

fn scope() -> InstrumentationScope {
    InstrumentationScope::builder("glassbox")
        .with_version(env!("CARGO_PKG_VERSION"))
        .build()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_glassbox_trace_id_is_the_otel_trace_id() {
        let id = trace_id_of("trc_0123456789abcdef0123456789abcdef");
        assert_eq!(id.to_string(), "0123456789abcdef0123456789abcdef");
        assert_ne!(trace_id_of("other"), TraceId::INVALID);
        assert_ne!(span_id_of("t", "run"), span_id_of("t", "turn/0"));
    }

    fn turn_after(after_seq: u64) -> ModelTurn {
        ModelTurn {
            model: "m".into(),
            format: ProviderKind::default(),
            after_seq,
            request: Value::Null,
            response: Value::Null,
            started_at: String::new(),
            completed_at: String::new(),
        }
    }

    #[test]
    fn timings_read_from_logged_json_are_those_of_the_decoded_events() {
        let at = |ms: u64| format!("2026-01-22T10:30:00.{ms:03}Z");
        let kinds = [
            EventKind::TextDelta {
                segment_id: "s1".into(),
                sequence_number: Some(0),
                delta: "a \"call_id\": no".into(),
            },
            EventKind::ToolCallStarted {
                call_id: "c1".into(),
                sequence_number: 1,
                name: "t".into(),
                display: None,
                args: json!({"call_id": "not this"}),
            },
            EventKind::ToolResult {
                call_id: "c1".into(),
                status: app::protocol::ToolResultStatus::Success,
                duration_ms: 5,
                output: Some("ok".into()),
                truncated: false,
                full_length: None,
                error: None,
            },
            EventKind::TextDelta {
                segment_id: "s2".into(),
                sequence_number: Some(2),
                delta: "done".into(),
            },
        ];
        let events: Vec<Event> = kinds
            .into_iter()
            .enumerate()
            .map(|(i, kind)| Event {
                seq: i as u64 + 1,
                run_id: "r".into(),
                ts: at(100 * (i as u64 + 1)),
                kind,
            })
            .collect();
        let logged: Vec<Arc<str>> = events
            .iter()
            .map(|event| serde_json::to_string(event).unwrap().into())
            .collect();
        let turns = [turn_after(0), turn_after(3)];
        let (decoded, read) = (
            Timings::of_events(&events, &turns),
            Timings::of_logged(&logged, &turns),
        );
        let ms = |i: u64| parse_rfc3339_millis(&at(100 * i));
        assert_eq!(decoded.first_output, vec![ms(1), ms(4)]);
        assert_eq!(decoded.results.get("c1").copied(), ms(3));
        assert_eq!(decoded.last, ms(4));
        assert_eq!(
            (read.first_output, read.results, read.last),
            (decoded.first_output, decoded.results, decoded.last)
        );
    }

    #[test]
    fn content_is_redacted_and_cut_at_a_character_boundary() {
        assert_eq!(content("plain"), "plain");
        assert!(!content("key sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789").contains("AbCdEf"));
        let long = "é".repeat(MAX_CONTENT_BYTES);
        let cut = content(&long);
        assert!(cut.ends_with("…[truncated]"));
        assert!(cut.len() <= MAX_CONTENT_BYTES + "…[truncated]".len());
    }
}
