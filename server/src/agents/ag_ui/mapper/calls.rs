//! Tool calls: started, arguments streamed in, ended, and their results.

use app::protocol::{EventKind, ToolErrorKind, ToolResultStatus};
use serde_json::Value;

use super::{unknown, CallState, Mapper, ProtocolError, MAX_ARGS_BYTES};

/// Arguments are shown as they stream up to this size (each update carries the text so far).
const MAX_STREAMED_ARGS_BYTES: usize = 8 * 1024;
use crate::ag_ui::wire::{self, Event};
use crate::stamps::new_id;

impl Mapper {
    pub(super) fn tool(
        &mut self,
        event: Event,
        at_ms: u64,
        out: &mut Vec<EventKind>,
    ) -> Result<(), ProtocolError> {
        match event {
            Event::ToolCallStart {
                tool_call_id,
                tool_call_name,
                parent_message_id,
            } => {
                self.close_chunks(out);
                self.start_call(tool_call_id, tool_call_name, parent_message_id, at_ms, out)?;
            }
            Event::ToolCallArgs {
                tool_call_id,
                delta,
            } => self.call_args(&tool_call_id, &delta, out)?,
            Event::ToolCallEnd { tool_call_id } => self.end_call(&tool_call_id, out)?,
            Event::ToolCallChunk {
                tool_call_id,
                tool_call_name,
                parent_message_id,
                delta,
            } => self.call_chunk(
                tool_call_id,
                tool_call_name,
                parent_message_id,
                delta,
                at_ms,
                out,
            )?,
            Event::ToolCallResult {
                tool_call_id,
                content,
                message_id,
                ..
            } => self.call_result(&tool_call_id, message_id, content, at_ms, out)?,
            _ => {}
        }
        Ok(())
    }

    fn start_call(
        &mut self,
        id: String,
        name: String,
        parent_message_id: Option<String>,
        at_ms: u64,
        out: &mut Vec<EventKind>,
    ) -> Result<(), ProtocolError> {
        if self.calls.contains_key(&id) {
            return Err(ProtocolError(format!(
                "the agent started tool call '{id}' twice"
            )));
        }
        self.end_reasoning(out);
        let glassbox_id = new_id("call");
        self.key(&id, glassbox_id.clone());
        let sequence_number = self.next_sequence();
        out.push(EventKind::ToolCallStarted {
            call_id: glassbox_id.clone(),
            name: name.clone(),
            display: None,
            args: Value::Object(Default::default()),
            sequence_number,
        });
        self.calls.insert(
            id,
            CallState {
                glassbox_id,
                name,
                args_text: String::new(),
                args_done: false,
                started_ms: at_ms,
                ended: false,
                denied: false,
                parent_message_id,
            },
        );
        Ok(())
    }

    fn call_args(
        &mut self,
        id: &str,
        delta: &str,
        out: &mut Vec<EventKind>,
    ) -> Result<(), ProtocolError> {
        let Some(call) = self.calls.get_mut(id).filter(|call| !call.args_done) else {
            return Err(unknown("open tool call", id));
        };
        if call.args_text.len() + delta.len() > MAX_ARGS_BYTES {
            return Err(ProtocolError(format!(
                "the arguments of tool call '{id}' are longer than {MAX_ARGS_BYTES} bytes"
            )));
        }
        call.args_text.push_str(delta);
        // The text so far, redacted whole (a secret split across deltas is still found); past
        // MAX_STREAMED_ARGS_BYTES the call shows its arguments only when they are complete.
        if !delta.is_empty() && call.args_text.len() <= MAX_STREAMED_ARGS_BYTES {
            out.push(EventKind::ToolCallUpdate {
                call_id: call.glassbox_id.clone(),
                output_delta: None,
                progress: None,
                args_text: Some(crate::redact::redact_raw_json(&call.args_text)),
                args: None,
            });
        }
        Ok(())
    }

    /// The arguments are whole: the call shows them parsed, and joins the transcript.
    pub(super) fn end_call(
        &mut self,
        id: &str,
        out: &mut Vec<EventKind>,
    ) -> Result<(), ProtocolError> {
        let Some(call) = self.calls.get_mut(id).filter(|call| !call.args_done) else {
            return Err(unknown("open tool call", id));
        };
        call.args_done = true;
        let args = parse_args(&call.args_text);
        out.push(EventKind::ToolCallUpdate {
            call_id: call.glassbox_id.clone(),
            output_delta: None,
            progress: None,
            args_text: None,
            args: Some(args),
        });
        let tool_call = wire::ToolCall {
            id: id.to_owned(),
            kind: "function".into(),
            function: wire::FunctionCall {
                name: call.name.clone(),
                arguments: call.args_text.clone(),
            },
            encrypted_value: None,
        };
        let parent = call.parent_message_id.clone();
        self.add_to_transcript(parent, tool_call);
        Ok(())
    }

    /// Calls with the same parent message share one assistant message, as the agent sent them.
    fn add_to_transcript(&mut self, parent: Option<String>, tool_call: wire::ToolCall) {
        if let Some(wire::Message::Assistant {
            id,
            tool_calls: Some(calls),
            ..
        }) = self.transcript.last_mut()
        {
            if parent.as_deref().is_none_or(|parent| parent == id) {
                calls.push(tool_call);
                return;
            }
        }
        self.transcript.push(wire::Message::Assistant {
            id: parent.unwrap_or_else(|| new_id("msg")),
            content: None,
            tool_calls: Some(vec![tool_call]),
            encrypted_value: None,
        });
    }

    fn call_chunk(
        &mut self,
        id: Option<String>,
        name: Option<String>,
        parent_message_id: Option<String>,
        delta: Option<String>,
        at_ms: u64,
        out: &mut Vec<EventKind>,
    ) -> Result<(), ProtocolError> {
        let id = match (id, name) {
            (Some(id), _) if self.chunk_call.as_ref() == Some(&id) => id,
            (Some(id), Some(name)) => {
                self.close_chunks(out);
                self.start_call(id.clone(), name, parent_message_id, at_ms, out)?;
                self.chunk_call = Some(id.clone());
                id
            }
            (None, _) if self.chunk_call.is_some() => self.chunk_call.clone().unwrap_or_default(),
            _ => {
                return Err(ProtocolError(
                    "the agent sent a TOOL_CALL_CHUNK without a toolCallId and name first".into(),
                ))
            }
        };
        match delta {
            Some(delta) => self.call_args(&id, &delta, out),
            None => Ok(()),
        }
    }

    fn call_result(
        &mut self,
        id: &str,
        message_id: String,
        content: String,
        at_ms: u64,
        out: &mut Vec<EventKind>,
    ) -> Result<(), ProtocolError> {
        if self.chunk_call.as_deref() == Some(id) {
            self.close_chunks(out);
        }
        let Some(call) = self.calls.get_mut(id) else {
            return Err(unknown("tool call", id));
        };
        if call.ended {
            // A denied call already has its one result; an agent's second result is dropped.
            return Ok(());
        }
        call.ended = true;
        let result_key = format!("{}:result", call.glassbox_id);
        out.push(EventKind::ToolResult {
            call_id: call.glassbox_id.clone(),
            status: ToolResultStatus::Success,
            duration_ms: at_ms.saturating_sub(call.started_ms),
            output: Some(content.clone()),
            truncated: false,
            full_length: None,
            error: None,
        });
        self.key(&message_id, result_key);
        self.transcript.push(wire::Message::Tool {
            id: message_id,
            content,
            tool_call_id: id.to_owned(),
            error: None,
            encrypted_value: None,
        });
        Ok(())
    }

    /// The agent finished its run with calls it never reported a result for: each ends here with
    /// an error, so that no call of a finished message is left running.
    pub fn end_unanswered_calls(&mut self, at_ms: u64, out: &mut Vec<EventKind>) {
        for call in self.calls.values_mut().filter(|call| !call.ended) {
            call.ended = true;
            out.push(EventKind::ToolResult {
                call_id: call.glassbox_id.clone(),
                status: ToolResultStatus::Error,
                duration_ms: at_ms.saturating_sub(call.started_ms),
                output: None,
                truncated: false,
                full_length: None,
                error: Some(crate::tools::tool_error(
                    ToolErrorKind::Other("no_result".into()),
                    "The agent finished its run without a result for this call.",
                )),
            });
        }
    }

    /// Keeps an encrypted value with the message or call it belongs to, for the next request.
    pub(super) fn attach_encrypted(&mut self, subtype: &str, entity_id: &str, value: String) {
        for message in self.transcript.iter_mut().rev() {
            match message {
                wire::Message::Assistant {
                    tool_calls: Some(calls),
                    ..
                } if subtype == "tool-call" => {
                    if let Some(call) = calls.iter_mut().find(|call| call.id == entity_id) {
                        call.encrypted_value = Some(value);
                        return;
                    }
                }
                wire::Message::Assistant {
                    id,
                    encrypted_value,
                    ..
                }
                | wire::Message::Reasoning {
                    id,
                    encrypted_value,
                    ..
                }
                | wire::Message::Tool {
                    id,
                    encrypted_value,
                    ..
                } if subtype == "message" && id == entity_id => {
                    *encrypted_value = Some(value);
                    return;
                }
                _ => {}
            }
        }
        // An entity not (yet) in the transcript: the trace keeps the value all the same.
    }
}

impl CallState {
    /// A person approved the call: its duration counts from now, not from the wait's start.
    pub fn restart_clock(&mut self, at_ms: u64) {
        self.started_ms = at_ms;
    }

    /// The arguments so far, as JSON.
    pub fn args(&self) -> Value {
        parse_args(&self.args_text)
    }
}

/// The argument text as JSON; text that does not parse is shown as it came.
fn parse_args(text: &str) -> Value {
    if text.trim().is_empty() {
        return Value::Object(Default::default());
    }
    serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_owned()))
}
