//! Storage: conversations, messages and agent traces. Callers use [`Store`]'s methods and never
//! write SQL, and do not know which database answers: SQLite (the embedded default, one file) or
//! PostgreSQL (`--database-url postgres://…`, for several instances on one database). Each backend
//! has its own SQL in its own module; what does not depend on the database (recovering runs left
//! running, titles, the JSON of messages) is written once here.

mod postgres;
mod rows;
mod sqlite;
mod writer;

use app::protocol::ErrorCode;
use std::sync::Arc;

use app::models::{Conversation, ConversationSummary};
use app::protocol::{fold, CancelledBy, Event, EventKind, Message, MessageStatus};
use serde::Serialize;

pub use app::models::Trace;
pub use postgres::{PgStore, TraceEvents, HEARTBEAT_INTERVAL};
pub use sqlite::SqliteStore;

use crate::error::{Error, Result};

/// The one local user of `--auth none`. Every read and every cancel checks the owner, so who is
/// asking (this user, an account, a proxy's user) changes nothing in the checks.
pub const LOCAL_OWNER: &str = "local";

/// The most links one trace may have at once; one more is answered 429.
pub const MAX_SHARES_PER_TRACE: usize = 20;

/// The store: one of the two backends, chosen by the database URL.
#[derive(Clone, Debug)]
pub enum Store {
    Sqlite(SqliteStore),
    Postgres(PgStore),
}

/// Calls the same method on whichever backend this is.
macro_rules! on_backend {
    ($store:expr, $method:ident ( $($arg:expr),* )) => {
        match $store {
            Store::Sqlite(backend) => backend.$method($($arg),*).await,
            Store::Postgres(backend) => backend.$method($($arg),*).await,
        }
    };
}

impl Store {
    /// Opens (creating a SQLite file when missing) the database and brings its schema up to date;
    /// for tools and tests (PostgreSQL: as an instance of its own that runs nothing).
    pub async fn connect(url: &str) -> Result<Self, sqlx::Error> {
        Self::open(url, &format!("tool-{}", uuid::Uuid::new_v4()), false).await
    }

    /// [`Store::connect`] for the server: `instance_id` names this instance on PostgreSQL, where
    /// it takes a lease (a row of `instances`).
    pub async fn connect_as(url: &str, instance_id: &str) -> Result<Self, sqlx::Error> {
        Self::open(url, instance_id, true).await
    }

    async fn open(url: &str, instance_id: &str, lease: bool) -> Result<Self, sqlx::Error> {
        if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            Ok(Store::Postgres(
                PgStore::connect(url, instance_id, lease).await?,
            ))
        } else {
            Ok(Store::Sqlite(SqliteStore::connect(url).await?))
        }
    }

    /// Whether the database answers reads.
    pub async fn ping(&self) -> bool {
        on_backend!(self, ping())
    }

    /// Why writes are failing (a full disk, an I/O error, a lost connection), while they are.
    pub fn write_failure(&self) -> Option<String> {
        match self {
            Store::Sqlite(backend) => backend.write_failure(),
            Store::Postgres(backend) => backend.write_failure(),
        }
    }

    /// Lets queued writes finish, then closes every connection.
    pub async fn close(&self) {
        on_backend!(self, close())
    }

    /// Stores the user's message, creates the conversation when absent, and opens the run's trace
    /// and its assistant message (status `streaming`), all in one write. A conversation with a
    /// run still going refuses another (409), atomically.
    pub async fn begin_run(&self, new: NewRun) -> Result<StartedRun> {
        // The check in the job answers first; the unique constraints hold when two instances
        // start runs in one conversation at once.
        on_backend!(self, begin_run(new)).map_err(|error| match is_unique_violation(&error) {
            true => one_run_at_a_time(),
            false => error,
        })
    }

    /// Appends checkpointed events (JSON, with their seq) to a running trace.
    pub async fn append_events(&self, trace_id: &str, events: &[(u64, Arc<str>)]) -> Result<()> {
        match CheckpointChunk::new(trace_id, events) {
            Some(chunk) => self.append_chunks(vec![chunk]).await,
            None => Ok(()),
        }
    }

    /// Appends checkpoint chunks of many running traces in one write, one row each. A retried
    /// checkpoint starts at the same seq and replaces its row.
    pub async fn append_chunks(&self, chunks: Vec<CheckpointChunk>) -> Result<()> {
        if chunks.is_empty() {
            return Ok(());
        }
        on_backend!(self, append_chunks(chunks))
    }

    /// Closes a trace: its final status and totals, every event as one JSON array, and the
    /// assistant message as the reducer built it. The checkpoint rows go in the same transaction.
    pub async fn finish_run(&self, finished: FinishedTrace<'_>) -> Result<()> {
        let owned = OwnedFinish::from(finished);
        on_backend!(self, finish_run(owned))
    }

    /// The model turns of a trace, in order, for the inspector.
    pub async fn model_turns(&self, trace_id: &str) -> Result<Vec<ModelTurn>> {
        on_backend!(self, model_turns(trace_id))
    }

    pub async fn list_conversations(&self, owner_id: &str) -> Result<Vec<ConversationSummary>> {
        on_backend!(self, list_conversations(owner_id))
    }

    pub async fn get_conversation(&self, owner_id: &str, id: &str) -> Result<Option<Conversation>> {
        on_backend!(self, get_conversation(owner_id, id))
    }

    pub async fn get_trace(&self, owner_id: &str, trace_id: &str) -> Result<Option<Trace>> {
        on_backend!(self, get_trace(owner_id, trace_id))
    }

    /// Every trace of a conversation, oldest first (empty for an unknown or foreign conversation).
    pub async fn traces_for_conversation(
        &self,
        owner_id: &str,
        conversation_id: &str,
    ) -> Result<Vec<Trace>> {
        let ids = on_backend!(self, trace_ids_of_conversation(owner_id, conversation_id))?;
        let mut traces = Vec::with_capacity(ids.len());
        for trace_id in ids {
            if let Some(trace) = self.get_trace(owner_id, &trace_id).await? {
                traces.push(trace);
            }
        }
        Ok(traces)
    }

    pub async fn trace_by_run(&self, owner_id: &str, run_id: &str) -> Result<Option<Trace>> {
        on_backend!(self, trace_by_run(owner_id, run_id))
    }

    /// Adds a user; a name already taken is a conflict.
    pub async fn add_user(&self, user: StoredUser, now: String) -> Result<()> {
        on_backend!(self, add_user(user, now))
    }

    pub async fn user_by_name(&self, name: &str) -> Result<Option<StoredUser>> {
        on_backend!(self, user_by_name(name))
    }

    /// Opens a session; sessions expired by `now` go in the same write.
    pub async fn create_session(
        &self,
        token_hash: String,
        user_id: String,
        now: String,
        expires_at: String,
    ) -> Result<()> {
        on_backend!(self, create_session(token_hash, user_id, now, expires_at))
    }

    /// The user (id, name) of a session that has not expired by `now`.
    pub async fn session_user(
        &self,
        token_hash: &str,
        now: &str,
    ) -> Result<Option<(String, String)>> {
        on_backend!(self, session_user(token_hash, now))
    }

    pub async fn delete_session(&self, token_hash: String) -> Result<()> {
        on_backend!(self, delete_session(token_hash))
    }

    /// Adds a link to a trace of `share.owner_id`: `NotFound` for anyone else's trace, 429 past
    /// [`MAX_SHARES_PER_TRACE`].
    pub async fn add_share(&self, share: TraceShare) -> Result<()> {
        on_backend!(self, add_share(share))
    }

    /// The link a token names, if it exists (revoked links do not).
    pub async fn share(&self, token: &str) -> Result<Option<TraceShare>> {
        on_backend!(self, share(token))
    }

    /// A trace's links, oldest first; `None` when the trace is not `owner_id`'s.
    pub async fn shares_of(
        &self,
        owner_id: &str,
        trace_id: &str,
    ) -> Result<Option<Vec<TraceShare>>> {
        on_backend!(self, shares_of(owner_id, trace_id))
    }

    /// Revokes a link of `owner_id`'s trace; `NotFound` when there is no such link.
    pub async fn delete_share(
        &self,
        owner_id: String,
        trace_id: String,
        token: String,
    ) -> Result<()> {
        on_backend!(self, delete_share(owner_id, trace_id, token))
    }

    /// Runs one SQL statement through the writer: for tests that change rows on purpose and
    /// for maintenance.
    pub async fn execute_as_writer(&self, sql: String) -> Result<u64> {
        on_backend!(self, execute_as_writer(sql))
    }

    /// The SQLite backend, for tests and tools that work on the file itself.
    pub fn sqlite(&self) -> Option<&SqliteStore> {
        match self {
            Store::Sqlite(backend) => Some(backend),
            Store::Postgres(_) => None,
        }
    }

    /// The PostgreSQL backend, for tests that read the database directly.
    pub fn postgres(&self) -> Option<&PgStore> {
        match self {
            Store::Postgres(backend) => Some(backend),
            Store::Sqlite(_) => None,
        }
    }

    /// Marks traces left `running` by an earlier process as `interrupted`, keeping their
    /// checkpointed events, and shows that on their messages. A trace that cannot be read whole
    /// keeps what could be read; one that cannot be recovered at all is logged and skipped, so a
    /// damaged row never stops the server from starting. Returns how many there were.
    pub async fn interrupt_leftover_runs(&self, now: &str) -> Result<usize> {
        self.interrupt(true, now).await
    }

    /// On PostgreSQL, ends the runs of instances whose lease has expired (see `bus`), as
    /// [`Store::interrupt_leftover_runs`] does at start. Two survivors may both try: the trace
    /// closes once, and only that close is published.
    pub async fn interrupt_orphaned_runs(&self, now: &str) -> Result<usize> {
        self.interrupt(false, now).await
    }

    async fn interrupt(&self, include_own: bool, now: &str) -> Result<usize> {
        let leftovers = match self {
            Store::Sqlite(backend) => backend.leftover_runs().await?,
            Store::Postgres(backend) => backend.leftover_runs(include_own).await?,
        };
        for leftover in &leftovers {
            if let Err(error) = self.interrupt_one(leftover, now).await {
                let trace_id = &leftover.trace_id;
                tracing::error!(%trace_id, %error, "could not recover a run left running; skipped");
            }
        }
        Ok(leftovers.len())
    }

    async fn interrupt_one(&self, leftover: &LeftoverRun, now: &str) -> Result<()> {
        let mut events = on_backend!(self, checkpointed_events(&leftover.trace_id))?;
        // A run whose terminal event was checkpointed but whose trace was not closed keeps it.
        if events.last().is_some_and(|event| event.kind.is_terminal()) {
            events.pop();
        }
        let mut message = match fold(&events) {
            Some(message) => message,
            None => self.stored_message(&leftover.message_id).await?,
        };
        message.status = MessageStatus::Interrupted;
        message.ended_reason = Some(INTERRUPTED_REASON.to_owned());
        let duration = match (
            app::protocol::parse_rfc3339_millis(&leftover.started_at),
            events.last(),
        ) {
            (Some(start), Some(last)) => {
                app::protocol::parse_rfc3339_millis(&last.ts).map(|end| (end - start).max(0) as u64)
            }
            _ => None,
        };
        message.duration_ms = duration;
        // One terminal event, so that a reader of the stream (on any instance) sees the end.
        events.push(Event {
            seq: events.last().map_or(1, |last| last.seq + 1),
            run_id: leftover.run_id.clone(),
            ts: now.to_owned(),
            kind: EventKind::MessageError {
                code: ErrorCode::Interrupted,
                error: INTERRUPTED_REASON.to_owned(),
                message: message.clone(),
            },
        });
        let json: Vec<Arc<str>> = events
            .iter()
            .map(|event| serde_json::to_string(event).map(Arc::from))
            .collect::<Result<_, _>>()
            .map_err(|error| Error::Internal(error.to_string()))?;
        self.finish_run(FinishedTrace {
            trace_id: &leftover.trace_id,
            message: &message,
            completed_at: now,
            duration_ms: duration.unwrap_or(0),
            cancelled_by: None,
            reason: message.ended_reason.as_deref(),
            error_code: Some(&ErrorCode::Interrupted),
            events: &json,
            model_turns: &[],
        })
        .await
    }

    /// The stored message; an empty assistant message when it cannot be read.
    async fn stored_message(&self, message_id: &str) -> Result<Message> {
        let (body, created_at) = on_backend!(self, stored_message(message_id))?;
        Ok(decode_message(body).unwrap_or_else(|error| {
            tracing::warn!(%message_id, %error, "a stored message could not be read");
            Message::assistant(message_id.to_owned(), String::new(), created_at)
        }))
    }
}

/// A user as stored: id (the owner id of everything they create), name, password hash.
#[derive(Clone, Debug)]
pub struct StoredUser {
    pub user_id: String,
    pub name: String,
    pub password_hash: String,
}

/// One link as stored and as `GET /api/traces/{id}/shares` lists it.
#[derive(Clone, Debug, Serialize)]
pub struct TraceShare {
    pub token: String,
    pub trace_id: String,
    #[serde(skip)]
    pub owner_id: String,
    pub created_at: String,
    /// Whether the link shows the conversation before its turn (in the model turns' requests);
    /// without it a link shows its own turn only.
    #[serde(default)]
    pub include_history: bool,
}

/// What `POST /api/chat` asks the store to create in one transaction.
#[derive(Debug)]
pub struct NewRun {
    pub owner_id: String,
    pub conversation_id: Option<String>,
    pub content: String,
    pub model: Option<String>,
    pub default_model: String,
    pub run_id: String,
    pub trace_id: String,
    pub user_message_id: String,
    pub assistant_message_id: String,
    pub now: String,
}

/// What the store created for a new run.
#[derive(Clone, Debug)]
pub struct StartedRun {
    pub conversation_id: String,
    pub model: String,
    /// The conversation's earlier messages, oldest first (the new user message excluded).
    pub history: Vec<Message>,
    pub user_message: Message,
}

/// What an interrupted run's message says.
const INTERRUPTED_REASON: &str = "The server stopped while this run was going.";

/// A trace still marked `running` when the server starts.
#[derive(Debug)]
pub struct LeftoverRun {
    pub run_id: String,
    pub trace_id: String,
    pub message_id: String,
    pub started_at: String,
}

/// New events of one running trace, ready to store: a JSON array of the events `first_seq ..=
/// last_seq`. Built off the async workers (see `runs::Checkpointer`).
#[derive(Debug)]
pub struct CheckpointChunk {
    pub trace_id: String,
    pub first_seq: u64,
    pub last_seq: u64,
    pub events_json: String,
}

impl CheckpointChunk {
    /// The chunk of `events` (JSON with their seq, in order); `None` when there are none.
    pub fn new(trace_id: &str, events: &[(u64, std::sync::Arc<str>)]) -> Option<Self> {
        let first_seq = events.first()?.0;
        let last_seq = events.last()?.0;
        let json: Vec<&str> = events.iter().map(|(_, json)| json.as_ref()).collect();
        Some(CheckpointChunk {
            trace_id: trace_id.to_owned(),
            first_seq,
            last_seq,
            events_json: join_json_array(&json),
        })
    }
}

/// `[a,b,c]` from JSON texts, without parsing them.
pub fn join_json_array<T: AsRef<str>>(items: &[T]) -> String {
    let mut out = String::with_capacity(
        items
            .iter()
            .map(|item| item.as_ref().len() + 1)
            .sum::<usize>()
            + 2,
    );
    out.push('[');
    for (index, item) in items.iter().enumerate() {
        if index > 0 {
            out.push(',');
        }
        out.push_str(item.as_ref());
    }
    out.push(']');
    out
}

/// The trace row's final state.
#[derive(Debug)]
pub struct FinishedTrace<'a> {
    pub trace_id: &'a str,
    pub message: &'a Message,
    pub completed_at: &'a str,
    pub duration_ms: u64,
    pub cancelled_by: Option<CancelledBy>,
    pub reason: Option<&'a str>,
    pub error_code: Option<&'a ErrorCode>,
    /// Every event of the run as JSON, in seq order.
    pub events: &'a [std::sync::Arc<str>],
    /// The run's model turns (none for the demo and scenario agents).
    pub model_turns: &'a [ModelTurn],
}

/// A finished trace as the writer's job owns it.
pub struct OwnedFinish {
    trace_id: String,
    message: Message,
    completed_at: String,
    duration_ms: u64,
    cancelled_by: Option<&'static str>,
    reason: Option<String>,
    error_code: Option<String>,
    events_json: String,
    model_turns: Vec<ModelTurn>,
}

impl From<FinishedTrace<'_>> for OwnedFinish {
    fn from(finished: FinishedTrace<'_>) -> Self {
        OwnedFinish {
            trace_id: finished.trace_id.to_owned(),
            message: finished.message.clone(),
            completed_at: finished.completed_at.to_owned(),
            duration_ms: finished.duration_ms,
            cancelled_by: finished.cancelled_by.map(|by| by.as_str()),
            reason: finished.reason.map(str::to_owned),
            error_code: finished.error_code.map(|code| code.as_str().to_owned()),
            events_json: join_json_array(finished.events),
            model_turns: finished.model_turns.to_vec(),
        }
    }
}

/// One model turn: the request body as sent (in its wire `format`) and the response as received,
/// as an OpenAI chat completion.
#[derive(Clone, Debug, Serialize)]
pub struct ModelTurn {
    pub model: String,
    /// The wire format `request` is in (`openai_chat`, `openai_responses`, `anthropic`).
    #[serde(default)]
    pub format: crate::records::ProviderKind,
    /// The run's last event seq before the request went out.
    pub after_seq: u64,
    pub request: serde_json::Value,
    pub response: serde_json::Value,
    pub started_at: String,
    pub completed_at: String,
}

pub fn trace_status(status: MessageStatus) -> &'static str {
    match status {
        MessageStatus::Streaming => "running",
        MessageStatus::Complete => "completed",
        MessageStatus::Cancelled => "cancelled",
        MessageStatus::Error => "error",
        MessageStatus::Interrupted => "interrupted",
    }
}

const TITLE_CHARS: usize = 60;

/// The conversation's title: the start of its first message, on one line.
fn title_for(content: &str) -> String {
    let line = content
        .split(|c: char| c.is_whitespace() || c.is_control())
        .filter(|word| !word.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    match crate::sanitize::shorten(&line, TITLE_CHARS) {
        Some(cut) => format!("{}…", cut.trim_end()),
        None if line.is_empty() => "New conversation".to_owned(),
        None => line,
    }
}

fn encode_message(message: &Message) -> Result<String> {
    serde_json::to_string(message).map_err(|error| Error::Internal(error.to_string()))
}

fn decode_message(json: String) -> Result<Message> {
    serde_json::from_str(&json).map_err(|error| Error::Internal(format!("stored message: {error}")))
}

/// Events of a stored JSON array; `None` (logged) when the array is damaged.
fn decode_chunk(trace_id: &str, first_seq: i64, json: &str) -> Option<Vec<Event>> {
    match serde_json::from_str::<Vec<Event>>(json) {
        Ok(chunk) => Some(chunk),
        Err(error) => {
            tracing::error!(%trace_id, first_seq, %error, "a damaged checkpoint: the events from here on are lost");
            None
        }
    }
}

/// Both databases store signed 64-bit integers: larger counts are kept at the maximum, not wrapped.
fn sql_int(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

/// The 409 for a second run in a conversation.
fn one_run_at_a_time() -> Error {
    Error::Conflict("a run is already going in this conversation; stop it first".into())
}

fn too_many_shares() -> Error {
    Error::Throttled {
        code: "too_many_shares",
        message: format!("a trace can have {MAX_SHARES_PER_TRACE} links at once; revoke one first"),
        retry_after_secs: 0,
    }
}

/// Whether the database refused a row because it broke a unique constraint.
fn is_unique_violation(error: &Error) -> bool {
    use rusqlite::ffi::{SQLITE_CONSTRAINT_PRIMARYKEY, SQLITE_CONSTRAINT_UNIQUE};
    match error {
        Error::Database(sqlx::Error::Database(database)) => database.is_unique_violation(),
        Error::Sqlite(rusqlite::Error::SqliteFailure(failure, _)) => matches!(
            failure.extended_code,
            SQLITE_CONSTRAINT_UNIQUE | SQLITE_CONSTRAINT_PRIMARYKEY
        ),
        _ => false,
    }
}
