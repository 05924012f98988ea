//! Storage: conversations, messages and agent traces. Callers use [`Store`]'s methods and never
//! write SQL. SQLite is the embedded default; the methods are the seam where a PostgreSQL backend
//! slots in (same tables, JSONB for `body` and `events`) without touching callers.

mod accounts;
mod shares;
mod sqlite;
mod writer;

pub use accounts::StoredUser;
pub use shares::{TraceShare, MAX_SHARES_PER_TRACE};

pub use sqlite::Store;

use app::protocol::{CancelledBy, Message, MessageStatus};
use serde::Serialize;

/// The one local user of `--auth none`. Every read and every cancel checks the owner, so who is
/// asking (this user, an account, a proxy's user) changes nothing in the checks.
pub const LOCAL_OWNER: &str = "local";

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

/// The trace row's final state.
#[derive(Debug)]
/// New events of one running trace, ready to store: a JSON array of the events `first_seq ..=
/// last_seq`. Built off the async workers (see `runs::Checkpointer`).
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

pub struct FinishedTrace<'a> {
    pub trace_id: &'a str,
    pub message: &'a Message,
    pub completed_at: &'a str,
    pub duration_ms: u64,
    pub cancelled_by: Option<CancelledBy>,
    pub reason: Option<&'a str>,
    pub error_code: Option<&'a str>,
    /// Every event of the run as JSON, in seq order.
    pub events: &'a [std::sync::Arc<str>],
    /// The run's model turns (none for the demo and scenario agents).
    pub model_turns: &'a [ModelTurn],
}

/// One model turn: the request as sent and the response as received, in OpenAI chat format.
#[derive(Clone, Debug, Serialize)]
pub struct ModelTurn {
    pub model: String,
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

pub use app::models::Trace;
