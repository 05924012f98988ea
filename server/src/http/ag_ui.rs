//! `POST /api/ag-ui`: a Glassbox run as an AG-UI 1.0 run, for `@ag-ui/client` and CopilotKit front
//! ends. The threadId is a conversation of the caller's (created with that id when new); the new
//! user message is the last `user` message. The run's log, read as `/api/chat`'s SSE reads it,
//! goes through [`crate::ag_ui::outbound`]. Closing the connection stops the run, as AG-UI
//! expects, unless the AG-UI run has ended (an approval request ends it with an interrupt, and a
//! later request's `resume` answers it and streams the rest of the same Glassbox run, from any
//! instance on PostgreSQL).

use std::{collections::VecDeque, sync::Arc};

use app::protocol::{ApprovalDecision, ResolvedBy};
use axum::{extract::State, response::Response, routing::post, Router};
use bytes::Bytes;
use serde_json::Value;

use super::{
    extract::ApiJson,
    source::{self, Source},
    sse_frames::{self, Frames, Mapping, Reader},
    AppState, CurrentUser,
};
use crate::{
    ag_ui::{
        outbound::{call_of_interrupt, Outbound},
        wire::{Message, ResumeEntry, RunAgentInput, Stamped},
    },
    error::{Error, Result},
    runs::{ChatRequest, Engine},
    sink::ApprovalAnswer,
    stamps::now_unix_ms,
};

/// The longest threadId taken as a conversation id.
const MAX_THREAD_ID: usize = 200;

pub(super) fn router() -> Router<AppState> {
    Router::new().route("/api/ag-ui", post(run))
}

/// Starts a run (or, with `resume`, answers its approval and follows it) as an AG-UI event stream.
pub async fn run(
    State(state): State<AppState>,
    user: CurrentUser,
    ApiJson(input): ApiJson<RunAgentInput>,
) -> Result<Response> {
    let thread_id = input.thread_id.trim();
    if thread_id.is_empty() || thread_id.chars().count() > MAX_THREAD_ID {
        return Err(Error::InvalidField(format!(
            "`threadId` must have 1 to {MAX_THREAD_ID} characters"
        )));
    }
    let outbound = Outbound::new(thread_id.to_owned(), input.run_id.clone());
    if let Some(resume) = input.resume.as_ref().filter(|resume| !resume.is_empty()) {
        let (run, after) = resume_run(&state, &user, thread_id, resume).await?;
        return Ok(respond(&state.engine, &user, &run, after, outbound));
    }
    let content = last_user_text(&input.messages)?;
    let existing = state
        .store
        .get_conversation(user.id(), thread_id)
        .await?
        .is_some();
    let request = ChatRequest {
        regenerate: None,
        edit: None,
        conversation_id: existing.then(|| thread_id.to_owned()),
        new_conversation_id: (!existing).then(|| thread_id.to_owned()),
        content,
        model: input
            .forwarded_props
            .get("model")
            .and_then(Value::as_str)
            .map(str::to_owned),
    };
    let (run, _) = match state.engine.start(user.id(), request).await {
        // A new threadId that another user's conversation has: not found, as any other's.
        Err(Error::Conflict(_)) if !existing => return Err(Error::NotFound("conversation")),
        started => started?,
    };
    Ok(respond(
        &state.engine,
        &user,
        &Source::Local(run),
        0,
        outbound,
    ))
}

/// The text of the request's last `user` message (its text parts, for content parts).
fn last_user_text(messages: &[Message]) -> Result<String> {
    let content = messages
        .iter()
        .rev()
        .find_map(|message| match message {
            Message::User { content, .. } => Some(content),
            _ => None,
        })
        .ok_or_else(|| Error::InvalidField("`messages` has no `user` message".into()))?;
    let text = match content {
        Value::String(text) => text.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter(|part| part.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|part| part.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    };
    Ok(text)
}

/// Answers the approvals a `resume` names, in the caller's run going in the thread (on this
/// instance or another), and where its log stands: the rest of the run follows from there.
async fn resume_run(
    state: &AppState,
    user: &CurrentUser,
    thread_id: &str,
    resume: &[ResumeEntry],
) -> Result<(Source, u64)> {
    let not_found = || Error::NotFound("run waiting for approval");
    let conversation = state
        .store
        .get_conversation(user.id(), thread_id)
        .await?
        .ok_or_else(not_found)?;
    let active_run = conversation.active_run.map(|active| active.run_id);
    let run = source::running(state, user.id(), thread_id, active_run.as_deref())
        .await?
        .ok_or_else(not_found)?;
    let after = run.last_seq().await?;
    for entry in resume {
        let call_id = call_of_interrupt(&entry.interrupt_id)
            .ok_or_else(|| Error::InvalidField("`resume[].interruptId` is unknown".into()))?;
        let answer = approval_answer(user, entry);
        state
            .engine
            .answer_approval(user.id(), run.run_id(), call_id, answer)
            .await?;
    }
    Ok((run, after))
}

/// `{approved, reason?}` as an approval's answer; a cancelled interrupt denies the call.
fn approval_answer(user: &CurrentUser, entry: &ResumeEntry) -> ApprovalAnswer {
    let payload = entry.payload.as_ref();
    let approved = entry.status == "resolved"
        && payload
            .and_then(|payload| payload.get("approved"))
            .and_then(Value::as_bool)
            .unwrap_or(false);
    let reason = payload
        .and_then(|payload| payload.get("reason"))
        .and_then(Value::as_str)
        .map(|reason| reason.chars().take(500).collect::<String>())
        .filter(|reason| !reason.trim().is_empty());
    ApprovalAnswer {
        decision: if approved {
            ApprovalDecision::Approve
        } else {
            ApprovalDecision::Deny
        },
        by: ResolvedBy::User(user.0.name.clone()),
        reason,
    }
}

/// The SSE response: RUN_STARTED, then the run's events after `after` as AG-UI events, up to the
/// terminal one (or the interrupt), numbered from 1.
fn respond(
    engine: &Arc<Engine>,
    user: &CurrentUser,
    run: &Source,
    after: u64,
    outbound: Outbound,
) -> Response {
    let stop = StopOnDrop {
        engine: engine.clone(),
        owner_id: user.id().to_owned(),
        run_id: run.run_id().to_owned(),
        armed: true,
    };
    let feed = Feed {
        last_id: 0,
        outbound,
        stop,
    };
    let mut reader = Reader::new(run.events(after), feed);
    reader.queue(|feed, frames, out| {
        let first = stamp(feed.outbound.started(), now_unix_ms());
        feed.push(&first, frames, out);
    });
    sse_frames::response(reader)
}

/// The AG-UI mapping of one response, and the guard that stops the run if the client leaves
/// early. What a delta reads leads (`repr(C)`), as in [`Outbound`]: see
/// [`sse_frames::Reader`].
#[repr(C)]
struct Feed {
    /// The SSE id of the last frame made.
    last_id: u64,
    outbound: Outbound,
    stop: StopOnDrop,
}

impl Mapping for Feed {
    fn delta(&mut self, json: &str, frames: &mut Frames) -> Option<Bytes> {
        let outbound = &self.outbound;
        let frame = frames.write(Some(self.last_id + 1), json.len(), |out| {
            outbound.push_delta(json, out)
        })?;
        self.last_id += 1;
        Some(frame)
    }

    fn event(&mut self, json: &str, frames: &mut Frames, out: &mut VecDeque<Bytes>) {
        let Ok(event) = serde_json::from_str::<app::protocol::Event>(json) else {
            return;
        };
        let at = app::protocol::parse_rfc3339_millis(&event.ts).unwrap_or_else(now_unix_ms);
        for mapped in self.outbound.map(&event.kind) {
            self.push(&stamp(mapped, at), frames, out);
        }
        self.ended();
    }

    /// Once the AG-UI run has ended, leaving no longer stops the Glassbox run.
    fn ended(&mut self) -> bool {
        let ended = self.outbound.ended();
        if ended {
            self.stop.armed = false;
        }
        ended
    }

    fn log_ended(&mut self, _: &mut Frames, _: &mut VecDeque<Bytes>) {}
}

impl Feed {
    /// Queues the frame of an event's JSON.
    fn push(&mut self, json: &str, frames: &mut Frames, out: &mut VecDeque<Bytes>) {
        self.last_id += 1;
        out.push_back(frames.data(Some(self.last_id), json));
    }
}

fn stamp(event: crate::ag_ui::wire::Event, at_ms: i64) -> String {
    let stamped = Stamped {
        event,
        timestamp: u64::try_from(at_ms).unwrap_or(0),
    };
    serde_json::to_string(&stamped)
        .unwrap_or_else(|_| r#"{"type":"RUN_ERROR","message":"unencodable event"}"#.to_owned())
}

/// Stops the run when the response is dropped before the AG-UI run ended: the client closed the
/// connection, which is AG-UI's only way to cancel.
struct StopOnDrop {
    engine: Arc<Engine>,
    owner_id: String,
    run_id: String,
    armed: bool,
}

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let (engine, owner_id, run_id) = (
            self.engine.clone(),
            std::mem::take(&mut self.owner_id),
            std::mem::take(&mut self.run_id),
        );
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        runtime.spawn(async move {
            let reason = "The AG-UI client closed the connection.".to_owned();
            if let Err(error) = engine.cancel(&owner_id, &run_id, Some(reason)).await {
                tracing::debug!(%run_id, %error, "stopping a run whose AG-UI client left");
            }
        });
    }
}
