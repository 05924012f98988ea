//! Search in SQLite: pieces in `search_docs`, indexed by FTS5 (`search_fts`, kept in step by
//! triggers), written in the writer's transaction that stores their text. The MATCH expression is
//! built from quoted terms ([`SearchQuery::fts5_match`]) and bound as a parameter.

use app::models::SearchHit;
use app::protocol::Message;
use rusqlite::{params, Connection, OptionalExtension};

use super::SqliteStore;
use crate::error::{Error, Result};
use crate::store::search::{
    answer_docs, conversation_docs, decodable, plan_reindex, IndexedPiece, SearchDoc, SearchQuery,
    SearchRow, MAX_HITS,
};
use crate::store::{decode_message, StepDocs};

impl SqliteStore {
    /// See [`crate::store::Store::index_steps`]: background work, at the lowest priority.
    pub async fn index_steps(&self, steps: Vec<StepDocs>) -> Result<()> {
        self.write_background(move |connection| index_steps_in(connection, &steps))
            .await
    }

    /// See [`crate::store::Store::backfill_search`].
    pub async fn backfill_search(&self, limit: usize, now: String) -> Result<usize> {
        self.write(move |connection| backfill_in(connection, limit, &now))
            .await
    }

    /// The owner's pieces matching `query`, newest (last indexed) first.
    pub async fn search(&self, owner_id: &str, query: &SearchQuery) -> Result<Vec<SearchHit>> {
        let sql = match query.fts5_match() {
            Some(_) => BY_WORDS,
            None => BY_FILTERS,
        };
        let rows: Vec<SearchRow> = sqlx::query_as(sql)
            .bind(owner_id)
            .bind(query.fts5_match())
            .bind(&query.tool)
            .bind(&query.status)
            .bind(&query.model)
            .bind(MAX_HITS)
            .bind(&query.feedback)
            .fetch_all(&self.pool)
            .await?;
        Ok(rows.into_iter().map(|row| row.into_hit(query)).collect())
    }
}

/// With words: FTS5 walks its matches from the newest row down and stops at the 50th of the
/// owner's (sorting every match of a common word first cost several times more).
const BY_WORDS: &str =
    "SELECT d.conversation_id, c.title AS conversation_title, d.message_id, d.step,
        d.kind, d.tool, d.status, d.model, d.created_at, d.body
     FROM search_fts f JOIN search_docs d ON d.id = f.rowid
     JOIN conversations c ON c.id = d.conversation_id
     WHERE search_fts MATCH ?2 AND d.owner_id = ?1
       AND (?3 IS NULL OR d.tool = ?3) AND (?4 IS NULL OR d.status = ?4)
       AND (?5 IS NULL OR d.model = ?5) AND (?7 IS NULL OR (d.kind = 'feedback' AND d.status = ?7))
     ORDER BY f.rowid DESC LIMIT ?6";

/// Filters only: the owner's pieces, newest first (the owner's index is in rowid order).
const BY_FILTERS: &str = "SELECT d.conversation_id, c.title AS conversation_title, d.message_id,
        d.step, d.kind, d.tool, d.status, d.model, d.created_at, d.body
     FROM search_docs d JOIN conversations c ON c.id = d.conversation_id
     WHERE d.owner_id = ?1 AND ?2 IS NULL
       AND (?3 IS NULL OR d.tool = ?3) AND (?4 IS NULL OR d.status = ?4)
       AND (?5 IS NULL OR d.model = ?5) AND (?7 IS NULL OR (d.kind = 'feedback' AND d.status = ?7))
     ORDER BY d.id DESC LIMIT ?6";

/// A piece's columns as one JSON array: `trace_id` first (its trace's id for
/// [`index_steps_in`], which finds the owner and conversation from it; `null` for
/// [`insert_docs`], which is given them), then the columns that both read back as `value ->> 1`
/// to `value ->> 8`. Writing many pieces as one statement matters on SQLite: FTS5 writes what it
/// holds as a new segment of its index at each statement's savepoint, so a statement per piece
/// made a segment, and merges of segments, per piece (at 1,000 steps a second most of what
/// indexing cost the writer: issue 35).
fn doc_row<'d>(trace_id: Option<&'d str>, doc: &'d SearchDoc) -> impl serde::Serialize + 'd {
    (
        trace_id,
        &doc.message_id,
        &doc.step,
        doc.kind,
        &doc.tool,
        &doc.status,
        &doc.model,
        &doc.created_at,
        &doc.body,
    )
}

/// Rows of strings as one JSON array (which cannot fail: no map, no number).
fn json_rows(rows: &[impl serde::Serialize]) -> Result<String> {
    serde_json::to_string(rows).map_err(|error| Error::Internal(error.to_string()))
}

/// Adds pieces of one conversation of `owner_id`, in one statement.
pub(super) fn insert_docs(
    tx: &Connection,
    owner_id: &str,
    conversation_id: &str,
    docs: &[SearchDoc],
) -> Result<()> {
    if docs.is_empty() {
        return Ok(());
    }
    let rows = json_rows(
        &docs
            .iter()
            .map(|doc| doc_row(None, doc))
            .collect::<Vec<_>>(),
    )?;
    tx.prepare_cached(
        "INSERT INTO search_docs (owner_id, conversation_id, message_id, step, kind, tool, status, model, created_at, body)
         SELECT ?1, ?2, d.value ->> 1, d.value ->> 2, d.value ->> 3, d.value ->> 4,
                d.value ->> 5, d.value ->> 6, d.value ->> 7, d.value ->> 8
         FROM json_each(?3) d ORDER BY d.key",
    )?
    .execute(params![owner_id, conversation_id, rows])?;
    Ok(())
}

/// Indexes a finished assistant message over what its checkpoints or a retried end wrote
/// ([`plan_reindex`]: unchanged steps keep their rows; its feedback's pieces stay).
pub(super) fn index_answer(tx: &Connection, trace_id: &str, message: &Message) -> Result<()> {
    let Some((owner_id, conversation_id)) = trace_owner(tx, trace_id)? else {
        return Ok(());
    };
    let indexed = tx
        .prepare_cached(
            "SELECT id, kind, step, tool, status, model, body FROM search_docs
             WHERE message_id = ? AND kind <> 'feedback' ORDER BY id",
        )?
        .query_map(params![message.id], |row| {
            Ok(IndexedPiece {
                id: row.get(0)?,
                kind: row.get(1)?,
                step: row.get(2)?,
                tool: row.get(3)?,
                status: row.get(4)?,
                model: row.get(5)?,
                body: row.get(6)?,
            })
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    let plan = plan_reindex(indexed, answer_docs(message));
    let mut delete = tx.prepare_cached("DELETE FROM search_docs WHERE id = ?")?;
    for id in plan.delete {
        delete.execute(params![id])?;
    }
    // Not the body: the full-text index's trigger follows that column only.
    let mut update =
        tx.prepare_cached("UPDATE search_docs SET tool = ?, status = ?, model = ? WHERE id = ?")?;
    for (id, doc) in plan.update {
        update.execute(params![doc.tool, doc.status, doc.model, id])?;
    }
    insert_docs(tx, &owner_id, &conversation_id, &plan.insert)
}

/// Indexes the steps that running traces finished since the last checkpoint, in one statement
/// (see [`doc_row`]); each piece's owner and conversation are its trace's. A trace closed since
/// (its run's end indexed its message, in a write queued after this one was gathered) gets none:
/// its pieces would be a second copy of its message's.
fn index_steps_in(tx: &Connection, steps: &[StepDocs]) -> Result<()> {
    let rows: Vec<_> = steps
        .iter()
        .flat_map(|run| run.docs.iter().map(|doc| doc_row(Some(&run.trace_id), doc)))
        .collect();
    if rows.is_empty() {
        return Ok(());
    }
    tx.prepare_cached(
        "INSERT INTO search_docs (owner_id, conversation_id, message_id, step, kind, tool, status, model, created_at, body)
         SELECT c.owner_id, c.id, d.value ->> 1, d.value ->> 2, d.value ->> 3, d.value ->> 4,
                d.value ->> 5, d.value ->> 6, d.value ->> 7, d.value ->> 8
         FROM json_each(?) d
         JOIN agent_traces t ON t.trace_id = d.value ->> 0 AND t.status = 'running'
         JOIN conversations c ON c.id = t.conversation_id
         ORDER BY d.key",
    )?
    .execute(params![json_rows(&rows)?])?;
    Ok(())
}

/// The owner and conversation of a trace.
fn trace_owner(tx: &Connection, trace_id: &str) -> Result<Option<(String, String)>> {
    Ok(tx
        .prepare_cached(
            "SELECT c.owner_id, c.id FROM agent_traces t JOIN conversations c ON c.id = t.conversation_id
             WHERE t.trace_id = ?",
        )?
        .query_row(params![trace_id], |row| Ok((row.get(0)?, row.get(1)?)))
        .optional()?)
}

/// A renamed conversation's title piece.
pub(super) fn retitle(tx: &Connection, conversation_id: &str, title: &str) -> Result<()> {
    tx.prepare_cached(
        "UPDATE search_docs SET body = ? WHERE conversation_id = ? AND kind = 'title'",
    )?
    .execute(params![title, conversation_id])?;
    Ok(())
}

/// Takes up to `limit` conversations off the backfill list, indexing each.
fn backfill_in(tx: &Connection, limit: usize, now: &str) -> Result<usize> {
    let ids = tx
        .prepare_cached("SELECT conversation_id FROM search_backfill LIMIT ?")?
        .query_map(params![limit as i64], |row| row.get::<_, String>(0))?
        .collect::<rusqlite::Result<Vec<String>>>()?;
    for id in &ids {
        reindex_conversation(tx, id, now)?;
        tx.prepare_cached("DELETE FROM search_backfill WHERE conversation_id = ?")?
            .execute(params![id])?;
    }
    Ok(ids.len())
}

/// Replaces a conversation's pieces with those of what it stores (a streaming answer's pieces
/// are its run's to write, and feedback's pieces are the feedback's; both stay).
fn reindex_conversation(tx: &Connection, id: &str, now: &str) -> Result<()> {
    let Some((owner_id, title, model)): Option<(String, String, String)> = tx
        .prepare_cached("SELECT owner_id, title, model FROM conversations WHERE id = ?")?
        .query_row(params![id], |row| {
            Ok((row.get(0)?, row.get(1)?, row.get(2)?))
        })
        .optional()?
    else {
        return Ok(());
    };
    let bodies = tx
        .prepare_cached("SELECT body FROM messages WHERE conversation_id = ? ORDER BY position")?
        .query_map(params![id], |row| row.get::<_, String>(0))?
        .collect::<rusqlite::Result<Vec<String>>>()?;
    let messages = decodable(id, bodies.into_iter().map(decode_message));
    tx.prepare_cached(
        "DELETE FROM search_docs WHERE conversation_id = ?1 AND kind <> 'feedback' AND (message_id IS NULL OR message_id NOT IN
             (SELECT id FROM messages WHERE conversation_id = ?1 AND status = 'streaming'))",
    )?
    .execute(params![id])?;
    let docs = conversation_docs(&title, &model, &messages, now);
    insert_docs(tx, &owner_id, id, &docs)
}
