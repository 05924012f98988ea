//! Rows to values, once for both databases: each backend selects the same column names (times
//! as RFC 3339 text, JSON as text), and these read them from a SQLite or a PostgreSQL row.

use app::models::ConversationSummary;
use app::protocol::{CancelledBy, ErrorCode, Event, TraceStatus};
use sqlx::{ColumnIndex, Decode, Row, Type};

use super::{LeftoverRun, ModelTurn, StoredUser, Trace, TraceShare};
use crate::error::{Error, Result};

/// A row whose columns decode as text and as 64-bit integers (SQLite's and PostgreSQL's rows).
pub(super) trait StoreRow: Row {
    fn text(&self, column: &str) -> Result<String>;
    fn maybe_text(&self, column: &str) -> Result<Option<String>>;
    fn int(&self, column: &str) -> Result<i64>;
    fn maybe_int(&self, column: &str) -> Result<Option<i64>>;
}

impl<R> StoreRow for R
where
    R: Row,
    for<'c> &'c str: ColumnIndex<R>,
    for<'r> String: Decode<'r, R::Database> + Type<R::Database>,
    for<'r> i64: Decode<'r, R::Database> + Type<R::Database>,
{
    fn text(&self, column: &str) -> Result<String> {
        Ok(self.try_get(column)?)
    }
    fn maybe_text(&self, column: &str) -> Result<Option<String>> {
        Ok(self.try_get(column)?)
    }
    fn int(&self, column: &str) -> Result<i64> {
        Ok(self.try_get(column)?)
    }
    fn maybe_int(&self, column: &str) -> Result<Option<i64>> {
        Ok(self.try_get(column)?)
    }
}

/// A trace row (every column of `agent_traces` but `events`) with its events.
pub(super) fn trace(row: &impl StoreRow, events: Vec<Event>) -> Result<Trace> {
    Ok(Trace {
        trace_id: row.text("trace_id")?,
        run_id: row.text("run_id")?,
        conversation_id: row.text("conversation_id")?,
        message_id: row.text("message_id")?,
        user_message_id: row.text("user_message_id")?,
        model: row.text("model")?,
        status: trace_status(&row.text("status")?)?,
        started_at: row.text("started_at")?,
        completed_at: row.maybe_text("completed_at")?,
        total_tool_calls: row.int("total_tool_calls")?,
        input_tokens: row.maybe_int("input_tokens")?,
        output_tokens: row.maybe_int("output_tokens")?,
        reasoning_tokens: row.maybe_int("reasoning_tokens")?,
        total_tokens_used: row.maybe_int("total_tokens_used")?,
        total_duration_ms: row.maybe_int("total_duration_ms")?,
        cancelled_by: row
            .maybe_text("cancelled_by")?
            .map(|by| cancelled_by(&by))
            .transpose()?,
        cancellation_reason: row.maybe_text("cancellation_reason")?,
        error_code: row.maybe_text("error_code")?.map(ErrorCode::from),
        events,
    })
}

/// A stored status that no version of Glassbox wrote reads as a damaged row, not a guess.
fn trace_status(text: &str) -> Result<TraceStatus> {
    TraceStatus::parse(text)
        .ok_or_else(|| Error::Internal(format!("a trace row has an unknown status {text:?}")))
}

fn cancelled_by(text: &str) -> Result<CancelledBy> {
    match text {
        "user" => Ok(CancelledBy::User),
        "timeout" => Ok(CancelledBy::Timeout),
        "shutdown" => Ok(CancelledBy::Shutdown),
        _ => Err(Error::Internal(format!(
            "a trace row has an unknown cancelled_by {text:?}"
        ))),
    }
}

pub(super) fn summary(row: &impl StoreRow) -> Result<ConversationSummary> {
    Ok(ConversationSummary {
        id: row.text("id")?,
        title: row.text("title")?,
        model: row.text("model")?,
        created_at: row.text("created_at")?,
        updated_at: row.text("updated_at")?,
    })
}

pub(super) fn model_turn(row: &impl StoreRow) -> Result<ModelTurn> {
    let parse = |column: &str| -> Result<serde_json::Value> {
        serde_json::from_str(&row.text(column)?)
            .map_err(|error| Error::Internal(format!("stored model turn: {error}")))
    };
    Ok(ModelTurn {
        model: row.text("model")?,
        format: crate::records::ProviderKind::parse(&row.text("format")?),
        after_seq: row.int("after_seq")?.max(0) as u64,
        request: parse("request")?,
        response: parse("response")?,
        started_at: row.text("started_at")?,
        completed_at: row.text("completed_at")?,
    })
}

pub(super) fn leftover(row: &impl StoreRow) -> Result<LeftoverRun> {
    Ok(LeftoverRun {
        run_id: row.text("run_id")?,
        trace_id: row.text("trace_id")?,
        message_id: row.text("message_id")?,
        started_at: row.text("started_at")?,
    })
}

pub(super) fn user(row: &impl StoreRow) -> Result<StoredUser> {
    Ok(StoredUser {
        user_id: row.text("user_id")?,
        name: row.text("name")?,
        password_hash: row.text("password_hash")?,
    })
}

pub(super) fn share(row: &impl StoreRow) -> Result<TraceShare> {
    Ok(TraceShare {
        token: row.text("token")?,
        trace_id: row.text("trace_id")?,
        owner_id: row.text("owner_id")?,
        created_at: row.text("created_at")?,
        include_history: row.int("include_history")? != 0,
    })
}
