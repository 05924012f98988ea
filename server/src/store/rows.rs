//! Rows as both databases return them, read with `sqlx::FromRow`, and turned into values once.
//! Each backend selects the same column names with the same types: times as RFC 3339 text (in
//! PostgreSQL `rfc3339_millis(...)` of a TIMESTAMPTZ; in SQLite the TEXT as stored), JSON as text
//! (in PostgreSQL `::text` of a JSONB; in SQLite the TEXT as stored), counts as 64-bit integers. A
//! row decodes the same way from either, and what its text means (a status, JSON) is read here,
//! where a damaged value becomes a clear error.

use app::models::{ActiveRun, ConversationSummary};
use app::protocol::{CancelledBy, ErrorCode, Event, TraceStatus};

use super::{ModelTurn, Trace};
use crate::error::{Error, Result};

/// A row of `agent_traces`. `status` and `cancelled_by` stay TEXT in the database and become
/// their enums in [`TraceRow::into_trace`], the one place that reads them.
#[derive(sqlx::FromRow)]
pub(super) struct TraceRow {
    pub trace_id: String,
    run_id: String,
    conversation_id: String,
    message_id: String,
    user_message_id: String,
    model: String,
    status: String,
    started_at: String,
    completed_at: Option<String>,
    total_tool_calls: i64,
    input_tokens: Option<i64>,
    output_tokens: Option<i64>,
    reasoning_tokens: Option<i64>,
    cache_read_tokens: Option<i64>,
    cache_write_tokens: Option<i64>,
    total_tokens_used: Option<i64>,
    total_duration_ms: Option<i64>,
    cancelled_by: Option<String>,
    cancellation_reason: Option<String>,
    error_code: Option<String>,
    /// Every event as a JSON array once the trace has closed; `None` while it runs.
    pub events: Option<String>,
}

impl TraceRow {
    /// The trace with its events (the closed array's, or the checkpoints' while it runs).
    pub(super) fn into_trace(self, events: Vec<Event>) -> Result<Trace> {
        Ok(Trace {
            status: trace_status(&self.status)?,
            cancelled_by: self.cancelled_by.as_deref().map(cancelled_by).transpose()?,
            error_code: self.error_code.map(ErrorCode::from),
            trace_id: self.trace_id,
            run_id: self.run_id,
            conversation_id: self.conversation_id,
            message_id: self.message_id,
            user_message_id: self.user_message_id,
            model: self.model,
            started_at: self.started_at,
            completed_at: self.completed_at,
            total_tool_calls: self.total_tool_calls,
            input_tokens: self.input_tokens,
            output_tokens: self.output_tokens,
            reasoning_tokens: self.reasoning_tokens,
            cache_read_tokens: self.cache_read_tokens,
            cache_write_tokens: self.cache_write_tokens,
            total_tokens_used: self.total_tokens_used,
            total_duration_ms: self.total_duration_ms,
            cancellation_reason: self.cancellation_reason,
            events,
            feedback: Vec::new(),
        })
    }
}

/// A stored status that no version of Glassbox wrote reads as a damaged row, not a guess.
fn trace_status(text: &str) -> Result<TraceStatus> {
    TraceStatus::parse(text)
        .ok_or_else(|| Error::Internal(format!("a trace row has an unknown status {text:?}")))
}

fn cancelled_by(text: &str) -> Result<CancelledBy> {
    match CancelledBy::parse(text) {
        Some(by) => Ok(by),
        None => Err(Error::Internal(format!(
            "a trace row has an unknown cancelled_by {text:?}"
        ))),
    }
}

/// A row of `conversations` (the app's `ConversationSummary` knows nothing of sqlx).
#[derive(sqlx::FromRow)]
pub(super) struct SummaryRow {
    id: String,
    title: String,
    model: String,
    created_at: String,
    updated_at: String,
    archived: bool,
}

impl From<SummaryRow> for ConversationSummary {
    fn from(row: SummaryRow) -> Self {
        ConversationSummary {
            id: row.id,
            title: row.title,
            model: row.model,
            created_at: row.created_at,
            updated_at: row.updated_at,
            archived: row.archived,
        }
    }
}

/// The run going in a conversation.
#[derive(sqlx::FromRow)]
pub(super) struct ActiveRunRow {
    run_id: String,
    message_id: String,
}

impl From<ActiveRunRow> for ActiveRun {
    fn from(row: ActiveRunRow) -> Self {
        ActiveRun {
            run_id: row.run_id,
            message_id: row.message_id,
        }
    }
}

/// A row of `model_turns`: the request and the response are JSON text.
#[derive(sqlx::FromRow)]
pub(super) struct ModelTurnRow {
    model: String,
    format: String,
    after_seq: i64,
    request: String,
    response: String,
    started_at: String,
    completed_at: String,
}

impl TryFrom<ModelTurnRow> for ModelTurn {
    type Error = Error;

    fn try_from(row: ModelTurnRow) -> Result<Self> {
        let parse = |json: &str| -> Result<serde_json::Value> {
            serde_json::from_str(json)
                .map_err(|error| Error::Internal(format!("stored model turn: {error}")))
        };
        Ok(ModelTurn {
            format: crate::records::ProviderKind::parse(&row.format),
            after_seq: row.after_seq.max(0) as u64,
            request: parse(&row.request)?,
            response: parse(&row.response)?,
            model: row.model,
            started_at: row.started_at,
            completed_at: row.completed_at,
        })
    }
}

/// A checkpoint row: the events `first_seq ..` as a JSON array.
#[derive(sqlx::FromRow)]
pub(super) struct ChunkRow {
    pub first_seq: i64,
    pub events: String,
}

/// A trace with its conversation's title and its question's message, for choosing what to
/// compare (`question` is the user message's JSON text, `None` when it is gone).
#[derive(sqlx::FromRow)]
pub(super) struct ChoiceRow {
    trace_id: String,
    conversation_id: String,
    title: String,
    model: String,
    status: String,
    started_at: String,
    question: Option<String>,
}

impl ChoiceRow {
    pub(super) fn into_choice(self) -> Result<app::compare::TraceChoice> {
        let question = match self.question {
            Some(body) => super::decode_message(body)?.text(),
            None => String::new(),
        };
        Ok(app::compare::TraceChoice {
            status: trace_status(&self.status)?,
            trace_id: self.trace_id,
            conversation_id: self.conversation_id,
            conversation_title: self.title,
            question,
            model: self.model,
            started_at: self.started_at,
        })
    }
}
