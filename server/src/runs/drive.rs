//! A run's own task: its agent races cancellation and the run's time limit, then the run closes,
//! its trace is stored (retried while the store fails) and only then is its end published.

use std::{sync::Arc, time::Duration};

use futures::future::{AbortHandle, Abortable};
use tokio_util::task::AbortOnDropHandle;

use app::{
    models::Trace,
    protocol::{CancelledBy, ErrorCode, Message},
};

use super::engine::{Engine, RunSlot};
use super::{Overflow, Run, RunEnding};
use crate::{
    agents::{Agent, AgentOutcome, RunContext},
    error::Result,
    stamps::now_rfc3339,
    store::{FinishedTrace, ModelTurn},
};

/// A finished run stays in memory this long for late subscribers, then they read the store.
const FINISHED_RUN_GRACE: Duration = Duration::from_secs(60);
/// A trace that could not be stored is written again after this, then twice as long each time.
const FINISH_RETRY_FIRST: Duration = Duration::from_millis(100);
const FINISH_RETRY_MAX: Duration = Duration::from_secs(5);

impl Engine {
    /// The run's own task: the agent races cancellation and the run timeout; then the trace
    /// closes. The slot is given back when the trace is stored.
    pub(super) async fn drive(
        self: Arc<Self>,
        run: Arc<Run>,
        context: RunContext,
        agent: Result<Arc<dyn Agent>>,
        _slot: RunSlot,
    ) {
        let ending = match agent {
            Err(error) => RunEnding::Failed {
                code: ErrorCode::UnknownModel,
                error: error.public_message(),
            },
            Ok(agent) => self.run_agent(&run, agent.as_ref(), &context).await,
        };
        let model_turns = context.take_model_turns();
        let question = Question::of(&context, self.otlp.get());
        drop(context);

        // The checkpointer's last write lands before the final one, so nothing is written twice.
        self.checkpointer.untrack(&run.run_id).await;

        let message = run.close(&ending);
        let events = run.all_events();
        let closing = Closing::new(&run, &ending, &message);
        let closed = self
            .store_trace(
                &run,
                closing.finished(&run, &message, &events, &model_turns),
            )
            .await;
        // A run another instance took for lost and closed is that instance's to export. Counted
        // before the end is published: a shutdown waits for that, then for the export queue.
        {
            let export = self
                .otlp
                .get()
                .filter(|_| closed)
                .map(crate::otel::Otlp::reserve);
            run.publish_end();
            if let Some(export) = export {
                export.ended(crate::otel::EndedRun {
                    trace: &closing.trace(&run, &message, question.id),
                    message: &message,
                    events: &events,
                    turns: &model_turns,
                    prompt: question.text.as_deref(),
                });
            }
        }
        tracing::info!(
            run_id = %run.run_id,
            status = message.status.as_str(),
            events = events.len(),
            duration_ms = run.started_at.elapsed().as_millis() as u64,
            "run ended"
        );
        self.linger(run);
    }

    /// Runs the agent until it finishes, the run is cancelled or its time is up. The agent's
    /// future is dropped on return: its model request and tool calls with it.
    ///
    /// The agent's future is woken at every event it emits; the cancellation and the time limit
    /// are watched by a task of their own ([`watch`]), which aborts it, so that no wake of the
    /// agent polls them (the token's check takes a mutex: docs/benchmarks.md).
    async fn run_agent(
        &self,
        run: &Arc<Run>,
        agent: &dyn Agent,
        context: &RunContext,
    ) -> RunEnding {
        let (abort, registration) = AbortHandle::new_pair();
        // Aborted when dropped, however this returns (an agent that panics included), so it
        // never holds the run after its agent.
        let watcher =
            AbortOnDropHandle::new(tokio::spawn(watch(run.clone(), self.run_timeout, abort)));
        // An abort is seen before the agent is polled: when Stop lands as the agent finishes,
        // Stop wins.
        let outcome = Abortable::new(agent.run(context), registration).await.ok();
        drop(watcher);
        // A tool that saw the cancellation can let the agent finish in the same instant; a run
        // asked to stop still ends as stopped.
        if run.cancellation().is_cancelled() {
            return self.why_stopped(run);
        }
        match outcome {
            Some(AgentOutcome::Completed) => RunEnding::Completed,
            Some(AgentOutcome::Failed { code, message }) => RunEnding::Failed {
                code,
                error: message,
            },
            None => self.why_stopped(run),
        }
    }

    /// Stores the finished trace before its end is published, however long that takes: a run
    /// whose trace cannot be written (a full disk) stays in memory, its stream open, and is
    /// retried with backoff while `/healthz` reports the failing writes. Answers whether this
    /// run's ending closed the trace (not when another instance had closed it).
    async fn store_trace(&self, run: &Run, finished: FinishedTrace<'_>) -> bool {
        let mut delay = FINISH_RETRY_FIRST;
        loop {
            match self.store.finish_run(finished).await {
                Ok(closed) => {
                    self.set_unstored(&run.run_id, None);
                    return closed;
                }
                Err(error) => {
                    tracing::error!(run_id = %run.run_id, %error, retry_in_ms = delay.as_millis() as u64, "could not store the finished trace; will retry");
                    self.set_unstored(&run.run_id, Some(error.to_string()));
                    tokio::time::sleep(delay).await;
                    delay = (delay * 2).min(FINISH_RETRY_MAX);
                }
            }
        }
    }

    /// Late subscribers read an ended run from memory for a while; a run that outgrew a cap, or
    /// any past half the memory budget, leaves at once, and they read the stored trace.
    fn linger(self: Arc<Self>, run: Arc<Run>) {
        if run.overflowed().is_some() || self.budget.used() > self.budget.limit() / 2 {
            self.runs().remove(&run.run_id);
            return;
        }
        let engine = self.clone();
        self.tasks.spawn(async move {
            tokio::time::sleep(FINISHED_RUN_GRACE).await;
            engine.runs().remove(&run.run_id);
        });
    }

    /// How a run ended that its agent did not finish: its log outgrew a limit, or it was
    /// cancelled (by the user, the time limit or a shutdown).
    fn why_stopped(&self, run: &Run) -> RunEnding {
        match run.overflowed() {
            Some(Overflow::RunTooLarge) => RunEnding::Failed {
                code: ErrorCode::RunTooLarge,
                error: format!(
                    "The run produced more than {} MiB of events and was stopped.",
                    super::MAX_RUN_LOG_BYTES >> 20
                ),
            },
            Some(Overflow::MemoryExhausted) => RunEnding::Failed {
                code: ErrorCode::MemoryExhausted,
                error: format!(
                    "The server's memory for runs ({} MiB) was used up; the run was stopped.",
                    self.budget.limit() >> 20
                ),
            },
            None => {
                let (by, reason) = run
                    .cancel_request()
                    .unwrap_or((CancelledBy::User, "Stopped.".to_owned()));
                RunEnding::Cancelled { by, reason }
            }
        }
    }
}

/// Aborts the run's agent once the run is cancelled or has used up `limit`.
async fn watch(run: Arc<Run>, limit: Duration, agent: AbortHandle) {
    tokio::select! {
        biased;
        _ = run.cancellation().cancelled() => {}
        _ = out_of_time(&run, limit) => {
            let limit = limit.as_secs();
            run.request_cancel(CancelledBy::Timeout, format!("The run took longer than {limit} s."));
        }
    }
    agent.abort();
}

/// Resolves once the run has used `limit`, not counting the time it waited for a person to
/// approve or deny a call (that wait has its own, optional, timeout).
async fn out_of_time(run: &Run, limit: Duration) {
    loop {
        let used = run
            .started_at
            .elapsed()
            .saturating_sub(run.time_waiting_for_people());
        match limit.checked_sub(used) {
            Some(left) if !left.is_zero() => tokio::time::sleep(left).await,
            _ => return,
        }
    }
}

/// How a run ended, as its trace keeps it: worked out once for the store and the OTLP export.
struct Closing {
    completed_at: String,
    duration_ms: u64,
    cancelled_by: Option<CancelledBy>,
    /// Kept apart from the events: cleaned as the events' copy is.
    reason: Option<String>,
    error_code: Option<ErrorCode>,
}

impl Closing {
    fn new(run: &Run, ending: &RunEnding, message: &Message) -> Self {
        let (cancelled_by, reason, error_code) = match ending {
            RunEnding::Completed => (None, None, None),
            RunEnding::Cancelled { by, reason } => (Some(*by), Some(reason.clone()), None),
            RunEnding::Failed { code, error } => (None, Some(error.clone()), Some(code.clone())),
        };
        Closing {
            completed_at: now_rfc3339(),
            // The same figure the message carries (its footer shows it).
            duration_ms: message
                .duration_ms
                .unwrap_or_else(|| run.started_at.elapsed().as_millis() as u64),
            cancelled_by,
            reason: reason.map(|mut reason| {
                crate::sanitize::sanitize_text(&mut reason);
                reason
            }),
            error_code,
        }
    }

    fn finished<'a>(
        &'a self,
        run: &'a Run,
        message: &'a Message,
        events: &'a [Arc<str>],
        model_turns: &'a [ModelTurn],
    ) -> FinishedTrace<'a> {
        FinishedTrace {
            trace_id: &run.trace_id,
            message,
            completed_at: &self.completed_at,
            duration_ms: self.duration_ms,
            cancelled_by: self.cancelled_by,
            reason: self.reason.as_deref(),
            error_code: self.error_code.as_ref(),
            events,
            model_turns,
        }
    }

    /// The trace's row as the store keeps it, without its events.
    fn trace(&self, run: &Run, message: &Message, user_message_id: String) -> Trace {
        let usage = message.usage;
        let count = |count: u64| i64::try_from(count).unwrap_or(i64::MAX);
        Trace {
            trace_id: run.trace_id.clone(),
            run_id: run.run_id.clone(),
            conversation_id: run.conversation_id.clone(),
            message_id: run.message_id.clone(),
            user_message_id,
            model: run.model.clone(),
            status: message.status.into(),
            started_at: run.started_ts.clone(),
            completed_at: Some(self.completed_at.clone()),
            total_tool_calls: count(message.tool_calls().count() as u64),
            input_tokens: usage.map(|u| count(u.input_tokens)),
            output_tokens: usage.map(|u| count(u.output_tokens)),
            reasoning_tokens: usage.and_then(|u| u.reasoning_tokens).map(count),
            cache_read_tokens: usage.and_then(|u| u.cache_read_tokens).map(count),
            cache_write_tokens: usage.and_then(|u| u.cache_write_tokens).map(count),
            total_tokens_used: usage.map(|u| count(u.input_tokens.saturating_add(u.output_tokens))),
            total_duration_ms: Some(count(self.duration_ms)),
            cancelled_by: self.cancelled_by,
            cancellation_reason: self.reason.clone(),
            error_code: self.error_code.clone(),
            events: Vec::new(),
            feedback: Vec::new(),
        }
    }
}

/// The user's message, as the OTLP export needs it: its id, and its text when spans carry
/// content.
struct Question {
    id: String,
    text: Option<String>,
}

impl Question {
    fn of(context: &RunContext, otlp: Option<&crate::otel::Otlp>) -> Self {
        Question {
            id: context.user_message.id.clone(),
            text: otlp
                .filter(|otlp| otlp.content())
                .map(|_| context.user_message.text()),
        }
    }
}
