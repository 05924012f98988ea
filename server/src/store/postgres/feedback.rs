//! Feedback in PostgreSQL (see `store::feedback` and the SQLite store): each change is one job of
//! the writer, with its search piece in the same transaction.

use app::models::Feedback;
use sqlx::PgConnection;

use super::{pg_text, PgStore};
use crate::error::{Error, Result};
use crate::store::feedback::{feedback_doc, target_message, FeedbackChange, FeedbackRow};

/// A feedback row's columns as read back.
const COLUMNS: &str = "message_id, step_id, rating, comment,
    rfc3339_millis(created_at) AS created_at, rfc3339_millis(updated_at) AS updated_at";

impl PgStore {
    pub async fn set_feedback(&self, change: FeedbackChange) -> Result<Feedback> {
        self.writer
            .write(move |connection| {
                Box::pin(async move {
                    let mut change = change;
                    change.comment = pg_text(&change.comment).into_owned();
                    let (body, conversation_id, trace_id) =
                        owned_message(connection, &change.owner_id, &change.message_id).await?;
                    let message = target_message(body, &change)?;
                    upsert(connection, &change, &conversation_id, trace_id).await?;
                    unindex(connection, &change.message_id, change.step_column()).await?;
                    let doc = feedback_doc(&change, &message.model);
                    super::search::insert_docs(
                        connection,
                        &change.owner_id,
                        &conversation_id,
                        &[doc],
                    )
                    .await?;
                    let row: FeedbackRow = sqlx::query_as(&format!(
                        "SELECT {COLUMNS} FROM feedback
                         WHERE owner_id = $1 AND message_id = $2 AND step_id = $3"
                    ))
                    .bind(&change.owner_id)
                    .bind(&change.message_id)
                    .bind(change.step_column())
                    .fetch_one(&mut *connection)
                    .await?;
                    Ok(Feedback::from(row))
                })
            })
            .await
    }

    pub async fn delete_feedback(
        &self,
        owner_id: String,
        message_id: String,
        step_id: String,
    ) -> Result<()> {
        self.writer
            .write(move |connection| {
                Box::pin(async move {
                    let deleted = sqlx::query(
                        "DELETE FROM feedback
                         WHERE owner_id = $1 AND message_id = $2 AND step_id = $3",
                    )
                    .bind(&owner_id)
                    .bind(pg_text(&message_id).as_ref())
                    .bind(pg_text(&step_id).as_ref())
                    .execute(&mut *connection)
                    .await?;
                    if deleted.rows_affected() == 0 {
                        return Err(Error::NotFound("feedback"));
                    }
                    unindex(connection, &message_id, &step_id).await
                })
            })
            .await
    }

    pub async fn feedback_of(
        &self,
        owner_id: &str,
        conversation_id: &str,
        message_id: Option<&str>,
    ) -> Result<Vec<Feedback>> {
        let rows: Vec<FeedbackRow> = sqlx::query_as(&format!(
            "SELECT {COLUMNS} FROM feedback
             WHERE owner_id = $1 AND conversation_id = $2 AND ($3::text IS NULL OR message_id = $3)
             ORDER BY feedback.created_at, step_id"
        ))
        .bind(owner_id)
        .bind(pg_text(conversation_id).as_ref())
        .bind(message_id.map(pg_text))
        .fetch_all(&self.pool)
        .await?;
        Ok(rows.into_iter().map(Feedback::from).collect())
    }
}

/// The body, conversation and trace of `owner_id`'s message; `NotFound` for anyone else's.
async fn owned_message(
    connection: &mut PgConnection,
    owner_id: &str,
    message_id: &str,
) -> Result<(String, String, Option<String>)> {
    sqlx::query_as(
        "SELECT m.body::text, m.conversation_id,
             (SELECT t.trace_id FROM agent_traces t
              WHERE t.conversation_id = m.conversation_id AND t.message_id = m.id)
         FROM messages m JOIN conversations c ON c.id = m.conversation_id
         WHERE m.id = $1 AND c.owner_id = $2",
    )
    .bind(pg_text(message_id).as_ref())
    .bind(owner_id)
    .fetch_optional(&mut *connection)
    .await?
    .ok_or(Error::NotFound("message"))
}

async fn upsert(
    connection: &mut PgConnection,
    change: &FeedbackChange,
    conversation_id: &str,
    trace_id: Option<String>,
) -> Result<()> {
    sqlx::query(
        "INSERT INTO feedback (owner_id, conversation_id, trace_id, message_id, step_id, rating,
             comment, created_at, updated_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8::timestamptz, $8::timestamptz)
         ON CONFLICT (owner_id, message_id, step_id) DO UPDATE
         SET rating = excluded.rating, comment = excluded.comment, updated_at = excluded.updated_at",
    )
    .bind(&change.owner_id)
    .bind(conversation_id)
    .bind(trace_id)
    .bind(&change.message_id)
    .bind(pg_text(change.step_column()).as_ref())
    .bind(change.rating.map(|rating| rating.as_str()))
    .bind(&change.comment)
    .bind(&change.now)
    .execute(&mut *connection)
    .await?;
    Ok(())
}

/// Removes a feedback's search piece (the answer's: `step` NULL).
async fn unindex(connection: &mut PgConnection, message_id: &str, step_id: &str) -> Result<()> {
    sqlx::query(
        "DELETE FROM search_docs
         WHERE message_id = $1 AND kind = 'feedback' AND COALESCE(step, '') = $2",
    )
    .bind(pg_text(message_id).as_ref())
    .bind(pg_text(step_id).as_ref())
    .execute(&mut *connection)
    .await?;
    Ok(())
}
