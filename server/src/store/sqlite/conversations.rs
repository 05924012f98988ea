//! Conversations and their messages, read through the read-only pool.

use app::models::{ActiveRun, Conversation, ConversationSummary};

use super::SqliteStore;
use crate::error::{Error, Result};
use crate::store::branches::{mark_siblings, SiblingRow};
use crate::store::decode_message;
use crate::store::rows::{ActiveRunRow, SummaryRow};

/// A conversation's summary row, by id (1) and owner (2).
const SUMMARY: &str = "SELECT id, title, model, created_at, updated_at,
        archived_at IS NOT NULL AS archived
     FROM conversations WHERE id = ? AND owner_id = ?";

/// Every message of a conversation (1) that has a sibling, oldest first.
const SIBLINGS: &str =
    "SELECT m.id, m.parent_id, m.role, json_extract(m.body, '$.trace_id') AS trace_id
     FROM messages m WHERE m.conversation_id = ?1 AND EXISTS (
        SELECT 1 FROM messages o WHERE o.conversation_id = ?1 AND o.parent_id IS m.parent_id
            AND o.role = m.role AND o.id <> m.id)
     ORDER BY m.created_at, m.rowid";

impl SqliteStore {
    /// The conversations of `owner_id`, newest first: the archived ones, or the others.
    pub async fn list_conversations(
        &self,
        owner_id: &str,
        archived: bool,
    ) -> Result<Vec<ConversationSummary>> {
        let rows: Vec<SummaryRow> = sqlx::query_as(
            "SELECT id, title, model, created_at, updated_at, archived_at IS NOT NULL AS archived
             FROM conversations WHERE owner_id = ? AND (archived_at IS NOT NULL) = ?
             ORDER BY updated_at DESC, created_at DESC LIMIT 500",
        )
        .bind(owner_id)
        .bind(archived)
        .fetch_all(&self.pool)
        .await?;
        Ok(rows.into_iter().map(ConversationSummary::from).collect())
    }

    /// One conversation of `owner_id`, without its messages.
    pub async fn conversation_summary(
        &self,
        owner_id: &str,
        id: &str,
    ) -> Result<Option<ConversationSummary>> {
        let row: Option<SummaryRow> = sqlx::query_as(SUMMARY)
            .bind(id)
            .bind(owner_id)
            .fetch_optional(&self.pool)
            .await?;
        Ok(row.map(ConversationSummary::from))
    }

    pub async fn get_conversation(&self, owner_id: &str, id: &str) -> Result<Option<Conversation>> {
        // One read transaction: the messages and the active run come from the same snapshot, so
        // a run that ends between two reads cannot leave an empty "streaming" message unattached.
        let mut tx = self.pool.begin().await?;
        let Some(summary) = sqlx::query_as::<_, SummaryRow>(SUMMARY)
            .bind(id)
            .bind(owner_id)
            .fetch_optional(&mut *tx)
            .await?
        else {
            return Ok(None);
        };
        let bodies: Vec<String> = sqlx::query_scalar(
            "SELECT body FROM messages WHERE conversation_id = ? AND active ORDER BY position",
        )
        .bind(id)
        .fetch_all(&mut *tx)
        .await?;
        let mut messages = bodies
            .into_iter()
            .map(decode_message)
            .collect::<Result<Vec<_>>>()?;
        let siblings: Vec<SiblingRow> = sqlx::query_as(SIBLINGS)
            .bind(id)
            .fetch_all(&mut *tx)
            .await?;
        mark_siblings(&mut messages, siblings);
        let active_run = sqlx::query_as::<_, ActiveRunRow>(
            "SELECT run_id, message_id FROM agent_traces WHERE conversation_id = ? AND status = 'running'
             ORDER BY started_at DESC LIMIT 1",
        )
        .bind(id)
        .fetch_optional(&mut *tx)
        .await?
        .map(ActiveRun::from);
        tx.commit().await?;
        Ok(Some(Conversation {
            summary: summary.into(),
            messages,
            active_run,
            earlier: 0,
            feedback: Vec::new(),
        }))
    }

    /// A stored message's body (JSON) and creation time.
    pub async fn stored_message(&self, message_id: &str) -> Result<(String, String)> {
        sqlx::query_as("SELECT body, created_at FROM messages WHERE id = ?")
            .bind(message_id)
            .fetch_optional(&self.pool)
            .await?
            .ok_or(Error::NotFound("message"))
    }
}
