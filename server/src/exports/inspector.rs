//! The Agent Inspector list: `llm_request` entries (the conversation as sent and the response, in
//! OpenAI chat format), `tool_call` entries and `mcp` entries (a call to an MCP server's tool,
//! with its progress notifications), in the order they happened. A call that waited for a person
//! carries its `approval`. The reader's feedback (issue 36) is a `feedback` object: the answer's
//! (rating and comment) on the last `llm_request`, a tool call's note on its entry.

use app::models::{
    answer_feedback, step_note, InspectorEntry, InspectorFeedback, InspectorFunction,
    InspectorFunctionCall, InspectorMessage, LlmRequestEntry, McpEntry, ToolCallEntry,
};
use app::protocol::{fold, EventKind, ToolCallSegment, ToolCallStatus};
use serde_json::{json, Value};

use crate::{
    providers::ChatMessage,
    store::{ModelTurn, Trace},
    tools::mcp::NAME_SEPARATOR,
};

pub fn inspector(trace: &Trace, turns: &[ModelTurn]) -> Vec<InspectorEntry> {
    // (position in the event log, entry): a turn sits after the last event before its request;
    // a tool call at its `tool_call_started` event. The log's order is the order things happened.
    let mut entries: Vec<(u64, u8, InspectorEntry)> = Vec::new();
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
            // A tool call's started event comes after the turn that asked for it (seq > after_seq).
            let position = started_seq(&call.call_id).unwrap_or(u64::MAX);
            entries.push((position, 0, tool_entry(trace, call)));
        }
    }
    entries.sort_by_key(|(position, tie, _)| (*position, *tie));
    let mut entries: Vec<InspectorEntry> = entries.into_iter().map(|(_, _, entry)| entry).collect();
    // The answer's feedback goes on the turn that wrote it: the last.
    let answer = answer_feedback(&trace.feedback, &trace.message_id);
    let last_turn = entries.iter_mut().rev().find_map(|entry| match entry {
        InspectorEntry::LlmRequest(turn) => Some(turn),
        _ => None,
    });
    if let Some(turn) = last_turn {
        turn.feedback = answer.map(InspectorFeedback::from);
    }
    entries
}

/// A tool call's entry: `mcp` for a tool of an MCP server, else `tool_call`.
fn tool_entry(trace: &Trace, call: &ToolCallSegment) -> InspectorEntry {
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
    let cli_output = (!cli_output.is_empty()).then_some(cli_output);
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
    let approval = call.approval.as_deref().cloned();
    let feedback =
        step_note(&trace.feedback, &trace.message_id, &call.call_id).map(InspectorFeedback::from);
    match call.name.split_once(NAME_SEPARATOR) {
        Some((server, tool)) => InspectorEntry::Mcp(McpEntry {
            approval,
            arguments,
            cancelled: call.status == ToolCallStatus::Cancelled,
            cli_output,
            duration_ms: call.duration_ms,
            feedback,
            progress: progress_of(trace, &call.call_id),
            result,
            server: server.to_owned(),
            status: call.status,
            tool: tool.to_owned(),
            r#type: Default::default(),
        }),
        None => InspectorEntry::ToolCall(ToolCallEntry {
            approval,
            arguments,
            cli_output,
            duration_ms: call.duration_ms,
            feedback,
            result,
            status: call.status,
            tool_name: call.name.clone(),
            r#type: Default::default(),
        }),
    }
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
fn llm_request(turn: &ModelTurn) -> InspectorEntry {
    // The request was recorded as sent, in its provider's wire format.
    let conversation = crate::providers::conversation(turn.format, &turn.request)
        .unwrap_or_default()
        .into_iter()
        .map(message_of)
        .collect();
    let (response, annotation) = match turn.response.get("error") {
        None => (turn.response.clone(), None),
        Some(error) => {
            let response = json!({
                "model": turn.model,
                "choices": [{"index": 0, "message": {"role": "assistant", "content": ""}, "finish_reason": "error"}],
            });
            let why = error
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("unknown error");
            (response, Some(format!("The turn failed: {why}")))
        }
    };
    InspectorEntry::LlmRequest(LlmRequestEntry {
        annotation,
        conversation,
        feedback: None,
        model: turn.model.clone(),
        response,
        r#type: Default::default(),
    })
}

/// A message of a request, in OpenAI chat format.
fn message_of(message: ChatMessage) -> InspectorMessage {
    InspectorMessage {
        content: message.content.unwrap_or_default(),
        role: message.role,
        tool_call_id: message.tool_call_id,
        tool_calls: message
            .tool_calls
            .into_iter()
            .map(|call| InspectorFunctionCall {
                function: InspectorFunction {
                    arguments: call.arguments,
                    name: call.name,
                },
                id: call.id,
                r#type: Default::default(),
            })
            .collect(),
    }
}
