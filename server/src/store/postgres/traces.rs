//! Traces and their model turns, read through the read-only pool.

use app::protocol::Event;

use super::PgStore;
use crate::error::Result;
use crate::store::rows::{ChoiceRow, ChunkRow, ModelTurnRow, TraceRow};
use crate::store::{decode_chunks, decode_events, sql_int, ModelTurn, Trace};

/// The columns of a trace row, times as RFC 3339 text and events as JSON text.
const TRACE_COLUMNS: &str = "t.trace_id, t.run_id, t.conversation_id, t.message_id,
    t.user_message_id, t.model, t.events::text AS events, rfc3339_millis(t.started_at) AS started_at,
    rfc3339_millis(t.completed_at) AS completed_at, t.status, t.total_tool_calls, t.input_tokens,
    t.output_tokens, t.reasoning_tokens, t.cache_read_tokens, t.cache_write_tokens,
    t.total_tokens_used, t.total_duration_ms, t.cancelled_by,
    t.cancellation_reason, t.error_code";

impl PgStore {
    pub async fn get_trace(&self, owner_id: &str, trace_id: &str) -> Result<Option<Trace>> {
        self.trace_where("t.trace_id = $1", owner_id, trace_id)
            .await
    }

    /// The ids of a conversation's traces, oldest first (none for an unknown or foreign one).
    pub async fn trace_ids_of_conversation(
        &self,
        owner_id: &str,
        conversation_id: &str,
    ) -> Result<Vec<String>> {
        let ids = sqlx::query_scalar(
            "SELECT t.trace_id FROM agent_traces t JOIN conversations c ON c.id = t.conversation_id
             JOIN messages m ON m.id = t.message_id AND m.active
             WHERE t.conversation_id = $1 AND c.owner_id = $2 ORDER BY t.started_at, t.created_at",
        )
        .bind(conversation_id)
        .bind(owner_id)
        .fetch_all(&self.pool)
        .await?;
        Ok(ids)
    }

    /// The owner's traces for "Compare with…": those of `conversation_id` first, then the
    /// others, newest first, at most `limit`; or (with `trace_id`) that one trace.
    pub async fn trace_choices(
        &self,
        owner_id: &str,
        conversation_id: &str,
        trace_id: Option<&str>,
        limit: usize,
    ) -> Result<Vec<app::compare::TraceChoice>> {
        let rows: Vec<ChoiceRow> = sqlx::query_as(
            "SELECT t.trace_id, t.conversation_id, c.title, t.model, t.status,
                    rfc3339_millis(t.started_at) AS started_at,
                    m.body::text AS question
             FROM agent_traces t JOIN conversations c ON c.id = t.conversation_id
             LEFT JOIN messages m ON m.id = t.user_message_id
             WHERE c.owner_id = $1 AND ($2::text IS NULL OR t.trace_id = $3)
             ORDER BY t.conversation_id = $4 DESC, t.started_at DESC LIMIT $5",
        )
        .bind(owner_id)
        .bind(trace_id)
        .bind(trace_id)
        .bind(conversation_id)
        .bind(sql_int(limit as u64))
        .fetch_all(&self.pool)
        .await?;
        rows.into_iter().map(ChoiceRow::into_choice).collect()
    }

    pub async fn trace_by_run(&self, owner_id: &str, run_id: &str) -> Result<Option<Trace>> {
        self.trace_where("t.run_id = $1", owner_id, run_id).await
    }

    async fn trace_where(
        &self,
        condition: &str,
        owner_id: &str,
        key: &str,
    ) -> Result<Option<Trace>> {
        let sql = format!(
            "SELECT {TRACE_COLUMNS} FROM agent_traces t JOIN conversations c ON c.id = t.conversation_id
             WHERE {condition} AND c.owner_id = $2"
        );
        let Some(row) = sqlx::query_as::<_, TraceRow>(&sql)
            .bind(key)
            .bind(owner_id)
            .fetch_optional(&self.pool)
            .await?
        else {
            return Ok(None);
        };
        let events = match &row.events {
            Some(json) => decode_events(json)?,
            None => self.checkpointed_events(&row.trace_id).await?,
        };
        row.into_trace(events).map(Some)
    }

    /// The checkpointed events of a running trace, in order; a damaged chunk ends the list.
    pub async fn checkpointed_events(&self, trace_id: &str) -> Result<Vec<Event>> {
        let chunks: Vec<ChunkRow> = sqlx::query_as(
            "SELECT first_seq, events::text AS events FROM trace_event_chunks
             WHERE trace_id = $1 ORDER BY first_seq",
        )
        .bind(trace_id)
        .fetch_all(&self.pool)
        .await?;
        Ok(decode_chunks(trace_id, &chunks))
    }

    pub async fn model_turns(&self, trace_id: &str) -> Result<Vec<ModelTurn>> {
        let rows: Vec<ModelTurnRow> = sqlx::query_as(
            "SELECT model, format, after_seq, request::text AS request, response::text AS response,
                    rfc3339_millis(started_at) AS started_at, rfc3339_millis(completed_at) AS completed_at
             FROM model_turns WHERE trace_id = $1 ORDER BY turn_index",
        )
        .bind(trace_id)
        .fetch_all(&self.pool)
        .await?;
        rows.into_iter().map(ModelTurn::try_from).collect()
    }
}
