//! Share links: read-only access to one trace for whoever holds the token (see `auth::Reader`).
//! Reads go through the read pool; writes are jobs of the one writer.

use rusqlite::{params, Connection, OptionalExtension};

use super::SqliteStore;
use crate::error::{Error, Result};
use crate::store::{too_many_shares, TraceShare, MAX_SHARES_PER_TRACE};

impl SqliteStore {
    /// Adds a link to a trace of `share.owner_id`: `NotFound` for anyone else's trace, 429 past
    /// [`MAX_SHARES_PER_TRACE`].
    pub async fn add_share(&self, share: TraceShare) -> Result<()> {
        self.write(move |connection| add_share_in(connection, &share))
            .await
    }

    /// The link a token names, if it exists (revoked links do not).
    pub async fn share(&self, token: &str) -> Result<Option<TraceShare>> {
        let share = sqlx::query_as(
            "SELECT token, trace_id, owner_id, created_at, include_history FROM trace_shares
             WHERE token = ?",
        )
        .bind(token)
        .fetch_optional(&self.pool)
        .await?;
        Ok(share)
    }

    /// A trace's links, oldest first; `None` when the trace is not `owner_id`'s.
    pub async fn shares_of(
        &self,
        owner_id: &str,
        trace_id: &str,
    ) -> Result<Option<Vec<TraceShare>>> {
        let owned = sqlx::query(
            "SELECT 1 FROM agent_traces t JOIN conversations c ON c.id = t.conversation_id
             WHERE t.trace_id = ? AND c.owner_id = ?",
        )
        .bind(trace_id)
        .bind(owner_id)
        .fetch_optional(&self.pool)
        .await?;
        if owned.is_none() {
            return Ok(None);
        }
        let shares = sqlx::query_as(
            "SELECT token, trace_id, owner_id, created_at, include_history FROM trace_shares
             WHERE trace_id = ? AND owner_id = ? ORDER BY created_at, token",
        )
        .bind(trace_id)
        .bind(owner_id)
        .fetch_all(&self.pool)
        .await?;
        Ok(Some(shares))
    }

    /// Revokes a link of `owner_id`'s trace; `NotFound` when there is no such link.
    pub async fn delete_share(
        &self,
        owner_id: String,
        trace_id: String,
        token: String,
    ) -> Result<()> {
        self.write(move |connection| {
            let deleted = connection
                .prepare_cached(
                    "DELETE FROM trace_shares WHERE token = ? AND trace_id = ? AND owner_id = ?",
                )?
                .execute(params![token, trace_id, owner_id])?;
            match deleted {
                0 => Err(Error::NotFound("share link")),
                _ => Ok(()),
            }
        })
        .await
    }
}

fn add_share_in(tx: &Connection, share: &TraceShare) -> Result<()> {
    let links: i64 = tx
        .prepare_cached(
            "SELECT (SELECT COUNT(*) FROM trace_shares s WHERE s.trace_id = t.trace_id)
             AS links FROM agent_traces t JOIN conversations c ON c.id = t.conversation_id
             WHERE t.trace_id = ? AND c.owner_id = ?",
        )?
        .query_row(params![share.trace_id, share.owner_id], |row| row.get(0))
        .optional()?
        .ok_or(Error::NotFound("trace"))?;
    if links >= MAX_SHARES_PER_TRACE as i64 {
        return Err(too_many_shares());
    }
    tx.prepare_cached(
        "INSERT INTO trace_shares (token, trace_id, owner_id, created_at, include_history)
         VALUES (?, ?, ?, ?, ?)",
    )?
    .execute(params![
        share.token,
        share.trace_id,
        share.owner_id,
        share.created_at,
        share.include_history,
    ])?;
    Ok(())
}
