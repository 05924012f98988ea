//! The events of one run, as they travel on the wire (one SSE frame each) and as they are stored.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::codes::{ErrorCode, ResolvedBy};
use super::message::{Message, Usage};
use super::records::{ApprovalDecision, ToolError};

/// One event of one run. `seq` counts 1, 2, 3 ... per run with no gaps; `ts` is RFC 3339 UTC with
/// milliseconds. The payload's `type` tag sits beside these fields in the same JSON object. Its
/// `Deserialize` is written by hand (`wire.rs`), for the browser's bundle.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Event {
    pub seq: u64,
    pub run_id: String,
    pub ts: String,
    #[serde(flatten)]
    pub kind: EventKind,
}

/// Read as part of an [`Event`] only (`wire.rs`); the derived `Deserialize` is the tests'
/// reference for that one.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[cfg_attr(test, derive(Deserialize))]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum EventKind {
    MessageStarted {
        conversation_id: String,
        user_message_id: String,
        message_id: String,
        trace_id: String,
        model: String,
    },
    ReasoningPartStarted {
        segment_id: String,
        summary_index: u32,
        sequence_number: u32,
    },
    ReasoningPartDelta {
        segment_id: String,
        summary_index: u32,
        text_delta: String,
    },
    ReasoningPartCompleted {
        segment_id: String,
        summary_index: u32,
        /// The part's whole text; left out when it would make the event larger than the event
        /// cap (the deltas have carried it all).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        final_text: Option<String>,
    },
    ToolCallStarted {
        call_id: String,
        name: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        display: Option<String>,
        args: Value,
        sequence_number: u32,
    },
    ToolCallUpdate {
        call_id: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        output_delta: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        progress: Option<Value>,
        /// The arguments' JSON text so far (redacted as a whole), while an agent that streams
        /// them writes them (an AG-UI agent's `TOOL_CALL_ARGS`); it replaces the previous one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        args_text: Option<String>,
        /// The whole arguments once streamed: they replace `tool_call_started`'s (empty) ones.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        args: Option<Value>,
    },
    /// The call waits for a person to approve or deny it (its tool's policy is `ask`).
    ToolApprovalRequested {
        call_id: String,
        name: String,
        /// The arguments as the person will see them (sanitized like `tool_call_started`'s).
        args: Value,
    },
    /// The first answer to a request: who gave it and why. The event's `ts` says when.
    ToolApprovalResolved {
        call_id: String,
        decision: ApprovalDecision,
        /// The user who answered, or `timeout` when the approval timeout denied the call.
        by: ResolvedBy,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    ToolResult {
        call_id: String,
        status: ToolResultStatus,
        duration_ms: u64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        output: Option<String>,
        #[serde(default)]
        truncated: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        full_length: Option<u64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<ToolError>,
    },
    TextDelta {
        segment_id: String,
        /// Present on a text segment's first delta only.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        sequence_number: Option<u32>,
        delta: String,
    },
    /// One model turn's token counts; a message's usage is the sum of its runs' usage events.
    Usage(Usage),
    /// The model's request failed before anything streamed (`reason`: `rate_limited`,
    /// `overloaded`, `provider_unavailable`, `connection_failed`) and is sent again, for the
    /// `attempt`th time, after `delay_ms` (the provider's `Retry-After` when it gave one). Shown
    /// while the run waits; the next content clears it.
    Retrying {
        attempt: u32,
        delay_ms: u64,
        reason: ErrorCode,
    },
    /// Data the agent needs to continue from a segment in a later request (an AG-UI agent's
    /// encrypted reasoning): kept in the message under `key` (a segment's id, a call's id, or
    /// `<segment>:<part>` and `<call>:result`), opaque, never shown, never redacted.
    AgentState {
        key: String,
        state: Value,
    },
    MessageFinal {
        message: Message,
        trace_id: String,
    },
    MessageCancelled {
        reason: String,
        cancelled_by: CancelledBy,
        message: Message,
    },
    MessageError {
        code: ErrorCode,
        error: String,
        message: Message,
    },
}

impl EventKind {
    /// The `type` tag as it appears on the wire.
    pub fn type_name(&self) -> &'static str {
        match self {
            EventKind::MessageStarted { .. } => "message_started",
            EventKind::ReasoningPartStarted { .. } => "reasoning_part_started",
            EventKind::ReasoningPartDelta { .. } => "reasoning_part_delta",
            EventKind::ReasoningPartCompleted { .. } => "reasoning_part_completed",
            EventKind::ToolCallStarted { .. } => "tool_call_started",
            EventKind::ToolCallUpdate { .. } => "tool_call_update",
            EventKind::ToolApprovalRequested { .. } => "tool_approval_requested",
            EventKind::ToolApprovalResolved { .. } => "tool_approval_resolved",
            EventKind::ToolResult { .. } => "tool_result",
            EventKind::TextDelta { .. } => "text_delta",
            EventKind::Usage(_) => "usage",
            EventKind::Retrying { .. } => "retrying",
            EventKind::AgentState { .. } => "agent_state",
            EventKind::MessageFinal { .. } => "message_final",
            EventKind::MessageCancelled { .. } => "message_cancelled",
            EventKind::MessageError { .. } => "message_error",
        }
    }

    /// Whether this event ends its run; every run has exactly one.
    pub fn is_terminal(&self) -> bool {
        matches!(
            self,
            EventKind::MessageFinal { .. }
                | EventKind::MessageCancelled { .. }
                | EventKind::MessageError { .. }
        )
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolResultStatus {
    Success,
    Error,
    Cancelled,
    /// A person (or the approval timeout, or the tool's `deny` policy) refused the call.
    Denied,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CancelledBy {
    User,
    Timeout,
    Shutdown,
}

impl CancelledBy {
    pub fn as_str(self) -> &'static str {
        match self {
            CancelledBy::User => "user",
            CancelledBy::Timeout => "timeout",
            CancelledBy::Shutdown => "shutdown",
        }
    }

    /// The value of its string form; `None` for any other string.
    pub fn parse(text: &str) -> Option<CancelledBy> {
        [
            CancelledBy::User,
            CancelledBy::Timeout,
            CancelledBy::Shutdown,
        ]
        .into_iter()
        .find(|by| by.as_str() == text)
    }
}
