//! What the bus and readers on other instances use: commands and their replies
//! (`glassbox_commands`) and the
//! events of runs read from the tables after a seq.

use std::sync::Arc;

use super::{pg_text, PgStore};
use crate::error::{Error, Result};
use crate::store::{after_seq, events_of_array, sql_int, StoredEvents};

/// Some events of one trace: its id, and `(seq, JSON)` of each.
pub type TraceEvents = (String, Vec<(u64, Arc<str>)>);

impl PgStore {
    /// Sends a message on the commands channel (`glassbox_commands`, see `bus`).
    pub async fn notify_command(&self, payload: String) -> Result<()> {
        self.writer
            .write(move |connection| {
                Box::pin(async move {
                    sqlx::query("SELECT pg_notify('glassbox_commands', $1)")
                        .bind(pg_text(&payload).as_ref())
                        .execute(&mut *connection)
                        .await?;
                    Ok(())
                })
            })
            .await
    }

    /// For each `(trace_id, after)`, its checkpointed events with seq > `after`, in one query.
    pub async fn chunks_after(&self, wanted: &[(String, u64)]) -> Result<Vec<TraceEvents>> {
        let (traces, afters): (Vec<&str>, Vec<i64>) = wanted
            .iter()
            .map(|(trace, after)| (trace.as_str(), sql_int(*after)))
            .unzip();
        // One index range scan of (trace_id, last_seq) per trace: 2.4 ms for 500 traces. As a
        // join, the planner (which guesses 10 rows for the arrays) hashed them against a
        // sequential scan of every chunk of every running trace: 160-220 ms at 1,000 runs, and
        // growing as they ran. `OFFSET 0` keeps it from flattening the LATERAL subquery back
        // into that join.
        let rows: Vec<(String, i64, String)> = sqlx::query_as(
            "SELECT x.t AS trace_id, x.s AS after, c.events::text AS events
             FROM unnest($1::text[], $2::bigint[]) AS x(t, s)
             CROSS JOIN LATERAL (
                 SELECT first_seq, events FROM trace_event_chunks
                 WHERE trace_id = x.t AND last_seq > x.s
                 OFFSET 0
             ) c
             ORDER BY x.t, c.first_seq",
        )
        .bind(traces)
        .bind(afters)
        .fetch_all(&self.pool)
        .await?;
        rows.into_iter()
            .map(|(trace_id, after, events)| {
                Ok((trace_id, events_of_array(&events, after as u64)?))
            })
            .collect()
    }

    /// A trace's events with seq > `after` (JSON each) as stored now, and whether it has ended.
    /// `None` when there is no such trace.
    pub async fn events_after(&self, trace_id: &str, after: u64) -> Result<Option<StoredEvents>> {
        // One round trip: the closed trace's events, or the checkpoints after `after`.
        let Some((closed, chunks)) = sqlx::query_as::<_, (Option<String>, Option<String>)>(
            "SELECT CASE WHEN t.status <> 'running' THEN t.events::text END AS events,
                    (SELECT json_agg(c.events ORDER BY c.first_seq)::text FROM trace_event_chunks c
                     WHERE c.trace_id = t.trace_id AND c.last_seq > $2) AS chunks
             FROM agent_traces t WHERE t.trace_id = $1",
        )
        .bind(trace_id)
        .bind(sql_int(after))
        .fetch_optional(&self.pool)
        .await?
        else {
            return Ok(None);
        };
        if let Some(json) = closed {
            return Ok(Some((events_of_array(&json, after)?, true)));
        }
        let mut events = Vec::new();
        if let Some(chunks) = chunks {
            let chunks: Vec<serde_json::Value> = serde_json::from_str(&chunks)
                .map_err(|error| Error::Internal(format!("stored events: {error}")))?;
            for chunk in chunks {
                if let serde_json::Value::Array(values) = chunk {
                    events.extend(after_seq(values, after));
                }
            }
        }
        Ok(Some((events, false)))
    }
}
