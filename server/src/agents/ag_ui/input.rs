//! The conversation as AG-UI messages: each earlier user message, and each answer's reasoning,
//! tool calls with their results, and text, in the order they happened, under the agent's own
//! ids and with the encrypted values it sent (both kept in the message's `agent_state`).

use app::protocol::{Message, Role, Segment, ToolCallSegment, ToolCallStatus};
use serde_json::Value;

use crate::ag_ui::wire::{self, FunctionCall, ResumeEntry, ToolCall};

/// The key of the interrupts a request paused on, in the message's `agent_state`.
pub const PENDING_KEY: &str = "ag_ui:interrupts";

/// Earlier messages of the conversation, then the person's new one.
pub fn conversation(history: &[Message], user_message: &Message) -> Vec<wire::Message> {
    let mut out = Vec::new();
    for message in history {
        if message.role == Role::User {
            out.push(user(message));
        } else {
            answer(message, &mut out);
        }
    }
    out.push(user(user_message));
    out
}

/// The interrupts the last answer left unanswered (its run was stopped while they waited): the
/// next request cancels them, as AG-UI asks, so that the agent does not wait for them forever.
pub fn cancelled_interrupts(history: &[Message]) -> Option<Vec<ResumeEntry>> {
    let last = history.iter().rev().find(|m| m.role != Role::User)?;
    let pending = last.agent_state.get(PENDING_KEY)?["ag_ui"]["pending"].as_array()?;
    let entries: Vec<ResumeEntry> = pending
        .iter()
        .filter_map(Value::as_str)
        .map(|id| ResumeEntry {
            interrupt_id: id.to_owned(),
            status: "cancelled".into(),
            payload: None,
        })
        .collect();
    (!entries.is_empty()).then_some(entries)
}

fn has_pending(message: &Message) -> bool {
    kept(message, PENDING_KEY)
        .and_then(|state| state["pending"].as_array())
        .is_some_and(|pending| !pending.is_empty())
}

fn user(message: &Message) -> wire::Message {
    wire::Message::User {
        id: message.id.clone(),
        content: Value::String(message.text()),
        name: None,
    }
}

/// What the message keeps for `key` from the agent (`agent_state`).
fn kept<'a>(message: &'a Message, key: &str) -> Option<&'a Value> {
    message.agent_state.get(key).map(|state| &state["ag_ui"])
}

/// The agent's id for what became `key`, or `fallback`.
fn agent_id(message: &Message, key: &str, fallback: String) -> String {
    kept(message, key)
        .and_then(|state| state["id"].as_str())
        .map_or(fallback, str::to_owned)
}

fn encrypted(message: &Message, key: &str) -> Option<String> {
    kept(message, key)?["encryptedValue"]
        .as_str()
        .map(str::to_owned)
}

/// Calls waiting to be written as one assistant message (they share a parent), then their results.
#[derive(Default)]
struct Calls {
    parent: Option<String>,
    calls: Vec<ToolCall>,
    results: Vec<wire::Message>,
}

impl Calls {
    /// Writes the calls into their parent message when it is the one just written (a message with
    /// text and calls), else as an assistant message of their own, then their results.
    fn flush(&mut self, owner: &Message, out: &mut Vec<wire::Message>) {
        if self.calls.is_empty() {
            return;
        }
        let calls = std::mem::take(&mut self.calls);
        let parent = self.parent.take();
        match (out.last_mut(), &parent) {
            (
                Some(wire::Message::Assistant {
                    id,
                    tool_calls: tool_calls @ None,
                    ..
                }),
                Some(parent),
            ) if id == parent => *tool_calls = Some(calls),
            _ => out.push(wire::Message::Assistant {
                id: parent.unwrap_or_else(|| format!("{}-calls-{}", owner.id, out.len())),
                content: None,
                tool_calls: Some(calls),
                encrypted_value: None,
            }),
        }
        out.append(&mut self.results);
    }

    fn add(&mut self, message: &Message, call: &ToolCallSegment, out: &mut Vec<wire::Message>) {
        let parent = kept(message, &call.call_id)
            .and_then(|state| state["parentMessageId"].as_str())
            .map(str::to_owned);
        if parent != self.parent {
            self.flush(message, out);
            self.parent = parent;
        }
        let id = agent_id(message, &call.call_id, call.call_id.clone());
        self.calls.push(ToolCall {
            id: id.clone(),
            kind: "function".into(),
            function: FunctionCall {
                name: call.name.clone(),
                arguments: call.args.to_string(),
            },
            encrypted_value: encrypted(message, &call.call_id),
        });
        let error = match (&call.status, &call.error) {
            (ToolCallStatus::Success, _) => None,
            (_, Some(error)) => Some(format!("{}: {}", error.kind, error.message)),
            _ => Some("The tool did not finish.".to_owned()),
        };
        // A call that waited for a person when its run was stopped has no result: the next
        // request cancels its interrupt instead (`cancelled_interrupts`).
        if call.status == ToolCallStatus::Cancelled && has_pending(message) {
            return;
        }
        let result_key = format!("{}:result", call.call_id);
        self.results.push(wire::Message::Tool {
            id: agent_id(message, &result_key, format!("{}-result", call.call_id)),
            content: call.output.clone(),
            tool_call_id: id,
            error,
            encrypted_value: encrypted(message, &result_key),
        });
    }
}

/// One stored answer, as the agent sent it.
fn answer(message: &Message, out: &mut Vec<wire::Message>) {
    let mut calls = Calls::default();
    for segment in &message.segments {
        match segment {
            Segment::ToolCall(call) => calls.add(message, call, out),
            Segment::Text(text) => {
                calls.flush(message, out);
                out.push(wire::Message::Assistant {
                    id: agent_id(message, &text.id, text.id.clone()),
                    content: Some(text.text.clone()),
                    tool_calls: None,
                    encrypted_value: encrypted(message, &text.id),
                });
            }
            Segment::Reasoning(reasoning) => {
                calls.flush(message, out);
                // One message per part, as the agent sent them, each with its encrypted value.
                out.extend(reasoning.parts.iter().map(|part| {
                    let key = format!("{}:{}", reasoning.id, part.summary_index);
                    wire::Message::Reasoning {
                        encrypted_value: encrypted(message, &key),
                        id: agent_id(message, &key, key.clone()),
                        content: part.text.clone(),
                    }
                }));
            }
        }
    }
    calls.flush(message, out);
}
