//! The Vercel AI SDK's chat endpoints: what `useChat`'s `DefaultChatTransport` sends, answered
//! with a run as the UI message stream v1 (`formats::ai_sdk` maps the events; the events come from
//! the run's log, as for `GET /api/runs/{id}/events`).
//!
//! - `POST /api/ai-sdk/chat` `{id, messages, trigger, messageId, model?}`: the last message is the
//!   user's: its text starts a run in the chat's conversation. The last message is the assistant's
//!   with tool parts in state `approval-responded` (`addToolApprovalResponse`): the answers go to
//!   the run that waits, and the response continues its message after the last request the client
//!   answered.
//! - `GET /api/ai-sdk/chat/{id}/stream`: the chat's running answer replayed from its start; 204
//!   when none is running (or the chat is unknown, or another user's).
//!
//! A chat id is the user's: it names their conversation with that id, else the conversation
//! [`chat_conversation_id`] derives from the user and the chat id (created by the first message).
//! Another user's chat of the same id is another conversation. Closing a response does not stop
//! the run (resume exists): Stop is `POST /api/runs/{run_id}/cancel`.

use std::{
    collections::{HashSet, VecDeque},
    sync::Arc,
};

use axum::{
    extract::{Path, State},
    http::{HeaderName, HeaderValue, StatusCode},
    response::{IntoResponse, Response},
    routing::{get, post},
    Router,
};
use bytes::Bytes;
use futures::Stream;
use serde::Deserialize;
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::{
    extract::ApiJson,
    source::{self, Source},
    sse_frames::{self, Frames, Mapping, Reader},
    AppState, CurrentUser,
};
use crate::{
    error::{Error, Result},
    formats::ai_sdk::{UiMessageStream, DONE, STREAM_HEADER},
    runs::ChatRequest,
    sink::ApprovalAnswer,
};
use app::protocol::{ApprovalDecision, Event, EventKind, ResolvedBy};

/// The longest chat id taken.
const MAX_CHAT_ID: usize = 200;

pub(super) fn router() -> Router<AppState> {
    Router::new()
        .route("/api/ai-sdk/chat", post(chat))
        .route("/api/ai-sdk/chat/{id}/stream", get(resume))
}

/// What `DefaultChatTransport` posts. Glassbox keeps the conversation: of `messages` only the
/// last one is read.
#[derive(Debug, Deserialize)]
pub struct ChatBody {
    id: String,
    #[serde(default)]
    messages: Vec<UiMessage>,
    #[serde(default)]
    trigger: Option<String>,
    /// The model for this run (stored as the conversation's), else the conversation's, else the
    /// server's default.
    #[serde(default)]
    model: Option<String>,
}

#[derive(Debug, Deserialize)]
struct UiMessage {
    role: String,
    #[serde(default)]
    parts: Vec<Value>,
}

/// `POST /api/ai-sdk/chat`.
async fn chat(
    State(state): State<AppState>,
    user: CurrentUser,
    ApiJson(body): ApiJson<ChatBody>,
) -> Result<Response> {
    let chat_id = checked_chat_id(&body.id)?;
    if let Some(trigger) = body.trigger.as_deref() {
        if !matches!(trigger, "submit-message" | "regenerate-message") {
            return Err(Error::InvalidField(format!(
                "`trigger` must be submit-message or regenerate-message, not {trigger}"
            )));
        }
    }
    let last = body
        .messages
        .last()
        .ok_or_else(|| Error::InvalidField("`messages` must not be empty".into()))?;
    let conversation = conversation_of(&state, user.id(), chat_id).await?;
    match last.role.as_str() {
        "user" => start(&state, &user, conversation, last, body.model).await,
        "assistant" => answer(&state, &user, conversation, last).await,
        role => Err(Error::InvalidField(format!(
            "the last message must be the user's or the assistant's, not {role}'s"
        ))),
    }
}

/// Starts a run with the user's message's text.
async fn start(
    state: &AppState,
    user: &CurrentUser,
    conversation: Conversation,
    message: &UiMessage,
    model: Option<String>,
) -> Result<Response> {
    let content: String = message
        .parts
        .iter()
        .filter(|part| part["type"] == "text")
        .filter_map(|part| part["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n");
    let (conversation_id, new_conversation_id) = match conversation {
        Conversation::Existing { id, .. } => (Some(id), None),
        Conversation::New(id) => (None, Some(id)),
    };
    let request = ChatRequest {
        conversation_id,
        content,
        model,
        new_conversation_id,
        regenerate: None,
        edit: None,
    };
    let (run, _) = state.engine.start(user.id(), request).await?;
    Ok(response(Source::Local(run), None))
}

/// Answers the approval requests the message answers, then continues the run's message.
async fn answer(
    state: &AppState,
    user: &CurrentUser,
    conversation: Conversation,
    message: &UiMessage,
) -> Result<Response> {
    let answers = approval_answers(message, &user.0.name);
    if answers.is_empty() {
        return Err(Error::InvalidField(
            "the last message is the assistant's and answers no approval request; send the user's message".into(),
        ));
    }
    if matches!(conversation, Conversation::New(_)) {
        return Err(Error::NotFound("conversation"));
    }
    let source = running(state, user.id(), &conversation)
        .await?
        .ok_or_else(|| Error::Conflict("no run of this chat is waiting for an answer".into()))?;
    let mut answered = HashSet::new();
    for (call_id, answer) in answers {
        match state
            .engine
            .answer_approval(user.id(), source.run_id(), &call_id, answer)
            .await
        {
            // Answered before (a repeated request), or the run ended meanwhile: the stream
            // shows what happened.
            Ok(_) | Err(Error::Conflict(_)) => {}
            Err(error) => return Err(error),
        }
        answered.insert(call_id);
    }
    let logged = source.logged().await?;
    Ok(response(source, Some(continuation(logged, &answered))))
}

/// The approval answers of a message's tool parts (`state: approval-responded`), by call id.
fn approval_answers(message: &UiMessage, user_name: &str) -> Vec<(String, ApprovalAnswer)> {
    message
        .parts
        .iter()
        .filter(|part| part["state"] == "approval-responded")
        .filter_map(|part| {
            let approval = &part["approval"];
            let id = approval["id"].as_str()?;
            let approved = approval["approved"].as_bool()?;
            let reason = approval["reason"]
                .as_str()
                .map(|reason| reason.chars().take(500).collect::<String>())
                .filter(|reason| !reason.trim().is_empty());
            let decision = match approved {
                true => ApprovalDecision::Approve,
                false => ApprovalDecision::Deny,
            };
            let by = ResolvedBy::User(user_name.to_owned());
            Some((
                id.to_owned(),
                ApprovalAnswer {
                    decision,
                    by,
                    reason,
                },
            ))
        })
        .collect()
}

/// Where the client's last response paused: the run's log replayed (silently) as that response
/// read it, up to the first pause at or after the last request among the answered calls. The
/// mapping there, and the seq the continuation streams after. The pauses are found by the
/// mapping alone (an approval request without an answer in the log so far is still waiting):
/// the response that paused saw the same log up to there.
fn continuation(
    logged: Vec<(u64, Arc<str>)>,
    answered: &HashSet<String>,
) -> (UiMessageStream, u64) {
    let events: Vec<(u64, Event)> = logged
        .into_iter()
        .filter_map(|(seq, json)| Some((seq, parse(&json)?)))
        .collect();
    let asked_at = events
        .iter()
        .filter(|(_, event)| {
            matches!(&event.kind, EventKind::ToolApprovalRequested { call_id, .. } if answered.contains(call_id))
        })
        .map(|(seq, _)| *seq)
        .max()
        .unwrap_or(0);
    let mut mapper = UiMessageStream::new();
    let mut cursor = 0;
    for (seq, event) in &events {
        mapper.push(event);
        cursor = *seq;
        if mapper.waits_for_people() {
            mapper.pause();
            if *seq >= asked_at {
                break;
            }
        }
    }
    (mapper, cursor)
}

/// `GET /api/ai-sdk/chat/{id}/stream`: the running answer from its start, else 204.
async fn resume(
    State(state): State<AppState>,
    user: CurrentUser,
    Path(id): Path<String>,
) -> Result<Response> {
    let Ok(chat_id) = checked_chat_id(&id) else {
        return Ok(StatusCode::NO_CONTENT.into_response());
    };
    let conversation = conversation_of(&state, user.id(), chat_id).await?;
    Ok(match running(&state, user.id(), &conversation).await? {
        Some(source) => response(source, None),
        None => StatusCode::NO_CONTENT.into_response(),
    })
}

/// The user's run going in the conversation: here, else on another instance.
async fn running(
    state: &AppState,
    owner_id: &str,
    conversation: &Conversation,
) -> Result<Option<Source>> {
    let Conversation::Existing { id, active_run } = conversation else {
        return Ok(None);
    };
    source::running(state, owner_id, id, active_run.as_deref()).await
}

/// Which conversation a chat id names for a user.
enum Conversation {
    /// With the run going there (on any instance), if one is.
    Existing {
        id: String,
        active_run: Option<String>,
    },
    /// None yet: the first message creates it with this id.
    New(String),
}

/// The user's conversation of that id, else the one derived from the user and the chat id.
async fn conversation_of(state: &AppState, owner_id: &str, chat_id: &str) -> Result<Conversation> {
    let store = state.engine.store();
    let existing = |id: &str, found: app::models::Conversation| Conversation::Existing {
        id: id.to_owned(),
        active_run: found.active_run.map(|run| run.run_id),
    };
    if let Some(found) = store.get_conversation(owner_id, chat_id).await? {
        return Ok(existing(chat_id, found));
    }
    let derived = chat_conversation_id(owner_id, chat_id);
    Ok(match store.get_conversation(owner_id, &derived).await? {
        Some(found) => existing(&derived, found),
        None => Conversation::New(derived),
    })
}

/// A conversation id for a user's chat id: a UUID (version 8) from SHA-256 of both, so each user
/// has their own conversation whatever chat id another user picks.
pub fn chat_conversation_id(owner_id: &str, chat_id: &str) -> String {
    let digest = Sha256::digest(format!("glassbox ai-sdk chat\n{owner_id}\n{chat_id}"));
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&digest[..16]);
    bytes[6] = (bytes[6] & 0x0f) | 0x80;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    uuid::Uuid::from_bytes(bytes).to_string()
}

fn checked_chat_id(id: &str) -> Result<&str> {
    let id = id.trim();
    if id.is_empty() || id.chars().count() > MAX_CHAT_ID {
        return Err(Error::InvalidField(format!(
            "`id` must be 1 to {MAX_CHAT_ID} characters"
        )));
    }
    Ok(id)
}

fn parse(json: &str) -> Option<Event> {
    match serde_json::from_str(json) {
        Ok(event) => Some(event),
        Err(error) => {
            tracing::warn!(%error, "an event of the run log does not parse; left out of the AI SDK stream");
            None
        }
    }
}

/// The run's message as a UI message stream: whole, or continued after a paused response
/// (`after`: the mapping as that response left it, and the seq it had read).
fn response(source: Source, after: Option<(UiMessageStream, u64)>) -> Response {
    let mut response = sse_frames::response(frames(source, after));
    response.headers_mut().insert(
        HeaderName::from_static(STREAM_HEADER.0),
        HeaderValue::from_static(STREAM_HEADER.1),
    );
    response
}

/// The UI message stream's mapping of one response: whether it is done (the run ended, or the
/// response paused for answers to approval requests; `[DONE]` is then the last frame). What
/// every delta reads first (`repr(C)`, see `sse_frames::Reader`).
#[repr(C)]
struct Follow {
    done: bool,
    mapper: UiMessageStream,
    source: Source,
}

impl Mapping for Follow {
    fn delta(&mut self, json: &str, frames: &mut Frames) -> Option<Bytes> {
        let mapper = &mut self.mapper;
        frames.write(None, json.len(), |out| mapper.push_delta(json, out))
    }

    /// The frames of any other event; when the run then waits only for answers to approval
    /// requests, the response pauses (ends).
    fn event(&mut self, json: &str, frames: &mut Frames, out: &mut VecDeque<Bytes>) {
        let Some(event) = parse(json) else {
            return;
        };
        let mut chunks = self.mapper.push(&event);
        let source = &self.source;
        if self.mapper.waits_for_people()
            && self
                .mapper
                .open_calls()
                .all(|call| source.awaits_answer(call))
        {
            chunks.extend(self.mapper.pause());
            self.done = true;
        }
        self.done |= self.mapper.is_ended();
        for chunk in chunks {
            out.extend(frames.write(None, 256, |out| serde_json::to_writer(out, &chunk).is_ok()));
        }
        if self.done {
            out.push_back(frames.data(None, DONE));
        }
    }

    fn ended(&mut self) -> bool {
        self.done
    }

    fn log_ended(&mut self, frames: &mut Frames, out: &mut VecDeque<Bytes>) {
        self.done = true;
        out.push_back(frames.data(None, DONE));
    }
}

fn frames(source: Source, after: Option<(UiMessageStream, u64)>) -> impl Stream<Item = Bytes> {
    let (mapper, after, restart) = match after {
        Some((mapper, after)) => {
            let restart = mapper.restart();
            (mapper, after, Some(restart))
        }
        None => (UiMessageStream::new(), 0, None),
    };
    let events = source.events(after);
    let follow = Follow {
        source,
        mapper,
        done: false,
    };
    let mut reader = Reader::new(events, follow);
    if let Some(restart) = restart {
        reader.queue(|_, frames, out| {
            out.extend(frames.write(None, 64, |out| serde_json::to_writer(out, &restart).is_ok()));
        });
    }
    reader
}
