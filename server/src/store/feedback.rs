//! Feedback (issue 36), the part both backends share: what a write carries, which message and
//! step it may target, and its search piece. Each backend writes a change in one job of its
//! writer: it reads the message (the owner's only), checks the target here, upserts or deletes the
//! row and replaces its search piece, all in one transaction.

use app::models::{Feedback, Rating};
use app::protocol::{Message, MessageStatus, Role, Segment};

use super::search::SearchDoc;
use crate::error::{Error, Result};

/// The longest comment or note, in characters; a longer one is 413 `payload_too_large`.
pub const MAX_COMMENT_CHARS: usize = 4_000;

/// A feedback to store: on the answer `message_id` (`step_id` none) or a note on one of its steps.
#[derive(Debug, Clone)]
pub struct FeedbackChange {
    pub owner_id: String,
    pub message_id: String,
    pub step_id: Option<String>,
    pub rating: Option<Rating>,
    pub comment: String,
    pub now: String,
}

impl FeedbackChange {
    /// The stored step column: `''` for the answer itself.
    pub fn step_column(&self) -> &str {
        self.step_id.as_deref().unwrap_or("")
    }
}

/// A comment as stored: trimmed; over [`MAX_COMMENT_CHARS`] is 413.
pub fn clean_comment(comment: Option<String>) -> Result<String> {
    let comment = comment.unwrap_or_default().trim().to_owned();
    if comment.chars().count() > MAX_COMMENT_CHARS {
        return Err(Error::FieldTooLarge(format!(
            "a comment is at most {MAX_COMMENT_CHARS} characters"
        )));
    }
    Ok(comment)
}

/// The message `change` targets, from its stored `body`, once [`check_target`] lets it take the
/// change.
pub fn target_message(body: String, change: &FeedbackChange) -> Result<Message> {
    let message = super::decode_message(body)?;
    check_target(&message, change.step_id.as_deref())?;
    Ok(message)
}

/// Whether `message` (its owner's, as read) may take feedback on `step_id`: an assistant message
/// whose run has ended (409 `run_in_progress` while it streams), and a step it has (404).
fn check_target(message: &Message, step_id: Option<&str>) -> Result<()> {
    if message.role != Role::Assistant {
        return Err(Error::InvalidField(
            "feedback is given on an answer, not on a question".into(),
        ));
    }
    if message.status == MessageStatus::Streaming {
        return Err(Error::RunInProgress(
            "this answer's run is still going; give feedback once it has ended".into(),
        ));
    }
    let Some(step_id) = step_id else {
        return Ok(());
    };
    let found = message.segments.iter().any(|segment| match segment {
        Segment::Reasoning(reasoning) => reasoning.id == step_id,
        Segment::ToolCall(call) => call.call_id == step_id,
        _ => false,
    });
    match found {
        true => Ok(()),
        false => Err(Error::NotFound("step")),
    }
}

/// The search piece of a feedback: kind `feedback`, its rating (`up`, `down`, or `note` for a
/// rating-less comment or step note) in `status`, its comment as the body.
pub fn feedback_doc(change: &FeedbackChange, model: &str) -> SearchDoc {
    let status = change.rating.map_or("note", Rating::as_str);
    SearchDoc {
        kind: "feedback",
        message_id: Some(change.message_id.clone()),
        step: change.step_id.clone(),
        tool: None,
        status: Some(status.to_owned()),
        model: Some(model.to_owned()).filter(|model| !model.is_empty()),
        created_at: change.now.clone(),
        body: change.comment.clone(),
    }
}

/// A stored row, the same from either database (rusqlite, which has no `FromRow`, fills the
/// fields itself).
#[derive(sqlx::FromRow)]
pub(super) struct FeedbackRow {
    pub(super) message_id: String,
    pub(super) step_id: String,
    pub(super) rating: Option<String>,
    pub(super) comment: String,
    pub(super) created_at: String,
    pub(super) updated_at: String,
}

impl From<FeedbackRow> for Feedback {
    fn from(row: FeedbackRow) -> Self {
        Feedback {
            message_id: row.message_id,
            step_id: Some(row.step_id).filter(|step| !step.is_empty()),
            rating: match row.rating.as_deref() {
                Some("up") => Some(Rating::Up),
                Some("down") => Some(Rating::Down),
                _ => None,
            },
            comment: row.comment,
            created_at: row.created_at,
            updated_at: row.updated_at,
        }
    }
}
