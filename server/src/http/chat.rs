//! Starting runs, following their events, stopping them.

use app::protocol::{ResolvedBy, TraceStatus};
use std::sync::Arc;

use axum::{
    extract::{Path, Query, State},
    http::{header, HeaderMap},
    response::{IntoResponse, Response},
    routing::{get, post},
    Json, Router,
};
use futures::{stream, StreamExt};
use serde::Deserialize;
use serde_json::json;

use super::{extract::ApiJson, sse, AppState, CurrentUser};
use crate::{
    auth::Reader,
    error::{Error, Result},
    runs::{Answered, ChatRequest},
    sink::ApprovalAnswer,
};

/// `POST /api/chat`, a run's event stream, Stop and the answers to its approval questions.
pub(super) fn router() -> Router<AppState> {
    Router::new()
        .route("/api/chat", post(start))
        .route("/api/runs/{run_id}/events", get(events))
        .route("/api/runs/{run_id}/cancel", post(cancel))
        .route("/api/runs/{run_id}/approvals/{call_id}", post(approve))
}

/// `POST /api/chat`: starts a run and answers with its event stream from seq 1, or with its ids
/// when the client asks for `application/json` (it then subscribes separately).
pub async fn start(
    State(state): State<AppState>,
    user: CurrentUser,
    headers: HeaderMap,
    ApiJson(request): ApiJson<ChatRequest>,
) -> Result<Response> {
    let (run, started) = state.engine.start(user.id(), request).await?;
    if wants_json(&headers) {
        return Ok((axum::http::StatusCode::CREATED, Json(started)).into_response());
    }
    Ok(sse::response(sse::live(run, 0)))
}

fn wants_json(headers: &HeaderMap) -> bool {
    let accept = headers
        .get(header::ACCEPT)
        .and_then(|value| value.to_str().ok())
        .unwrap_or("");
    accept.contains("application/json") && !accept.contains("text/event-stream")
}

#[derive(Debug, Deserialize)]
pub struct EventsQuery {
    after: Option<u64>,
}

/// `GET /api/runs/{run_id}/events`: the events after `Last-Event-ID` (or `?after=N`), then live.
/// After the run has ended and left memory, they come from the stored trace. A share link to the
/// run's trace (`?share=TOKEN`) reads them too.
pub async fn events(
    State(state): State<AppState>,
    reader: Reader,
    Path(run_id): Path<String>,
    Query(query): Query<EventsQuery>,
    headers: HeaderMap,
) -> Result<Response> {
    let after = match headers.get("last-event-id") {
        Some(value) => value
            .to_str()
            .ok()
            .and_then(|text| text.trim().parse::<u64>().ok())
            .ok_or_else(|| {
                Error::MalformedBody("Last-Event-ID must be an event's seq number".into())
            })?,
        None => query.after.unwrap_or(0),
    };
    let events = run_events(&state, &reader, &run_id, after).await?;
    Ok(match reader {
        // A link's open streams end once it is revoked, here or on another instance.
        Reader::Share(share) => {
            sse::response(events.take_until(revoked(state.store.clone(), share.token)))
        }
        Reader::User(_) => sse::response(events),
    })
}

/// How often an open stream read through a share link checks that the link still exists.
const SHARE_RECHECK: std::time::Duration = std::time::Duration::from_secs(2);

/// Resolves once the share link `token` no longer exists.
async fn revoked(store: crate::store::Store, token: String) {
    loop {
        tokio::time::sleep(SHARE_RECHECK).await;
        if let Ok(None) = store.share(&token).await {
            return;
        }
    }
}

/// The events of a run after `after`: live from memory, from another instance through the
/// database, or from the stored trace.
async fn run_events(
    state: &AppState,
    reader: &Reader,
    run_id: &str,
    after: u64,
) -> Result<futures::stream::BoxStream<'static, (u64, Arc<str>)>> {
    if let Some(run) = state.engine.get(run_id) {
        if !reader.may_read(&run.owner_id, &run.trace_id) {
            return Err(Error::NotFound("run"));
        }
        return Ok(sse::live(run, after).boxed());
    }
    let trace = reader
        .trace_of_run(&state.store, run_id)
        .await?
        .ok_or(Error::NotFound("run"))?;
    if let (true, Some(bus), Some(postgres)) = (
        trace.status == TraceStatus::Running,
        state.engine.bus(),
        state.store.postgres(),
    ) {
        // Another instance runs it: follow it through the database.
        return Ok(sse::remote(postgres.clone(), bus.clone(), trace.trace_id, after).boxed());
    }
    let stored: Vec<(u64, Arc<str>)> = trace
        .events
        .iter()
        .filter(|event| event.seq > after)
        .filter_map(|event| Some((event.seq, Arc::from(serde_json::to_string(event).ok()?))))
        .collect();
    Ok(stream::iter(stored).boxed())
}

#[derive(Debug, Default, Deserialize)]
pub struct CancelRequest {
    #[serde(default)]
    reason: Option<String>,
}

/// `POST /api/runs/{run_id}/cancel`: answers once `message_cancelled` has gone out; 409 when the
/// run had already ended. The body (`{"reason": ...}`) is optional.
pub async fn cancel(
    State(state): State<AppState>,
    user: CurrentUser,
    Path(run_id): Path<String>,
    body: axum::body::Bytes,
) -> Result<Response> {
    let request: CancelRequest = if body.iter().all(u8::is_ascii_whitespace) {
        CancelRequest::default()
    } else {
        serde_json::from_slice(&body).map_err(|error| {
            Error::MalformedBody(format!("Failed to parse the request body as JSON: {error}"))
        })?
    };
    let reason = request
        .reason
        .map(|reason| reason.chars().take(500).collect::<String>());
    let (run_id, trace_id) = state.engine.cancel(user.id(), &run_id, reason).await?;
    Ok(
        Json(json!({ "run_id": run_id, "trace_id": trace_id, "status": "cancelled" }))
            .into_response(),
    )
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApprovalBody {
    pub decision: app::protocol::ApprovalDecision,
    #[serde(default)]
    pub reason: Option<String>,
}

/// `POST /api/runs/{run_id}/approvals/{call_id}` `{decision, reason?}`: the first answer to a
/// call's approval request; later ones get 409. On another instance's run the answer is
/// forwarded (202).
pub async fn approve(
    State(state): State<AppState>,
    user: CurrentUser,
    Path((run_id, call_id)): Path<(String, String)>,
    ApiJson(body): ApiJson<ApprovalBody>,
) -> Result<Response> {
    let answer = ApprovalAnswer {
        decision: body.decision,
        by: ResolvedBy::User(user.0.name.clone()),
        reason: body
            .reason
            .map(|reason| reason.chars().take(500).collect::<String>())
            .filter(|reason| !reason.trim().is_empty()),
    };
    let decision = answer.decision;
    let answered = state
        .engine
        .answer_approval(user.id(), &run_id, &call_id, answer)
        .await?;
    let reply = json!({ "run_id": run_id, "call_id": call_id, "decision": decision });
    Ok(match answered {
        Answered::Recorded => Json(reply).into_response(),
        Answered::Forwarded => {
            let reply = json!({ "run_id": run_id, "call_id": call_id, "decision": decision, "status": "forwarded" });
            (axum::http::StatusCode::ACCEPTED, Json(reply)).into_response()
        }
    })
}
