//! Commands for runs of other instances (several instances on one PostgreSQL database): Stop and
//! answers to approval requests given on an instance that does not run the run travel on the bus
//! as one [`RunCommand`]; the instance that runs it carries it out and replies. The one place
//! where a command is routed to another instance.

use std::{sync::Arc, time::Duration};

use app::protocol::{CancelledBy, TraceStatus};

use super::engine::{answer_here, answered, Answered, Engine};
use crate::{
    bus::{Addressed, Bus, CommandOutcome, RunCommand},
    error::{Error, Result},
    sink::ApprovalAnswer,
};

/// How long Stop of another instance's run waits, in all, for the owner's reply and the run's
/// trace to close.
const STOP_WAIT: Duration = Duration::from_secs(10);

impl Engine {
    /// Joins the other instances on the store's PostgreSQL database: commands sent there for
    /// runs of this instance are carried out here. Until the engine shuts down.
    pub fn join_instances(self: &Arc<Self>) {
        let stop = self.checkpointer_stop.child_token();
        let Some(postgres) = self.store.postgres().cloned() else {
            return;
        };
        let engine = Arc::downgrade(self);
        let on_command =
            Box::new(move |addressed: Addressed| engine.upgrade()?.carry_out(addressed));
        let engine = Arc::downgrade(self);
        let on_recovered = Box::new(move |runs: Vec<crate::store::LeftoverRun>| {
            if let Some(otlp) = engine.upgrade().as_ref().and_then(|e| e.otlp()) {
                for run in runs {
                    otlp.finished(crate::otel::FinishedRun {
                        owner_id: run.owner_id,
                        trace_id: run.trace_id,
                    });
                }
            }
        });
        let bus = Bus::start(self.store.clone(), postgres, on_command, on_recovered, stop);
        let _ = self.bus.set(bus);
    }

    /// Carries out another instance's command for a run of this one; `None` when the run is not
    /// here (or not its sender's).
    fn carry_out(&self, addressed: Addressed) -> Option<CommandOutcome> {
        let run = self
            .get(&addressed.run_id)
            .filter(|run| run.owner_id == addressed.owner_id)?;
        Some(match addressed.command {
            RunCommand::Stop { .. } if run.published().finished || run.is_closed() => {
                CommandOutcome::Ended
            }
            RunCommand::Stop { reason } => {
                run.request_cancel(
                    CancelledBy::User,
                    reason.unwrap_or_else(|| "Stopped by the user.".to_owned()),
                );
                CommandOutcome::Done
            }
            RunCommand::Answer { call_id, answer } => answer_here(&run, &call_id, answer),
        })
    }

    /// The bus to the instance that runs a run this instance does not hold: 404 when there is no
    /// such run, 409 when it has ended (or there is no other instance). Returns the trace id.
    async fn running_elsewhere(&self, owner_id: &str, run_id: &str) -> Result<(String, &Arc<Bus>)> {
        let trace = self
            .store
            .trace_by_run(owner_id, run_id)
            .await?
            .ok_or(Error::NotFound("run"))?;
        match (trace.status == TraceStatus::Running, self.bus()) {
            (true, Some(bus)) => Ok((trace.trace_id, bus)),
            _ => Err(Error::Conflict(format!(
                "the run has already ended ({})",
                trace.status
            ))),
        }
    }

    /// Stop for a run this instance does not hold: it goes to the instance that runs it, and
    /// this answers once the run's trace has closed (at most [`STOP_WAIT`]).
    pub(super) async fn cancel_elsewhere(
        &self,
        owner_id: &str,
        run_id: &str,
        reason: Option<String>,
    ) -> Result<(String, String)> {
        let deadline = tokio::time::Instant::now() + STOP_WAIT;
        let (trace_id, bus) = self.running_elsewhere(owner_id, run_id).await?;
        let mut progress = bus.follow(&trace_id, None);
        let command = RunCommand::Stop { reason };
        if let Some(outcome) = bus.send(run_id, owner_id, command).await? {
            answered(outcome)?;
        }
        let ended = tokio::time::timeout_at(deadline, progress.wait_for(|p| p.ended)).await;
        if ended.is_err() {
            tracing::warn!(%run_id, "a run of another instance did not end within 10 s of its cancellation");
        }
        Ok((run_id.to_owned(), trace_id))
    }

    /// An answer for a run this instance does not hold: it goes to the instance that runs it,
    /// whose reply says whether it was recorded (404 or 409 as for a run of this instance).
    /// Without a reply in time it is `Forwarded`, or 409 when the run has ended meanwhile. A
    /// reply means the run took the answer; its event is stored with the run's next
    /// checkpoint, at once (approval events are checkpointed when emitted).
    pub(super) async fn answer_elsewhere(
        &self,
        owner_id: &str,
        run_id: &str,
        call_id: &str,
        answer: ApprovalAnswer,
    ) -> Result<Answered> {
        let (_, bus) = self.running_elsewhere(owner_id, run_id).await?;
        let command = RunCommand::Answer {
            call_id: call_id.to_owned(),
            answer,
        };
        match bus.send(run_id, owner_id, command).await? {
            Some(outcome) => answered(outcome).map(|()| Answered::Recorded),
            // No instance holds the run any more (it ended and left memory) or the owner did
            // not answer in time: which one, the stored trace says.
            None => self
                .running_elsewhere(owner_id, run_id)
                .await
                .map(|_| Answered::Forwarded),
        }
    }
}
