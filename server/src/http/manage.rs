//! Managing one's conversations (issue 35): rename, archive or unarchive (`PATCH`), delete one,
//! delete all. The owner's only: anyone else's conversation answers 404, as an unknown one does.
//! A conversation with a run going is not deleted (409 `run_in_progress`): stop the run first.

use axum::{
    extract::{rejection::QueryRejection, Path, Query, State},
    http::StatusCode,
    routing::{delete, patch, post},
    Json, Router,
};
use serde::{Deserialize, Serialize};

use app::models::{Conversation, ConversationSummary};

use super::{extract::ApiJson, AppState, CurrentUser};
use crate::{
    error::{Error, Result},
    stamps::now_rfc3339,
    store::{clean_title, ConversationChange},
};

/// What a `PATCH` may change; at least one field.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Change {
    /// The new title: plain text, on one line, 1 to 200 characters.
    title: Option<String>,
    /// Archive (`true`) or unarchive (`false`).
    archived: Option<bool>,
}

/// What deleting all of one's conversations answers.
#[derive(Debug, Serialize)]
pub struct Deleted {
    deleted: u64,
}

pub(super) fn router() -> Router<AppState> {
    Router::new()
        .route("/api/conversations", delete(delete_all))
        .route("/api/conversations/{id}", patch(update).delete(delete_one))
        .route("/api/conversations/{id}/branch", post(branch))
}

/// What `POST /api/conversations/{id}/branch` takes: the version of a message to show.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Branch {
    message_id: String,
}

/// `POST /api/conversations/{id}/branch`'s query: `?page=newest` answers only the newest page.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BranchQuery {
    page: Option<NewestPage>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "lowercase")]
enum NewestPage {
    Newest,
}

/// `POST /api/conversations/{id}/branch`: switches the conversation to another version of one
/// of its messages (and below it, the branch chosen last there); answers the conversation as
/// `GET` does, or with `?page=newest` its newest page as the chat page shows it (the browser's
/// switch: a long conversation whole is megabytes to decode). 409 while a run is going in it.
pub async fn branch(
    State(state): State<AppState>,
    user: CurrentUser,
    Path(id): Path<String>,
    query: Result<Query<BranchQuery>, QueryRejection>,
    ApiJson(branch): ApiJson<Branch>,
) -> Result<Json<Conversation>> {
    let Query(BranchQuery { page }) =
        query.map_err(|rejection| Error::InvalidField(rejection.body_text()))?;
    let conversation =
        crate::reads::switch_branch(&state.store, user.id(), &id, &branch.message_id).await?;
    Ok(Json(match page {
        Some(NewestPage::Newest) => conversation.page(None),
        None => conversation,
    }))
}

/// `PATCH /api/conversations/{id}`: renames and/or archives it; answers its summary.
pub async fn update(
    State(state): State<AppState>,
    user: CurrentUser,
    Path(id): Path<String>,
    ApiJson(change): ApiJson<Change>,
) -> Result<Json<ConversationSummary>> {
    if change.title.is_none() && change.archived.is_none() {
        return Err(Error::InvalidField(
            "nothing to change: give a title or archived".into(),
        ));
    }
    let change = ConversationChange {
        title: change.title.as_deref().map(clean_title).transpose()?,
        archived: change.archived,
        now: now_rfc3339(),
    };
    let summary = state
        .store
        .update_conversation(user.id(), &id, change)
        .await?;
    Ok(Json(summary))
}

/// `DELETE /api/conversations/{id}`: deletes it and everything of it (204).
pub async fn delete_one(
    State(state): State<AppState>,
    user: CurrentUser,
    Path(id): Path<String>,
) -> Result<StatusCode> {
    state.store.delete_conversation(user.id(), &id).await?;
    state.engine.forget_conversations(user.id(), Some(&id));
    Ok(StatusCode::NO_CONTENT)
}

/// `DELETE /api/conversations`: deletes every conversation of the user; how many.
pub async fn delete_all(State(state): State<AppState>, user: CurrentUser) -> Result<Json<Deleted>> {
    let deleted = state.store.delete_all_conversations(user.id()).await?;
    state.engine.forget_conversations(user.id(), None);
    Ok(Json(Deleted { deleted }))
}
