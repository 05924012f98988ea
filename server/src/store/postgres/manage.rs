//! Managing conversations in PostgreSQL (see the SQLite store for what each does). A delete locks
//! the conversation's row first: a run starting in it on another instance waits for the delete
//! (and then finds no conversation), or the delete waits for the start and sees its running trace.

use sqlx::PgConnection;

use super::{pg_text, PgStore};
use crate::error::{Error, Result};
use crate::store::{run_in_progress, ConversationChange};

/// The rows of the conversations $1 (an array of ids), children first.
const DELETE_ROWS: [&str; 8] = [
    "DELETE FROM feedback WHERE conversation_id = ANY($1)",
    "DELETE FROM search_docs WHERE conversation_id = ANY($1)",
    "DELETE FROM trace_shares WHERE trace_id IN
        (SELECT trace_id FROM agent_traces WHERE conversation_id = ANY($1))",
    "DELETE FROM model_turns WHERE trace_id IN
        (SELECT trace_id FROM agent_traces WHERE conversation_id = ANY($1))",
    "DELETE FROM trace_event_chunks WHERE trace_id IN
        (SELECT trace_id FROM agent_traces WHERE conversation_id = ANY($1))",
    "DELETE FROM agent_traces WHERE conversation_id = ANY($1)",
    "DELETE FROM messages WHERE conversation_id = ANY($1)",
    "DELETE FROM conversations WHERE id = ANY($1)",
];

impl PgStore {
    pub async fn update_conversation(
        &self,
        owner_id: String,
        id: String,
        change: ConversationChange,
    ) -> Result<()> {
        self.writer
            .write(move |connection| {
                Box::pin(async move {
                    let changed = sqlx::query(
                        "UPDATE conversations SET title = COALESCE($3, title),
                             archived_at = CASE WHEN $4::boolean IS NULL THEN archived_at
                                                WHEN $4 THEN $5::timestamptz END
                         WHERE id = $1 AND owner_id = $2",
                    )
                    .bind(pg_text(&id).as_ref())
                    .bind(&owner_id)
                    .bind(
                        change
                            .title
                            .as_deref()
                            .map(|title| pg_text(title).into_owned()),
                    )
                    .bind(change.archived)
                    .bind(&change.now)
                    .execute(&mut *connection)
                    .await?;
                    if changed.rows_affected() == 0 {
                        return Err(Error::NotFound("conversation"));
                    }
                    match &change.title {
                        Some(title) => super::search::retitle(connection, &id, title).await,
                        None => Ok(()),
                    }
                })
            })
            .await
    }

    pub async fn delete_conversation(&self, owner_id: String, id: String) -> Result<()> {
        self.writer
            .write(move |connection| {
                Box::pin(async move {
                    let id = pg_text(&id).into_owned();
                    let ids = owned_ids(connection, &owner_id, Some(&id)).await?;
                    if ids.is_empty() {
                        return Err(Error::NotFound("conversation"));
                    }
                    delete_all_of(connection, &ids).await
                })
            })
            .await
    }

    pub async fn delete_all_conversations(&self, owner_id: String) -> Result<u64> {
        self.writer
            .write(move |connection| {
                Box::pin(async move {
                    let ids = owned_ids(connection, &owner_id, None).await?;
                    delete_all_of(connection, &ids).await?;
                    Ok(ids.len() as u64)
                })
            })
            .await
    }
}

/// The ids of `owner_id`'s conversations (only `id`, when given), their rows locked.
async fn owned_ids(
    connection: &mut PgConnection,
    owner_id: &str,
    id: Option<&str>,
) -> Result<Vec<String>> {
    Ok(sqlx::query_scalar(
        "SELECT id FROM conversations WHERE owner_id = $1 AND ($2::text IS NULL OR id = $2)
         ORDER BY id FOR UPDATE",
    )
    .bind(owner_id)
    .bind(id)
    .fetch_all(&mut *connection)
    .await?)
}

/// Deletes the conversations `ids`, refusing (deleting none) when one has a run going.
async fn delete_all_of(connection: &mut PgConnection, ids: &[String]) -> Result<()> {
    let running: Option<i32> = sqlx::query_scalar(
        "SELECT 1 FROM agent_traces WHERE conversation_id = ANY($1) AND status = 'running' LIMIT 1",
    )
    .bind(ids)
    .fetch_optional(&mut *connection)
    .await?;
    if running.is_some() {
        return Err(run_in_progress());
    }
    for sql in DELETE_ROWS {
        sqlx::query(sql).bind(ids).execute(&mut *connection).await?;
    }
    Ok(())
}
