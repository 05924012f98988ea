//! Where a conversation's running answer is read, for the streams that follow a run they did not
//! start (the AI SDK's resume, AG-UI's resume): the run on this instance, or (PostgreSQL, several
//! instances) another instance's run through the database, as `sse::remote` follows it.

use std::sync::Arc;

use futures::{future::Either, Stream};

use super::{sse, AppState};
use crate::{bus::Bus, error::Result, runs::Run, store::PgStore};

/// A running answer, here or on another instance.
#[derive(Clone)]
pub enum Source {
    Local(Arc<Run>),
    Remote {
        store: PgStore,
        bus: Arc<Bus>,
        run_id: String,
        trace_id: String,
    },
}

impl Source {
    pub fn run_id(&self) -> &str {
        match self {
            Source::Local(run) => &run.run_id,
            Source::Remote { run_id, .. } => run_id,
        }
    }

    /// The events after `after`, then live ones, to the terminal event. Another instance's
    /// are boxed: their reader's state is large, and a local run's reader keeps its own small.
    pub fn events(&self, after: u64) -> impl Stream<Item = (u64, Arc<str>)> + Send + 'static {
        match self {
            Source::Local(run) => Either::Left(sse::live(run.clone(), after)),
            Source::Remote {
                store,
                bus,
                trace_id,
                ..
            } => Either::Right(Box::pin(sse::remote(
                store.clone(),
                bus.clone(),
                trace_id.clone(),
                after,
            ))),
        }
    }

    /// The events logged so far.
    pub async fn logged(&self) -> Result<Vec<(u64, Arc<str>)>> {
        Ok(match self {
            Source::Local(run) => run.events_between(0, run.published().last_seq, usize::MAX),
            Source::Remote {
                store, trace_id, ..
            } => store
                .events_after(trace_id, 0)
                .await?
                .map(|(events, _)| events)
                .unwrap_or_default(),
        })
    }

    /// The seq of the last event logged so far (for another instance's run, as far as its
    /// checkpoints have reached the database).
    pub async fn last_seq(&self) -> Result<u64> {
        Ok(match self {
            Source::Local(run) => run.published().last_seq,
            Source::Remote { .. } => self.logged().await?.last().map_or(0, |(seq, _)| *seq),
        })
    }

    /// Whether a call that asked for approval still waits for its answer. Another instance's
    /// run is not asked: its answer shows in the log (a replay may pause at a request answered
    /// since; answering it again continues the stream).
    pub fn awaits_answer(&self, call_id: &str) -> bool {
        match self {
            Source::Local(run) => run.awaits_answer(call_id),
            Source::Remote { .. } => true,
        }
    }
}

/// The user's run going in conversation `conversation_id` (whose stored active run is
/// `active_run`): here, else on another instance.
pub async fn running(
    state: &AppState,
    owner_id: &str,
    conversation_id: &str,
    active_run: Option<&str>,
) -> Result<Option<Source>> {
    if let Some(run) = state.engine.running_in(owner_id, conversation_id) {
        return Ok(Some(Source::Local(run)));
    }
    let (Some(run_id), Some(bus), Some(store)) =
        (active_run, state.engine.bus(), state.store.postgres())
    else {
        return Ok(None);
    };
    let trace = state.store.trace_by_run(owner_id, run_id).await?;
    Ok(trace
        .filter(|trace| trace.status == app::protocol::TraceStatus::Running)
        .map(|trace| Source::Remote {
            store: store.clone(),
            bus: bus.clone(),
            run_id: run_id.to_owned(),
            trace_id: trace.trace_id,
        }))
}
