//! Storage: conversations, messages and agent traces. Callers use [`Store`]'s methods and never
//! write SQL, and do not know which database answers: SQLite (the embedded default, one file) or
//! PostgreSQL (`--database-url postgres://…`, for several instances on one database). Each backend
//! has its own SQL in its own module; what does not depend on the database is written once:
//! recovering runs left running (`recovery`), the JSON of messages and events (`json`), the
//! records callers exchange with the store (`records`), rows to values (`rows`), and titles here.

/// Calls the same method on whichever backend this is.
macro_rules! on_backend {
    ($store:expr, $method:ident ( $($arg:expr),* )) => {
        match $store {
            Store::Sqlite(backend) => backend.$method($($arg),*).await,
            Store::Postgres(backend) => backend.$method($($arg),*).await,
        }
    };
}

pub mod branches;
pub mod feedback;
mod json;
mod postgres;
mod records;
mod recovery;
mod rows;
pub mod search;
mod sqlite;
mod writer;

use std::sync::Arc;

use app::models::{Conversation, ConversationSummary, Feedback};

pub use app::models::Trace;
pub use json::join_json_array;
pub use postgres::{PgStore, TraceEvents, HEARTBEAT_INTERVAL};
pub use records::{
    CheckpointChunk, ConversationChange, FinishedTrace, ModelTurn, NewRun, OwnedFinish, Rerun,
    StartedRun, StepDocs, StoredEvents, StoredUser, TraceShare,
};
pub use recovery::LeftoverRun;
pub use sqlite::SqliteStore;

use json::{
    after_seq, decode_chunks, decode_events, decode_message, encode_message, events_of_array,
};

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

    /// Indexes for search the steps that running traces finished, all in one write.
    pub async fn index_steps(&self, steps: Vec<StepDocs>) -> Result<()> {
        if steps.is_empty() {
            return Ok(());
        }
        on_backend!(self, index_steps(steps))
    }

    /// Closes a trace: its final status and totals, every event as one JSON array, and the
    /// assistant message as the reducer built it. The checkpoint rows go in the same transaction.
    /// Answers whether this call closed it: `false` when it was closed already (on PostgreSQL,
    /// by another instance that took the run for lost), and nothing was written.
    pub async fn finish_run(&self, finished: FinishedTrace<'_>) -> Result<bool> {
        let owned = OwnedFinish::from(finished);
        on_backend!(self, finish_run(owned))
    }

    /// The model turns of a trace, in order, for the inspector.
    pub async fn model_turns(&self, trace_id: &str) -> Result<Vec<ModelTurn>> {
        on_backend!(self, model_turns(trace_id))
    }

    /// A trace's events with seq > `after` (JSON each) as stored now, and whether it has ended:
    /// its checkpoints while it runs, its closed array after. `None` when there is no such trace.
    pub async fn events_after(&self, trace_id: &str, after: u64) -> Result<Option<StoredEvents>> {
        on_backend!(self, events_after(trace_id, after))
    }

    /// The conversations of `owner_id`, newest first: the archived ones, or the others.
    pub async fn list_conversations(
        &self,
        owner_id: &str,
        archived: bool,
    ) -> Result<Vec<ConversationSummary>> {
        on_backend!(self, list_conversations(owner_id, archived))
    }

    /// One conversation of `owner_id`, without its messages.
    pub async fn conversation_summary(
        &self,
        owner_id: &str,
        id: &str,
    ) -> Result<Option<ConversationSummary>> {
        on_backend!(self, conversation_summary(owner_id, id))
    }

    /// Renames and/or archives (or unarchives) a conversation of `owner_id`: its summary after.
    /// `NotFound` for anyone else's. The title is taken as given: see [`clean_title`].
    pub async fn update_conversation(
        &self,
        owner_id: &str,
        id: &str,
        change: ConversationChange,
    ) -> Result<ConversationSummary> {
        let (owner, conversation) = (owner_id.to_owned(), id.to_owned());
        on_backend!(self, update_conversation(owner, conversation, change))?;
        self.conversation_summary(owner_id, id)
            .await?
            .ok_or(Error::NotFound("conversation"))
    }

    /// Deletes a conversation of `owner_id` with every row of it (messages, traces, checkpoint
    /// chunks, model turns, share links) in one transaction. `NotFound` for anyone else's or one
    /// already deleted; 409 `run_in_progress` while one of its runs is going.
    pub async fn delete_conversation(&self, owner_id: &str, id: &str) -> Result<()> {
        let (owner, conversation) = (owner_id.to_owned(), id.to_owned());
        on_backend!(self, delete_conversation(owner, conversation))
    }

    /// Deletes every conversation of `owner_id` as [`Store::delete_conversation`] does, in one
    /// transaction: how many. While any has a run going, none is deleted (409).
    pub async fn delete_all_conversations(&self, owner_id: &str) -> Result<u64> {
        on_backend!(self, delete_all_conversations(owner_id.to_owned()))
    }

    /// The pieces of `owner_id`'s conversations matching `query`, newest first (at most
    /// [`search::MAX_HITS`]).
    pub async fn search(
        &self,
        owner_id: &str,
        query: &search::SearchQuery,
    ) -> Result<Vec<app::models::SearchHit>> {
        on_backend!(self, search(owner_id, query))
    }

    /// Indexes up to `limit` conversations kept before the search index existed (each in the
    /// write that takes it off the list): how many it took. See [`search::backfill`].
    pub async fn backfill_search(&self, limit: usize, now: &str) -> Result<usize> {
        on_backend!(self, backfill_search(limit, now.to_owned()))
    }

    /// A conversation of `owner_id` with its messages and the owner's feedback on them.
    pub async fn get_conversation(&self, owner_id: &str, id: &str) -> Result<Option<Conversation>> {
        let Some(mut conversation) = on_backend!(self, get_conversation(owner_id, id))? else {
            return Ok(None);
        };
        conversation.feedback = on_backend!(self, feedback_of(owner_id, id, None))?;
        Ok(Some(conversation))
    }

    /// Switches `owner_id`'s conversation `id` to the version `message_id` of one of its
    /// messages (see [`branches`]). `NotFound` for anyone else's conversation or an unknown
    /// message; 409 while a run is going in it.
    pub async fn switch_branch(&self, owner_id: &str, id: &str, message_id: &str) -> Result<()> {
        let now = crate::stamps::now_rfc3339();
        let (owner, conversation, message) =
            (owner_id.to_owned(), id.to_owned(), message_id.to_owned());
        on_backend!(self, switch_branch(owner, conversation, message, now))
    }

    /// A trace of `owner_id` with the owner's feedback on its answer and steps.
    pub async fn get_trace(&self, owner_id: &str, trace_id: &str) -> Result<Option<Trace>> {
        let Some(mut trace) = on_backend!(self, get_trace(owner_id, trace_id))? else {
            return Ok(None);
        };
        let (conversation, message) = (&trace.conversation_id, Some(trace.message_id.as_str()));
        trace.feedback = on_backend!(self, feedback_of(owner_id, conversation, message))?;
        Ok(Some(trace))
    }

    /// Stores or edits a feedback (issue 36) on a message of `change.owner_id`, with its search
    /// piece, in one write: the row after. `NotFound` for anyone else's message or an unknown
    /// step; 409 `run_in_progress` while the message's run is going.
    pub async fn set_feedback(&self, change: feedback::FeedbackChange) -> Result<Feedback> {
        on_backend!(self, set_feedback(change))
    }

    /// Removes a feedback of `owner_id` (`step_id` none: the answer's) and its search piece;
    /// `NotFound` when there is none.
    pub async fn delete_feedback(
        &self,
        owner_id: &str,
        message_id: &str,
        step_id: Option<&str>,
    ) -> Result<()> {
        let (owner, message) = (owner_id.to_owned(), message_id.to_owned());
        let step = step_id.unwrap_or_default().to_owned();
        on_backend!(self, delete_feedback(owner, message, step))
    }

    /// Every trace of a conversation's active path (the branch chosen), oldest first (empty for
    /// an unknown or foreign conversation).
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

    /// The owner's traces to compare with: those of `conversation_id` first, newest first, at
    /// most `limit`; or (with `trace_id`) that one trace, with its question.
    pub async fn trace_choices(
        &self,
        owner_id: &str,
        conversation_id: &str,
        trace_id: Option<&str>,
        limit: usize,
    ) -> Result<Vec<app::compare::TraceChoice>> {
        on_backend!(
            self,
            trace_choices(owner_id, conversation_id, trace_id, limit)
        )
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
}

const TITLE_CHARS: usize = 60;

/// The longest title a rename may set, in characters.
pub const MAX_TITLE_CHARS: usize = 200;

/// A title a user typed, as stored: plain text on one line (runs of whitespace and control
/// characters become one space), trimmed. Empty or longer than [`MAX_TITLE_CHARS`]: 422.
pub fn clean_title(raw: &str) -> Result<String> {
    let title = one_line(raw);
    if title.is_empty() {
        return Err(Error::InvalidField("the title is empty".into()));
    }
    if title.chars().count() > MAX_TITLE_CHARS {
        return Err(Error::InvalidField(format!(
            "a title is at most {MAX_TITLE_CHARS} characters"
        )));
    }
    Ok(title)
}

/// `text`'s words on one line, separated by single spaces.
fn one_line(text: &str) -> String {
    text.split(|c: char| c.is_whitespace() || c.is_control())
        .filter(|word| !word.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// The conversation's title: the start of its first message, on one line.
fn title_for(content: &str) -> String {
    let line = one_line(content);
    match crate::sanitize::shorten(&line, TITLE_CHARS) {
        Some(cut) => format!("{}…", cut.trim_end()),
        None if line.is_empty() => "New conversation".to_owned(),
        None => line,
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

/// The 409 for deleting a conversation while one of its runs is going.
fn run_in_progress() -> Error {
    Error::RunInProgress("a run is going in this conversation; stop it, then delete".into())
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
