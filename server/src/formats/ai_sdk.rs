//! Glassbox events as the Vercel AI SDK's UI message stream (v1): the chunks `useChat`'s default
//! transport reads (`uiMessageChunkSchema` in npm `ai`). Pure: one [`UiMessageStream`] per
//! response folds a run's events, in seq order, into chunks; `http::ai_sdk` feeds it from the same
//! run log the SSE endpoint reads and writes each chunk as one `data:` frame. docs/protocol.md has
//! the mapping event by event.
//!
//! Steps: a model turn ends with its `usage` event, and the turn's tool calls follow it, so a
//! step closes when the next turn's reasoning or text arrives (or a second `usage` comes without
//! content between), and the calls stay in the step of the turn that made them. An agent without
//! model turns (the demo) gives one step.

use std::{borrow::Cow, collections::HashSet};

use app::protocol::{ApprovalDecision, Event, EventKind, Message, ToolResultStatus};
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

/// The last frame's data, after the terminal chunk.
pub const DONE: &str = "[DONE]";

/// The response header that names the stream's protocol.
pub const STREAM_HEADER: (&str, &str) = ("x-vercel-ai-ui-message-stream", "v1");

/// One response's state: which parts are open, which calls the client knows of.
#[derive(Debug, Default)]
pub struct UiMessageStream {
    message_id: String,
    run: Map<String, Value>,
    step_open: bool,
    /// The current step's model turn has reported its usage: the next content is a new turn.
    turn_ended: bool,
    text: Option<String>,
    reasoning: Vec<String>,
    /// Calls whose input the client has: only they may get approvals and outputs.
    calls: HashSet<String>,
    /// Calls with input and no output yet.
    open_calls: HashSet<String>,
    /// Calls whose approval request the client has, without an answer yet.
    asked: HashSet<String>,
    /// Paused where the run waits for people, and nothing has changed since.
    paused: bool,
    ended: bool,
}

impl UiMessageStream {
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether the terminal event has been mapped.
    pub fn is_ended(&self) -> bool {
        self.ended
    }

    /// The frame (chunk JSON) of a text or reasoning delta that continues the part already open,
    /// from the event's JSON as the log holds it, without building the event: the common case,
    /// once per event per reader. `None` for any other event: [`Self::push`] maps those.
    pub fn push_delta(&mut self, json: &str) -> Option<String> {
        if self.ended || self.turn_ended {
            return None;
        }
        let delta: LoggedDelta = serde_json::from_str(json).ok()?;
        match (delta.kind.as_ref(), delta.delta, delta.text_delta) {
            ("text_delta", Some(text), None) if self.text.as_deref() == Some(&delta.segment_id) => {
                let chunk = DeltaChunk {
                    kind: "text-delta",
                    id: &delta.segment_id,
                    delta: &text,
                };
                serde_json::to_string(&chunk).ok()
            }
            ("reasoning_part_delta", None, Some(text)) => {
                let id = reasoning_id(&delta.segment_id, delta.summary_index?);
                if !self.reasoning.contains(&id) {
                    return None;
                }
                let chunk = DeltaChunk {
                    kind: "reasoning-delta",
                    id: &id,
                    delta: &text,
                };
                serde_json::to_string(&chunk).ok()
            }
            _ => None,
        }
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
            // An inner agent's state for its next request is Glassbox's to keep; a wait before a
            // retry has no AI SDK part.
            EventKind::ToolCallUpdate { .. }
            | EventKind::AgentState { .. }
            | EventKind::Retrying { .. } => {}
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
        self.message_id = message_id.clone();
        self.run = Map::from_iter([
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
                if !self.calls.contains(call_id) {
                    self.tool_input(out, call_id, name, None, args);
                }
                self.asked.insert(call_id.clone());
                out.push(json!({
                    "type": "tool-approval-request", "approvalId": call_id, "toolCallId": call_id,
                }));
            }
            EventKind::ToolApprovalResolved {
                call_id,
                decision,
                reason,
                ..
            } if self.calls.contains(call_id) => {
                self.asked.remove(call_id);
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
                out.push(json!({ "type": "finish", "finishReason": "stop", "messageMetadata": self.run }));
            }
            EventKind::MessageCancelled {
                reason,
                cancelled_by,
                message,
            } => {
                self.run
                    .insert("cancelled_by".into(), json!(cancelled_by.as_str()));
                self.end(out, "cancelled", message);
                out.push(json!({ "type": "abort", "reason": reason }));
            }
            EventKind::MessageError {
                code,
                error,
                message,
            } => {
                self.run.insert("error_code".into(), json!(code));
                self.end(out, "error", message);
                out.push(json!({ "type": "error", "errorText": error }));
                out.push(json!({ "type": "finish", "finishReason": "error", "messageMetadata": self.run }));
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
            && !self.open_calls.is_empty()
            && self.open_calls.iter().all(|call| self.asked.contains(call))
    }

    /// The calls in flight (input sent, no output yet).
    pub fn open_calls(&self) -> impl Iterator<Item = &str> {
        self.open_calls.iter().map(String::as_str)
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
        self.close_step(&mut out);
        out.push(json!({ "type": "finish", "finishReason": "tool-calls" }));
        out
    }

    /// The first chunk of a response that continues the message after a pause.
    pub fn restart(&self) -> Value {
        json!({ "type": "start", "messageId": self.message_id })
    }

    /// The run's `data-glassbox-run` part: its ids, and once it has ended its status, duration
    /// and tokens. One id per run, so a later chunk replaces the earlier one in the message.
    fn run_part(&self) -> Value {
        json!({
            "type": "data-glassbox-run",
            "id": self.run.get("run_id").cloned().unwrap_or(Value::Null),
            "data": self.run,
        })
    }

    /// Opens a step for content (reasoning or text), closing the last one when its turn ended.
    fn content_step(&mut self, out: &mut Vec<Value>) {
        if self.turn_ended {
            self.close_step(out);
            self.turn_ended = false;
        }
        self.open_step(out);
    }

    fn open_step(&mut self, out: &mut Vec<Value>) {
        if !self.step_open {
            self.step_open = true;
            out.push(json!({ "type": "start-step" }));
        }
    }

    /// Closes the open parts, then the step.
    fn close_step(&mut self, out: &mut Vec<Value>) {
        self.close_text(out);
        for id in self.reasoning.drain(..) {
            out.push(json!({ "type": "reasoning-end", "id": id }));
        }
        if self.step_open {
            self.step_open = false;
            out.push(json!({ "type": "finish-step" }));
        }
    }

    fn close_text(&mut self, out: &mut Vec<Value>) {
        if let Some(id) = self.text.take() {
            out.push(json!({ "type": "text-end", "id": id }));
        }
    }

    fn open_reasoning(&mut self, out: &mut Vec<Value>, id: String) {
        out.push(json!({ "type": "reasoning-start", "id": id }));
        self.reasoning.push(id);
    }

    fn text_delta(&mut self, out: &mut Vec<Value>, segment_id: &str, delta: &str) {
        if self.text.as_deref() != Some(segment_id) {
            self.content_step(out);
            self.close_text(out);
            out.push(json!({ "type": "text-start", "id": segment_id }));
            self.text = Some(segment_id.to_owned());
        }
        out.push(json!({ "type": "text-delta", "id": segment_id, "delta": delta }));
    }

    /// A call's whole input at once (Glassbox sends the arguments whole): a dynamic tool, since
    /// the client declares none of Glassbox's tools.
    fn tool_input(
        &mut self,
        out: &mut Vec<Value>,
        call_id: &str,
        name: &str,
        display: Option<&str>,
        args: &Value,
    ) {
        self.open_step(out);
        self.close_text(out);
        let mut start = json!({
            "type": "tool-input-start", "toolCallId": call_id, "toolName": name, "dynamic": true,
        });
        let mut available = json!({
            "type": "tool-input-available", "toolCallId": call_id, "toolName": name,
            "input": args, "dynamic": true,
        });
        if let Some(title) = display {
            start["title"] = json!(title);
            available["title"] = json!(title);
        }
        out.extend([start, available]);
        self.calls.insert(call_id.to_owned());
        self.open_calls.insert(call_id.to_owned());
        self.paused = false;
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
        if !self.calls.contains(call_id) {
            return;
        }
        self.open_calls.remove(call_id);
        self.asked.remove(call_id);
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

    /// A turn's usage: it ends the turn; a second one with no content between ends a turn that
    /// made only calls, and its calls go in a step of their own.
    fn usage(&mut self, out: &mut Vec<Value>) {
        if self.turn_ended {
            self.close_step(out);
            self.open_step(out);
        }
        self.turn_ended = true;
    }

    /// Closes what is open and updates the run's part with how it ended.
    fn end(&mut self, out: &mut Vec<Value>, status: &str, message: &Message) {
        self.close_step(out);
        self.ended = true;
        self.run.insert("status".into(), json!(status));
        if let Some(duration) = message.duration_ms {
            self.run.insert("duration_ms".into(), json!(duration));
        }
        if let Some(usage) = message.usage {
            self.run.insert("usage".into(), json!(usage));
        }
        if let Some(reason) = &message.ended_reason {
            self.run.insert("reason".into(), json!(reason));
        }
        out.push(self.run_part());
    }
}

/// The fields of a delta event that its chunk needs, borrowed from the logged JSON. Other events
/// lack `segment_id` and fail to parse as this (then they are parsed whole).
#[derive(Deserialize)]
struct LoggedDelta<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(borrow)]
    segment_id: Cow<'a, str>,
    #[serde(default, borrow)]
    delta: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    text_delta: Option<Cow<'a, str>>,
    #[serde(default)]
    summary_index: Option<u32>,
}

/// A `text-delta` or `reasoning-delta` chunk.
#[derive(Serialize)]
struct DeltaChunk<'a> {
    #[serde(rename = "type")]
    kind: &'a str,
    id: &'a str,
    delta: &'a str,
}

/// A reasoning part's id: its segment and summary index, as the reducer keys them.
fn reasoning_id(segment_id: &str, summary_index: u32) -> String {
    format!("{segment_id}:{summary_index}")
}

#[cfg(test)]
mod tests;
