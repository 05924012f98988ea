//! Conversations and their messages, read through the read-only pool.

use app::models::{ActiveRun, Conversation, ConversationSummary};
use app::protocol::Message;
use sqlx::{PgConnection, Row};

use super::PgStore;
use crate::error::{Error, Result};
use crate::store::{decode_message, rows};

impl PgStore {
    pub async fn list_conversations(&self, owner_id: &str) -> Result<Vec<ConversationSummary>> {
        let rows = sqlx::query(
            "SELECT id, title, model, rfc3339_millis(created_at) AS created_at,
                    rfc3339_millis(updated_at) AS updated_at
             FROM conversations WHERE owner_id = $1
             ORDER BY updated_at DESC, created_at DESC LIMIT 500",
        )
        .bind(owner_id)
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(rows::summary).collect()
    }

    pub async fn get_conversation(&self, owner_id: &str, id: &str) -> Result<Option<Conversation>> {
        // One snapshot for the messages and the active run (see the SQLite store).
        let mut tx = self.pool.begin().await?;
        sqlx::query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            .execute(&mut *tx)
            .await?;
        let Some(row) = sqlx::query(
            "SELECT id, title, model, rfc3339_millis(created_at) AS created_at,
                    rfc3339_millis(updated_at) AS updated_at
             FROM conversations WHERE id = $1 AND owner_id = $2",
        )
        .bind(id)
        .bind(owner_id)
        .fetch_optional(&mut *tx)
        .await?
        else {
            return Ok(None);
        };
        let summary = rows::summary(&row)?;
        let messages = messages_of(&mut tx, id).await?;
        let active_run = sqlx::query(
            "SELECT run_id, message_id FROM agent_traces WHERE conversation_id = $1 AND status = 'running'
             ORDER BY started_at DESC LIMIT 1",
        )
        .bind(id)
        .fetch_optional(&mut *tx)
        .await?
        .map(|row| -> Result<ActiveRun> {
            Ok(ActiveRun {
                run_id: row.try_get("run_id")?,
                message_id: row.try_get("message_id")?,
            })
        })
        .transpose()?;
        tx.commit().await?;
        Ok(Some(Conversation {
            summary,
            messages,
            active_run,
            earlier: 0,
        }))
    }

    pub async fn stored_message(&self, message_id: &str) -> Result<(String, String)> {
        let stored = sqlx::query(
            "SELECT body::text AS body, rfc3339_millis(created_at) AS created_at FROM messages WHERE id = $1",
        )
        .bind(message_id)
        .fetch_optional(&self.pool)
        .await?
        .ok_or(Error::NotFound("message"))?;
        Ok((stored.try_get("body")?, stored.try_get("created_at")?))
    }
}

/// A conversation's messages, in order.
pub(super) async fn messages_of(
    tx: &mut PgConnection,
    conversation_id: &str,
) -> Result<Vec<Message>> {
    let rows = sqlx::query(
        "SELECT body::text AS body FROM messages WHERE conversation_id = $1 ORDER BY position",
    )
    .bind(conversation_id)
    .fetch_all(&mut *tx)
    .await?;
    rows.iter()
        .map(|row| decode_message(row.try_get("body")?))
        .collect()
}
