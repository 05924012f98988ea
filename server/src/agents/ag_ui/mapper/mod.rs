//! AG-UI events onto Glassbox events: a pure state machine over one Glassbox run (which may span
//! several AG-UI requests when the agent pauses for an approval). It keeps the agent's message and
//! call ids apart from Glassbox's (agents reuse theirs across runs), the transcript the next
//! request sends back, and what is kept only in the trace.

mod calls;
mod reasoning;

use std::collections::{BTreeMap, HashMap};

use app::protocol::{EventKind, Usage};
use serde_json::Value;

use crate::ag_ui::wire::{self, Event, Interrupt, Outcome, TokenUsage};
use crate::sanitize::MAX_DELTA_CHARS;
use crate::stamps::new_id;

/// Argument text a call may stream before the run ends with an error.
pub const MAX_ARGS_BYTES: usize = 256 * 1024;
/// Distinct unknown event types counted per request (more are only counted as not kept).
pub const MAX_DROPPED_TYPES: usize = 64;
/// Bytes of events the trace keeps per request (a LangGraph agent sends its whole state at every
/// step); past it, events are only counted.
pub const MAX_KEPT_BYTES: usize = 2 * 1024 * 1024;
/// An encrypted value larger than this is kept in the trace only, not sent back in later runs.
pub const MAX_STATE_BYTES: usize = 32 * 1024;
/// Events kept in the trace (state, steps, custom …) per request; later ones are only counted.
pub const MAX_KEPT_EVENTS: usize = 2_000;

/// How one AG-UI request ended.
#[derive(Clone, Debug, PartialEq)]
pub enum StreamEnd {
    /// `RUN_FINISHED`: the interrupts it paused on (none when it succeeded) and its usage.
    Finished {
        interrupts: Vec<Interrupt>,
        usage: Option<Usage>,
    },
    /// `RUN_ERROR`: the agent's message and code.
    Failed {
        message: String,
        code: Option<String>,
    },
}

/// A stream the agent got wrong: the run ends with `message_error` code `agent_protocol`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProtocolError(pub String);

struct TextState {
    segment_id: String,
    /// The sequence number, until the first delta carries it.
    first: Option<u32>,
    text: String,
}

struct ReasoningState {
    segment_id: String,
    sequence_number: u32,
    next_index: u32,
    /// The part being written: the agent's message id (if any), its index and text.
    part: Option<(Option<String>, u32, String)>,
}

pub struct CallState {
    pub glassbox_id: String,
    pub name: String,
    args_text: String,
    /// How much of `args_text` the last update showed.
    args_shown: usize,
    args_done: bool,
    started_ms: u64,
    pub ended: bool,
    /// Denied by a person: a result the agent reports for it too is dropped.
    pub denied: bool,
    parent_message_id: Option<String>,
}

#[derive(Default)]
pub struct Mapper {
    sequence: u32,
    started: bool,
    texts: HashMap<String, TextState>,
    chunk_text: Option<String>,
    reasoning: Option<ReasoningState>,
    calls: HashMap<String, CallState>,
    chunk_call: Option<String>,
    /// What the agent said in this run, as AG-UI messages, for the next request's `messages`.
    pub transcript: Vec<wire::Message>,
    /// Events kept only in the trace, as they came (redacted before storing).
    pub kept: Vec<Value>,
    pub kept_overflow: u64,
    kept_bytes: usize,
    /// The time of the event being applied.
    at_ms: u64,
    /// Event types this version does not know, and how many of each.
    pub dropped: BTreeMap<String, u64>,
    /// The agent's message and call ids, by the Glassbox key of what they became (a text
    /// segment, `<segment>:<part>`, a call, `<call>:result`): where an encrypted value is kept.
    keys: HashMap<String, String>,
    /// What is kept for each key: the agent's id, a call's parent message, an encrypted value.
    states: HashMap<String, Value>,
    /// Text messages of other roles than the assistant's, whose content is skipped.
    skipped: std::collections::HashSet<String>,
}

impl Mapper {
    /// A new request begins (the first, or a resume): it must start with `RUN_STARTED`.
    pub fn begin_request(&mut self) {
        self.started = false;
    }

    /// The state of an agent's call, by its id.
    pub fn call(&self, agent_call_id: &str) -> Option<&CallState> {
        self.calls.get(agent_call_id)
    }

    pub fn call_mut(&mut self, agent_call_id: &str) -> Option<&mut CallState> {
        self.calls.get_mut(agent_call_id)
    }

    /// The next segment's place in the message.
    pub fn next_sequence(&mut self) -> u32 {
        let next = self.sequence;
        self.sequence += 1;
        next
    }

    /// Records an agent id's Glassbox key, for its encrypted value.
    /// Also keeps the agent's own id (and `more`, a call's parent message) in the message (an
    /// `agent_state` event), so a later run sends the conversation back under the agent's ids.
    fn key(
        &mut self,
        agent_id: &str,
        key: String,
        more: Option<(&str, &str)>,
        out: &mut Vec<EventKind>,
    ) {
        let mut state = serde_json::json!({ "id": agent_id });
        if let Some((name, value)) = more {
            state[name] = Value::String(value.to_owned());
        }
        self.states.insert(key.clone(), state);
        self.emit_state(&key, out);
        self.keys.insert(agent_id.to_owned(), key);
    }

    fn emit_state(&self, key: &str, out: &mut Vec<EventKind>) {
        if let Some(state) = self.states.get(key) {
            out.push(EventKind::AgentState {
                key: key.to_owned(),
                state: serde_json::json!({ "ag_ui": state }),
            });
        }
    }

    /// Keeps an encrypted value in the message (an `agent_state` event) under the key of what its
    /// entity became, so that a later run of the conversation sends it back too.
    fn remember_encrypted(&mut self, entity_id: &str, value: &str, out: &mut Vec<EventKind>) {
        let Some(key) = self.keys.get(entity_id).cloned() else {
            return;
        };
        if value.len() > MAX_STATE_BYTES {
            return;
        }
        if let Some(state) = self.states.get_mut(&key) {
            state["encryptedValue"] = Value::String(value.to_owned());
        }
        self.emit_state(&key, out);
    }

    /// What the trace keeps of a request's answer: the events the chat does not show (redacted),
    /// the event types that were dropped, and the failure that ended it. Resets them.
    pub fn take_record(&mut self, failure: Option<&super::Failure>) -> Value {
        let mut events = std::mem::take(&mut self.kept);
        self.kept_bytes = 0;
        for entry in &mut events {
            if let Some(event) = entry.get_mut("event") {
                crate::sanitize::sanitize_value(event);
            }
        }
        let mut record = serde_json::json!({ "events": events });
        if self.kept_overflow > 0 {
            record["events_not_kept"] = std::mem::take(&mut self.kept_overflow).into();
        }
        if !self.dropped.is_empty() {
            record["dropped"] = serde_json::json!(std::mem::take(&mut self.dropped));
        }
        if let Some(failure) = failure {
            record["error"] = serde_json::json!({"code": failure.code, "message": failure.message});
        }
        record
    }

    /// Keeps an event in the trace only, with its time (the agent's stamp, or its arrival).
    pub fn keep(&mut self, raw: Value) {
        let size = raw.to_string().len();
        if self.kept.len() < MAX_KEPT_EVENTS && self.kept_bytes + size <= MAX_KEPT_BYTES {
            self.kept_bytes += size;
            self.kept
                .push(serde_json::json!({"at_ms": self.at_ms, "event": raw}));
        } else {
            self.kept_overflow += 1;
        }
    }

    /// Applies one event that arrived at `now_ms` (the agent's `timestamp` when it sent one).
    /// Returns the Glassbox events it makes, and the end of the request when it is one.
    pub fn apply(
        &mut self,
        event: Event,
        raw: &Value,
        at_ms: u64,
        out: &mut Vec<EventKind>,
    ) -> Result<Option<StreamEnd>, ProtocolError> {
        self.at_ms = at_ms;
        if !self.started && !matches!(event, Event::RunStarted { .. } | Event::Unknown) {
            return Err(ProtocolError(format!(
                "the agent sent {} before RUN_STARTED",
                type_of(raw)
            )));
        }
        match event {
            event @ (Event::RunStarted { .. }
            | Event::RunFinished { .. }
            | Event::RunError { .. }) => return self.lifecycle(event, raw, out),
            Event::Unknown => self.count_unknown(raw),
            event @ (Event::TextMessageStart { .. }
            | Event::TextMessageContent { .. }
            | Event::TextMessageEnd { .. }
            | Event::TextMessageChunk { .. }) => self.text(event, out)?,
            Event::ToolCallResult {
                ref tool_call_id, ..
            } if !self.calls.contains_key(tool_call_id) => {
                // A result for a call of an earlier run (an interrupt resumed or cancelled):
                // kept in the trace only.
                self.keep(raw.clone());
            }
            event @ (Event::ToolCallStart { .. }
            | Event::ToolCallArgs { .. }
            | Event::ToolCallEnd { .. }
            | Event::ToolCallChunk { .. }
            | Event::ToolCallResult { .. }) => self.tool(event, at_ms, out)?,
            Event::ReasoningEncryptedValue {
                subtype,
                entity_id,
                encrypted_value,
            } => {
                self.remember_encrypted(&entity_id, &encrypted_value, out);
                self.attach_encrypted(&subtype, &entity_id, encrypted_value);
                self.keep(raw.clone());
            }
            event @ (Event::ReasoningStart { .. }
            | Event::ReasoningMessageStart { .. }
            | Event::ReasoningMessageContent { .. }
            | Event::ReasoningMessageEnd { .. }
            | Event::ReasoningMessageChunk { .. }
            | Event::ReasoningEnd { .. }
            | Event::ThinkingStart { .. }
            | Event::ThinkingEnd {}
            | Event::ThinkingTextMessageStart {}
            | Event::ThinkingTextMessageContent { .. }
            | Event::ThinkingTextMessageEnd {}) => self.reasoning(event, out)?,
            // Steps, state, snapshots, activity, raw and custom events: the trace keeps them.
            _ => self.keep(raw.clone()),
        }
        Ok(None)
    }

    /// `RUN_STARTED` (once per request), and the two ends of a request.
    fn lifecycle(
        &mut self,
        event: Event,
        raw: &Value,
        out: &mut Vec<EventKind>,
    ) -> Result<Option<StreamEnd>, ProtocolError> {
        self.keep(raw.clone());
        match event {
            Event::RunStarted { .. } if self.started => {
                Err(ProtocolError("the agent sent a second RUN_STARTED".into()))
            }
            Event::RunFinished { outcome, usage, .. } => {
                self.close_all(out);
                let interrupts = match outcome {
                    Some(Outcome::Interrupt { interrupts }) => interrupts,
                    _ => Vec::new(),
                };
                Ok(Some(StreamEnd::Finished {
                    interrupts,
                    usage: usage.as_deref().and_then(sum_usage),
                }))
            }
            Event::RunError { message, code, .. } => {
                self.close_all(out);
                Ok(Some(StreamEnd::Failed { message, code }))
            }
            _ => {
                self.started = true;
                Ok(None)
            }
        }
    }

    /// An event type this version does not know: dropped, counted by type.
    fn count_unknown(&mut self, raw: &Value) {
        let kind = type_of(raw);
        if self.dropped.len() < MAX_DROPPED_TYPES || self.dropped.contains_key(&kind) {
            *self.dropped.entry(kind).or_default() += 1;
        } else {
            self.kept_overflow += 1;
        }
    }

    fn text(&mut self, event: Event, out: &mut Vec<EventKind>) -> Result<(), ProtocolError> {
        match event {
            Event::TextMessageStart {
                message_id, role, ..
            } => {
                self.close_chunks(out);
                if role == "assistant" {
                    self.open_text(message_id, out);
                } else {
                    // Another role's message (a user or system message the agent echoes) is
                    // not the answer: its content is skipped.
                    self.skipped.insert(message_id);
                }
            }
            Event::TextMessageContent { message_id, .. } if self.skipped.contains(&message_id) => {}
            Event::TextMessageEnd { message_id } if self.skipped.contains(&message_id) => {}
            Event::TextMessageContent { message_id, delta } => {
                let Some(text) = self.texts.get_mut(&message_id) else {
                    return Err(unknown("text message", &message_id));
                };
                push_text(text, &delta, out);
            }
            Event::TextMessageEnd { message_id } => {
                if !self.texts.contains_key(&message_id) {
                    return Err(unknown("text message", &message_id));
                }
                self.end_text(&message_id);
            }
            Event::TextMessageChunk {
                message_id,
                role,
                delta,
            } => {
                let id = match (message_id, &self.chunk_text) {
                    (Some(id), Some(open)) if *open == id => id,
                    (Some(id), _) => {
                        self.close_chunks(out);
                        if role.as_deref().is_some_and(|role| role != "assistant") {
                            // Its later chunks (without an id) are skipped with it.
                            self.chunk_text = Some(id);
                            return Ok(());
                        }
                        self.open_text(id.clone(), out);
                        self.chunk_text = Some(id.clone());
                        id
                    }
                    (None, Some(open)) => open.clone(),
                    (None, None) => {
                        return Err(ProtocolError(
                            "the agent sent a TEXT_MESSAGE_CHUNK without a messageId first".into(),
                        ))
                    }
                };
                if let (Some(delta), Some(text)) = (delta, self.texts.get_mut(&id)) {
                    push_text(text, &delta, out);
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn open_text(&mut self, message_id: String, out: &mut Vec<EventKind>) {
        self.end_reasoning(out);
        let segment_id = new_id("txt");
        self.key(&message_id, segment_id.clone(), None, out);
        let first = self.next_sequence();
        self.texts.insert(
            message_id,
            TextState {
                segment_id,
                first: Some(first),
                text: String::new(),
            },
        );
    }

    fn end_text(&mut self, message_id: &str) {
        if let Some(text) = self.texts.remove(message_id) {
            if !text.text.is_empty() {
                self.transcript.push(wire::Message::Assistant {
                    id: message_id.to_owned(),
                    content: Some(text.text),
                    tool_calls: None,
                    encrypted_value: None,
                });
            }
        }
    }

    fn close_chunks(&mut self, out: &mut Vec<EventKind>) {
        if let Some(id) = self.chunk_text.take() {
            self.end_text(&id);
        }
        if let Some(id) = self.chunk_call.take() {
            let _ = self.end_call(&id, out);
        }
    }

    /// Ends whatever is open when the request ends.
    fn close_all(&mut self, out: &mut Vec<EventKind>) {
        self.close_chunks(out);
        let open: Vec<String> = self.texts.keys().cloned().collect();
        for id in open {
            self.end_text(&id);
        }
        self.end_reasoning(out);
        let open: Vec<String> = self
            .calls
            .iter()
            .filter(|(_, call)| !call.args_done)
            .map(|(id, _)| id.clone())
            .collect();
        for id in open {
            let _ = self.end_call(&id, out);
        }
    }
}

fn push_text(text: &mut TextState, delta: &str, out: &mut Vec<EventKind>) {
    if delta.is_empty() {
        return;
    }
    text.text.push_str(delta);
    for piece in crate::agents::chunks(delta, MAX_DELTA_CHARS) {
        out.push(EventKind::TextDelta {
            segment_id: text.segment_id.clone(),
            sequence_number: text.first.take(),
            delta: piece.to_owned(),
        });
    }
}

fn unknown(what: &str, id: &str) -> ProtocolError {
    ProtocolError(format!(
        "the agent sent an event for an unknown {what} '{id}'"
    ))
}

/// An event's `type`, for messages and counts.
pub fn type_of(raw: &Value) -> String {
    raw.get("type")
        .and_then(Value::as_str)
        .unwrap_or("(no type)")
        .chars()
        .take(64)
        .collect()
}

/// The sum of the usage entries, or `None` when none has a count.
fn sum_usage(entries: &[TokenUsage]) -> Option<Usage> {
    let mut usage = Usage::default();
    let mut any = false;
    for entry in entries {
        if let Some(input) = entry.input_tokens {
            usage.input_tokens = usage.input_tokens.saturating_add(input);
            any = true;
        }
        if let Some(output) = entry.output_tokens {
            usage.output_tokens = usage.output_tokens.saturating_add(output);
            any = true;
        }
        // Parts of the totals, summed where any entry has them.
        usage.add(&Usage {
            reasoning_tokens: entry.reasoning_tokens,
            cache_read_tokens: entry.cached_input_tokens,
            ..Usage::default()
        });
    }
    any.then_some(usage)
}

#[cfg(test)]
mod usage_tests {
    use super::*;

    #[test]
    fn an_agents_usage_entries_add_up_with_their_cached_and_reasoning_parts() {
        let entry = |input, cached, reasoning| TokenUsage {
            provider: None,
            model: None,
            input_tokens: Some(input),
            output_tokens: Some(10),
            total_tokens: None,
            reasoning_tokens: reasoning,
            cached_input_tokens: cached,
        };
        let usage = sum_usage(&[entry(100, Some(80), None), entry(50, None, Some(4))]);
        assert_eq!(
            usage,
            Some(Usage {
                input_tokens: 150,
                output_tokens: 20,
                reasoning_tokens: Some(4),
                cache_read_tokens: Some(80),
                cache_write_tokens: None,
            })
        );
    }
}
