//! `GET /api/compare/{a}/{b}`: two of the caller's runs compared step by step (issue 36; the
//! answer's shape is `app::compare::Comparison`, docs/protocol.md). Only the caller's own traces
//! are compared; another user's is a 404 like a missing one.

use axum::{
    extract::{Path, State},
    routing::get,
    Json, Router,
};

use app::compare::Comparison;

use super::{AppState, CurrentUser};
use crate::{error::Result, reads};

pub(super) fn router() -> Router<AppState> {
    Router::new().route("/api/compare/{a}/{b}", get(compare))
}

/// `GET /api/compare/{a}/{b}`: 400 `same_trace` when `a` is `b`, 404 when either is not the
/// caller's.
pub async fn compare(
    State(state): State<AppState>,
    user: CurrentUser,
    Path((a, b)): Path<(String, String)>,
) -> Result<Json<Comparison>> {
    Ok(Json(reads::compare(&state.store, user.id(), &a, &b).await?))
}
