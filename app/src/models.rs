//! The shapes the read API and the pages share.

use serde::{Deserialize, Serialize};

use crate::protocol::{Event, Message};

/// One line of the sidebar.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ConversationSummary {
    pub id: String,
    pub title: String,
    pub model: String,
    pub created_at: String,
    pub updated_at: String,
}

/// A conversation with its messages, oldest first.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Conversation {
    #[serde(flatten)]
    pub summary: ConversationSummary,
    pub messages: Vec<Message>,
    /// The run still going in this conversation, if any: a page opened mid-run attaches to it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active_run: Option<ActiveRun>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ActiveRun {
    pub run_id: String,
    pub message_id: String,
}

/// The models a conversation can use (ids only) and the server's default.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelList {
    pub models: Vec<String>,
    pub default: String,
}

/// A stored trace as `GET /api/traces/{trace_id}` returns it: seed 000's columns and every event.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Trace {
    pub trace_id: String,
    pub run_id: String,
    pub conversation_id: String,
    pub message_id: String,
    pub user_message_id: String,
    pub model: String,
    pub status: String,
    pub started_at: String,
    pub completed_at: Option<String>,
    pub total_tool_calls: i64,
    pub input_tokens: Option<i64>,
    pub output_tokens: Option<i64>,
    pub reasoning_tokens: Option<i64>,
    pub total_tokens_used: Option<i64>,
    pub total_duration_ms: Option<i64>,
    pub cancelled_by: Option<String>,
    pub cancellation_reason: Option<String>,
    pub error_code: Option<String>,
    pub events: Vec<Event>,
}

/// When a model turn ran, for the timeline.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelTurnTiming {
    pub model: String,
    pub started_at: String,
    pub completed_at: String,
}
