//! Glassbox events as the Vercel AI SDK's UI message stream (v1): the chunks `useChat`'s default
//! transport reads (`uiMessageChunkSchema` in npm `ai`). Pure: one [`UiMessageStream`] per
//! response folds a run's events, in seq order, into chunks; `http::ai_sdk` feeds it from the same
//! run log the SSE endpoint reads and writes each chunk as one `data:` frame. docs/protocol.md has
//! the mapping event by event.
//!
//! Steps (`start-step`/`finish-step`) are the model turns [`Steps`] finds in the events.

use std::{
    borrow::Cow,
    collections::{HashMap, HashSet},
    io::Write,
};

use app::protocol::{ApprovalDecision, Event, EventKind, Message, ToolResultStatus};
use serde_json::{json, value::RawValue, Map, Value};
use smallvec::SmallVec;

use super::{
    started_without_args,
    steps::{StepChange, Steps},
    LoggedDelta,
};

/// The last frame's data, after the terminal chunk.
pub const DONE: &str = "[DONE]";

/// The response header that names the stream's protocol.
pub const STREAM_HEADER: (&str, &str) = ("x-vercel-ai-ui-message-stream", "v1");

/// One response's state: which parts are open, which calls the client knows of. What every
/// delta reads comes first, together (`repr(C)` keeps the order), and the rest is out of line:
/// with a thousand readers each event finds its reader's state out of the cache, so each
/// cache line it touches costs (docs/benchmarks.md, "the AI SDK stream beside Glassbox's SSE").
#[derive(Debug, Default)]
#[repr(C)]
pub struct UiMessageStream {
    ended: bool,
    /// Paused where the run waits for people, and nothing has changed since.
    paused: bool,
    steps: Steps,
    /// The open text part's id, held in place (most ids fit).
    text: Option<SmallVec<[u8; 40]>>,
    reasoning: Vec<String>,
    rest: Box<Rest>,
}

/// What only events other than deltas read.
#[derive(Debug, Default)]
struct Rest {
    message_id: String,
    run: Map<String, Value>,
    /// Calls whose input the client has: only they may get approvals and outputs.
    calls: HashSet<String>,
    /// Calls whose input streams in (an AG-UI agent's), started without it: the input text
    /// the client has so far. Their `tool-input-available` waits for the whole input.
    streaming: HashMap<String, StreamingInput>,
    /// Calls with input and no output yet.
    open_calls: HashSet<String>,
    /// Calls whose approval request the client has, without an answer yet.
    asked: HashSet<String>,
}

impl UiMessageStream {
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether the terminal event has been mapped.
    pub fn is_ended(&self) -> bool {
        self.ended
    }

    /// Writes the chunk (its JSON) of a text or reasoning delta that continues the part already
    /// open to `out`, from the event's JSON as the log holds it, without building the event: the
    /// common case, once per event per reader. `false`, with nothing written, for any other
    /// event: [`Self::push`] maps those. The caller's `out` is the reader's SSE frame, so the
    /// chunk is made in place, never as a string of its own.
    pub fn push_delta(&mut self, json: &str, out: impl Write) -> bool {
        if self.ended || self.steps.turn_ended() {
            return false;
        }
        let (kind, id, delta) = match LoggedDelta::read(json) {
            Some(LoggedDelta::Text {
                segment_id, delta, ..
            }) if self.text.as_deref() == Some(segment_id.as_bytes()) => {
                ("text-delta", segment_id, delta)
            }
            Some(LoggedDelta::Reasoning {
                segment_id,
                summary_index,
                delta,
                ..
            }) => match self
                .reasoning
                .iter()
                .find(|open| is_reasoning_id(open, &segment_id, summary_index))
            {
                Some(open) => ("reasoning-delta", Cow::Borrowed(open.as_str()), delta),
                None => return false,
            },
            _ => return false,
        };
        write_delta_chunk(out, kind, &id, delta).is_ok()
    }

    /// The chunks for one event (none for the events the stream has no part for).
    pub fn push(&mut self, event: &Event) -> Vec<Value> {
        let mut out = Vec::new();
        if self.ended {
            return out;
        }
        let out_ref = &mut out;
        match &event.kind {
            EventKind::MessageStarted { .. } => self.started(out_ref, event),
            EventKind::ReasoningPartStarted {
                segment_id,
                summary_index,
                ..
            } => {
                self.content_step(out_ref);
                self.close_text(out_ref);
                self.open_reasoning(out_ref, reasoning_id(segment_id, *summary_index));
            }
            EventKind::ReasoningPartDelta {
                segment_id,
                summary_index,
                text_delta,
            } => self.reasoning_delta(
                out_ref,
                reasoning_id(segment_id, *summary_index),
                text_delta,
            ),
            EventKind::ReasoningPartCompleted {
                segment_id,
                summary_index,
                ..
            } => self.reasoning_end(out_ref, reasoning_id(segment_id, *summary_index)),
            EventKind::TextDelta {
                segment_id, delta, ..
            } => self.text_delta(out_ref, segment_id, delta),
            EventKind::ToolCallStarted {
                call_id,
                name,
                display,
                args,
                ..
            } => self.tool_input(out_ref, call_id, name, display.as_deref(), args),
            EventKind::ToolCallUpdate {
                call_id,
                args_text,
                args,
                ..
            } => self.tool_update(out_ref, call_id, args_text.as_deref(), args.as_ref()),
            // An inner agent's state for its next request is Glassbox's to keep; a wait before a
            // retry has no AI SDK part.
            EventKind::AgentState { .. } | EventKind::Retrying { .. } => {}
            EventKind::ToolApprovalRequested { .. } | EventKind::ToolApprovalResolved { .. } => {
                self.approval(out_ref, &event.kind)
            }
            EventKind::ToolResult { .. } => self.tool_result(out_ref, &event.kind),
            EventKind::Usage(_) => self.usage(out_ref),
            EventKind::MessageFinal { .. }
            | EventKind::MessageCancelled { .. }
            | EventKind::MessageError { .. } => self.terminal(out_ref, &event.kind),
        }
        out
    }

    /// `message_started`: the message's id, and the run's part with its ids.
    fn started(&mut self, out: &mut Vec<Value>, event: &Event) {
        let EventKind::MessageStarted {
            conversation_id,
            message_id,
            trace_id,
            model,
            ..
        } = &event.kind
        else {
            return;
        };
        self.rest.message_id = message_id.clone();
        self.rest.run = Map::from_iter([
            ("run_id".into(), json!(event.run_id)),
            ("trace_id".into(), json!(trace_id)),
            ("conversation_id".into(), json!(conversation_id)),
            ("model".into(), json!(model)),
            ("status".into(), json!("running")),
        ]);
        out.push(json!({ "type": "start", "messageId": message_id }));
        out.push(self.run_part());
    }

    fn reasoning_delta(&mut self, out: &mut Vec<Value>, id: String, delta: &str) {
        if !self.reasoning.contains(&id) {
            self.content_step(out);
            self.close_text(out);
            self.open_reasoning(out, id.clone());
        }
        out.push(json!({ "type": "reasoning-delta", "id": id, "delta": delta }));
    }

    fn reasoning_end(&mut self, out: &mut Vec<Value>, id: String) {
        if let Some(at) = self.reasoning.iter().position(|open| *open == id) {
            self.reasoning.remove(at);
            out.push(json!({ "type": "reasoning-end", "id": id }));
        }
    }

    /// An approval's request (the call's id is the approval's) and its answer.
    fn approval(&mut self, out: &mut Vec<Value>, kind: &EventKind) {
        match kind {
            EventKind::ToolApprovalRequested {
                call_id,
                name,
                args,
            } => {
                if !self.rest.calls.contains(call_id) {
                    self.tool_input(out, call_id, name, None, args);
                }
                self.input_available(out, call_id, Some(args));
                self.rest.asked.insert(call_id.clone());
                out.push(json!({
                    "type": "tool-approval-request", "approvalId": call_id, "toolCallId": call_id,
                }));
            }
            EventKind::ToolApprovalResolved {
                call_id,
                decision,
                reason,
                ..
            } if self.rest.calls.contains(call_id) => {
                self.rest.asked.remove(call_id);
                self.paused = false;
                let mut chunk = json!({
                    "type": "tool-approval-response", "approvalId": call_id,
                    "approved": *decision == ApprovalDecision::Approve,
                });
                if let Some(reason) = reason {
                    chunk["reason"] = json!(reason);
                }
                out.push(chunk);
            }
            _ => {}
        }
    }

    /// The terminal event: `finish` (stop), `abort` (cancelled) or `error` then `finish` (error).
    fn terminal(&mut self, out: &mut Vec<Value>, kind: &EventKind) {
        match kind {
            EventKind::MessageFinal { message, .. } => {
                self.end(out, "complete", message);
                out.push(json!({ "type": "finish", "finishReason": "stop", "messageMetadata": self.rest.run }));
            }
            EventKind::MessageCancelled {
                reason,
                cancelled_by,
                message,
            } => {
                self.rest
                    .run
                    .insert("cancelled_by".into(), json!(cancelled_by.as_str()));
                self.end(out, "cancelled", message);
                out.push(json!({ "type": "abort", "reason": reason }));
            }
            EventKind::MessageError {
                code,
                error,
                message,
            } => {
                self.rest.run.insert("error_code".into(), json!(code));
                self.end(out, "error", message);
                out.push(json!({ "type": "error", "errorText": error }));
                out.push(json!({ "type": "finish", "finishReason": "error", "messageMetadata": self.rest.run }));
            }
            _ => {}
        }
    }

    /// Whether the run, as far as this stream has read it, now waits only for people: every call
    /// in flight has asked for approval with no answer yet (and it has not paused here already).
    /// The caller pauses here when the run still waits for those answers (see [`Self::open_calls`]).
    pub fn waits_for_people(&self) -> bool {
        !self.ended
            && !self.paused
            && !self.rest.open_calls.is_empty()
            && self
                .rest
                .open_calls
                .iter()
                .all(|call| self.rest.asked.contains(call))
    }

    /// The calls in flight (input sent, no output yet).
    pub fn open_calls(&self) -> impl Iterator<Item = &str> {
        self.rest.open_calls.iter().map(String::as_str)
    }

    /// Ends this response while the run waits for people's answers to approval requests: the
    /// open parts and step close, and `finish` says `tool-calls`, so the client may answer
    /// (`addToolApprovalResponse`) and send it in its next request. A run pauses only once all of
    /// a turn's other calls have their output: the AI SDK sends answers automatically
    /// (`lastAssistantMessageIsCompleteWithApprovalResponses`) only when the step has no call
    /// still running.
    pub fn pause(&mut self) -> Vec<Value> {
        self.paused = true;
        let mut out = Vec::new();
        let change = self.steps.end();
        self.step(&mut out, change);
        out.push(json!({ "type": "finish", "finishReason": "tool-calls" }));
        out
    }

    /// The first chunk of a response that continues the message after a pause.
    pub fn restart(&self) -> Value {
        json!({ "type": "start", "messageId": self.rest.message_id })
    }

    /// The run's `data-glassbox-run` part: its ids, and once it has ended its status, duration
    /// and tokens. One id per run, so a later chunk replaces the earlier one in the message.
    fn run_part(&self) -> Value {
        json!({
            "type": "data-glassbox-run",
            "id": self.rest.run.get("run_id").cloned().unwrap_or(Value::Null),
            "data": self.rest.run,
        })
    }

    /// Opens a step for content (reasoning or text), closing the last one when its turn ended.
    fn content_step(&mut self, out: &mut Vec<Value>) {
        let change = self.steps.content();
        self.step(out, change);
    }

    /// Closes the open step (its open parts first), then opens the next, as `change` says.
    fn step(&mut self, out: &mut Vec<Value>, change: StepChange) {
        if change.close.is_some() {
            self.close_parts(out);
            out.push(json!({ "type": "finish-step" }));
        }
        if change.open.is_some() {
            out.push(json!({ "type": "start-step" }));
        }
    }

    /// Closes the open text, reasoning and streamed inputs.
    fn close_parts(&mut self, out: &mut Vec<Value>) {
        self.close_text(out);
        let streaming: Vec<String> = self.rest.streaming.keys().cloned().collect();
        for call_id in streaming {
            self.input_available(out, &call_id, None);
        }
        for id in self.reasoning.drain(..) {
            out.push(json!({ "type": "reasoning-end", "id": id }));
        }
    }

    fn close_text(&mut self, out: &mut Vec<Value>) {
        if let Some(id) = self.text.take() {
            out.push(json!({ "type": "text-end", "id": String::from_utf8_lossy(&id) }));
        }
    }

    fn open_reasoning(&mut self, out: &mut Vec<Value>, id: String) {
        out.push(json!({ "type": "reasoning-start", "id": id }));
        self.reasoning.push(id);
    }

    fn text_delta(&mut self, out: &mut Vec<Value>, segment_id: &str, delta: &str) {
        if self.text.as_deref() != Some(segment_id.as_bytes()) {
            self.content_step(out);
            self.close_text(out);
            out.push(json!({ "type": "text-start", "id": segment_id }));
            self.text = Some(SmallVec::from_slice(segment_id.as_bytes()));
        }
        out.push(json!({ "type": "text-delta", "id": segment_id, "delta": delta }));
    }

    /// A call's input: whole at once (Glassbox's own tools), or, for a call started without
    /// arguments, as the agent streams them (see [`Self::tool_update`]). A dynamic tool, since
    /// the client declares none of Glassbox's tools.
    fn tool_input(
        &mut self,
        out: &mut Vec<Value>,
        call_id: &str,
        name: &str,
        display: Option<&str>,
        args: &Value,
    ) {
        let change = self.steps.call();
        self.step(out, change);
        self.close_text(out);
        let mut start = json!({
            "type": "tool-input-start", "toolCallId": call_id, "toolName": name, "dynamic": true,
        });
        if let Some(title) = display {
            start["title"] = json!(title);
        }
        out.push(start);
        let input = StreamingInput {
            name: name.to_owned(),
            title: display.map(str::to_owned),
            text: String::new(),
        };
        if started_without_args(args) {
            self.rest.streaming.insert(call_id.to_owned(), input);
        } else {
            out.push(input.available(call_id, args));
        }
        self.rest.calls.insert(call_id.to_owned());
        self.rest.open_calls.insert(call_id.to_owned());
        self.paused = false;
    }

    /// A streamed input's text so far (`tool-input-delta` with what the client lacks; nothing
    /// when redaction rewrote what it has) and its whole arguments (`tool-input-available`).
    fn tool_update(
        &mut self,
        out: &mut Vec<Value>,
        call_id: &str,
        args_text: Option<&str>,
        args: Option<&Value>,
    ) {
        let Some(input) = self.rest.streaming.get_mut(call_id) else {
            return;
        };
        if let Some(more) = args_text.and_then(|text| text.strip_prefix(input.text.as_str())) {
            if !more.is_empty() {
                out.push(json!({
                    "type": "tool-input-delta", "toolCallId": call_id, "inputTextDelta": more,
                }));
                input.text.push_str(more);
            }
        }
        if args.is_some() {
            self.input_available(out, call_id, args);
        }
    }

    /// Ends a streamed input: `args` when known, else what its text parses to, else `{}`.
    fn input_available(&mut self, out: &mut Vec<Value>, call_id: &str, args: Option<&Value>) {
        if let Some(input) = self.rest.streaming.remove(call_id) {
            let parsed = serde_json::from_str::<Value>(&input.text).ok();
            let args = args
                .or(parsed.as_ref())
                .cloned()
                .unwrap_or_else(|| json!({}));
            out.push(input.available(call_id, &args));
        }
    }

    fn tool_result(&mut self, out: &mut Vec<Value>, kind: &EventKind) {
        let EventKind::ToolResult {
            call_id,
            status,
            duration_ms,
            output,
            truncated,
            error,
            ..
        } = kind
        else {
            return;
        };
        if !self.rest.calls.contains(call_id) {
            return;
        }
        self.input_available(out, call_id, None);
        self.rest.open_calls.remove(call_id);
        self.rest.asked.remove(call_id);
        self.paused = false;
        let error_text = || match (error, output) {
            (Some(error), _) => error.message.clone(),
            (None, Some(output)) => output.clone(),
            (None, None) => "The tool call failed.".to_owned(),
        };
        out.push(match status {
            ToolResultStatus::Success => json!({
                "type": "tool-output-available", "toolCallId": call_id,
                "output": output.as_deref().unwrap_or(""), "dynamic": true,
            }),
            ToolResultStatus::Error | ToolResultStatus::Cancelled => json!({
                "type": "tool-output-error", "toolCallId": call_id,
                "errorText": error_text(), "dynamic": true,
            }),
            ToolResultStatus::Denied => {
                json!({ "type": "tool-output-denied", "toolCallId": call_id })
            }
        });
        out.push(json!({
            "type": "data-glassbox-tool",
            "id": call_id,
            "data": {
                "call_id": call_id, "status": status, "duration_ms": duration_ms,
                "truncated": truncated,
            },
        }));
    }

    /// A turn's usage: it ends the turn (see [`Steps::usage`]).
    fn usage(&mut self, out: &mut Vec<Value>) {
        let change = self.steps.usage();
        self.step(out, change);
    }

    /// Closes what is open and updates the run's part with how it ended.
    fn end(&mut self, out: &mut Vec<Value>, status: &str, message: &Message) {
        let change = self.steps.end();
        self.step(out, change);
        self.close_parts(out);
        self.ended = true;
        self.rest.run.insert("status".into(), json!(status));
        if let Some(duration) = message.duration_ms {
            self.rest.run.insert("duration_ms".into(), json!(duration));
        }
        if let Some(usage) = message.usage {
            self.rest.run.insert("usage".into(), json!(usage));
        }
        if let Some(reason) = &message.ended_reason {
            self.rest.run.insert("reason".into(), json!(reason));
        }
        out.push(self.run_part());
    }
}

/// A `text-delta` or `reasoning-delta` chunk (`kind`, which needs no escape), written as a
/// derived `Serialize` of `{type, id, delta}` would write it, by hand: serde's writes each of
/// the three keys and the kind as a string to escape, once per delta per reader
/// (docs/benchmarks.md, "the AI SDK stream beside Glassbox's SSE"). The delta is the log's
/// JSON string, written as it is.
fn write_delta_chunk(
    mut out: impl Write,
    kind: &str,
    id: &str,
    delta: &RawValue,
) -> std::io::Result<()> {
    out.write_all(b"{\"type\":\"")?;
    out.write_all(kind.as_bytes())?;
    out.write_all(b"\",\"id\":")?;
    serde_json::to_writer(&mut out, id)?;
    out.write_all(b",\"delta\":")?;
    out.write_all(delta.get().as_bytes())?;
    out.write_all(b"}")
}

/// A call whose input streams in, as far as the client has it.
#[derive(Debug)]
struct StreamingInput {
    name: String,
    title: Option<String>,
    text: String,
}

impl StreamingInput {
    /// The call's `tool-input-available` chunk.
    fn available(&self, call_id: &str, args: &Value) -> Value {
        let mut chunk = json!({
            "type": "tool-input-available", "toolCallId": call_id, "toolName": self.name,
            "input": args, "dynamic": true,
        });
        if let Some(title) = &self.title {
            chunk["title"] = json!(title);
        }
        chunk
    }
}

/// A reasoning part's id: its segment and summary index, as the reducer keys them.
fn reasoning_id(segment_id: &str, summary_index: u32) -> String {
    format!("{segment_id}:{summary_index}")
}

/// Whether `id` is [`reasoning_id`]'s for that segment and index, read without making it (`id`
/// is one it made, so its index has no leading zero or sign).
fn is_reasoning_id(id: &str, segment_id: &str, summary_index: u32) -> bool {
    id.strip_prefix(segment_id)
        .and_then(|rest| rest.strip_prefix(':'))
        .is_some_and(|index| index.parse() == Ok(summary_index))
}

#[cfg(test)]
mod tests;
