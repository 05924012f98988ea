//! Feedback (issue 36): a thumbs up or down with an optional comment on an answer, a note on one
//! of its steps (a reasoning part or a tool call). The owner's only: anyone else's message answers
//! 404, as an unknown one does; a message whose run is going answers 409 `run_in_progress`.
//! A second `PUT` edits; `DELETE` removes (404 when there is nothing to remove).

use axum::{
    extract::{Path, State},
    http::StatusCode,
    routing::put,
    Json, Router,
};
use serde::Deserialize;

use app::models::{Feedback, Rating};

use super::{extract::ApiJson, AppState, CurrentUser};
use crate::{
    error::{Error, Result},
    stamps::now_rfc3339,
    store::feedback::{clean_comment, FeedbackChange},
};

/// The body of `PUT …/feedback`: a rating, a comment, or both.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AnswerFeedback {
    /// `"up"`, `"down"`, or `null` for a comment alone.
    #[serde(default)]
    rating: Option<Rating>,
    /// At most [`crate::store::feedback::MAX_COMMENT_CHARS`] characters.
    #[serde(default)]
    comment: Option<String>,
}

/// The body of `PUT …/steps/{step_id}/note`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StepNote {
    comment: String,
}

pub(super) fn router() -> Router<AppState> {
    Router::new()
        .route(
            "/api/messages/{message_id}/feedback",
            put(put_feedback).delete(delete_feedback),
        )
        .route(
            "/api/messages/{message_id}/steps/{step_id}/note",
            put(put_note).delete(delete_note),
        )
}

/// `PUT /api/messages/{message_id}/feedback`: sets (or edits) the user's feedback on an answer.
pub async fn put_feedback(
    State(state): State<AppState>,
    user: CurrentUser,
    Path(message_id): Path<String>,
    ApiJson(body): ApiJson<AnswerFeedback>,
) -> Result<Json<Feedback>> {
    let comment = clean_comment(body.comment)?;
    if body.rating.is_none() && comment.is_empty() {
        return Err(Error::InvalidField(
            "give a rating (up or down) or a comment; DELETE removes the feedback".into(),
        ));
    }
    let change = FeedbackChange {
        owner_id: user.id().to_owned(),
        message_id,
        step_id: None,
        rating: body.rating,
        comment,
        now: now_rfc3339(),
    };
    Ok(Json(state.store.set_feedback(change).await?))
}

/// `DELETE /api/messages/{message_id}/feedback` (204).
pub async fn delete_feedback(
    State(state): State<AppState>,
    user: CurrentUser,
    Path(message_id): Path<String>,
) -> Result<StatusCode> {
    state
        .store
        .delete_feedback(user.id(), &message_id, None)
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// `PUT /api/messages/{message_id}/steps/{step_id}/note`: sets (or edits) a note on a step.
pub async fn put_note(
    State(state): State<AppState>,
    user: CurrentUser,
    Path((message_id, step_id)): Path<(String, String)>,
    ApiJson(body): ApiJson<StepNote>,
) -> Result<Json<Feedback>> {
    let comment = clean_comment(Some(body.comment))?;
    if comment.is_empty() {
        return Err(Error::InvalidField(
            "a note needs a comment; DELETE removes the note".into(),
        ));
    }
    let change = FeedbackChange {
        owner_id: user.id().to_owned(),
        message_id,
        step_id: Some(step_id),
        rating: None,
        comment,
        now: now_rfc3339(),
    };
    Ok(Json(state.store.set_feedback(change).await?))
}

/// `DELETE /api/messages/{message_id}/steps/{step_id}/note` (204).
pub async fn delete_note(
    State(state): State<AppState>,
    user: CurrentUser,
    Path((message_id, step_id)): Path<(String, String)>,
) -> Result<StatusCode> {
    state
        .store
        .delete_feedback(user.id(), &message_id, Some(&step_id))
        .await?;
    Ok(StatusCode::NO_CONTENT)
}
