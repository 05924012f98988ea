//! Switching a conversation to another version of one of its messages (see the SQLite store).
//! The conversation's row is locked first, so a run starting in it on another instance waits
//! for the switch, or the switch waits for the start and sees its running trace.

use sqlx::PgConnection;

use super::runs::{conversation_busy, target_of};
use super::{pg_text, PgStore};
use crate::error::{Error, Result};
use crate::store::branches::busy_switch;

impl PgStore {
    pub async fn switch_branch(
        &self,
        owner_id: String,
        id: String,
        message_id: String,
        now: String,
    ) -> Result<()> {
        self.writer
            .write(move |connection| {
                Box::pin(async move {
                    let id = pg_text(&id).into_owned();
                    switch_in(connection, &owner_id, &id, &message_id, &now).await
                })
            })
            .await
    }
}

async fn switch_in(
    tx: &mut PgConnection,
    owner_id: &str,
    id: &str,
    message_id: &str,
    now: &str,
) -> Result<()> {
    sqlx::query("SELECT 1 FROM conversations WHERE id = $1 AND owner_id = $2 FOR UPDATE")
        .bind(id)
        .bind(owner_id)
        .fetch_optional(&mut *tx)
        .await?
        .ok_or(Error::NotFound("conversation"))?;
    let target = target_of(tx, id, message_id)
        .await?
        .ok_or(Error::NotFound("message"))?;
    if conversation_busy(tx, id).await? {
        return Err(busy_switch());
    }
    if target.active {
        return Ok(());
    }
    sqlx::query(
        "UPDATE messages SET active = FALSE WHERE conversation_id = $1 AND active AND position >= $2",
    )
    .bind(id)
    .bind(target.position)
    .execute(&mut *tx)
    .await?;
    // The chosen message, then below it each time the child chosen last: one statement.
    sqlx::query(ACTIVATE_BRANCH)
        .bind(id)
        .bind(pg_text(message_id).as_ref())
        .bind(now)
        .execute(&mut *tx)
        .await?;
    Ok(())
}

/// Activates $2 of the conversation $1 and, below it, the child selected last at each step,
/// stamping each with $3.
const ACTIVATE_BRANCH: &str = "WITH RECURSIVE path(id) AS (
        SELECT $2::text
        UNION ALL
        SELECT (SELECT c.id FROM messages c WHERE c.conversation_id = $1 AND c.parent_id = path.id
                ORDER BY c.selected_at DESC NULLS LAST, c.created_at DESC, c.id DESC LIMIT 1)
        FROM path WHERE path.id IS NOT NULL
    )
    UPDATE messages SET active = TRUE, selected_at = $3::timestamptz
    WHERE id IN (SELECT id FROM path WHERE id IS NOT NULL)";
