//! The read API: traces and conversations of the requesting user; a trace also for the holder of
//! a share link to it (`?share=TOKEN`, see [`Reader`]). Each reads through [`crate::reads`], as the
//! pages do.

use axum::{
    extract::{rejection::QueryRejection, Path, Query, State},
    routing::{any, get, post},
    Json, Router,
};

use serde::Deserialize;

use app::models::{Conversation, ConversationSummary, InspectorEntry, ModelList};

use super::{AppState, CurrentUser};
use crate::{
    auth::Reader,
    error::{Error, Result},
    reads,
    store::{ModelTurn, Trace},
};

/// The reads (traces, conversations, models, tools), the exports, and a JSON 404 for any other
/// path under `/api/`.
pub(super) fn router() -> Router<AppState> {
    Router::new()
        .route("/api/models", get(models))
        .route("/api/models/reload", post(reload_models))
        .route("/api/tools", get(tools))
        .route("/api/traces/{trace_id}", get(trace))
        .route("/api/traces/{trace_id}/inspector.json", get(inspector))
        .route("/api/traces/{trace_id}/model-turns", get(model_turns))
        .route("/thoughtflow/{file}", get(thoughtflow))
        .route("/api/conversations", get(conversations))
        .route("/api/conversations/{id}", get(conversation))
        .route("/api/{*rest}", any(unknown_api))
}

/// `GET /api/traces/{trace_id}`: the trace with every event.
pub async fn trace(
    State(state): State<AppState>,
    reader: Reader,
    Path(trace_id): Path<String>,
) -> Result<Json<Trace>> {
    Ok(Json(reads::trace(&state.store, &reader, &trace_id).await?))
}

/// Which conversations `GET /api/conversations` lists.
#[derive(Debug, Default, Deserialize)]
pub struct ListQuery {
    /// `true`: the archived ones only; else the others.
    #[serde(default)]
    archived: bool,
}

/// `GET /api/conversations[?archived=true]`: the user's conversations, newest first.
pub async fn conversations(
    State(state): State<AppState>,
    user: CurrentUser,
    query: Result<Query<ListQuery>, QueryRejection>,
) -> Result<Json<Vec<ConversationSummary>>> {
    let Query(ListQuery { archived }) =
        query.map_err(|rejection| Error::InvalidField(rejection.body_text()))?;
    Ok(Json(
        reads::conversations(&state.store, user.id(), archived).await?,
    ))
}

/// `GET /api/conversations/{id}`: one of them with its messages.
pub async fn conversation(
    State(state): State<AppState>,
    user: CurrentUser,
    Path(id): Path<String>,
) -> Result<Json<Conversation>> {
    Ok(Json(
        reads::conversation(&state.store, user.id(), &id).await?,
    ))
}

/// Anything else under `/api/` is a JSON 404, not a page.
pub async fn unknown_api() -> Error {
    Error::NotFound("API route")
}

/// `GET /api/models`: model ids only (never a provider's URL or key), and the default.
pub async fn models(State(state): State<AppState>) -> Json<ModelList> {
    Json(reads::models(&state.engine))
}

/// `POST /api/models/reload` (a signed-in user): asks the servers configured with
/// `"models": "discover"` for their models again, then answers the list as `GET /api/models` does.
pub async fn reload_models(State(state): State<AppState>, _user: CurrentUser) -> Json<ModelList> {
    state.engine.discover_models().await;
    Json(reads::models(&state.engine))
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
) -> Result<Json<Vec<InspectorEntry>>> {
    Ok(Json(
        reads::inspector(&state.store, &reader, &trace_id).await?,
    ))
}

/// `GET /api/traces/{trace_id}/model-turns`: each model turn's request and response as stored.
pub async fn model_turns(
    State(state): State<AppState>,
    reader: Reader,
    Path(trace_id): Path<String>,
) -> Result<Json<Vec<ModelTurn>>> {
    let (_, turns) = reads::model_turns(&state.store, &reader, &trace_id).await?;
    Ok(Json(turns))
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
    let flow = reads::thoughtflow(&state.store, user.id(), id).await?;
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
