//! Traces, their events and model turns, read through the read-only pool.

use app::protocol::Event;

use super::SqliteStore;
use crate::error::Result;
use crate::store::rows::{ChoiceRow, ChunkRow, ModelTurnRow, TraceRow};
use crate::store::{
    decode_chunks, decode_events, events_of_array, sql_int, LeftoverRun, ModelTurn, StoredEvents,
    Trace,
};

impl SqliteStore {
    pub async fn get_trace(&self, owner_id: &str, trace_id: &str) -> Result<Option<Trace>> {
        self.trace_where("t.trace_id = ?", owner_id, trace_id).await
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
             WHERE t.conversation_id = ? AND c.owner_id = ? ORDER BY t.started_at, t.created_at",
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
            "SELECT t.trace_id, t.conversation_id, c.title, t.model, t.status, t.started_at,
                    m.body AS question
             FROM agent_traces t JOIN conversations c ON c.id = t.conversation_id
             LEFT JOIN messages m ON m.id = t.user_message_id
             WHERE c.owner_id = ? AND (? IS NULL OR t.trace_id = ?)
             ORDER BY t.conversation_id = ? DESC, t.started_at DESC LIMIT ?",
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
        self.trace_where("t.run_id = ?", owner_id, run_id).await
    }

    async fn trace_where(
        &self,
        condition: &str,
        owner_id: &str,
        key: &str,
    ) -> Result<Option<Trace>> {
        let sql = format!(
            "SELECT t.* FROM agent_traces t JOIN conversations c ON c.id = t.conversation_id
             WHERE {condition} AND c.owner_id = ?"
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

    /// The checkpointed events of a running trace, in order. A damaged chunk ends the list: the
    /// events before it are kept, the rest (which would leave a gap) are dropped and logged.
    pub async fn checkpointed_events(&self, trace_id: &str) -> Result<Vec<Event>> {
        let chunks: Vec<ChunkRow> = sqlx::query_as(
            "SELECT first_seq, events FROM trace_event_chunks
             WHERE trace_key = (SELECT chunk_key FROM agent_traces WHERE trace_id = ?)
             ORDER BY first_seq",
        )
        .bind(trace_id)
        .fetch_all(&self.pool)
        .await?;
        Ok(decode_chunks(trace_id, &chunks))
    }

    /// A trace's events with seq > `after` as stored now, and whether it has ended; `None` when
    /// there is no such trace. One read transaction: the status and the rows are one snapshot.
    pub async fn events_after(&self, trace_id: &str, after: u64) -> Result<Option<StoredEvents>> {
        let mut tx = self.pool.begin().await?;
        let Some((ended, json)) = sqlx::query_as::<_, (bool, Option<String>)>(
            "SELECT status <> 'running', events FROM agent_traces WHERE trace_id = ?",
        )
        .bind(trace_id)
        .fetch_optional(&mut *tx)
        .await?
        else {
            return Ok(None);
        };
        if ended {
            let events = events_of_array(json.as_deref().unwrap_or("[]"), after)?;
            return Ok(Some((events, true)));
        }
        let chunks: Vec<String> = sqlx::query_scalar(
            "SELECT events FROM trace_event_chunks
             WHERE trace_key = (SELECT chunk_key FROM agent_traces WHERE trace_id = ?)
             AND last_seq > ? ORDER BY first_seq",
        )
        .bind(trace_id)
        .bind(sql_int(after))
        .fetch_all(&mut *tx)
        .await?;
        tx.commit().await?;
        let mut events = Vec::new();
        for chunk in &chunks {
            events.extend(events_of_array(chunk, after)?);
        }
        Ok(Some((events, false)))
    }

    /// The traces still marked `running`.
    pub async fn leftover_runs(&self) -> Result<Vec<LeftoverRun>> {
        let runs = sqlx::query_as(
            "SELECT run_id, trace_id, message_id, started_at,
             (SELECT owner_id FROM conversations c WHERE c.id = conversation_id) AS owner_id
             FROM agent_traces WHERE status = 'running'",
        )
        .fetch_all(&self.pool)
        .await?;
        Ok(runs)
    }

    /// The model turns of a trace, in order, for the inspector.
    pub async fn model_turns(&self, trace_id: &str) -> Result<Vec<ModelTurn>> {
        let rows: Vec<ModelTurnRow> = sqlx::query_as(
            "SELECT model, format, after_seq, request, response, started_at, completed_at FROM model_turns WHERE trace_id = ? ORDER BY turn_index",
        )
        .bind(trace_id)
        .fetch_all(&self.pool)
        .await?;
        rows.into_iter().map(ModelTurn::try_from).collect()
    }
}
