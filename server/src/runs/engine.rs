//! Starts runs in their own tasks, checkpoints their events, cancels them and closes their traces.

use app::protocol::TraceStatus;
use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::Duration,
};

use app::protocol::{CancelledBy, EventKind};
use serde::{Deserialize, Serialize};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_util::task::TaskTracker;

use super::{
    new_id, now_rfc3339, ApprovalAnswer, ApprovalRefused, Checkpointer, MemoryBudget, Overflow,
    Run, RunEnding, RunLimits, UserRuns, UserSlot,
};
use crate::{
    agents::{Agent, AgentOutcome, Agents, RunContext},
    error::{Error, Result},
    store::{FinishedTrace, NewRun, Store, LOCAL_OWNER},
    tools::ToolRegistry,
};

/// A finished run stays in memory this long for late subscribers, then they read the store.
const FINISHED_RUN_GRACE: Duration = Duration::from_secs(60);
const MAX_CONTENT_CHARS: usize = 100_000;
/// What a client is told to wait before trying again when the server is at a limit.
pub const RETRY_AFTER_SECS: u64 = 5;
/// A trace that could not be stored is written again after this, then twice as long each time.
const FINISH_RETRY_FIRST: Duration = Duration::from_millis(100);
const FINISH_RETRY_MAX: Duration = Duration::from_secs(5);

#[derive(Clone, Debug, Deserialize)]
pub struct ChatRequest {
    #[serde(default)]
    pub conversation_id: Option<String>,
    pub content: String,
    #[serde(default)]
    pub model: Option<String>,
}

/// What `POST /api/chat` answers with `Accept: application/json`.
#[derive(Clone, Debug, Serialize)]
pub struct StartedChat {
    pub run_id: String,
    pub conversation_id: String,
    pub trace_id: String,
    pub message_id: String,
    pub user_message_id: String,
    pub model: String,
    pub events_url: String,
}

pub struct Engine {
    store: Store,
    agents: Agents,
    tools: Arc<ToolRegistry>,
    default_model: String,
    run_timeout: Duration,
    runs: Mutex<HashMap<String, Arc<Run>>>,
    checkpointer: Arc<Checkpointer>,
    checkpointer_stop: tokio_util::sync::CancellationToken,
    tasks: TaskTracker,
    limits: RunLimits,
    budget: Arc<MemoryBudget>,
    /// One permit per run going; `limits.max_running` in all.
    slots: Arc<Semaphore>,
    /// Each signed-in user's runs going and recent starts.
    user_runs: Arc<UserRuns>,
    /// Runs whose finished trace could not be stored yet, with the database's reason: while any
    /// wait, `/healthz` is degraded (a job can fail while the writer's transactions commit, as
    /// PostgreSQL's do around a refused row).
    unstored: Mutex<HashMap<String, String>>,
    /// On PostgreSQL, the bus to the other instances.
    bus: std::sync::OnceLock<Arc<crate::bus::Bus>>,
}

/// What a run holds while it goes: a server slot, and its user's (none for the local user).
struct RunSlot {
    _server: OwnedSemaphorePermit,
    _user: Option<UserSlot>,
}

impl Engine {
    pub fn new(
        store: Store,
        agents: Agents,
        tools: ToolRegistry,
        default_model: String,
        run_timeout: Duration,
        limits: RunLimits,
    ) -> Arc<Self> {
        let checkpointer = Checkpointer::new(store.clone());
        let checkpointer_stop = tokio_util::sync::CancellationToken::new();
        let tasks = TaskTracker::new();
        if let Err(error) = checkpointer.clone().spawn(checkpointer_stop.clone()) {
            tracing::error!(%error, "cannot start the checkpointer thread: runs are stored only when they end");
        }
        let budget = MemoryBudget::new(limits.memory_budget);
        super::limits::trimmer(&budget);
        Arc::new(Engine {
            store,
            agents,
            tools: Arc::new(tools),
            default_model,
            run_timeout,
            runs: Mutex::new(HashMap::new()),
            checkpointer,
            checkpointer_stop,
            tasks,
            limits,
            budget,
            slots: Arc::new(Semaphore::new(limits.max_running)),
            user_runs: UserRuns::new(limits.per_user),
            unstored: Mutex::new(HashMap::new()),
            bus: std::sync::OnceLock::new(),
        })
    }

    fn runs(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Run>>> {
        self.runs
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// A run still in memory (going, or finished within the grace period).
    pub fn get(&self, run_id: &str) -> Option<Arc<Run>> {
        self.runs().get(run_id).cloned()
    }

    /// Validates the request, stores the user's message and starts the run in its own task.
    pub async fn start(
        self: &Arc<Self>,
        owner_id: &str,
        request: ChatRequest,
    ) -> Result<(Arc<Run>, StartedChat)> {
        let content = request.content.trim();
        if content.is_empty() {
            return Err(Error::InvalidField("`content` must not be empty".into()));
        }
        if content.chars().count() > MAX_CONTENT_CHARS {
            return Err(Error::InvalidField(format!(
                "`content` is longer than {MAX_CONTENT_CHARS} characters"
            )));
        }
        if request
            .model
            .as_deref()
            .is_some_and(|model| model.trim().is_empty())
        {
            return Err(Error::InvalidField(
                "`model` must not be empty when given".into(),
            ));
        }
        if let Some(id) = &request.conversation_id {
            if self
                .runs()
                .values()
                // Another user's conversation is not found (below), never "busy".
                .any(|run| {
                    run.conversation_id == *id && run.owner_id == owner_id && !run.is_closed()
                })
            {
                return Err(Error::Conflict(
                    "a run is already going in this conversation; stop it first".into(),
                ));
            }
        }
        // Resolve the agent before anything is stored, so an unknown model leaves no trace.
        let requested_model = request.model.clone();
        if let Some(model) = &requested_model {
            self.agents.resolve(model)?;
        }
        let slot = self.take_slot(owner_id)?;

        let now = now_rfc3339();
        let (run_id, trace_id) = (new_id("run"), new_id("trace"));
        let (user_message_id, message_id) = (new_id("msg"), new_id("msg"));
        let started = self
            .store
            .begin_run(NewRun {
                owner_id: owner_id.to_owned(),
                conversation_id: request.conversation_id.clone(),
                content: content.to_owned(),
                model: requested_model,
                default_model: self.default_model.clone(),
                run_id: run_id.clone(),
                trace_id: trace_id.clone(),
                user_message_id: user_message_id.clone(),
                assistant_message_id: message_id.clone(),
                now: now.clone(),
            })
            .await?;
        let run = Run::new(
            run_id.clone(),
            trace_id.clone(),
            started.conversation_id.clone(),
            message_id.clone(),
            owner_id.to_owned(),
            started.model.clone(),
            now,
            self.checkpointer.waker(),
            self.budget.clone(),
        );
        run.emit(EventKind::MessageStarted {
            conversation_id: started.conversation_id.clone(),
            user_message_id: user_message_id.clone(),
            message_id: message_id.clone(),
            trace_id: trace_id.clone(),
            model: started.model.clone(),
        });
        self.runs().insert(run_id.clone(), run.clone());
        self.checkpointer.track(run.clone());

        // A conversation's stored model may have become unknown (a removed scenario): the run
        // still starts, and ends at once with a clear error.
        let agent = self.agents.resolve(&started.model);
        let context = RunContext::new(
            run.clone(),
            self.tools.clone(),
            started.history,
            started.user_message,
        );
        let engine = self.clone();
        self.tasks
            .spawn(async move { engine.drive(context, agent, slot).await });

        let reply = StartedChat {
            events_url: format!("/api/runs/{run_id}/events"),
            run_id,
            conversation_id: started.conversation_id,
            trace_id,
            message_id,
            user_message_id,
            model: started.model,
        };
        Ok((run, reply))
    }

    /// One of the running slots, unless the server is at its run or memory limit, or the user
    /// at theirs (429).
    fn take_slot(&self, owner_id: &str) -> Result<RunSlot> {
        let user = (owner_id != LOCAL_OWNER)
            .then(|| self.user_runs.take(owner_id))
            .transpose()?;
        Ok(RunSlot {
            _server: self.take_server_slot()?,
            _user: user,
        })
    }

    fn take_server_slot(&self) -> Result<OwnedSemaphorePermit> {
        if self.budget.used() >= self.budget.limit() {
            return Err(Error::TooBusy(format!(
                "the server's memory for runs ({} MiB) is in use; try again in a few seconds",
                self.budget.limit() >> 20
            )));
        }
        self.slots.clone().try_acquire_owned().map_err(|_| {
            Error::TooBusy(format!(
                "the server is running as many runs as it allows ({}); try again in a few seconds",
                self.limits.max_running
            ))
        })
    }

    /// Runs going now, and bytes of event logs held in memory.
    /// Joins the other instances on the store's PostgreSQL database: Stop sent there for runs
    /// of this instance cancels them. Until the engine shuts down.
    pub fn join_instances(self: &Arc<Self>) {
        let stop = self.checkpointer_stop.child_token();
        let Some(postgres) = self.store.postgres().cloned() else {
            return;
        };
        let engine = Arc::downgrade(self);
        let on_cancel = Box::new(move |request: crate::bus::CancelRequest| {
            let Some(engine) = engine.upgrade() else {
                return;
            };
            if engine.get(&request.run_id).is_none() {
                return;
            }
            if let Some(approval) = request.approval {
                let answer = ApprovalAnswer {
                    decision: approval.decision,
                    by: approval.by,
                    reason: request.reason,
                };
                let _ = engine.answer_approval(
                    &request.owner_id,
                    &request.run_id,
                    &approval.call_id,
                    answer,
                );
                return;
            }
            tokio::spawn(async move {
                let _ = engine
                    .cancel(&request.owner_id, &request.run_id, request.reason)
                    .await;
            });
        });
        let bus = crate::bus::Bus::start(self.store.clone(), postgres, on_cancel, stop);
        let _ = self.bus.set(bus);
    }

    pub fn bus(&self) -> Option<&Arc<crate::bus::Bus>> {
        self.bus.get()
    }

    /// Why finished runs are waiting to be stored, while any are.
    pub fn store_failure(&self) -> Option<String> {
        let unstored = self.unstored.lock().unwrap_or_else(|p| p.into_inner());
        let reason = unstored.values().next()?;
        Some(format!(
            "{} finished run(s) wait to be stored: {reason}",
            unstored.len()
        ))
    }

    fn set_unstored(&self, run_id: &str, error: Option<String>) {
        let mut unstored = self.unstored.lock().unwrap_or_else(|p| p.into_inner());
        match error {
            Some(error) => unstored.insert(run_id.to_owned(), error),
            None => unstored.remove(run_id),
        };
    }

    pub fn load(&self) -> (usize, usize) {
        let running = self.limits.max_running - self.slots.available_permits();
        (running, self.budget.used())
    }

    /// The run's own task: the agent races cancellation and the run timeout; then the trace closes.
    /// The slot is given back when the trace is stored.
    async fn drive(
        self: Arc<Self>,
        context: RunContext,
        agent: Result<Arc<dyn Agent>>,
        _slot: RunSlot,
    ) {
        let run = context.run.clone();

        let ending = match agent {
            Err(error) => RunEnding::Failed {
                code: "unknown_model".into(),
                error: error.public_message(),
            },
            Ok(agent) => {
                let outcome = tokio::select! {
                    // Cancellation first: when Stop lands as the agent finishes, Stop wins.
                    biased;
                    _ = run.cancellation().cancelled() => None,
                    _ = out_of_time(&run, self.run_timeout) => {
                        run.request_cancel(CancelledBy::Timeout, format!("The run took longer than {} s.", self.run_timeout.as_secs()));
                        None
                    }
                    outcome = agent.run(&context) => Some(outcome),
                };
                // A tool that saw the cancellation can let the agent finish in the same instant;
                // a run asked to stop still ends as stopped.
                let outcome = if run.cancellation().is_cancelled() {
                    None
                } else {
                    outcome
                };
                // The agent's future is dropped here: its model request and tool calls with it.
                match outcome {
                    Some(AgentOutcome::Completed) => RunEnding::Completed,
                    Some(AgentOutcome::Failed { code, message }) => RunEnding::Failed {
                        code,
                        error: message,
                    },
                    None => self.why_stopped(&run),
                }
            }
        };
        let model_turns = context.take_model_turns();
        drop(context);

        // The checkpointer's last write lands before the final one, so nothing is written twice.
        self.checkpointer.untrack(&run.run_id).await;

        let message = run.close(&ending);
        let events = run.all_events();
        let (cancelled_by, reason, error_code) = match &ending {
            RunEnding::Completed => (None, None, None),
            RunEnding::Cancelled { by, reason } => (Some(*by), Some(reason.clone()), None),
            RunEnding::Failed { code, error } => (None, Some(error.clone()), Some(code)),
        };
        // The trace keeps the reason apart from the events: cleaned as the events' copy is.
        let reason = reason.map(|mut reason| {
            crate::sanitize::sanitize_text(&mut reason);
            reason
        });
        let completed_at = now_rfc3339();
        // The same figure the message carries (its footer shows it).
        let duration_ms = message
            .duration_ms
            .unwrap_or_else(|| run.started_at.elapsed().as_millis() as u64);
        // Stored before published, however long that takes: a run whose trace cannot be written
        // (a full disk) stays in memory, its stream open, and is retried with backoff while
        // `/healthz` reports the failing writes.
        let mut delay = FINISH_RETRY_FIRST;
        while let Err(error) = self
            .store
            .finish_run(FinishedTrace {
                trace_id: &run.trace_id,
                message: &message,
                completed_at: &completed_at,
                duration_ms,
                cancelled_by,
                reason: reason.as_deref(),
                error_code,
                events: &events,
                model_turns: &model_turns,
            })
            .await
        {
            tracing::error!(run_id = %run.run_id, %error, retry_in_ms = delay.as_millis() as u64, "could not store the finished trace; will retry");
            self.set_unstored(&run.run_id, Some(error.to_string()));
            tokio::time::sleep(delay).await;
            delay = (delay * 2).min(FINISH_RETRY_MAX);
        }
        self.set_unstored(&run.run_id, None);
        run.publish_end();
        tracing::info!(
            run_id = %run.run_id,
            status = message.status.as_str(),
            events = events.len(),
            duration_ms = run.started_at.elapsed().as_millis() as u64,
            "run ended"
        );

        // Late subscribers read an ended run from memory for a while; a run that outgrew a cap,
        // or any past half the memory budget, leaves at once, and they read the stored trace.
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
                code: "run_too_large".into(),
                error: format!(
                    "The run produced more than {} MiB of events and was stopped.",
                    super::MAX_RUN_LOG_BYTES >> 20
                ),
            },
            Some(Overflow::MemoryExhausted) => RunEnding::Failed {
                code: "memory_exhausted".into(),
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

    /// Stops a run: `message_cancelled` reaches subscribers before this returns.
    pub async fn cancel(
        &self,
        owner_id: &str,
        run_id: &str,
        reason: Option<String>,
    ) -> Result<(String, String)> {
        let run = match self.get(run_id) {
            Some(run) if run.owner_id == owner_id => run,
            Some(_) => return Err(Error::NotFound("run")),
            None => return self.cancel_elsewhere(owner_id, run_id, reason).await,
        };
        let mut published = run.subscribe();
        if published.borrow().finished || run.is_closed() {
            return Err(Error::Conflict("the run has already ended".into()));
        }
        run.request_cancel(
            CancelledBy::User,
            reason.unwrap_or_else(|| "Stopped by the user.".to_owned()),
        );
        let ended = tokio::time::timeout(
            Duration::from_secs(10),
            published.wait_for(|state| state.finished),
        )
        .await;
        if ended.is_err() {
            tracing::warn!(%run_id, "run did not end within 10 s of its cancellation");
        }
        Ok((run.run_id.clone(), run.trace_id.clone()))
    }

    /// Answers a call's approval request; the first answer wins (409 after). For a run of
    /// another instance the answer goes there through the bus: `Ok(false)`.
    pub fn answer_approval(
        &self,
        owner_id: &str,
        run_id: &str,
        call_id: &str,
        answer: ApprovalAnswer,
    ) -> Result<bool> {
        let run = match self.get(run_id) {
            Some(run) if run.owner_id == owner_id => run,
            Some(_) => return Err(Error::NotFound("run")),
            None => return Ok(false),
        };
        if run.published().finished || run.is_closed() {
            return Err(Error::Conflict("the run has already ended".into()));
        }
        run.resolve_approval(call_id, answer)
            .map(|()| true)
            .map_err(|refused| match refused {
                ApprovalRefused::UnknownCall => Error::NotFound("approval request"),
                ApprovalRefused::AlreadyAnswered => {
                    Error::Conflict("this call has already been answered".into())
                }
            })
    }

    /// A run this instance does not hold, with the bus that reaches the instance that does:
    /// 404 when there is no such run, 409 when it has ended (or there is no other instance).
    async fn running_elsewhere(
        &self,
        owner_id: &str,
        run_id: &str,
    ) -> Result<(crate::store::Trace, &Arc<crate::bus::Bus>)> {
        let trace = self
            .store
            .trace_by_run(owner_id, run_id)
            .await?
            .ok_or(Error::NotFound("run"))?;
        match (trace.status == TraceStatus::Running, self.bus()) {
            (true, Some(bus)) => Ok((trace, bus)),
            _ => Err(Error::Conflict(format!(
                "the run has already ended ({})",
                trace.status
            ))),
        }
    }

    /// An answer for a run this instance does not hold: 404 when there is no such run or no such
    /// request, 409 when it has ended or the call was answered. On PostgreSQL, when another
    /// instance runs it, the answer goes there, and this waits (at most 5 s) for the answer the
    /// run recorded: `true` when it is this one, 409 when another came first, `false` (the
    /// answer is on its way) when none is recorded in time.
    pub async fn answer_approval_elsewhere(
        &self,
        owner_id: &str,
        run_id: &str,
        call_id: &str,
        answer: ApprovalAnswer,
    ) -> Result<bool> {
        let (trace, bus) = self.running_elsewhere(owner_id, run_id).await?;
        if approval_asked(&trace.events, call_id)?.is_some() {
            return Err(Error::Conflict(
                "this call has already been answered".into(),
            ));
        }
        let mut progress = bus.follow(&trace.trace_id, None);
        bus.request_cancel(&crate::bus::CancelRequest {
            run_id: run_id.to_owned(),
            owner_id: owner_id.to_owned(),
            reason: answer.reason.clone(),
            approval: Some(crate::bus::ForwardedApproval {
                call_id: call_id.to_owned(),
                decision: answer.decision,
                by: answer.by.clone(),
            }),
        })
        .await?;
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        while tokio::time::Instant::now() < deadline {
            // A notification wakes this early; the poll covers one that was lost.
            let _ = tokio::time::timeout(Duration::from_millis(250), progress.changed()).await;
            let trace = self
                .store
                .trace_by_run(owner_id, run_id)
                .await?
                .ok_or(Error::NotFound("run"))?;
            match approval_asked(&trace.events, call_id)? {
                // The reason is not compared: the stored one is redacted.
                Some(recorded)
                    if (recorded.decision, &recorded.by) == (answer.decision, &answer.by) =>
                {
                    return Ok(true)
                }
                Some(_) => {
                    return Err(Error::Conflict(
                        "this call has already been answered".into(),
                    ))
                }
                None if trace.status != TraceStatus::Running => {
                    return Err(Error::Conflict("the run has already ended".into()))
                }
                None => {}
            }
        }
        Ok(false)
    }

    /// Stop for a run this instance does not hold: 409 when it has ended; on PostgreSQL, when
    /// another instance runs it, Stop goes there through the bus and this answers once the trace
    /// has closed (at most 10 s).
    async fn cancel_elsewhere(
        &self,
        owner_id: &str,
        run_id: &str,
        reason: Option<String>,
    ) -> Result<(String, String)> {
        let (trace, bus) = self.running_elsewhere(owner_id, run_id).await?;
        let mut progress = bus.follow(&trace.trace_id, None);
        bus.request_cancel(&crate::bus::CancelRequest {
            run_id: run_id.to_owned(),
            owner_id: owner_id.to_owned(),
            reason,
            approval: None,
        })
        .await?;
        let ended =
            tokio::time::timeout(Duration::from_secs(10), progress.wait_for(|p| p.ended)).await;
        if ended.is_err() {
            tracing::warn!(%run_id, "a run of another instance did not end within 10 s of its cancellation");
        }
        Ok((run_id.to_owned(), trace.trace_id))
    }

    /// Cancels every run (`cancelled_by: shutdown`) and waits, at most `deadline` in all, for
    /// their traces to close. A run that cannot be stored by then stays `running` in the database
    /// and is marked interrupted, with its checkpointed events, at the next start.
    pub async fn shutdown(&self, deadline: Duration) {
        let running: Vec<Arc<Run>> = self
            .runs()
            .values()
            .filter(|run| !run.is_closed())
            .cloned()
            .collect();
        for run in &running {
            run.request_cancel(
                CancelledBy::Shutdown,
                "The server is shutting down.".to_owned(),
            );
        }
        let ended = futures::future::join_all(running.iter().map(|run| async move {
            let _ = run.subscribe().wait_for(|state| state.finished).await;
        }));
        if tokio::time::timeout(deadline, ended).await.is_err() {
            tracing::warn!(
                deadline_secs = deadline.as_secs(),
                "some runs did not end in time; they will be marked interrupted at the next start"
            );
        }
        self.checkpointer_stop.cancel();
        self.tasks.close();
    }

    /// Every model a conversation can use, and the default.
    pub fn models(&self) -> (Vec<String>, &str) {
        (self.agents.model_ids(), &self.default_model)
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    pub fn tools(&self) -> &Arc<ToolRegistry> {
        &self.tools
    }
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

/// Whether `call_id` asked for approval in `events` (404 when it did not), and the answer
/// recorded for it, if any.
fn approval_asked(
    events: &[app::protocol::Event],
    call_id: &str,
) -> Result<Option<ApprovalAnswer>> {
    let mut asked = false;
    for event in events {
        match &event.kind {
            EventKind::ToolApprovalRequested { call_id: id, .. } if id == call_id => asked = true,
            EventKind::ToolApprovalResolved {
                call_id: id,
                decision,
                by,
                reason,
            } if id == call_id => {
                return Ok(Some(ApprovalAnswer {
                    decision: *decision,
                    by: by.clone(),
                    reason: reason.clone(),
                }))
            }
            _ => {}
        }
    }
    if asked {
        Ok(None)
    } else {
        Err(Error::NotFound("approval request"))
    }
}
