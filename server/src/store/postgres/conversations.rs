//! Conversations and their messages, read through the read-only pool.

use app::models::{ActiveRun, Conversation, ConversationSummary};
use app::protocol::Message;
use sqlx::PgConnection;

use super::{pg_text, PgStore};
use crate::error::{Error, Result};
use crate::store::branches::{mark_siblings, SiblingRow};
use crate::store::decode_message;
use crate::store::rows::{ActiveRunRow, SummaryRow};

/// A conversation's summary row, by id ($1) and owner ($2).
const SUMMARY: &str = "SELECT id, title, model, rfc3339_millis(created_at) AS created_at,
        rfc3339_millis(updated_at) AS updated_at, archived_at IS NOT NULL AS archived
     FROM conversations WHERE id = $1 AND owner_id = $2";

/// Every message of a conversation ($1) that has a sibling, oldest first.
const SIBLINGS: &str = "SELECT m.id, m.parent_id, m.role, m.body->>'trace_id' AS trace_id
     FROM messages m WHERE m.conversation_id = $1 AND EXISTS (
        SELECT 1 FROM messages o WHERE o.conversation_id = $1
            AND o.parent_id IS NOT DISTINCT FROM m.parent_id AND o.role = m.role AND o.id <> m.id)
     ORDER BY m.created_at, m.id";

impl PgStore {
    pub async fn list_conversations(
        &self,
        owner_id: &str,
        archived: bool,
    ) -> Result<Vec<ConversationSummary>> {
        let rows: Vec<SummaryRow> = sqlx::query_as(
            "SELECT id, title, model, rfc3339_millis(created_at) AS created_at,
                    rfc3339_millis(updated_at) AS updated_at, archived_at IS NOT NULL AS archived
             FROM conversations WHERE owner_id = $1 AND (archived_at IS NOT NULL) = $2
             ORDER BY updated_at DESC, created_at DESC LIMIT 500",
        )
        .bind(owner_id)
        .bind(archived)
        .fetch_all(&self.pool)
        .await?;
        Ok(rows.into_iter().map(ConversationSummary::from).collect())
    }

    pub async fn conversation_summary(
        &self,
        owner_id: &str,
        id: &str,
    ) -> Result<Option<ConversationSummary>> {
        let row: Option<SummaryRow> = sqlx::query_as(SUMMARY)
            .bind(pg_text(id).as_ref())
            .bind(owner_id)
            .fetch_optional(&self.pool)
            .await?;
        Ok(row.map(ConversationSummary::from))
    }

    pub async fn get_conversation(&self, owner_id: &str, id: &str) -> Result<Option<Conversation>> {
        // One snapshot for the messages and the active run (see the SQLite store).
        let mut tx = self.pool.begin().await?;
        sqlx::query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            .execute(&mut *tx)
            .await?;
        let Some(summary) = sqlx::query_as::<_, SummaryRow>(SUMMARY)
            .bind(id)
            .bind(owner_id)
            .fetch_optional(&mut *tx)
            .await?
        else {
            return Ok(None);
        };
        let mut messages = messages_of(&mut tx, id, i64::MAX).await?;
        let siblings: Vec<SiblingRow> = sqlx::query_as(SIBLINGS)
            .bind(id)
            .fetch_all(&mut *tx)
            .await?;
        mark_siblings(&mut messages, siblings);
        let active_run = sqlx::query_as::<_, ActiveRunRow>(
            "SELECT run_id, message_id FROM agent_traces WHERE conversation_id = $1 AND status = 'running'
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

    pub async fn stored_message(&self, message_id: &str) -> Result<(String, String)> {
        sqlx::query_as(
            "SELECT body::text AS body, rfc3339_millis(created_at) AS created_at FROM messages WHERE id = $1",
        )
        .bind(message_id)
        .fetch_optional(&self.pool)
        .await?
        .ok_or(Error::NotFound("message"))
    }
}

/// A conversation's active path before `before` (a position), in order.
pub(super) async fn messages_of(
    tx: &mut PgConnection,
    conversation_id: &str,
    before: i64,
) -> Result<Vec<Message>> {
    let bodies: Vec<String> = sqlx::query_scalar(
        "SELECT body::text AS body FROM messages
         WHERE conversation_id = $1 AND active AND position < $2 ORDER BY position",
    )
    .bind(conversation_id)
    .bind(before)
    .fetch_all(&mut *tx)
    .await?;
    bodies.into_iter().map(decode_message).collect()
}
