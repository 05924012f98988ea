//! A Glassbox run as an AG-UI 1.0 run: a pure state machine that turns each event of the run's log
//! into the AG-UI events it means, opening and closing text messages, reasoning spans and tool
//! calls so that everything opened is closed before the terminal event. `POST /api/ag-ui` feeds
//! it the same log the SSE endpoint streams (see docs/protocol.md for the table). Each model turn
//! is a step (`STEP_STARTED`/`STEP_FINISHED`, named `turn_<n>`), as `formats::steps` finds them.

use std::{borrow::Cow, io::Write};

use app::protocol::{parse_rfc3339_millis, EventKind, ToolResultStatus, Usage};
use serde_json::{json, value::RawValue, Value};
use smallvec::SmallVec;

use super::wire::{Event, Interrupt, Outcome, TokenUsage};
use crate::formats::{
    self, started_without_args,
    steps::{StepChange, Steps},
    LoggedDelta,
};

/// The reason of the interrupt an approval request becomes.
pub const TOOL_CALL_REASON: &str = "tool_call";

/// What is open on the AG-UI side, and the usage so far. What a delta reads comes first,
/// together (`repr(C)` keeps the order), the open message's id held in place, and the rest is
/// out of line: with a thousand readers each event finds its reader's state out of the cache,
/// so each cache line it touches costs (docs/benchmarks.md, "the AI SDK stream beside
/// Glassbox's SSE", where the AI SDK's mapping was laid out so first).
#[derive(Debug)]
#[repr(C)]
pub struct Outbound {
    ended: bool,
    /// The open text message's id.
    text: Option<OpenId>,
    /// The open reasoning message's id (`<segment>-<summary index>`).
    reasoning_message: Option<OpenId>,
    rest: Box<Rest>,
}

/// An open message's id, held in place (most ids fit).
type OpenId = SmallVec<[u8; 40]>;

/// What only events other than deltas read.
#[derive(Debug)]
struct Rest {
    thread_id: String,
    run_id: String,
    /// The open reasoning span's id (its segment).
    reasoning: Option<String>,
    /// Calls started whose TOOL_CALL_END has not gone out (their arguments come later).
    calls: Vec<String>,
    usage: Option<Usage>,
    model: Option<String>,
    steps: Steps,
}

impl Outbound {
    pub fn new(thread_id: String, run_id: String) -> Self {
        Outbound {
            ended: false,
            text: None,
            reasoning_message: None,
            rest: Box::new(Rest {
                thread_id,
                run_id,
                reasoning: None,
                calls: Vec::new(),
                usage: None,
                model: None,
                steps: Steps::default(),
            }),
        }
    }

    /// The first event of the AG-UI run.
    pub fn started(&self) -> Event {
        Event::RunStarted {
            thread_id: self.rest.thread_id.clone(),
            run_id: self.rest.run_id.clone(),
            parent_run_id: None,
        }
    }

    /// Whether the terminal event (RUN_FINISHED or RUN_ERROR) has gone out.
    pub fn ended(&self) -> bool {
        self.ended
    }

    /// Writes the event (its JSON) of a text or reasoning delta that continues the message
    /// already open to `out`, from the event's JSON as the log holds it, without building the
    /// event: `TEXT_MESSAGE_CONTENT` or `REASONING_MESSAGE_CONTENT` with its `timestamp`,
    /// serialized as [`Self::map`]'s would be. The common case, once per event per reader;
    /// `false`, with nothing written, for anything else. The caller's `out` is the reader's SSE
    /// frame, so the event is made in place, never as a string of its own.
    pub fn push_delta(&self, json: &str, out: impl Write) -> bool {
        if self.ended {
            return false;
        }
        let (kind, message_id, delta, ts) = match LoggedDelta::read(json) {
            Some(LoggedDelta::Text {
                segment_id,
                delta,
                ts,
            }) if self.text.as_deref() == Some(segment_id.as_bytes()) => {
                ("TEXT_MESSAGE_CONTENT", segment_id, delta, ts)
            }
            Some(LoggedDelta::Reasoning {
                segment_id,
                summary_index,
                delta,
                ts,
            }) => match self.reasoning_message.as_deref().map(std::str::from_utf8) {
                Some(Ok(open)) if is_reasoning_message_id(open, &segment_id, summary_index) => {
                    ("REASONING_MESSAGE_CONTENT", Cow::Borrowed(open), delta, ts)
                }
                _ => return false,
            },
            _ => return false,
        };
        let Some(timestamp) = parse_rfc3339_millis(&ts).and_then(|ms| u64::try_from(ms).ok())
        else {
            return false;
        };
        if formats::is_empty(delta) {
            return false;
        }
        write_content(out, kind, &message_id, delta, timestamp).is_ok()
    }

    /// The AG-UI events one Glassbox event means; none once the AG-UI run has ended.
    pub fn map(&mut self, kind: &EventKind) -> Vec<Event> {
        let mut out = Vec::new();
        if self.ended {
            return out;
        }
        match kind {
            EventKind::MessageStarted { .. } => self.announce(kind, &mut out),
            EventKind::ReasoningPartStarted {
                segment_id,
                summary_index,
                ..
            } => self.open_reasoning(segment_id, *summary_index, &mut out),
            EventKind::ReasoningPartDelta {
                segment_id,
                summary_index,
                text_delta,
            } => {
                self.open_reasoning(segment_id, *summary_index, &mut out);
                if !text_delta.is_empty() {
                    out.push(Event::ReasoningMessageContent {
                        message_id: reasoning_message_id(segment_id, *summary_index),
                        delta: text_delta.clone(),
                    });
                }
            }
            EventKind::ReasoningPartCompleted { .. } => self.close_reasoning_message(&mut out),
            EventKind::TextDelta {
                segment_id, delta, ..
            } => self.text(segment_id, delta, &mut out),
            EventKind::ToolCallStarted {
                call_id,
                name,
                args,
                ..
            } => self.start_call(call_id, name, args, &mut out),
            EventKind::ToolCallUpdate {
                call_id,
                args: Some(args),
                ..
            } => self.end_call(call_id, Some(args), &mut out),
            EventKind::ToolApprovalRequested { call_id, args, .. } => {
                self.end_call(call_id, Some(args), &mut out);
                self.interrupt(call_id, &mut out);
            }
            EventKind::ToolResult { .. } => self.result(kind, &mut out),
            EventKind::Usage(usage) => {
                self.rest
                    .usage
                    .get_or_insert_with(Usage::default)
                    .add(usage);
                let change = self.rest.steps.usage();
                self.step(change, &mut out);
            }
            EventKind::MessageFinal { .. }
            | EventKind::MessageCancelled { .. }
            | EventKind::MessageError { .. } => self.terminal(kind, &mut out),
            // An inner agent's state for its next request is Glassbox's to keep, not the client's;
            // a wait before a retry has no AG-UI event (the run simply goes on after it).
            EventKind::ToolCallUpdate { .. }
            | EventKind::ToolApprovalResolved { .. }
            | EventKind::AgentState { .. }
            | EventKind::Retrying { .. } => {}
        }
        out
    }

    /// `CUSTOM glassbox.run`: where the run is kept (conversation, message, trace) and its model.
    fn announce(&mut self, kind: &EventKind, out: &mut Vec<Event>) {
        let EventKind::MessageStarted {
            conversation_id,
            message_id,
            trace_id,
            model,
            ..
        } = kind
        else {
            return;
        };
        self.rest.model = Some(model.clone());
        out.push(Event::Custom {
            name: "glassbox.run".into(),
            value: json!({
                "conversationId": conversation_id,
                "messageId": message_id,
                "traceId": trace_id,
                "model": model,
            }),
        });
    }

    /// Closes the open step (what is open in it first), then opens the next, as `change` says.
    fn step(&mut self, change: StepChange, out: &mut Vec<Event>) {
        if let Some(number) = change.close {
            self.close_all(out);
            out.push(Event::StepFinished {
                step_name: step_name(number),
            });
        }
        if let Some(number) = change.open {
            out.push(Event::StepStarted {
                step_name: step_name(number),
            });
        }
    }

    fn open_reasoning(&mut self, segment_id: &str, index: u32, out: &mut Vec<Event>) {
        let message_id = reasoning_message_id(segment_id, index);
        if self.reasoning_message.as_deref() == Some(message_id.as_bytes()) {
            return;
        }
        let change = self.rest.steps.content();
        self.step(change, out);
        self.close_text(out);
        self.close_calls(out);
        self.close_reasoning_message(out);
        if self.rest.reasoning.as_deref() != Some(segment_id) {
            self.close_reasoning(out);
            self.rest.reasoning = Some(segment_id.to_owned());
            out.push(Event::ReasoningStart {
                message_id: segment_id.to_owned(),
            });
        }
        self.reasoning_message = Some(SmallVec::from_slice(message_id.as_bytes()));
        out.push(Event::ReasoningMessageStart {
            message_id,
            role: "reasoning".into(),
        });
    }

    fn close_reasoning_message(&mut self, out: &mut Vec<Event>) {
        if let Some(message_id) = self.reasoning_message.take() {
            out.push(Event::ReasoningMessageEnd {
                message_id: id_string(&message_id),
            });
        }
    }

    fn close_reasoning(&mut self, out: &mut Vec<Event>) {
        self.close_reasoning_message(out);
        if let Some(message_id) = self.rest.reasoning.take() {
            out.push(Event::ReasoningEnd { message_id });
        }
    }

    fn text(&mut self, segment_id: &str, delta: &str, out: &mut Vec<Event>) {
        if self.text.as_deref() != Some(segment_id.as_bytes()) {
            let change = self.rest.steps.content();
            self.step(change, out);
        }
        self.close_reasoning(out);
        self.close_calls(out);
        if self.text.as_deref() != Some(segment_id.as_bytes()) {
            self.close_text(out);
            self.text = Some(SmallVec::from_slice(segment_id.as_bytes()));
            out.push(Event::TextMessageStart {
                message_id: segment_id.to_owned(),
                role: "assistant".into(),
                name: None,
            });
        }
        if !delta.is_empty() {
            out.push(Event::TextMessageContent {
                message_id: segment_id.to_owned(),
                delta: delta.to_owned(),
            });
        }
    }

    fn close_text(&mut self, out: &mut Vec<Event>) {
        if let Some(message_id) = self.text.take() {
            out.push(Event::TextMessageEnd {
                message_id: id_string(&message_id),
            });
        }
    }

    /// TOOL_CALL_START, and the arguments as one ARGS then END when they are known; an agent
    /// that streams them sends them later (`tool_call_update.args`).
    fn start_call(&mut self, call_id: &str, name: &str, args: &Value, out: &mut Vec<Event>) {
        if self.rest.calls.iter().any(|id| id == call_id) {
            return;
        }
        let change = self.rest.steps.call();
        self.step(change, out);
        self.close_text(out);
        self.close_reasoning(out);
        out.push(Event::ToolCallStart {
            tool_call_id: call_id.to_owned(),
            tool_call_name: name.to_owned(),
            parent_message_id: None,
        });
        self.rest.calls.push(call_id.to_owned());
        if !started_without_args(args) {
            self.end_call(call_id, Some(args), out);
        }
    }

    /// The call's ARGS (when known) and its END, if it is open.
    fn end_call(&mut self, call_id: &str, args: Option<&Value>, out: &mut Vec<Event>) {
        let Some(at) = self.rest.calls.iter().position(|id| id == call_id) else {
            return;
        };
        let tool_call_id = self.rest.calls.remove(at);
        if let Some(args) = args.filter(|args| !started_without_args(args)) {
            out.push(Event::ToolCallArgs {
                tool_call_id: tool_call_id.clone(),
                delta: args.to_string(),
            });
        }
        out.push(Event::ToolCallEnd { tool_call_id });
    }

    fn close_calls(&mut self, out: &mut Vec<Event>) {
        for tool_call_id in std::mem::take(&mut self.rest.calls) {
            out.push(Event::ToolCallEnd { tool_call_id });
        }
    }

    fn close_all(&mut self, out: &mut Vec<Event>) {
        self.close_text(out);
        self.close_reasoning(out);
        self.close_calls(out);
    }

    /// Closes what is open, then the open step: before the run's end or its interrupt.
    fn finish(&mut self, out: &mut Vec<Event>) {
        let change = self.rest.steps.end();
        self.step(change, out);
        self.close_all(out);
    }

    /// TOOL_CALL_RESULT: the output (or the error's text) as content, the status in `metadata`.
    fn result(&mut self, kind: &EventKind, out: &mut Vec<Event>) {
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
        self.end_call(call_id, None, out);
        self.close_text(out);
        self.close_reasoning(out);
        let mut glassbox = json!({ "status": status_name(*status), "durationMs": duration_ms });
        if *truncated {
            glassbox["truncated"] = Value::Bool(true);
        }
        if let Some(error) = error {
            glassbox["error"] = json!({ "kind": error.kind.as_str(), "message": error.message });
        }
        let content = match (output, error) {
            (Some(output), _) => output.clone(),
            (None, Some(error)) => error.message.clone(),
            (None, None) => String::new(),
        };
        out.push(Event::ToolCallResult {
            message_id: format!("{call_id}-result"),
            tool_call_id: call_id.clone(),
            content,
            role: Some("tool".into()),
            metadata: Some(json!({ "glassbox": glassbox })),
        });
    }

    /// An approval request: the AG-UI run ends with an interrupt the client answers by resuming.
    fn interrupt(&mut self, call_id: &str, out: &mut Vec<Event>) {
        self.finish(out);
        let interrupt = Interrupt {
            id: interrupt_id(call_id),
            reason: TOOL_CALL_REASON.into(),
            message: Some("The tool call waits for approval.".into()),
            tool_call_id: Some(call_id.to_owned()),
            response_schema: Some(approval_schema()),
            expires_at: None,
            metadata: None,
        };
        out.push(Event::RunFinished {
            thread_id: self.rest.thread_id.clone(),
            run_id: self.rest.run_id.clone(),
            result: None,
            outcome: Some(Outcome::Interrupt {
                interrupts: vec![interrupt],
            }),
            usage: self.token_usage(),
        });
        self.ended = true;
    }

    fn terminal(&mut self, kind: &EventKind, out: &mut Vec<Event>) {
        self.finish(out);
        let usage = self.token_usage();
        out.push(match kind {
            EventKind::MessageCancelled {
                reason,
                cancelled_by,
                ..
            } => Event::RunError {
                message: reason.clone(),
                code: Some(format!("cancelled_by_{}", cancelled_by.as_str())),
                usage,
            },
            EventKind::MessageError { code, error, .. } => Event::RunError {
                message: error.clone(),
                code: Some(code.as_str().to_owned()),
                usage,
            },
            _ => Event::RunFinished {
                thread_id: self.rest.thread_id.clone(),
                run_id: self.rest.run_id.clone(),
                result: None,
                outcome: Some(Outcome::Success),
                usage,
            },
        });
        self.ended = true;
    }

    fn token_usage(&self) -> Option<Vec<TokenUsage>> {
        let usage = self.rest.usage.as_ref()?;
        Some(vec![TokenUsage {
            provider: None,
            model: self.rest.model.clone(),
            input_tokens: Some(usage.input_tokens),
            output_tokens: Some(usage.output_tokens),
            total_tokens: Some(usage.input_tokens.saturating_add(usage.output_tokens)),
            reasoning_tokens: usage.reasoning_tokens,
            cached_input_tokens: usage.cache_read_tokens,
        }])
    }
}

/// An open message's id as the event that closes it carries it (it was made from a `&str`).
fn id_string(id: &OpenId) -> String {
    String::from_utf8_lossy(id).into_owned()
}

/// Writes a `TEXT_MESSAGE_CONTENT` or `REASONING_MESSAGE_CONTENT` event, stamped, as serde
/// writes [`Stamped`](super::wire::Stamped)'s: by hand, as the AI SDK's `text-delta` chunk
/// (`formats::ai_sdk`), since it is written once per delta per reader; a unit test compares the
/// bytes with serde's. The delta is the log's JSON string, already escaped.
fn write_content(
    mut out: impl Write,
    kind: &str,
    message_id: &str,
    delta: &RawValue,
    timestamp: u64,
) -> std::io::Result<()> {
    out.write_all(b"{\"type\":\"")?;
    out.write_all(kind.as_bytes())?;
    out.write_all(b"\",\"messageId\":")?;
    serde_json::to_writer(&mut out, message_id)?;
    out.write_all(b",\"delta\":")?;
    out.write_all(delta.get().as_bytes())?;
    out.write_all(b",\"timestamp\":")?;
    out.write_all(itoa::Buffer::new().format(timestamp).as_bytes())?;
    out.write_all(b"}")
}

/// The interrupt of a call's approval request; [`call_of_interrupt`] reads it back.
pub fn interrupt_id(call_id: &str) -> String {
    format!("approval:{call_id}")
}

/// The call an interrupt id names, if it is one of [`interrupt_id`]'s.
pub fn call_of_interrupt(interrupt_id: &str) -> Option<&str> {
    interrupt_id
        .strip_prefix("approval:")
        .filter(|call| !call.is_empty())
}

/// The answer an approval interrupt takes: `{approved: boolean, reason?: string}`.
pub fn approval_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "approved": { "type": "boolean" },
            "reason": { "type": "string" }
        },
        "required": ["approved"]
    })
}

fn step_name(number: u32) -> String {
    format!("turn_{number}")
}

fn reasoning_message_id(segment_id: &str, index: u32) -> String {
    format!("{segment_id}-{index}")
}

/// Whether `id` is [`reasoning_message_id`]'s for that segment and index, read without making it
/// (`id` is one it made, so its index has no leading zero or sign).
fn is_reasoning_message_id(id: &str, segment_id: &str, index: u32) -> bool {
    id.strip_prefix(segment_id)
        .and_then(|rest| rest.strip_prefix('-'))
        .is_some_and(|rest| rest.parse() == Ok(index))
}

fn status_name(status: ToolResultStatus) -> &'static str {
    match status {
        ToolResultStatus::Success => "success",
        ToolResultStatus::Error => "error",
        ToolResultStatus::Cancelled => "cancelled",
        ToolResultStatus::Denied => "denied",
    }
}

#[cfg(test)]
mod tests;
