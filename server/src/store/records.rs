//! What callers hand the store and what it hands back, beside the app's own models.

use std::sync::Arc;

use app::protocol::{CancelledBy, ErrorCode, Message};
use serde::Serialize;

use super::json::join_json_array;

/// A user as stored: id (the owner id of everything they create), name, password hash.
#[derive(Clone, Debug, sqlx::FromRow)]
pub struct StoredUser {
    pub user_id: String,
    pub name: String,
    pub password_hash: String,
}

/// One link as stored and as `GET /api/traces/{id}/shares` lists it.
#[derive(Clone, Debug, Serialize, sqlx::FromRow)]
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

/// What a `PATCH` of a conversation changes: its title (already [`super::clean_title`]d), whether
/// it is archived; `now` is the time an archive is stamped with.
#[derive(Debug, Clone)]
pub struct ConversationChange {
    pub title: Option<String>,
    pub archived: Option<bool>,
    pub now: String,
}

/// Events read from a seq on: `(seq, JSON)` of each, and whether the trace has ended.
pub type StoredEvents = (Vec<(u64, Arc<str>)>, bool);

/// What `POST /api/chat` asks the store to create in one transaction.
#[derive(Debug)]
pub struct NewRun {
    pub owner_id: String,
    pub conversation_id: Option<String>,
    /// The id of the conversation to create when `conversation_id` is absent (an AG-UI
    /// threadId); a new UUID when this is absent too.
    pub new_conversation_id: Option<String>,
    pub content: String,
    pub model: Option<String>,
    pub default_model: String,
    pub run_id: String,
    pub trace_id: String,
    pub user_message_id: String,
    pub assistant_message_id: String,
    pub now: String,
    /// A regenerate or an edit: the run replaces that message on the active path (a branch).
    pub rerun: Option<Rerun>,
}

impl NewRun {
    /// The id and model of the conversation this run starts (when it names none): the id asked
    /// for or a new UUID, the model asked for or the default.
    pub fn new_conversation(&self) -> (String, String) {
        let id = self
            .new_conversation_id
            .clone()
            .unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
        let model = self
            .model
            .clone()
            .unwrap_or_else(|| self.default_model.clone());
        (id, model)
    }
}

/// A run that replaces a message of the active path instead of adding a question at its end.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Rerun {
    /// A new answer to the question of this (assistant) message.
    Regenerate(String),
    /// A new version of this (user) message, with the request's content, and its answer.
    Edit(String),
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

/// New events of one running trace, ready to store: a JSON array of the events `first_seq ..=
/// last_seq`. Built off the async workers (see `runs::Checkpointer`).
#[derive(Debug)]
pub struct CheckpointChunk {
    pub trace_id: String,
    pub first_seq: u64,
    pub last_seq: u64,
    pub events_json: String,
}

/// Steps a running trace finished since the last checkpoint that indexed its steps, for search
/// (their message's owner and conversation are the trace's).
#[derive(Debug)]
pub struct StepDocs {
    pub trace_id: String,
    pub docs: Vec<crate::store::search::SearchDoc>,
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

/// The trace row's final state.
#[derive(Clone, Copy, Debug)]
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
    pub(super) trace_id: String,
    pub(super) message: Message,
    pub(super) completed_at: String,
    pub(super) duration_ms: u64,
    pub(super) cancelled_by: Option<&'static str>,
    pub(super) reason: Option<String>,
    pub(super) error_code: Option<String>,
    pub(super) events_json: String,
    pub(super) model_turns: Vec<ModelTurn>,
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
