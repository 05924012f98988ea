//! Leases of instances on one database: each refreshes its row of `instances`, and the runs of
//! an instance whose lease ran out are taken for lost (see `bus` and `Store::interrupt_orphaned_runs`).

use super::PgStore;
use crate::error::Result;
use crate::store::LeftoverRun;

/// An instance refreshes its lease this often...
pub const HEARTBEAT_INTERVAL: std::time::Duration = std::time::Duration::from_secs(2);
/// ...and one whose lease is this old (seconds) is taken for dead.
const LEASE_SECS: i64 = 6;
/// An instance whose lease ran out this long ago is deleted from `instances`.
pub const FORGET_INSTANCES_AFTER_SECS: i64 = 3600;

impl PgStore {
    /// Refreshes this instance's lease (taking it at start), and forgets instances whose lease
    /// ran out [`FORGET_INSTANCES_AFTER_SECS`] ago: their runs were ended long since (a trace
    /// whose instance has no row counts as orphaned all the same), so the table keeps only
    /// instances that live or died recently.
    pub async fn heartbeat(&self) -> Result<()> {
        let instance_id = self.instance_id.to_string();
        self.writer
            .write(move |connection| {
                Box::pin(async move {
                    sqlx::query(
                        "INSERT INTO instances (instance_id) VALUES ($1)
                         ON CONFLICT (instance_id) DO UPDATE SET heartbeat_at = now()",
                    )
                    .bind(&instance_id)
                    .execute(&mut *connection)
                    .await?;
                    sqlx::query(
                        "DELETE FROM instances WHERE heartbeat_at < now() - make_interval(secs => $1)",
                    )
                    .bind(FORGET_INSTANCES_AFTER_SECS as f64)
                    .execute(&mut *connection)
                    .await?;
                    Ok(())
                })
            })
            .await
    }

    /// Running traces of instances whose lease has expired (or that never had one), and this
    /// instance's own when `include_own` (at start: they are an earlier process's).
    pub async fn leftover_runs(&self, include_own: bool) -> Result<Vec<LeftoverRun>> {
        let runs = sqlx::query_as(
            "SELECT run_id, trace_id, message_id, rfc3339_millis(started_at) AS started_at,
             (SELECT owner_id FROM conversations c WHERE c.id = t.conversation_id) AS owner_id
             FROM agent_traces t WHERE status = 'running' AND (
                 ($1 AND t.instance_id = $2)
                 OR (t.instance_id IS DISTINCT FROM $2 AND NOT EXISTS (
                     SELECT 1 FROM instances i WHERE i.instance_id = t.instance_id
                     AND i.heartbeat_at > now() - make_interval(secs => $3))))",
        )
        .bind(include_own)
        .bind(self.instance_id.as_ref())
        .bind(LEASE_SECS as f64)
        .fetch_all(&self.pool)
        .await?;
        Ok(runs)
    }
}
