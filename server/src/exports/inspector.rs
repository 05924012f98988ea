//! The Agent Inspector list: `llm_request` entries (the conversation as sent and the response, in
//! OpenAI chat format), `tool_call` entries and `mcp` entries (a call to an MCP server's tool,
//! with its progress notifications), in the order they happened. A call that waited for a person
//! carries its `approval`.

use app::protocol::{fold, EventKind, ToolCallStatus};
use serde_json::{json, Value};

use crate::{
    store::{ModelTurn, Trace},
    tools::mcp::NAME_SEPARATOR,
};

pub fn inspector(trace: &Trace, turns: &[ModelTurn]) -> Vec<Value> {
    // (position in the event log, entry): a turn sits after the last event before its request;
    // a tool call at its `tool_call_started` event. The log's order is the order things happened.
    let mut entries: Vec<(u64, u8, Value)> = Vec::new();
    for turn in turns {
        entries.push((turn.after_seq, 1, llm_request(turn)));
    }
    let started_seq = |call_id: &str| {
        trace.events.iter().find_map(|event| match &event.kind {
            EventKind::ToolCallStarted { call_id: id, .. } if id == call_id => Some(event.seq),
            _ => None,
        })
    };
    if let Some(message) = fold(&trace.events) {
        for call in message.tool_calls() {
            let cli_output: String = trace
                .events
                .iter()
                .filter_map(|event| match &event.kind {
                    EventKind::ToolCallUpdate {
                        call_id,
                        output_delta: Some(delta),
                        ..
                    } if *call_id == call.call_id => Some(delta.as_str()),
                    _ => None,
                })
                .collect();
            let result = match (&call.status, &call.error) {
                (ToolCallStatus::Success, _) => call.output.clone(),
                (_, Some(error)) => format!("Error ({}): {}", error.kind, error.message),
                (status, None) => format!("{status:?}").to_lowercase(),
            };
            let arguments = if call.args.is_object() {
                call.args.clone()
            } else {
                json!({ "value": call.args })
            };
            let mut entry = match call.name.split_once(NAME_SEPARATOR) {
                Some((server, tool)) => json!({
                    "type": "mcp",
                    "server": server,
                    "tool": tool,
                    "arguments": arguments,
                    "result": result,
                    "status": call.status,
                    "progress": progress_of(trace, &call.call_id),
                    "cancelled": call.status == ToolCallStatus::Cancelled,
                    "duration_ms": call.duration_ms,
                }),
                None => json!({
                    "type": "tool_call",
                    "tool_name": call.name,
                    "arguments": arguments,
                    "result": result,
                    "status": call.status,
                    "duration_ms": call.duration_ms,
                }),
            };
            if let Some(approval) = &call.approval {
                entry["approval"] = json!(approval);
            }
            if !cli_output.is_empty() {
                entry["cli_output"] = Value::String(cli_output);
            }
            // A tool call's started event comes after the turn that asked for it (seq > after_seq).
            entries.push((started_seq(&call.call_id).unwrap_or(u64::MAX), 0, entry));
        }
    }
    entries.sort_by_key(|(position, tie, _)| (*position, *tie));
    entries.into_iter().map(|(_, _, entry)| entry).collect()
}

/// A call's progress notifications, in order, with when each arrived.
fn progress_of(trace: &Trace, call_id: &str) -> Vec<Value> {
    trace
        .events
        .iter()
        .filter_map(|event| match &event.kind {
            EventKind::ToolCallUpdate {
                call_id: id,
                progress: Some(progress),
                ..
            } if id == call_id => {
                let mut progress = progress.clone();
                if progress.is_object() {
                    progress["ts"] = json!(event.ts);
                }
                Some(progress)
            }
            _ => None,
        })
        .collect()
}

/// One model turn as the seed's `llm_request`: every message with a string `content`, and a
/// chat-completion `response` (a failed turn gets an empty answer and says why in `annotation`).
fn llm_request(turn: &ModelTurn) -> Value {
    // The request was recorded as sent, in its provider's wire format.
    let conversation: Vec<Value> = crate::providers::conversation(turn.format, &turn.request)
        .unwrap_or_default()
        .into_iter()
        .map(|message| {
            let mut out = json!({
                "role": message.role,
                "content": message.content.unwrap_or_default(),
            });
            if !message.tool_calls.is_empty() {
                out["tool_calls"] = message
                    .tool_calls
                    .iter()
                    .map(|call| json!({"id": call.id, "type": "function", "function": {"name": call.name, "arguments": call.arguments}}))
                    .collect();
            }
            if let Some(id) = message.tool_call_id {
                out["tool_call_id"] = json!(id);
            }
            out
        })
        .collect();
    let mut entry =
        json!({ "type": "llm_request", "model": turn.model, "conversation": conversation });
    match turn.response.get("error") {
        None => entry["response"] = turn.response.clone(),
        Some(error) => {
            entry["response"] = json!({
                "model": turn.model,
                "choices": [{"index": 0, "message": {"role": "assistant", "content": ""}, "finish_reason": "error"}],
            });
            entry["annotation"] = json!(format!(
                "The turn failed: {}",
                error
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or("unknown error")
            ));
        }
    }
    entry
}
