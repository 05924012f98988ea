//! Feedback in SQLite (see `store::feedback`): each change is one job of the writer, with its
//! search piece in the same transaction.

use app::models::Feedback;
use rusqlite::{params, Connection, OptionalExtension};

use super::SqliteStore;
use crate::error::{Error, Result};
use crate::store::feedback::{feedback_doc, target_message, FeedbackChange, FeedbackRow};

/// A feedback row's columns as read back.
const COLUMNS: &str = "message_id, step_id, rating, comment, created_at, updated_at";

impl SqliteStore {
    /// Stores (or edits) a feedback of `change.owner_id` on their message: its row after.
    pub async fn set_feedback(&self, change: FeedbackChange) -> Result<Feedback> {
        self.write(move |connection| {
            let (body, conversation_id, trace_id) =
                owned_message(connection, &change.owner_id, &change.message_id)?;
            let message = target_message(body, &change)?;
            connection
                .prepare_cached(
                    "INSERT INTO feedback (owner_id, conversation_id, trace_id, message_id, step_id,
                         rating, comment, created_at, updated_at)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?8)
                     ON CONFLICT (owner_id, message_id, step_id) DO UPDATE
                     SET rating = excluded.rating, comment = excluded.comment,
                         updated_at = excluded.updated_at",
                )?
                .execute(params![
                    change.owner_id,
                    conversation_id,
                    trace_id,
                    change.message_id,
                    change.step_column(),
                    change.rating.map(|rating| rating.as_str()),
                    change.comment,
                    change.now,
                ])?;
            unindex(connection, &change.message_id, change.step_column())?;
            let doc = feedback_doc(&change, &message.model);
            super::search::insert_docs(connection, &change.owner_id, &conversation_id, &[doc])?;
            let row = connection
                .prepare_cached(&format!(
                    "SELECT {COLUMNS} FROM feedback
                     WHERE owner_id = ? AND message_id = ? AND step_id = ?"
                ))?
                .query_row(
                    params![change.owner_id, change.message_id, change.step_column()],
                    |row| {
                        Ok(FeedbackRow {
                            message_id: row.get(0)?,
                            step_id: row.get(1)?,
                            rating: row.get(2)?,
                            comment: row.get(3)?,
                            created_at: row.get(4)?,
                            updated_at: row.get(5)?,
                        })
                    },
                )?;
            Ok(Feedback::from(row))
        })
        .await
    }

    /// Removes a feedback of `owner_id` (the answer's when `step_id` is `''`) and its search
    /// piece; `NotFound` when there is none.
    pub async fn delete_feedback(
        &self,
        owner_id: String,
        message_id: String,
        step_id: String,
    ) -> Result<()> {
        self.write(move |connection| {
            let deleted = connection
                .prepare_cached(
                    "DELETE FROM feedback WHERE owner_id = ? AND message_id = ? AND step_id = ?",
                )?
                .execute(params![owner_id, message_id, step_id])?;
            if deleted == 0 {
                return Err(Error::NotFound("feedback"));
            }
            unindex(connection, &message_id, &step_id)
        })
        .await
    }

    /// The feedback of `owner_id` in a conversation (on one message only, when given), oldest
    /// first.
    pub async fn feedback_of(
        &self,
        owner_id: &str,
        conversation_id: &str,
        message_id: Option<&str>,
    ) -> Result<Vec<Feedback>> {
        let rows: Vec<FeedbackRow> = sqlx::query_as(&format!(
            "SELECT {COLUMNS} FROM feedback
             WHERE owner_id = ? AND conversation_id = ? AND (?3 IS NULL OR message_id = ?3)
             ORDER BY created_at, step_id"
        ))
        .bind(owner_id)
        .bind(conversation_id)
        .bind(message_id)
        .fetch_all(&self.pool)
        .await?;
        Ok(rows.into_iter().map(Feedback::from).collect())
    }
}

/// The body, conversation and trace of `owner_id`'s message `message_id`; `NotFound` for anyone
/// else's or an unknown one.
fn owned_message(
    connection: &Connection,
    owner_id: &str,
    message_id: &str,
) -> Result<(String, String, Option<String>)> {
    connection
        .prepare_cached(
            "SELECT m.body, m.conversation_id,
                 (SELECT t.trace_id FROM agent_traces t
                  WHERE t.conversation_id = m.conversation_id AND t.message_id = m.id)
             FROM messages m JOIN conversations c ON c.id = m.conversation_id
             WHERE m.id = ? AND c.owner_id = ?",
        )?
        .query_row(params![message_id, owner_id], |row| {
            Ok((row.get(0)?, row.get(1)?, row.get(2)?))
        })
        .optional()?
        .ok_or(Error::NotFound("message"))
}

/// Removes a feedback's search piece (the answer's: `step` NULL).
fn unindex(connection: &Connection, message_id: &str, step_id: &str) -> Result<()> {
    connection
        .prepare_cached(
            "DELETE FROM search_docs
             WHERE message_id = ? AND kind = 'feedback' AND COALESCE(step, '') = ?",
        )?
        .execute(params![message_id, step_id])?;
    Ok(())
}
