//! Share links of a trace, for its owner: create, list, revoke. Whoever holds a link reads the
//! trace through [`crate::auth::Reader`]; these routes are the owner's only.

use axum::{
    extract::{Path, State},
    http::StatusCode,
    response::{IntoResponse, Response},
    routing::{delete, get},
    Json, Router,
};
use serde::{Deserialize, Serialize};

use super::{extract::ApiJson, AppState, CurrentUser};
use crate::{
    auth::random_token,
    error::{Error, Result},
    stamps::now_rfc3339,
    store::TraceShare,
};

/// A link as the API shows it: the token, and the page it opens.
#[derive(Debug, Serialize)]
pub struct ShareLink {
    #[serde(flatten)]
    share: TraceShare,
    /// `/t/{trace_id}?share={token}`, relative to the server's address.
    path: String,
}

impl From<TraceShare> for ShareLink {
    fn from(share: TraceShare) -> Self {
        let path = format!("/t/{}?share={}", share.trace_id, share.token);
        ShareLink { share, path }
    }
}

/// What a new link may say (the body is optional).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewShare {
    /// Show the conversation before the shared turn too (off: the turn alone).
    #[serde(default)]
    include_history: bool,
}

/// A trace's share links: made, listed and revoked by its owner.
pub(super) fn router() -> Router<AppState> {
    Router::new()
        .route("/api/traces/{trace_id}/shares", get(list).post(create))
        .route("/api/traces/{trace_id}/shares/{token}", delete(revoke))
}

/// `POST /api/traces/{trace_id}/shares`: a new link (201).
pub async fn create(
    State(state): State<AppState>,
    user: CurrentUser,
    Path(trace_id): Path<String>,
    body: Option<ApiJson<NewShare>>,
) -> Result<Response> {
    let options = body.map(|ApiJson(options)| options).unwrap_or_default();
    let share = TraceShare {
        token: random_token()?,
        trace_id,
        owner_id: user.id().to_owned(),
        created_at: now_rfc3339(),
        include_history: options.include_history,
    };
    state.store.add_share(share.clone()).await?;
    Ok((StatusCode::CREATED, Json(ShareLink::from(share))).into_response())
}

/// `GET /api/traces/{trace_id}/shares`: the trace's links, oldest first.
pub async fn list(
    State(state): State<AppState>,
    user: CurrentUser,
    Path(trace_id): Path<String>,
) -> Result<Json<Vec<ShareLink>>> {
    let shares = state
        .store
        .shares_of(user.id(), &trace_id)
        .await?
        .ok_or(Error::NotFound("trace"))?;
    Ok(Json(shares.into_iter().map(ShareLink::from).collect()))
}

/// `DELETE /api/traces/{trace_id}/shares/{token}`: revokes a link (204); the next request with
/// it gets 404.
pub async fn revoke(
    State(state): State<AppState>,
    user: CurrentUser,
    Path((trace_id, token)): Path<(String, String)>,
) -> Result<StatusCode> {
    state
        .store
        .delete_share(user.id().to_owned(), trace_id, token)
        .await?;
    Ok(StatusCode::NO_CONTENT)
}
