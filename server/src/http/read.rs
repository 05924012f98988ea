//! The read API: traces and conversations of the requesting user.

use axum::{
    extract::{Path, State},
    Json,
};

use app::models::{Conversation, ConversationSummary};

use super::{AppState, CurrentUser};
use crate::{
    error::{Error, Result},
    store::Trace,
};

pub async fn trace(
    State(state): State<AppState>,
    user: CurrentUser,
    Path(trace_id): Path<String>,
) -> Result<Json<Trace>> {
    state
        .store
        .get_trace(&user.0, &trace_id)
        .await?
        .map(Json)
        .ok_or(Error::NotFound("trace"))
}

pub async fn conversations(
    State(state): State<AppState>,
    user: CurrentUser,
) -> Result<Json<Vec<ConversationSummary>>> {
    Ok(Json(state.store.list_conversations(&user.0).await?))
}

pub async fn conversation(
    State(state): State<AppState>,
    user: CurrentUser,
    Path(id): Path<String>,
) -> Result<Json<Conversation>> {
    state
        .store
        .get_conversation(&user.0, &id)
        .await?
        .map(Json)
        .ok_or(Error::NotFound("conversation"))
}

/// Anything else under `/api/` is a JSON 404, not a page.
pub async fn unknown_api() -> Error {
    Error::NotFound("API route")
}

/// `GET /api/models`: model ids only (never a provider's URL or key), and the default.
pub async fn models(State(state): State<AppState>) -> Json<serde_json::Value> {
    let (models, default) = state.engine.models();
    Json(serde_json::json!({ "models": models, "default": default }))
}
