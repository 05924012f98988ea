//! The SQLite backend: one file, WAL journal, foreign keys on. Reads go through a read-only pool
//! and never wait for writes (WAL); every write is a job of the one [`Writer`].

mod accounts;
mod shares;
pub mod wal;

use std::{str::FromStr, sync::Arc, time::Duration};

use app::models::{ActiveRun, Conversation, ConversationSummary};
use app::protocol::{Event, Message};
use sqlx::{
    sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous},
    ConnectOptions, Row, SqliteConnection, SqlitePool,
};

use super::{
    decode_chunk, decode_message, encode_message, one_run_at_a_time, rows, sql_int, title_for,
    trace_status,
    writer::{self, Writer},
    CheckpointChunk, LeftoverRun, NewRun, OwnedFinish, StartedRun, Trace,
};
use crate::error::{Error, Result};

#[derive(Clone, Debug)]
pub struct SqliteStore {
    /// Reads only: in WAL mode they never wait for the writer.
    pub(super) pool: SqlitePool,
    pub(super) writer: Writer<writer::Sqlite>,
    /// Stops the WAL checkpoints ([`wal`]).
    wal: tokio_util::sync::CancellationToken,
}

impl SqliteStore {
    /// Opens (creating when missing) the database and brings its schema up to date.
    pub async fn connect(url: &str) -> Result<Self, sqlx::Error> {
        let options = SqliteConnectOptions::from_str(url)?
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Normal)
            .busy_timeout(Duration::from_secs(10))
            .foreign_keys(true);
        {
            let migrations = SqlitePoolOptions::new()
                .max_connections(1)
                .connect_with(options.clone())
                .await?;
            sqlx::migrate!("../migrations").run(&migrations).await?;
            migrations.close().await;
        }
        let write_options = options
            .clone()
            .pragma(
                "wal_autocheckpoint",
                wal::WRITER_AUTOCHECKPOINT_PAGES.to_string(),
            )
            .pragma(
                "journal_size_limit",
                wal::JOURNAL_SIZE_LIMIT_BYTES.to_string(),
            );
        let writer = Writer::start(Arc::new(move || {
            let options = write_options.clone();
            Box::pin(async move { options.connect().await })
        }))
        .await?;
        // Opened read-only: no path but the writer can write.
        let pool = SqlitePoolOptions::new()
            .max_connections(8)
            .connect_with(options.clone().read_only(true))
            .await?;
        let wal = tokio_util::sync::CancellationToken::new();
        wal::spawn(options, wal.clone()).await?;
        Ok(SqliteStore { pool, writer, wal })
    }

    /// Whether the database answers reads.
    pub async fn ping(&self) -> bool {
        sqlx::query("SELECT 1").execute(&self.pool).await.is_ok()
    }

    /// Why writes are failing (a full disk, an I/O error), while they are.
    pub fn write_failure(&self) -> Option<String> {
        self.writer.failure()
    }

    /// Lets queued writes finish, then closes every connection.
    pub async fn close(&self) {
        self.wal.cancel();
        self.writer.close().await;
        self.pool.close().await;
    }

    /// Stores the user's message, creates the conversation when absent, and opens the run's trace
    /// and its assistant message (status `streaming`), all in one write. A conversation with a
    /// run still going refuses another (409): the check and the insert are one transaction.
    pub async fn begin_run(&self, new: NewRun) -> Result<StartedRun> {
        self.writer
            .write(move |connection| Box::pin(async move { begin_run_in(connection, new).await }))
            .await
    }

    /// Appends checkpoint chunks of many running traces in one write, one row each. A retried
    /// checkpoint starts at the same seq and replaces its row.
    pub async fn append_chunks(&self, chunks: Vec<CheckpointChunk>) -> Result<()> {
        if chunks.is_empty() {
            return Ok(());
        }
        self.writer
            .write(move |connection| Box::pin(append_chunks_in(connection, chunks)))
            .await
    }

    /// Closes a trace: its final status and totals, every event as one JSON array, and the
    /// assistant message as the reducer built it. The checkpoint rows go in the same transaction.
    pub async fn finish_run(&self, owned: OwnedFinish) -> Result<()> {
        self.writer
            .write(move |connection| Box::pin(finish_run_in(connection, owned)))
            .await
    }

    /// The model turns of a trace, in order, for the inspector.
    pub async fn model_turns(&self, trace_id: &str) -> Result<Vec<super::ModelTurn>> {
        let rows = sqlx::query(
            "SELECT model, format, after_seq, request, response, started_at, completed_at FROM model_turns WHERE trace_id = ? ORDER BY turn_index",
        )
        .bind(trace_id)
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(rows::model_turn).collect()
    }

    /// The traces still marked `running`.
    pub async fn leftover_runs(&self) -> Result<Vec<LeftoverRun>> {
        let rows = sqlx::query(
            "SELECT run_id, trace_id, message_id, started_at FROM agent_traces WHERE status = 'running'",
        )
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(rows::leftover).collect()
    }

    /// A stored message's body (JSON) and creation time.
    pub async fn stored_message(&self, message_id: &str) -> Result<(String, String)> {
        let stored = sqlx::query("SELECT body, created_at FROM messages WHERE id = ?")
            .bind(message_id)
            .fetch_optional(&self.pool)
            .await?
            .ok_or(Error::NotFound("message"))?;
        Ok((stored.try_get("body")?, stored.try_get("created_at")?))
    }

    /// The checkpointed events of a running trace, in order. A damaged chunk ends the list: the
    /// events before it are kept, the rest (which would leave a gap) are dropped and logged.
    pub async fn checkpointed_events(&self, trace_id: &str) -> Result<Vec<Event>> {
        let rows = sqlx::query(
            "SELECT first_seq, events FROM trace_event_chunks WHERE trace_id = ? ORDER BY first_seq",
        )
        .bind(trace_id)
        .fetch_all(&self.pool)
        .await?;
        let mut events = Vec::new();
        for row in &rows {
            let json: String = row.try_get("events")?;
            match decode_chunk(trace_id, row.try_get("first_seq")?, &json) {
                Some(chunk) => events.extend(chunk),
                None => break,
            }
        }
        Ok(events)
    }

    pub async fn list_conversations(&self, owner_id: &str) -> Result<Vec<ConversationSummary>> {
        let rows = sqlx::query(
            "SELECT id, title, model, created_at, updated_at FROM conversations WHERE owner_id = ?
             ORDER BY updated_at DESC, created_at DESC LIMIT 500",
        )
        .bind(owner_id)
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(rows::summary).collect()
    }

    pub async fn get_conversation(&self, owner_id: &str, id: &str) -> Result<Option<Conversation>> {
        // One read transaction: the messages and the active run come from the same snapshot, so
        // a run that ends between two reads cannot leave an empty "streaming" message unattached.
        let mut tx = self.pool.begin().await?;
        let Some(row) = sqlx::query(
            "SELECT id, title, model, created_at, updated_at FROM conversations WHERE id = ? AND owner_id = ?",
        )
        .bind(id)
        .bind(owner_id)
        .fetch_optional(&mut *tx)
        .await?
        else {
            return Ok(None);
        };
        let summary = rows::summary(&row)?;
        let rows =
            sqlx::query("SELECT body FROM messages WHERE conversation_id = ? ORDER BY position")
                .bind(id)
                .fetch_all(&mut *tx)
                .await?;
        let messages = rows
            .iter()
            .map(|row| decode_message(row.try_get("body")?))
            .collect::<Result<_>>()?;
        let active_run = sqlx::query(
            "SELECT run_id, message_id FROM agent_traces WHERE conversation_id = ? AND status = 'running'
             ORDER BY started_at DESC LIMIT 1",
        )
        .bind(id)
        .fetch_optional(&mut *tx)
        .await?
        .map(|row| -> Result<ActiveRun> {
            Ok(ActiveRun {
                run_id: row.try_get("run_id")?,
                message_id: row.try_get("message_id")?,
            })
        })
        .transpose()?;
        tx.commit().await?;
        Ok(Some(Conversation {
            summary,
            messages,
            active_run,
            earlier: 0,
        }))
    }

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
             WHERE t.conversation_id = ? AND c.owner_id = ? ORDER BY t.started_at, t.created_at",
        )
        .bind(conversation_id)
        .bind(owner_id)
        .fetch_all(&self.pool)
        .await?;
        Ok(ids)
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
        let Some(row) = sqlx::query(&sql)
            .bind(key)
            .bind(owner_id)
            .fetch_optional(&self.pool)
            .await?
        else {
            return Ok(None);
        };
        let trace_id: String = row.try_get("trace_id")?;
        let events: Option<String> = row.try_get("events")?;
        let events = match events {
            Some(json) => serde_json::from_str(&json)
                .map_err(|error| Error::Internal(format!("stored events: {error}")))?,
            None => self.checkpointed_events(&trace_id).await?,
        };
        rows::trace(&row, events).map(Some)
    }

    /// The read-only pool, for tests and tools that read the database directly.
    pub fn pool(&self) -> &SqlitePool {
        &self.pool
    }

    /// Caps the database's size in pages, as a full disk would: for tests of failing writes.
    pub async fn set_max_page_count(&self, pages: u64) -> Result<()> {
        self.execute_as_writer(format!("PRAGMA max_page_count = {pages}"))
            .await
            .map(drop)
    }

    /// Runs one SQL statement through the writer: for tests that change rows on purpose and
    /// for maintenance (`PRAGMA wal_checkpoint`).
    pub async fn execute_as_writer(&self, sql: String) -> Result<u64> {
        self.writer
            .write(move |connection| {
                Box::pin(async move {
                    let done = sqlx::query(&sql).execute(&mut *connection).await?;
                    Ok(done.rows_affected())
                })
            })
            .await
    }
}

async fn update_message(tx: &mut SqliteConnection, message: &Message) -> Result<()> {
    sqlx::query("UPDATE messages SET status = ?, body = ? WHERE id = ?")
        .bind(message.status.as_str())
        .bind(encode_message(message)?)
        .bind(&message.id)
        .execute(&mut *tx)
        .await?;
    Ok(())
}

async fn begin_run_in(tx: &mut SqliteConnection, new: NewRun) -> Result<StartedRun> {
    let (conversation_id, model, history) = match &new.conversation_id {
        Some(id) => {
            let (model, history) = continue_conversation(tx, &new, id).await?;
            (id.clone(), model, history)
        }
        None => {
            let model = new
                .model
                .clone()
                .unwrap_or_else(|| new.default_model.clone());
            (uuid::Uuid::new_v4().to_string(), model, Vec::new())
        }
    };
    let position = history.len() as i64;
    let user_message = Message::user(
        new.user_message_id.clone(),
        new.content.clone(),
        new.now.clone(),
    );
    let mut assistant = Message::assistant(
        new.assistant_message_id.clone(),
        model.clone(),
        new.now.clone(),
    );
    assistant.trace_id = Some(new.trace_id.clone());
    // The rows go in one request to SQLite's thread (several statements, binds in order): each
    // request is a hop between threads, and under a burst of new runs the hops were what the
    // writer spent its time on.
    let new_conversation = new.conversation_id.is_none();
    let sql = if new_conversation {
        const CONVERSATION: &str = "INSERT INTO conversations (id, owner_id, title, model, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?);";
        format!("{CONVERSATION}{BEGIN_RUN_ROWS}")
    } else {
        BEGIN_RUN_ROWS.to_owned()
    };
    let mut query = sqlx::query(&sql);
    if new_conversation {
        query = query
            .bind(&conversation_id)
            .bind(&new.owner_id)
            .bind(title_for(&new.content))
            .bind(&model)
            .bind(&new.now)
            .bind(&new.now);
    }
    for (offset, message) in [&user_message, &assistant].into_iter().enumerate() {
        query = query
            .bind(&message.id)
            .bind(&conversation_id)
            .bind(position + offset as i64)
            .bind(role_name(message))
            .bind(message.status.as_str())
            .bind(encode_message(message)?)
            .bind(&message.created_at);
    }
    query
        .bind(&new.trace_id)
        .bind(&new.run_id)
        .bind(&conversation_id)
        .bind(&new.assistant_message_id)
        .bind(&new.user_message_id)
        .bind(&model)
        .bind(&new.now)
        .bind(&new.now)
        .execute(&mut *tx)
        .await?;
    Ok(StartedRun {
        conversation_id,
        model,
        history,
        user_message,
    })
}

/// The user's and the assistant's messages, and the run's trace: the rows every run start writes.
const BEGIN_RUN_ROWS: &str = "INSERT INTO messages (id, conversation_id, position, role, status, body, created_at) VALUES (?, ?, ?, ?, ?, ?, ?), (?, ?, ?, ?, ?, ?, ?);
     INSERT INTO agent_traces (trace_id, run_id, conversation_id, message_id, user_message_id, model, started_at, status, created_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, 'running', ?)";

/// An existing conversation of the user's, with no run going: its model (the request's, when
/// given, is stored) and its messages so far.
async fn continue_conversation(
    tx: &mut SqliteConnection,
    new: &NewRun,
    id: &str,
) -> Result<(String, Vec<Message>)> {
    let row = sqlx::query("SELECT model FROM conversations WHERE id = ? AND owner_id = ?")
        .bind(id)
        .bind(&new.owner_id)
        .fetch_optional(&mut *tx)
        .await?
        .ok_or(Error::NotFound("conversation"))?;
    let busy = sqlx::query(
        "SELECT 1 FROM agent_traces WHERE conversation_id = ? AND status = 'running' LIMIT 1",
    )
    .bind(id)
    .fetch_optional(&mut *tx)
    .await?;
    if busy.is_some() {
        return Err(one_run_at_a_time());
    }
    let stored: String = row.try_get("model")?;
    let model = new.model.clone().unwrap_or(stored);
    sqlx::query("UPDATE conversations SET model = ?, updated_at = ? WHERE id = ?")
        .bind(&model)
        .bind(&new.now)
        .bind(id)
        .execute(&mut *tx)
        .await?;
    let rows = sqlx::query("SELECT body FROM messages WHERE conversation_id = ? ORDER BY position")
        .bind(id)
        .fetch_all(&mut *tx)
        .await?;
    let history = rows
        .iter()
        .map(|row| decode_message(row.try_get("body")?))
        .collect::<Result<Vec<_>>>()?;
    Ok((model, history))
}

fn role_name(message: &Message) -> &'static str {
    match message.role {
        app::protocol::Role::User => "user",
        app::protocol::Role::Assistant => "assistant",
    }
}

async fn append_chunks_in(tx: &mut SqliteConnection, chunks: Vec<CheckpointChunk>) -> Result<()> {
    // A few hundred rows per statement keeps far below SQLite's bound-parameter limit.
    for rows in chunks.chunks(200) {
        let mut builder = sqlx::QueryBuilder::new(
            "INSERT OR REPLACE INTO trace_event_chunks (trace_id, first_seq, last_seq, events) ",
        );
        builder.push_values(rows, |mut row, chunk| {
            row.push_bind(chunk.trace_id.as_str())
                .push_bind(chunk.first_seq as i64)
                .push_bind(chunk.last_seq as i64)
                .push_bind(chunk.events_json.as_str());
        });
        builder.build().execute(&mut *tx).await?;
    }
    Ok(())
}

async fn finish_run_in(tx: &mut SqliteConnection, finished: OwnedFinish) -> Result<()> {
    let message = &finished.message;
    let usage = message.usage;
    sqlx::query(
        "UPDATE agent_traces SET events = ?, status = ?, completed_at = ?, total_tool_calls = ?,
             input_tokens = ?, output_tokens = ?, reasoning_tokens = ?, total_tokens_used = ?,
             total_duration_ms = ?, cancelled_by = ?, cancellation_reason = ?, error_code = ?
         WHERE trace_id = ?",
    )
    .bind(&finished.events_json)
    .bind(trace_status(message.status))
    .bind(&finished.completed_at)
    .bind(message.tool_calls().count() as i64)
    .bind(usage.map(|u| sql_int(u.input_tokens)))
    .bind(usage.map(|u| sql_int(u.output_tokens)))
    .bind(usage.and_then(|u| u.reasoning_tokens).map(sql_int))
    .bind(usage.map(|u| sql_int(u.input_tokens.saturating_add(u.output_tokens))))
    .bind(sql_int(finished.duration_ms))
    .bind(finished.cancelled_by)
    .bind(finished.reason.as_deref())
    .bind(finished.error_code.as_deref())
    .bind(&finished.trace_id)
    .execute(&mut *tx)
    .await?;
    sqlx::query("DELETE FROM trace_event_chunks WHERE trace_id = ?")
        .bind(&finished.trace_id)
        .execute(&mut *tx)
        .await?;
    update_message(&mut *tx, message).await?;
    for (index, turn) in finished.model_turns.iter().enumerate() {
        sqlx::query(
            "INSERT OR REPLACE INTO model_turns (trace_id, turn_index, model, format, after_seq, request, response, started_at, completed_at)
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        )
        .bind(&finished.trace_id)
        .bind(index as i64)
        .bind(&turn.model)
        .bind(turn.format.as_str())
        .bind(sql_int(turn.after_seq))
        .bind(turn.request.to_string())
        .bind(turn.response.to_string())
        .bind(&turn.started_at)
        .bind(&turn.completed_at)
        .execute(&mut *tx)
        .await?;
    }
    Ok(())
}
