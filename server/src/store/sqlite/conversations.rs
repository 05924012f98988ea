//! Conversations and their messages, read through the read-only pool.

use app::models::{ActiveRun, Conversation, ConversationSummary};
use sqlx::Row;

use super::SqliteStore;
use crate::error::{Error, Result};
use crate::store::{decode_message, rows};

impl SqliteStore {
    pub async fn list_conversations(&self, owner_id: &str) -> Result<Vec<ConversationSummary>> {
        let rows = sqlx::query(
            "SELECT id, title, model, created_at, updated_at FROM conversations WHERE owner_id = ?
             ORDER BY updated_at DESC, created_at DESC LIMIT 500",
        )
        .bind(owner_id)
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(rows::summary).collect()
    }

    pub async fn get_conversation(&self, owner_id: &str, id: &str) -> Result<Option<Conversation>> {
        // One read transaction: the messages and the active run come from the same snapshot, so
        // a run that ends between two reads cannot leave an empty "streaming" message unattached.
        let mut tx = self.pool.begin().await?;
        let Some(row) = sqlx::query(
            "SELECT id, title, model, created_at, updated_at FROM conversations WHERE id = ? AND owner_id = ?",
        )
        .bind(id)
        .bind(owner_id)
        .fetch_optional(&mut *tx)
        .await?
        else {
            return Ok(None);
        };
        let summary = rows::summary(&row)?;
        let rows =
            sqlx::query("SELECT body FROM messages WHERE conversation_id = ? ORDER BY position")
                .bind(id)
                .fetch_all(&mut *tx)
                .await?;
        let messages = rows
            .iter()
            .map(|row| decode_message(row.try_get("body")?))
            .collect::<Result<_>>()?;
        let active_run = sqlx::query(
            "SELECT run_id, message_id FROM agent_traces WHERE conversation_id = ? AND status = 'running'
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

    /// A stored message's body (JSON) and creation time.
    pub async fn stored_message(&self, message_id: &str) -> Result<(String, String)> {
        let stored = sqlx::query("SELECT body, created_at FROM messages WHERE id = ?")
            .bind(message_id)
            .fetch_optional(&self.pool)
            .await?
            .ok_or(Error::NotFound("message"))?;
        Ok((stored.try_get("body")?, stored.try_get("created_at")?))
    }
}
