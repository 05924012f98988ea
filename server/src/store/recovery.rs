//! Runs left running: by an earlier process at start, or on PostgreSQL by an instance whose lease
//! ran out. Written once for both databases: each backend only lists them and reads their rows.

use std::sync::Arc;

use app::protocol::{fold, ErrorCode, Event, EventKind, Message, MessageStatus};

use super::{decode_message, FinishedTrace, Store};
use crate::error::{Error, Result};

impl Store {
    /// Marks traces left `running` by an earlier process as `interrupted`, keeping their
    /// checkpointed events, and shows that on their messages. A trace that cannot be read whole
    /// keeps what could be read; one that cannot be recovered at all is logged and skipped, so a
    /// damaged row never stops the server from starting. Returns how many there were.
    pub async fn interrupt_leftover_runs(&self, now: &str) -> Result<usize> {
        Ok(self.interrupt(true, now).await?.0)
    }

    /// [`Store::interrupt_leftover_runs`], answering how many there were and the runs it closed
    /// (which the OTLP export sends).
    pub async fn recover_leftover_runs(&self, now: &str) -> Result<(usize, Vec<LeftoverRun>)> {
        self.interrupt(true, now).await
    }

    /// On PostgreSQL, ends the runs of instances whose lease has expired (see `bus`), as
    /// [`Store::interrupt_leftover_runs`] does at start. Two survivors may both try: the trace
    /// closes once, and only that close is published.
    pub async fn interrupt_orphaned_runs(&self, now: &str) -> Result<usize> {
        Ok(self.interrupt(false, now).await?.0)
    }

    /// [`Store::interrupt_orphaned_runs`], answering the runs this call closed (two survivors
    /// may try the same run; one closes it), which the OTLP export sends.
    pub async fn recover_orphaned_runs(&self, now: &str) -> Result<Vec<LeftoverRun>> {
        Ok(self.interrupt(false, now).await?.1)
    }

    /// Closes the runs left running; answers how many there were and those it closed.
    async fn interrupt(&self, include_own: bool, now: &str) -> Result<(usize, Vec<LeftoverRun>)> {
        let leftovers = match self {
            Store::Sqlite(backend) => backend.leftover_runs().await?,
            Store::Postgres(backend) => backend.leftover_runs(include_own).await?,
        };
        let found = leftovers.len();
        let mut closed = Vec::with_capacity(found);
        for leftover in leftovers {
            match self.interrupt_one(&leftover, now).await {
                Ok(true) => closed.push(leftover),
                // Another instance closed it first (it exports it).
                Ok(false) => {}
                Err(error) => {
                    let trace_id = &leftover.trace_id;
                    tracing::error!(%trace_id, %error, "could not recover a run left running; skipped");
                }
            }
        }
        Ok((found, closed))
    }

    /// Closes one run as interrupted; answers whether this call closed it.
    async fn interrupt_one(&self, leftover: &LeftoverRun, now: &str) -> Result<bool> {
        let mut events = on_backend!(self, checkpointed_events(&leftover.trace_id))?;
        // A run whose terminal event was checkpointed but whose trace was not closed keeps it.
        if events.last().is_some_and(|event| event.kind.is_terminal()) {
            events.pop();
        }
        let mut message = match fold(&events) {
            Some(message) => message,
            None => self.stored_message(&leftover.message_id).await?,
        };
        message.status = MessageStatus::Interrupted;
        message.ended_reason = Some(INTERRUPTED_REASON.to_owned());
        let duration = match (
            app::protocol::parse_rfc3339_millis(&leftover.started_at),
            events.last(),
        ) {
            (Some(start), Some(last)) => {
                app::protocol::parse_rfc3339_millis(&last.ts).map(|end| (end - start).max(0) as u64)
            }
            _ => None,
        };
        message.duration_ms = duration;
        // One terminal event, so that a reader of the stream (on any instance) sees the end.
        events.push(Event {
            seq: events.last().map_or(1, |last| last.seq + 1),
            run_id: leftover.run_id.clone(),
            ts: now.to_owned(),
            kind: EventKind::MessageError {
                code: ErrorCode::Interrupted,
                error: INTERRUPTED_REASON.to_owned(),
                message: message.clone(),
            },
        });
        let json: Vec<Arc<str>> = events
            .iter()
            .map(|event| serde_json::to_string(event).map(Arc::from))
            .collect::<Result<_, _>>()
            .map_err(|error| Error::Internal(error.to_string()))?;
        self.finish_run(FinishedTrace {
            trace_id: &leftover.trace_id,
            message: &message,
            completed_at: now,
            duration_ms: duration.unwrap_or(0),
            cancelled_by: None,
            reason: message.ended_reason.as_deref(),
            error_code: Some(&ErrorCode::Interrupted),
            events: &json,
            model_turns: &[],
        })
        .await
    }

    /// The stored message; an empty assistant message when it cannot be read.
    async fn stored_message(&self, message_id: &str) -> Result<Message> {
        let (body, created_at) = on_backend!(self, stored_message(message_id))?;
        Ok(decode_message(body).unwrap_or_else(|error| {
            tracing::warn!(%message_id, %error, "a stored message could not be read");
            Message::assistant(message_id.to_owned(), String::new(), created_at)
        }))
    }
}

/// What an interrupted run's message says.
const INTERRUPTED_REASON: &str = "The server stopped while this run was going.";

/// A trace still marked `running` when the server starts.
#[derive(Debug, sqlx::FromRow)]
pub struct LeftoverRun {
    pub run_id: String,
    pub trace_id: String,
    pub message_id: String,
    pub started_at: String,
    /// The owner of its conversation.
    pub owner_id: String,
}
