//! The SQLite backend: one file, WAL journal, foreign keys on. Reads go through a read-only pool
//! and never wait for writes (WAL); every write is a job of the one [`Writer`].

mod accounts;
mod shares;
pub mod wal;

use std::{str::FromStr, sync::Arc, time::Duration};

use app::models::{ActiveRun, Conversation, ConversationSummary};
use app::protocol::{Event, Message};
use rusqlite::{params, Connection, OptionalExtension};
use sqlx::{
    sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous},
    Row, SqlitePool,
};

use super::{
    decode_chunk, decode_message, encode_message, events_of_array, one_run_at_a_time, rows,
    sql_int, title_for, trace_status,
    writer::{self, Writer},
    CheckpointChunk, LeftoverRun, NewRun, OwnedFinish, StartedRun, StoredEvents, Trace,
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
        let path = options.get_filename().to_owned();
        let writer = Writer::start(Arc::new(move || {
            let opened =
                open_writer(&path).map_err(|error| sqlx::Error::Configuration(error.into()));
            Box::pin(std::future::ready(opened))
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
        self.write(move |connection| begin_run_in(connection, new))
            .await
    }

    /// Appends checkpoint chunks of many running traces in one write, one row each. A retried
    /// checkpoint starts at the same seq and replaces its row.
    pub async fn append_chunks(&self, chunks: Vec<CheckpointChunk>) -> Result<()> {
        if chunks.is_empty() {
            return Ok(());
        }
        self.write(move |connection| append_chunks_in(connection, chunks))
            .await
    }

    /// Closes a trace: its final status and totals, every event as one JSON array, and the
    /// assistant message as the reducer built it. The checkpoint rows go in the same transaction.
    pub async fn finish_run(&self, owned: OwnedFinish) -> Result<()> {
        self.write(move |connection| finish_run_in(connection, owned))
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

    /// A trace's events with seq > `after` as stored now, and whether it has ended; `None` when
    /// there is no such trace. One read transaction: the status and the rows are one snapshot.
    pub async fn events_after(&self, trace_id: &str, after: u64) -> Result<Option<StoredEvents>> {
        let mut tx = self.pool.begin().await?;
        let Some(row) = sqlx::query("SELECT status, events FROM agent_traces WHERE trace_id = ?")
            .bind(trace_id)
            .fetch_optional(&mut *tx)
            .await?
        else {
            return Ok(None);
        };
        if row.try_get::<String, _>("status")? != "running" {
            let json: Option<String> = row.try_get("events")?;
            let events = events_of_array(json.as_deref().unwrap_or("[]"), after)?;
            return Ok(Some((events, true)));
        }
        let chunks: Vec<String> = sqlx::query_scalar(
            "SELECT events FROM trace_event_chunks WHERE trace_id = ? AND last_seq > ?
             ORDER BY first_seq",
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
        self.write(move |connection| {
            let mut statement = connection.prepare(&sql)?;
            let mut rows = statement.raw_query();
            while rows.next()?.is_some() {}
            Ok(connection.changes())
        })
        .await
    }

    /// Runs `work` on the writer's connection in its next transaction ([`Writer::write`]). On
    /// SQLite the work is synchronous: it runs on the writer's own thread, with no hop.
    pub(super) async fn write<T: Send + 'static>(
        &self,
        work: impl FnOnce(&mut Connection) -> Result<T> + Send + 'static,
    ) -> Result<T> {
        self.writer
            .write(move |connection| Box::pin(std::future::ready(work(connection))))
            .await
    }
}

/// The writer's connection: the same file and settings as the read pool's (WAL, NORMAL sync,
/// foreign keys, a 10 s busy timeout), and the WAL limits of [`wal`]. Its temporary files stay in
/// memory: each job's savepoint keeps a statement journal, which SQLite otherwise spills to a new
/// temporary file past 64 KiB, so a checkpoint of 1,000 runs created, wrote and deleted about nine
/// files, half the writer's `pwrite` calls (docs/benchmarks.md).
fn open_writer(path: &std::path::Path) -> rusqlite::Result<rusqlite::Connection> {
    let connection = rusqlite::Connection::open(path)?;
    connection.busy_timeout(Duration::from_secs(10))?;
    connection.execute_batch(&format!(
        "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON;
         PRAGMA wal_autocheckpoint = {}; PRAGMA journal_size_limit = {};
         PRAGMA temp_store = MEMORY;",
        wal::WRITER_AUTOCHECKPOINT_PAGES,
        wal::JOURNAL_SIZE_LIMIT_BYTES
    ))?;
    Ok(connection)
}

fn update_message(tx: &Connection, message: &Message) -> Result<()> {
    tx.prepare_cached("UPDATE messages SET status = ?, body = ? WHERE id = ?")?
        .execute(params![
            message.status.as_str(),
            encode_message(message)?,
            message.id
        ])?;
    Ok(())
}

fn begin_run_in(tx: &Connection, new: NewRun) -> Result<StartedRun> {
    let (conversation_id, model, history) = match &new.conversation_id {
        Some(id) => {
            let (model, history) = continue_conversation(tx, &new, id)?;
            (id.clone(), model, history)
        }
        None => {
            let model = new
                .model
                .clone()
                .unwrap_or_else(|| new.default_model.clone());
            let id = uuid::Uuid::new_v4().to_string();
            tx.prepare_cached("INSERT INTO conversations (id, owner_id, title, model, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)")?
                .execute(params![
                    id,
                    new.owner_id,
                    title_for(&new.content),
                    model,
                    new.now,
                    new.now
                ])?;
            (id, model, Vec::new())
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
    let mut insert_message = tx.prepare_cached(
        "INSERT INTO messages (id, conversation_id, position, role, status, body, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
    )?;
    for (offset, message) in [&user_message, &assistant].into_iter().enumerate() {
        insert_message.execute(params![
            message.id,
            conversation_id,
            position + offset as i64,
            role_name(message),
            message.status.as_str(),
            encode_message(message)?,
            message.created_at
        ])?;
    }
    tx.prepare_cached(
        "INSERT INTO agent_traces (trace_id, run_id, conversation_id, message_id, user_message_id, model, started_at, status, created_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, 'running', ?)",
    )?
    .execute(params![
        new.trace_id,
        new.run_id,
        conversation_id,
        new.assistant_message_id,
        new.user_message_id,
        model,
        new.now,
        new.now
    ])?;
    Ok(StartedRun {
        conversation_id,
        model,
        history,
        user_message,
    })
}

/// An existing conversation of the user's, with no run going: its model (the request's, when
/// given, is stored) and its messages so far.
fn continue_conversation(
    tx: &Connection,
    new: &NewRun,
    id: &str,
) -> Result<(String, Vec<Message>)> {
    let stored: String = tx
        .prepare_cached("SELECT model FROM conversations WHERE id = ? AND owner_id = ?")?
        .query_row(params![id, new.owner_id], |row| row.get(0))
        .optional()?
        .ok_or(Error::NotFound("conversation"))?;
    let busy = tx
        .prepare_cached(
            "SELECT 1 FROM agent_traces WHERE conversation_id = ? AND status = 'running' LIMIT 1",
        )?
        .exists(params![id])?;
    if busy {
        return Err(one_run_at_a_time());
    }
    let model = new.model.clone().unwrap_or(stored);
    tx.prepare_cached("UPDATE conversations SET model = ?, updated_at = ? WHERE id = ?")?
        .execute(params![model, new.now, id])?;
    let mut statement =
        tx.prepare_cached("SELECT body FROM messages WHERE conversation_id = ? ORDER BY position")?;
    let bodies = statement.query_map(params![id], |row| row.get::<_, String>(0))?;
    let history = bodies
        .map(|body| decode_message(body?))
        .collect::<Result<Vec<_>>>()?;
    Ok((model, history))
}

fn role_name(message: &Message) -> &'static str {
    match message.role {
        app::protocol::Role::User => "user",
        app::protocol::Role::Assistant => "assistant",
    }
}

fn append_chunks_in(tx: &Connection, chunks: Vec<CheckpointChunk>) -> Result<()> {
    // One prepared statement, run per row: on the writer's thread a row costs microseconds.
    let mut insert = tx.prepare_cached(
        "INSERT OR REPLACE INTO trace_event_chunks (trace_id, first_seq, last_seq, events) VALUES (?, ?, ?, ?)",
    )?;
    for chunk in &chunks {
        insert.execute(params![
            chunk.trace_id,
            sql_int(chunk.first_seq),
            sql_int(chunk.last_seq),
            chunk.events_json
        ])?;
    }
    Ok(())
}

fn finish_run_in(tx: &Connection, finished: OwnedFinish) -> Result<()> {
    let message = &finished.message;
    let usage = message.usage;
    tx.prepare_cached(
        "UPDATE agent_traces SET events = ?, status = ?, completed_at = ?, total_tool_calls = ?,
             input_tokens = ?, output_tokens = ?, reasoning_tokens = ?, total_tokens_used = ?,
             total_duration_ms = ?, cancelled_by = ?, cancellation_reason = ?, error_code = ?
         WHERE trace_id = ?",
    )?
    .execute(params![
        finished.events_json,
        trace_status(message.status),
        finished.completed_at,
        message.tool_calls().count() as i64,
        usage.map(|u| sql_int(u.input_tokens)),
        usage.map(|u| sql_int(u.output_tokens)),
        usage.and_then(|u| u.reasoning_tokens).map(sql_int),
        usage.map(|u| sql_int(u.input_tokens.saturating_add(u.output_tokens))),
        sql_int(finished.duration_ms),
        finished.cancelled_by,
        finished.reason,
        finished.error_code,
        finished.trace_id
    ])?;
    tx.prepare_cached("DELETE FROM trace_event_chunks WHERE trace_id = ?")?
        .execute(params![finished.trace_id])?;
    update_message(tx, message)?;
    let mut insert_turn = tx.prepare_cached(
        "INSERT OR REPLACE INTO model_turns (trace_id, turn_index, model, format, after_seq, request, response, started_at, completed_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
    )?;
    for (index, turn) in finished.model_turns.iter().enumerate() {
        insert_turn.execute(params![
            finished.trace_id,
            index as i64,
            turn.model,
            turn.format.as_str(),
            sql_int(turn.after_seq),
            turn.request.to_string(),
            turn.response.to_string(),
            turn.started_at,
            turn.completed_at
        ])?;
    }
    Ok(())
}
