//! Managing conversations: rename, archive, delete (issue 35). Deletes remove every row of the
//! conversation (messages, traces, checkpoint chunks, model turns, share links, feedback) in one write. The
//! writer's connection has `secure_delete` on (see `open_writer`): the freed bytes are overwritten,
//! not left in the file's free pages; the search index (`search_fts`) has FTS5's `secure-delete`
//! on, so a deleted piece's words leave the index's pages too.

use rusqlite::{params, Connection, OptionalExtension};

use super::SqliteStore;
use crate::error::{Error, Result};
use crate::store::{run_in_progress, ConversationChange};

/// The rows of one conversation, children first; each statement binds the conversation id.
const DELETE_ROWS: [&str; 8] = [
    "DELETE FROM feedback WHERE conversation_id = ?1",
    "DELETE FROM search_docs WHERE conversation_id = ?1",
    "DELETE FROM trace_shares WHERE trace_id IN
        (SELECT trace_id FROM agent_traces WHERE conversation_id = ?1)",
    "DELETE FROM model_turns WHERE trace_id IN
        (SELECT trace_id FROM agent_traces WHERE conversation_id = ?1)",
    "DELETE FROM trace_event_chunks WHERE trace_key IN
        (SELECT chunk_key FROM agent_traces WHERE conversation_id = ?1)",
    "DELETE FROM agent_traces WHERE conversation_id = ?1",
    "DELETE FROM messages WHERE conversation_id = ?1",
    "DELETE FROM conversations WHERE id = ?1",
];

impl SqliteStore {
    /// Renames and/or archives a conversation of `owner_id`; `NotFound` for anyone else's.
    pub async fn update_conversation(
        &self,
        owner_id: String,
        id: String,
        change: ConversationChange,
    ) -> Result<()> {
        self.write(move |connection| {
            let mut changed = 0;
            if let Some(title) = &change.title {
                changed = connection
                    .prepare_cached(
                        "UPDATE conversations SET title = ? WHERE id = ? AND owner_id = ?",
                    )?
                    .execute(params![title, id, owner_id])?;
                if changed > 0 {
                    super::search::retitle(connection, &id, title)?;
                }
            }
            if let Some(archived) = change.archived {
                let at = archived.then_some(change.now.as_str());
                changed = connection
                    .prepare_cached(
                        "UPDATE conversations SET archived_at = ? WHERE id = ? AND owner_id = ?",
                    )?
                    .execute(params![at, id, owner_id])?;
            }
            if changed == 0 && !owns(connection, &owner_id, &id)? {
                return Err(Error::NotFound("conversation"));
            }
            Ok(())
        })
        .await
    }

    /// Deletes a conversation of `owner_id` and all its rows; `NotFound` for anyone else's (or
    /// one already deleted), 409 `run_in_progress` while one of its runs is going.
    pub async fn delete_conversation(&self, owner_id: String, id: String) -> Result<()> {
        self.write(move |connection| {
            if !owns(connection, &owner_id, &id)? {
                return Err(Error::NotFound("conversation"));
            }
            delete_all_of(connection, &[id])
        })
        .await
    }

    /// Deletes every conversation of `owner_id`: how many. Nothing is deleted while any of them
    /// has a run going (409 `run_in_progress`).
    pub async fn delete_all_conversations(&self, owner_id: String) -> Result<u64> {
        self.write(move |connection| {
            let ids = connection
                .prepare_cached("SELECT id FROM conversations WHERE owner_id = ?")?
                .query_map(params![owner_id], |row| row.get::<_, String>(0))?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            delete_all_of(connection, &ids)?;
            Ok(ids.len() as u64)
        })
        .await
    }
}

fn owns(connection: &Connection, owner_id: &str, id: &str) -> Result<bool> {
    Ok(connection
        .prepare_cached("SELECT 1 FROM conversations WHERE id = ? AND owner_id = ?")?
        .query_row(params![id, owner_id], |_| Ok(()))
        .optional()?
        .is_some())
}

/// Deletes the conversations `ids`, refusing (deleting none) when one has a run going.
fn delete_all_of(connection: &Connection, ids: &[String]) -> Result<()> {
    let mut running = connection.prepare_cached(
        "SELECT 1 FROM agent_traces WHERE conversation_id = ? AND status = 'running' LIMIT 1",
    )?;
    for id in ids {
        if running.exists(params![id])? {
            return Err(run_in_progress());
        }
    }
    for id in ids {
        for sql in DELETE_ROWS {
            connection.prepare_cached(sql)?.execute(params![id])?;
        }
    }
    Ok(())
}
