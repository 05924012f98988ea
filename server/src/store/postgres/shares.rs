//! Share links in PostgreSQL (see the SQLite store for what each does).

use super::{pg_text, PgStore};
use crate::error::{Error, Result};
use crate::store::{too_many_shares, TraceShare, MAX_SHARES_PER_TRACE};

impl PgStore {
    pub async fn add_share(&self, share: TraceShare) -> Result<()> {
        self.writer
            .write(move |connection| {
                Box::pin(async move {
                    // FOR UPDATE of the trace row: two instances adding links at once count in turn.
                    let links: i64 = sqlx::query_scalar(
                        "SELECT (SELECT COUNT(*) FROM trace_shares s WHERE s.trace_id = t.trace_id)
                         AS links FROM agent_traces t JOIN conversations c ON c.id = t.conversation_id
                         WHERE t.trace_id = $1 AND c.owner_id = $2 FOR UPDATE OF t",
                    )
                    .bind(&share.trace_id)
                    .bind(&share.owner_id)
                    .fetch_optional(&mut *connection)
                    .await?
                    .ok_or(Error::NotFound("trace"))?;
                    if links >= MAX_SHARES_PER_TRACE as i64 {
                        return Err(too_many_shares());
                    }
                    sqlx::query(
                        "INSERT INTO trace_shares (token, trace_id, owner_id, created_at, include_history)
                         VALUES ($1, $2, $3, $4::timestamptz, $5)",
                    )
                    .bind(&share.token)
                    .bind(&share.trace_id)
                    .bind(&share.owner_id)
                    .bind(&share.created_at)
                    .bind(share.include_history)
                    .execute(&mut *connection)
                    .await?;
                    Ok(())
                })
            })
            .await
    }

    pub async fn share(&self, token: &str) -> Result<Option<TraceShare>> {
        let share = sqlx::query_as(
            "SELECT token, trace_id, owner_id, rfc3339_millis(created_at) AS created_at,
                    include_history
             FROM trace_shares WHERE token = $1",
        )
        .bind(pg_text(token).as_ref())
        .fetch_optional(&self.pool)
        .await?;
        Ok(share)
    }

    pub async fn shares_of(
        &self,
        owner_id: &str,
        trace_id: &str,
    ) -> Result<Option<Vec<TraceShare>>> {
        let owned = sqlx::query(
            "SELECT 1 FROM agent_traces t JOIN conversations c ON c.id = t.conversation_id
             WHERE t.trace_id = $1 AND c.owner_id = $2",
        )
        .bind(trace_id)
        .bind(owner_id)
        .fetch_optional(&self.pool)
        .await?;
        if owned.is_none() {
            return Ok(None);
        }
        let shares = sqlx::query_as(
            "SELECT token, trace_id, owner_id, rfc3339_millis(created_at) AS created_at,
                    include_history
             FROM trace_shares WHERE trace_id = $1 AND owner_id = $2 ORDER BY created_at, token",
        )
        .bind(trace_id)
        .bind(owner_id)
        .fetch_all(&self.pool)
        .await?;
        Ok(Some(shares))
    }

    pub async fn delete_share(
        &self,
        owner_id: String,
        trace_id: String,
        token: String,
    ) -> Result<()> {
        self.writer
            .write(move |connection| {
                Box::pin(async move {
                    let deleted = sqlx::query(
                        "DELETE FROM trace_shares WHERE token = $1 AND trace_id = $2 AND owner_id = $3",
                    )
                    .bind(pg_text(&token).as_ref())
                    .bind(&trace_id)
                    .bind(&owner_id)
                    .execute(&mut *connection)
                    .await?;
                    if deleted.rows_affected() == 0 {
                        return Err(Error::NotFound("share link"));
                    }
                    Ok(())
                })
            })
            .await
    }
}
