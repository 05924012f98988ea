//! The PostgreSQL backend (`--database-url postgres://…`): the store and, for several instances,
//! the bus. Reads go through a pool whose transactions are read-only; every write is a job of the
//! instance's one [`Writer`], which commits what is queued in one transaction, as with SQLite.
//! Events, message bodies and model turns are JSONB; times are TIMESTAMPTZ, read back as the
//! API's RFC 3339 text by the schema's `rfc3339_millis()`.

mod accounts;

use std::{borrow::Cow, str::FromStr, sync::Arc};

use app::models::{ActiveRun, Conversation, ConversationSummary};
use app::protocol::{Event, Message};
use sqlx::{
    postgres::{PgConnectOptions, PgPoolOptions},
    ConnectOptions, PgConnection, PgPool, Row,
};

use super::{
    after_seq, decode_chunk, decode_message, encode_message, events_of_array, one_run_at_a_time,
    rows, sql_int, title_for, trace_status,
    writer::{self, Writer},
    CheckpointChunk, LeftoverRun, ModelTurn, NewRun, OwnedFinish, StartedRun, Trace,
};
use crate::error::{Error, Result};

#[derive(Clone, Debug)]
pub struct PgStore {
    /// Reads only: its sessions default to read-only transactions.
    pub(super) pool: PgPool,
    pub(super) writer: Writer<writer::Postgres>,
    /// How the bus's listener connects (not read-only).
    options: Arc<PgConnectOptions>,
    /// This instance's name (`instances`, `agent_traces.instance_id`).
    instance_id: Arc<str>,
}

/// An instance refreshes its lease this often...
pub const HEARTBEAT_INTERVAL: std::time::Duration = std::time::Duration::from_secs(2);
/// ...and one whose lease is this old (seconds) is taken for dead.
const LEASE_SECS: i64 = 6;
/// An instance whose lease ran out this long ago is deleted from `instances`.
pub const FORGET_INSTANCES_AFTER_SECS: i64 = 3600;

/// Some events of one trace: its id, and `(seq, JSON)` of each.
pub type TraceEvents = (String, Vec<(u64, Arc<str>)>);

/// The columns of a trace row, times as RFC 3339 text and events as JSON text.
const TRACE_COLUMNS: &str = "t.trace_id, t.run_id, t.conversation_id, t.message_id,
    t.user_message_id, t.model, t.events::text AS events, rfc3339_millis(t.started_at) AS started_at,
    rfc3339_millis(t.completed_at) AS completed_at, t.status, t.total_tool_calls, t.input_tokens,
    t.output_tokens, t.reasoning_tokens, t.total_tokens_used, t.total_duration_ms, t.cancelled_by,
    t.cancellation_reason, t.error_code";

impl PgStore {
    /// Connects as `instance_id`, brings the schema up to date (`migrations/postgres/`) and, for an
    /// instance that runs runs (`lease`), takes its lease. Tools and tests take none, so they leave
    /// no row in `instances`.
    pub async fn connect(url: &str, instance_id: &str, lease: bool) -> Result<Self, sqlx::Error> {
        let options = PgConnectOptions::from_str(url)?;
        {
            let mut migrations = options.connect().await?;
            sqlx::migrate!("../migrations/postgres")
                .run(&mut migrations)
                .await?;
        }
        let write_options = options.clone();
        let writer = Writer::start(Arc::new(move || {
            let options = write_options.clone();
            Box::pin(async move { options.connect().await })
        }))
        .await?;
        let pool = PgPoolOptions::new()
            .max_connections(8)
            .connect_with(
                options
                    .clone()
                    .options([("default_transaction_read_only", "on")]),
            )
            .await?;
        let store = PgStore {
            pool,
            writer,
            options: Arc::new(options),
            instance_id: Arc::from(instance_id),
        };
        if !lease {
            return Ok(store);
        }
        store.heartbeat().await.map_err(|error| match error {
            Error::Database(error) => error,
            other => sqlx::Error::Protocol(other.to_string()),
        })?;
        Ok(store)
    }

    pub fn listener_options(&self) -> &PgConnectOptions {
        &self.options
    }

    /// Refreshes this instance's lease (taking it at start), and forgets instances whose lease
    /// ran out [`FORGET_INSTANCES_AFTER_SECS`] ago: their runs were ended long since (a trace
    /// whose instance has no row counts as orphaned all the same), so the table keeps only
    /// instances that live or died recently.
    pub async fn heartbeat(&self) -> Result<()> {
        let instance_id = self.instance_id.to_string();
        self.writer
            .write(move |connection| {
                Box::pin(async move {
                    sqlx::query(
                        "INSERT INTO instances (instance_id) VALUES ($1)
                         ON CONFLICT (instance_id) DO UPDATE SET heartbeat_at = now()",
                    )
                    .bind(&instance_id)
                    .execute(&mut *connection)
                    .await?;
                    sqlx::query(
                        "DELETE FROM instances WHERE heartbeat_at < now() - make_interval(secs => $1)",
                    )
                    .bind(FORGET_INSTANCES_AFTER_SECS as f64)
                    .execute(&mut *connection)
                    .await?;
                    Ok(())
                })
            })
            .await
    }

    /// Asks the instance running `run_id` to cancel it (`glassbox_cancel`, see `bus`).
    pub async fn notify_cancel(&self, payload: String) -> Result<()> {
        self.writer
            .write(move |connection| {
                Box::pin(async move {
                    sqlx::query("SELECT pg_notify('glassbox_cancel', $1)")
                        .bind(pg_text(&payload).as_ref())
                        .execute(&mut *connection)
                        .await?;
                    Ok(())
                })
            })
            .await
    }

    /// For each `(trace_id, after)`, its checkpointed events with seq > `after`, in one query.
    pub async fn chunks_after(&self, wanted: &[(String, u64)]) -> Result<Vec<TraceEvents>> {
        let (traces, afters): (Vec<&str>, Vec<i64>) = wanted
            .iter()
            .map(|(trace, after)| (trace.as_str(), sql_int(*after)))
            .unzip();
        // One index range scan of (trace_id, last_seq) per trace: 2.4 ms for 500 traces. As a
        // join, the planner (which guesses 10 rows for the arrays) hashed them against a
        // sequential scan of every chunk of every running trace: 160-220 ms at 1,000 runs, and
        // growing as they ran. `OFFSET 0` keeps it from flattening the LATERAL subquery back
        // into that join.
        let rows = sqlx::query(
            "SELECT x.t AS trace_id, x.s AS after, c.events::text AS events
             FROM unnest($1::text[], $2::bigint[]) AS x(t, s)
             CROSS JOIN LATERAL (
                 SELECT first_seq, events FROM trace_event_chunks
                 WHERE trace_id = x.t AND last_seq > x.s
                 OFFSET 0
             ) c
             ORDER BY x.t, c.first_seq",
        )
        .bind(traces)
        .bind(afters)
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|row| {
                let after: i64 = row.try_get("after")?;
                let events = events_of_array(&row.try_get::<String, _>("events")?, after as u64)?;
                Ok((row.try_get("trace_id")?, events))
            })
            .collect()
    }

    /// A trace's events with seq > `after` (JSON each) as stored now, and whether it has ended.
    /// `None` when there is no such trace.
    pub async fn events_after(
        &self,
        trace_id: &str,
        after: u64,
    ) -> Result<Option<(Vec<(u64, Arc<str>)>, bool)>> {
        // One round trip: the closed trace's events, or the checkpoints after `after`.
        let Some(row) = sqlx::query(
            "SELECT t.status,
                    CASE WHEN t.status <> 'running' THEN t.events::text END AS events,
                    (SELECT json_agg(c.events ORDER BY c.first_seq)::text FROM trace_event_chunks c
                     WHERE c.trace_id = t.trace_id AND c.last_seq > $2) AS chunks
             FROM agent_traces t WHERE t.trace_id = $1",
        )
        .bind(trace_id)
        .bind(sql_int(after))
        .fetch_optional(&self.pool)
        .await?
        else {
            return Ok(None);
        };
        if let Some(json) = row.try_get::<Option<String>, _>("events")? {
            return Ok(Some((events_of_array(&json, after)?, true)));
        }
        let mut events = Vec::new();
        if let Some(chunks) = row.try_get::<Option<String>, _>("chunks")? {
            let chunks: Vec<serde_json::Value> = serde_json::from_str(&chunks)
                .map_err(|error| Error::Internal(format!("stored events: {error}")))?;
            for chunk in chunks {
                if let serde_json::Value::Array(values) = chunk {
                    events.extend(after_seq(values, after));
                }
            }
        }
        Ok(Some((events, false)))
    }

    pub async fn ping(&self) -> bool {
        sqlx::query("SELECT 1").execute(&self.pool).await.is_ok()
    }

    pub fn write_failure(&self) -> Option<String> {
        self.writer.failure()
    }

    pub async fn close(&self) {
        self.writer.close().await;
        self.pool.close().await;
    }

    pub async fn begin_run(&self, new: NewRun) -> Result<StartedRun> {
        let instance_id = self.instance_id.to_string();
        self.writer
            .write(move |connection| {
                Box::pin(async move { begin_run_in(connection, new, &instance_id).await })
            })
            .await
    }

    pub async fn append_chunks(&self, chunks: Vec<CheckpointChunk>) -> Result<()> {
        self.writer
            .write(move |connection| Box::pin(append_chunks_in(connection, chunks)))
            .await
    }

    pub async fn finish_run(&self, owned: OwnedFinish) -> Result<()> {
        self.writer
            .write(move |connection| Box::pin(finish_run_in(connection, owned)))
            .await
    }

    pub async fn model_turns(&self, trace_id: &str) -> Result<Vec<ModelTurn>> {
        let rows = sqlx::query(
            "SELECT model, format, after_seq, request::text AS request, response::text AS response,
                    rfc3339_millis(started_at) AS started_at, rfc3339_millis(completed_at) AS completed_at
             FROM model_turns WHERE trace_id = $1 ORDER BY turn_index",
        )
        .bind(trace_id)
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(rows::model_turn).collect()
    }

    /// Running traces of instances whose lease has expired (or that never had one), and this
    /// instance's own when `include_own` (at start: they are an earlier process's).
    pub async fn leftover_runs(&self, include_own: bool) -> Result<Vec<LeftoverRun>> {
        let rows = sqlx::query(
            "SELECT run_id, trace_id, message_id, rfc3339_millis(started_at) AS started_at
             FROM agent_traces t WHERE status = 'running' AND (
                 ($1 AND t.instance_id = $2)
                 OR (t.instance_id IS DISTINCT FROM $2 AND NOT EXISTS (
                     SELECT 1 FROM instances i WHERE i.instance_id = t.instance_id
                     AND i.heartbeat_at > now() - make_interval(secs => $3))))",
        )
        .bind(include_own)
        .bind(self.instance_id.as_ref())
        .bind(LEASE_SECS as f64)
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(rows::leftover).collect()
    }

    pub async fn stored_message(&self, message_id: &str) -> Result<(String, String)> {
        let stored = sqlx::query(
            "SELECT body::text AS body, rfc3339_millis(created_at) AS created_at FROM messages WHERE id = $1",
        )
        .bind(message_id)
        .fetch_optional(&self.pool)
        .await?
        .ok_or(Error::NotFound("message"))?;
        Ok((stored.try_get("body")?, stored.try_get("created_at")?))
    }

    /// The checkpointed events of a running trace, in order; a damaged chunk ends the list.
    pub async fn checkpointed_events(&self, trace_id: &str) -> Result<Vec<Event>> {
        let rows = sqlx::query(
            "SELECT first_seq, events::text AS events FROM trace_event_chunks
             WHERE trace_id = $1 ORDER BY first_seq",
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
            "SELECT id, title, model, rfc3339_millis(created_at) AS created_at,
                    rfc3339_millis(updated_at) AS updated_at
             FROM conversations WHERE owner_id = $1
             ORDER BY updated_at DESC, created_at DESC LIMIT 500",
        )
        .bind(owner_id)
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(rows::summary).collect()
    }

    pub async fn get_conversation(&self, owner_id: &str, id: &str) -> Result<Option<Conversation>> {
        // One snapshot for the messages and the active run (see the SQLite store).
        let mut tx = self.pool.begin().await?;
        sqlx::query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            .execute(&mut *tx)
            .await?;
        let Some(row) = sqlx::query(
            "SELECT id, title, model, rfc3339_millis(created_at) AS created_at,
                    rfc3339_millis(updated_at) AS updated_at
             FROM conversations WHERE id = $1 AND owner_id = $2",
        )
        .bind(id)
        .bind(owner_id)
        .fetch_optional(&mut *tx)
        .await?
        else {
            return Ok(None);
        };
        let summary = rows::summary(&row)?;
        let messages = messages_of(&mut tx, id).await?;
        let active_run = sqlx::query(
            "SELECT run_id, message_id FROM agent_traces WHERE conversation_id = $1 AND status = 'running'
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
             WHERE t.conversation_id = $1 AND c.owner_id = $2 ORDER BY t.started_at, t.created_at",
        )
        .bind(conversation_id)
        .bind(owner_id)
        .fetch_all(&self.pool)
        .await?;
        Ok(ids)
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

    /// The read pool (read-only transactions), for tests that read the database directly.
    pub fn pool(&self) -> &PgPool {
        &self.pool
    }

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

/// JSON text PostgreSQL's JSONB accepts: it refuses the NUL character (`\u0000`), which model
/// and tool output may hold; it becomes U+FFFD, as an invalid byte would.
fn jsonb_text(json: &str) -> Cow<'_, str> {
    if !json.contains("\\u0000") {
        return Cow::Borrowed(json);
    }
    let mut out = String::with_capacity(json.len());
    let mut rest = json;
    while let Some(at) = rest.find("\\u0000") {
        // An escape only when the backslash is not itself escaped (an even run before it).
        let backslashes = rest[..at].bytes().rev().take_while(|b| *b == b'\\').count();
        out.push_str(&rest[..at]);
        out.push_str(if backslashes % 2 == 0 {
            "\\ufffd"
        } else {
            "\\u0000"
        });
        rest = &rest[at + 6..];
    }
    out.push_str(rest);
    Cow::Owned(out)
}

/// Text PostgreSQL's TEXT accepts (no NUL).
fn pg_text(text: &str) -> Cow<'_, str> {
    if text.contains('\0') {
        Cow::Owned(text.replace('\0', "\u{FFFD}"))
    } else {
        Cow::Borrowed(text)
    }
}

async fn begin_run_in(tx: &mut PgConnection, new: NewRun, instance_id: &str) -> Result<StartedRun> {
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
    let (user_body, assistant_body) = (encode_message(&user_message)?, encode_message(&assistant)?);
    // One statement for every row of the start: each statement is a round trip, and the writer
    // makes them one after another (a new conversation took five, with the history it did not
    // have). The foreign keys are checked at the end of the statement, after every row is in.
    sqlx::query(BEGIN_RUN_ROWS)
        .bind(&conversation_id)
        .bind(&new.owner_id)
        .bind(pg_text(&title_for(&new.content)).as_ref())
        .bind(pg_text(&model).as_ref())
        .bind(&new.now)
        .bind(new.conversation_id.is_none())
        .bind(&user_message.id)
        .bind(history.len() as i64)
        .bind(user_message.status.as_str())
        .bind(jsonb_text(&user_body).as_ref())
        .bind(&assistant.id)
        .bind(assistant.status.as_str())
        .bind(jsonb_text(&assistant_body).as_ref())
        .bind(&new.trace_id)
        .bind(&new.run_id)
        .bind(instance_id)
        .execute(&mut *tx)
        .await?;
    Ok(StartedRun {
        conversation_id,
        model,
        history,
        user_message,
    })
}

/// A run start's rows: the conversation when it is new ($6), the user's and the assistant's
/// messages, and the trace.
const BEGIN_RUN_ROWS: &str = "WITH conversation AS (
        INSERT INTO conversations (id, owner_id, title, model, created_at, updated_at)
        SELECT $1, $2, $3, $4, $5::timestamptz, $5::timestamptz WHERE $6::boolean
    ), message_rows AS (
        INSERT INTO messages (id, conversation_id, position, role, status, body, created_at)
        VALUES ($7, $1, $8, 'user', $9, $10::jsonb, $5::timestamptz),
               ($11, $1, $8 + 1, 'assistant', $12, $13::jsonb, $5::timestamptz)
    )
    INSERT INTO agent_traces (trace_id, run_id, conversation_id, message_id, user_message_id, model, started_at, status, created_at, instance_id)
    VALUES ($14, $15, $1, $11, $7, $4, $5::timestamptz, 'running', $5::timestamptz, $16)";

/// An existing conversation of the user's, with no run going: its model (the request's, when
/// given, is stored) and its messages so far.
async fn continue_conversation(
    tx: &mut PgConnection,
    new: &NewRun,
    id: &str,
) -> Result<(String, Vec<Message>)> {
    let row = sqlx::query("SELECT model FROM conversations WHERE id = $1 AND owner_id = $2")
        .bind(id)
        .bind(&new.owner_id)
        .fetch_optional(&mut *tx)
        .await?
        .ok_or(Error::NotFound("conversation"))?;
    // Checked here for a clear answer; the unique index on running traces is what holds when two
    // instances start a run in the same conversation at once.
    let busy = sqlx::query(
        "SELECT 1 FROM agent_traces WHERE conversation_id = $1 AND status = 'running' LIMIT 1",
    )
    .bind(id)
    .fetch_optional(&mut *tx)
    .await?;
    if busy.is_some() {
        return Err(one_run_at_a_time());
    }
    let stored: String = row.try_get("model")?;
    let model = new.model.clone().unwrap_or(stored);
    sqlx::query("UPDATE conversations SET model = $1, updated_at = $2::timestamptz WHERE id = $3")
        .bind(pg_text(&model).as_ref())
        .bind(&new.now)
        .bind(id)
        .execute(&mut *tx)
        .await?;
    Ok((model, messages_of(tx, id).await?))
}

/// A conversation's messages, in order.
async fn messages_of(tx: &mut PgConnection, conversation_id: &str) -> Result<Vec<Message>> {
    let rows = sqlx::query(
        "SELECT body::text AS body FROM messages WHERE conversation_id = $1 ORDER BY position",
    )
    .bind(conversation_id)
    .fetch_all(&mut *tx)
    .await?;
    rows.iter()
        .map(|row| decode_message(row.try_get("body")?))
        .collect()
}

async fn append_chunks_in(tx: &mut PgConnection, chunks: Vec<CheckpointChunk>) -> Result<()> {
    // One statement over arrays, whatever the number of rows: the same text each time, so
    // PostgreSQL parses and plans it once per connection (a VALUES list of n rows was a new
    // statement for each n, parsed and planned at every checkpoint).
    let mut columns = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for chunk in &chunks {
        columns.0.push(chunk.trace_id.as_str());
        columns.1.push(sql_int(chunk.first_seq));
        columns.2.push(sql_int(chunk.last_seq));
        columns.3.push(jsonb_text(&chunk.events_json));
    }
    sqlx::query(
        "INSERT INTO trace_event_chunks (trace_id, first_seq, last_seq, events)
         SELECT t, f, l, e::jsonb FROM unnest($1::text[], $2::bigint[], $3::bigint[], $4::text[]) AS x(t, f, l, e)
         ON CONFLICT (trace_id, first_seq) DO UPDATE
         SET last_seq = EXCLUDED.last_seq, events = EXCLUDED.events",
    )
    .bind(columns.0)
    .bind(columns.1)
    .bind(columns.2)
    .bind(columns.3.iter().map(AsRef::as_ref).collect::<Vec<&str>>())
    .execute(&mut *tx)
    .await?;
    // Readers on other instances learn of new events when this transaction commits.
    let (traces, seqs): (Vec<String>, Vec<i64>) = chunks
        .iter()
        .map(|chunk| (chunk.trace_id.clone(), sql_int(chunk.last_seq)))
        .unzip();
    sqlx::query(
        "SELECT pg_notify('glassbox_events', x.t || ' ' || x.s)
         FROM unnest($1::text[], $2::bigint[]) AS x(t, s)",
    )
    .bind(traces)
    .bind(seqs)
    .execute(&mut *tx)
    .await?;
    Ok(())
}

async fn finish_run_in(tx: &mut PgConnection, finished: OwnedFinish) -> Result<()> {
    let message = &finished.message;
    let usage = message.usage;
    let closed = sqlx::query(
        "UPDATE agent_traces SET events = $1::jsonb, status = $2, completed_at = $3::timestamptz,
             total_tool_calls = $4, input_tokens = $5, output_tokens = $6, reasoning_tokens = $7,
             total_tokens_used = $8, total_duration_ms = $9, cancelled_by = $10,
             cancellation_reason = $11, error_code = $12
         WHERE trace_id = $13 AND status = 'running'",
    )
    .bind(jsonb_text(&finished.events_json).as_ref())
    .bind(trace_status(message.status))
    .bind(&finished.completed_at)
    .bind(message.tool_calls().count() as i64)
    .bind(usage.map(|u| sql_int(u.input_tokens)))
    .bind(usage.map(|u| sql_int(u.output_tokens)))
    .bind(usage.and_then(|u| u.reasoning_tokens).map(sql_int))
    .bind(usage.map(|u| sql_int(u.input_tokens.saturating_add(u.output_tokens))))
    .bind(sql_int(finished.duration_ms))
    .bind(finished.cancelled_by)
    .bind(finished.reason.as_deref().map(pg_text).as_deref())
    .bind(finished.error_code.as_deref().map(pg_text).as_deref())
    .bind(&finished.trace_id)
    .execute(&mut *tx)
    .await?;
    if closed.rows_affected() == 0 {
        // Already closed: another instance took this run for lost and ended it (see the lease).
        tracing::warn!(trace_id = %finished.trace_id, "the trace was already closed; this ending is dropped");
        return Ok(());
    }
    sqlx::query("SELECT pg_notify('glassbox_events', $1 || ' end')")
        .bind(&finished.trace_id)
        .execute(&mut *tx)
        .await?;
    sqlx::query("DELETE FROM trace_event_chunks WHERE trace_id = $1")
        .bind(&finished.trace_id)
        .execute(&mut *tx)
        .await?;
    let body = encode_message(message)?;
    sqlx::query("UPDATE messages SET status = $1, body = $2::jsonb WHERE id = $3")
        .bind(message.status.as_str())
        .bind(jsonb_text(&body).as_ref())
        .bind(&message.id)
        .execute(&mut *tx)
        .await?;
    for (index, turn) in finished.model_turns.iter().enumerate() {
        sqlx::query(
            "INSERT INTO model_turns (trace_id, turn_index, model, after_seq, request, response, started_at, completed_at, format)
             VALUES ($1, $2, $3, $4, $5::jsonb, $6::jsonb, $7::timestamptz, $8::timestamptz, $9)
             ON CONFLICT (trace_id, turn_index) DO UPDATE SET model = EXCLUDED.model, format = EXCLUDED.format,
                 after_seq = EXCLUDED.after_seq, request = EXCLUDED.request,
                 response = EXCLUDED.response, started_at = EXCLUDED.started_at,
                 completed_at = EXCLUDED.completed_at",
        )
        .bind(&finished.trace_id)
        .bind(index as i64)
        .bind(pg_text(&turn.model).as_ref())
        .bind(sql_int(turn.after_seq))
        .bind(jsonb_text(&turn.request.to_string()).as_ref())
        .bind(jsonb_text(&turn.response.to_string()).as_ref())
        .bind(&turn.started_at)
        .bind(&turn.completed_at)
        .bind(turn.format.as_str())
        .execute(&mut *tx)
        .await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::jsonb_text;

    #[test]
    fn nul_escapes_become_the_replacement_character_and_escaped_backslashes_stay() {
        assert_eq!(jsonb_text(r#""a\u0000b""#), r#""a\ufffdb""#);
        assert_eq!(jsonb_text(r#""a\\u0000b""#), r#""a\\u0000b""#);
        assert_eq!(jsonb_text(r#""a\\\u0000b""#), r#""a\\\ufffdb""#);
        assert_eq!(jsonb_text(r#""plain""#), r#""plain""#);
    }
}
