//! The read API: traces and conversations of the requesting user; a trace also for the holder of
//! a share link to it (`?share=TOKEN`, see [`Reader`]).

use axum::{
    extract::{Path, State},
    Json,
};

use app::models::{Conversation, ConversationSummary};

use super::{AppState, CurrentUser};
use crate::{
    auth::Reader,
    error::{Error, Result},
    store::Trace,
};

pub async fn trace(
    State(state): State<AppState>,
    reader: Reader,
    Path(trace_id): Path<String>,
) -> Result<Json<Trace>> {
    reader
        .trace(&state.store, &trace_id)
        .await?
        .map(Json)
        .ok_or(Error::NotFound("trace"))
}

pub async fn conversations(
    State(state): State<AppState>,
    user: CurrentUser,
) -> Result<Json<Vec<ConversationSummary>>> {
    Ok(Json(state.store.list_conversations(user.id()).await?))
}

pub async fn conversation(
    State(state): State<AppState>,
    user: CurrentUser,
    Path(id): Path<String>,
) -> Result<Json<Conversation>> {
    state
        .store
        .get_conversation(user.id(), &id)
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

/// `GET /api/tools`: the tools a run may call now, and each MCP server's state.
pub async fn tools(State(state): State<AppState>) -> Json<serde_json::Value> {
    Json(state.engine.tools().describe())
}

/// `GET /api/traces/{trace_id}/inspector.json`: the Agent Inspector list (seed 003).
pub async fn inspector(
    State(state): State<AppState>,
    reader: Reader,
    Path(trace_id): Path<String>,
) -> Result<Json<Vec<serde_json::Value>>> {
    let trace = reader
        .trace(&state.store, &trace_id)
        .await?
        .ok_or(Error::NotFound("trace"))?;
    let turns = reader.model_turns(&state.store, &trace).await?;
    Ok(Json(crate::exports::inspector(&trace, &turns)))
}

/// `GET /api/traces/{trace_id}/model-turns`: each model turn's request and response as stored.
pub async fn model_turns(
    State(state): State<AppState>,
    reader: Reader,
    Path(trace_id): Path<String>,
) -> Result<Json<Vec<crate::store::ModelTurn>>> {
    let trace = reader
        .trace(&state.store, &trace_id)
        .await?
        .ok_or(Error::NotFound("trace"))?;
    Ok(Json(reader.model_turns(&state.store, &trace).await?))
}

/// `GET /thoughtflow/{conversation_id}.json` and `.d2`: the conversation as a ThoughtFlow session.
pub async fn thoughtflow(
    State(state): State<AppState>,
    user: CurrentUser,
    Path(file): Path<String>,
) -> Result<axum::response::Response> {
    use axum::response::IntoResponse;
    let (id, format) = file
        .rsplit_once('.')
        .ok_or(Error::NotFound("ThoughtFlow export"))?;
    if format != "json" && format != "d2" {
        return Err(Error::NotFound("ThoughtFlow export"));
    }
    let conversation = state
        .store
        .get_conversation(user.id(), id)
        .await?
        .ok_or(Error::NotFound("conversation"))?;
    let traces = state.store.traces_for_conversation(user.id(), id).await?;
    let flow = crate::exports::thoughtflow(&conversation, &traces);
    Ok(match format {
        "json" => Json(flow).into_response(),
        _ => (
            [(
                axum::http::header::CONTENT_TYPE,
                "text/plain; charset=utf-8",
            )],
            crate::exports::to_d2(&flow),
        )
            .into_response(),
    })
}
