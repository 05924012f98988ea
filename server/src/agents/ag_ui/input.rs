//! The conversation as AG-UI messages: each earlier user message, and each answer's reasoning,
//! tool calls with their results, and text, in the order they happened.

use app::protocol::{Message, Role, Segment, ToolCallStatus};

use crate::ag_ui::wire::{self, FunctionCall, ToolCall};

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

/// The encrypted value an AG-UI agent sent for what became `key` (an `agent_state` event).
fn encrypted(message: &Message, key: &str) -> Option<String> {
    message.agent_state.get(key)?["ag_ui"]["encryptedValue"]
        .as_str()
        .map(str::to_owned)
}

fn user(message: &Message) -> wire::Message {
    wire::Message::User {
        id: message.id.clone(),
        content: serde_json::Value::String(message.text()),
        name: None,
    }
}

/// One stored answer: consecutive tool calls become one assistant message followed by their
/// results, as the agent would have sent them.
fn answer(message: &Message, out: &mut Vec<wire::Message>) {
    let mut calls: Vec<ToolCall> = Vec::new();
    let mut results: Vec<wire::Message> = Vec::new();
    let flush = |out: &mut Vec<wire::Message>,
                 calls: &mut Vec<ToolCall>,
                 results: &mut Vec<wire::Message>| {
        if !calls.is_empty() {
            out.push(wire::Message::Assistant {
                id: format!("{}-calls-{}", message.id, out.len()),
                content: None,
                tool_calls: Some(std::mem::take(calls)),
                encrypted_value: None,
            });
            out.append(results);
        }
    };
    for segment in &message.segments {
        match segment {
            Segment::ToolCall(call) => {
                calls.push(ToolCall {
                    id: call.call_id.clone(),
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
                results.push(wire::Message::Tool {
                    id: format!("{}-result", call.call_id),
                    content: call.output.clone(),
                    tool_call_id: call.call_id.clone(),
                    error,
                    encrypted_value: encrypted(message, &format!("{}:result", call.call_id)),
                });
            }
            Segment::Text(text) => {
                flush(out, &mut calls, &mut results);
                out.push(wire::Message::Assistant {
                    id: text.id.clone(),
                    content: Some(text.text.clone()),
                    tool_calls: None,
                    encrypted_value: encrypted(message, &text.id),
                });
            }
            Segment::Reasoning(reasoning) => {
                flush(out, &mut calls, &mut results);
                // One message per part, as the agent sent them, each with its encrypted value.
                out.extend(reasoning.parts.iter().map(|part| {
                    let key = format!("{}:{}", reasoning.id, part.summary_index);
                    wire::Message::Reasoning {
                        encrypted_value: encrypted(message, &key),
                        id: key,
                        content: part.text.clone(),
                    }
                }));
            }
        }
    }
    flush(out, &mut calls, &mut results);
}
