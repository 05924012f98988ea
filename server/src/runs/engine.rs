//! Starts runs in their own tasks, checkpoints their events, cancels them and closes their traces.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::Duration,
};

use app::protocol::{CancelledBy, EventKind};
use serde::{Deserialize, Serialize};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_util::task::TaskTracker;

use super::{Checkpointer, MemoryBudget, Run, RunIds, RunLimits, UserRuns, UserSlot};
use crate::{
    agents::{Agents, RunContext},
    bus::CommandOutcome,
    error::{Error, Result},
    sink::{ApprovalAnswer, ApprovalRefused},
    stamps::{new_id, now_rfc3339},
    store::{NewRun, Rerun, Store, LOCAL_OWNER},
    tools::ToolRegistry,
};

const MAX_CONTENT_CHARS: usize = 100_000;

#[derive(Clone, Debug, Deserialize)]
pub struct ChatRequest {
    #[serde(default)]
    pub conversation_id: Option<String>,
    /// The question; absent for a regenerate.
    #[serde(default)]
    pub content: String,
    #[serde(default)]
    pub model: Option<String>,
    /// A new answer to the question of this assistant message of the conversation (a branch).
    #[serde(default)]
    pub regenerate: Option<String>,
    /// A new version of this user message of the conversation, with `content` (a branch).
    #[serde(default)]
    pub edit: Option<String>,
    /// The id a new conversation gets (when `conversation_id` is none); a random one if none.
    /// Set by the server (the AI SDK's chat ids), never read from a body.
    #[serde(skip)]
    pub new_conversation_id: Option<String>,
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
    pub(super) store: Store,
    pub(super) agents: Agents,
    pub(super) tools: Arc<ToolRegistry>,
    pub(super) default_model: String,
    pub(super) run_timeout: Duration,
    pub(super) runs: Mutex<HashMap<String, Arc<Run>>>,
    pub(super) checkpointer: Arc<Checkpointer>,
    pub(super) checkpointer_stop: tokio_util::sync::CancellationToken,
    pub(super) tasks: TaskTracker,
    pub(super) limits: RunLimits,
    pub(super) budget: Arc<MemoryBudget>,
    /// One permit per run going; `limits.max_running` in all.
    pub(super) slots: Arc<Semaphore>,
    /// Each signed-in user's runs going and recent starts.
    pub(super) user_runs: Arc<UserRuns>,
    /// Runs whose finished trace could not be stored yet, with the database's reason: while any
    /// wait, `/healthz` is degraded (a job can fail while the writer's transactions commit, as
    /// PostgreSQL's do around a refused row).
    pub(super) unstored: Mutex<HashMap<String, String>>,
    /// On PostgreSQL, the bus to the other instances.
    pub(super) bus: std::sync::OnceLock<Arc<crate::bus::Bus>>,
    /// With an OTLP endpoint, where finished runs go once stored (see `otel`).
    pub(super) otlp: std::sync::OnceLock<crate::otel::Otlp>,
}

/// What a run holds while it goes: a server slot, and its user's (none for the local user).
pub(super) struct RunSlot {
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
            otlp: std::sync::OnceLock::new(),
        })
    }

    /// Sends every run that finishes from now on to `otlp` once stored.
    pub fn export_to(&self, otlp: crate::otel::Otlp) {
        let _ = self.otlp.set(otlp);
    }

    /// The OTLP export, when there is one.
    pub fn otlp(&self) -> Option<&crate::otel::Otlp> {
        self.otlp.get()
    }

    pub(super) fn runs(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Run>>> {
        self.runs
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// A run still in memory (going, or finished within the grace period).
    pub fn get(&self, run_id: &str) -> Option<Arc<Run>> {
        self.runs().get(run_id).cloned()
    }

    /// Drops the ended runs of `owner_id`'s conversation (of all their conversations: `None`) that
    /// linger in memory for late readers: after a delete, their events are not served from here.
    pub fn forget_conversations(&self, owner_id: &str, conversation_id: Option<&str>) {
        self.runs().retain(|_, run| {
            let theirs = run.owner_id == owner_id
                && conversation_id.is_none_or(|id| id == run.conversation_id);
            !(theirs && run.published().finished)
        });
    }

    /// Validates the request, stores the user's message and starts the run in its own task.
    pub async fn start(
        self: &Arc<Self>,
        owner_id: &str,
        request: ChatRequest,
    ) -> Result<(Arc<Run>, StartedChat)> {
        let rerun = validated_rerun(&request)?;
        let content = match rerun {
            Some(Rerun::Regenerate(_)) => "",
            _ => validated_content(&request)?,
        };
        self.check_not_busy(owner_id, request.conversation_id.as_deref())?;
        // Resolve the agent before anything is stored, so an unknown model leaves no trace.
        if let Some(model) = &request.model {
            self.agents.resolve(model)?;
        }
        let slot = self.take_slot(owner_id)?;

        let now = now_rfc3339();
        let ids = RunIds {
            run_id: new_id("run"),
            trace_id: new_id("trace"),
            conversation_id: String::new(),
            message_id: new_id("msg"),
            owner_id: owner_id.to_owned(),
            model: String::new(),
        };
        let user_message_id = new_id("msg");
        let started = self
            .store
            .begin_run(NewRun {
                owner_id: owner_id.to_owned(),
                conversation_id: request.conversation_id.clone(),
                new_conversation_id: request.new_conversation_id.clone(),
                content: content.to_owned(),
                model: request.model.clone(),
                default_model: self.default_model.clone(),
                run_id: ids.run_id.clone(),
                trace_id: ids.trace_id.clone(),
                user_message_id: user_message_id.clone(),
                assistant_message_id: ids.message_id.clone(),
                now: now.clone(),
                rerun,
            })
            .await?;
        let ids = RunIds {
            conversation_id: started.conversation_id.clone(),
            model: started.model.clone(),
            ..ids
        };
        let reply = StartedChat {
            events_url: format!("/api/runs/{}/events", ids.run_id),
            run_id: ids.run_id.clone(),
            conversation_id: ids.conversation_id.clone(),
            trace_id: ids.trace_id.clone(),
            message_id: ids.message_id.clone(),
            user_message_id: started.user_message.id.clone(),
            model: ids.model.clone(),
        };
        let run = Run::new(ids, now, self.checkpointer.waker(), self.budget.clone());
        self.launch(&run, &reply, started.history, started.user_message, slot);
        Ok((run, reply))
    }

    /// The user's run going in a conversation, when this instance runs it.
    pub fn running_in(&self, owner_id: &str, conversation_id: &str) -> Option<Arc<Run>> {
        self.runs()
            .values()
            .find(|run| {
                run.conversation_id == conversation_id
                    && run.owner_id == owner_id
                    && !run.is_closed()
                    && !run.published().finished
            })
            .cloned()
    }

    /// 409 when the user already has a run going in the conversation.
    fn check_not_busy(&self, owner_id: &str, conversation_id: Option<&str>) -> Result<()> {
        let Some(id) = conversation_id else {
            return Ok(());
        };
        let busy = self
            .runs()
            .values()
            // Another user's conversation is not found (later), never "busy".
            .any(|run| run.conversation_id == id && run.owner_id == owner_id && !run.is_closed());
        if busy {
            return Err(Error::Conflict(
                "a run is already going in this conversation; stop it first".into(),
            ));
        }
        Ok(())
    }

    /// Emits the run's first event, tracks it and starts its task.
    fn launch(
        self: &Arc<Self>,
        run: &Arc<Run>,
        started: &StartedChat,
        history: Vec<app::protocol::Message>,
        user_message: app::protocol::Message,
        slot: RunSlot,
    ) {
        run.emit(EventKind::MessageStarted {
            conversation_id: started.conversation_id.clone(),
            user_message_id: started.user_message_id.clone(),
            message_id: started.message_id.clone(),
            trace_id: started.trace_id.clone(),
            model: started.model.clone(),
        });
        self.runs().insert(run.run_id.clone(), run.clone());
        self.checkpointer.track(run.clone());
        // A conversation's stored model may have become unknown (a removed scenario): the run
        // still starts, and ends at once with a clear error.
        let agent = self.agents.resolve(&started.model);
        let context = RunContext::new(run.clone(), self.tools.clone(), history, user_message);
        let (engine, driven) = (self.clone(), run.clone());
        self.tasks
            .spawn(async move { engine.drive(driven, context, agent, slot).await });
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

    /// On PostgreSQL, the bus to the other instances.
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

    pub(super) fn set_unstored(&self, run_id: &str, error: Option<String>) {
        let mut unstored = self.unstored.lock().unwrap_or_else(|p| p.into_inner());
        match error {
            Some(error) => unstored.insert(run_id.to_owned(), error),
            None => unstored.remove(run_id),
        };
    }

    /// Runs going now, and bytes of event logs held in memory.
    pub fn load(&self) -> (usize, usize) {
        let running = self.limits.max_running - self.slots.available_permits();
        (running, self.budget.used())
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

    /// Answers a call's approval request; the first answer wins (409 after). A run of another
    /// instance gets the answer through the bus (see `remote`).
    pub async fn answer_approval(
        &self,
        owner_id: &str,
        run_id: &str,
        call_id: &str,
        answer: ApprovalAnswer,
    ) -> Result<Answered> {
        match self.get(run_id) {
            Some(run) if run.owner_id == owner_id => {
                answered(answer_here(&run, call_id, answer)).map(|()| Answered::Recorded)
            }
            Some(_) => Err(Error::NotFound("run")),
            None => {
                self.answer_elsewhere(owner_id, run_id, call_id, answer)
                    .await
            }
        }
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

    /// Lists again the models of the servers configured with `"models": "discover"`.
    pub async fn discover_models(&self) {
        self.agents.providers().discover().await;
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    pub fn tools(&self) -> &Arc<ToolRegistry> {
        &self.tools
    }
}

/// Where an answer to an approval request went.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Answered {
    /// The run recorded it.
    Recorded,
    /// It went to the instance that runs the run, which did not reply in time.
    Forwarded,
}

/// Gives a run of this instance an answer.
pub(super) fn answer_here(run: &Run, call_id: &str, answer: ApprovalAnswer) -> CommandOutcome {
    if run.published().finished || run.is_closed() {
        return CommandOutcome::Ended;
    }
    match run.resolve_approval(call_id, answer) {
        Ok(()) => CommandOutcome::Done,
        Err(ApprovalRefused::UnknownCall) => CommandOutcome::UnknownCall,
        Err(ApprovalRefused::AlreadyAnswered) => CommandOutcome::AlreadyAnswered,
    }
}

/// What a person is told of an answer's outcome, wherever it was carried out.
pub(super) fn answered(outcome: CommandOutcome) -> Result<()> {
    match outcome {
        CommandOutcome::Done => Ok(()),
        CommandOutcome::Ended => Err(Error::Conflict("the run has already ended".into())),
        CommandOutcome::UnknownCall => Err(Error::NotFound("approval request")),
        CommandOutcome::AlreadyAnswered => Err(Error::Conflict(
            "this call has already been answered".into(),
        )),
    }
}

/// What a regenerate or an edit names, checked: one of the two at most, in an existing
/// conversation, a regenerate without content.
fn validated_rerun(request: &ChatRequest) -> Result<Option<Rerun>> {
    let rerun = match (&request.regenerate, &request.edit) {
        (None, None) => return Ok(None),
        (Some(_), Some(_)) => {
            return Err(Error::InvalidField(
                "give `regenerate` or `edit`, not both".into(),
            ))
        }
        (Some(id), None) => Rerun::Regenerate(id.clone()),
        (None, Some(id)) => Rerun::Edit(id.clone()),
    };
    if request.conversation_id.is_none() {
        return Err(Error::InvalidField(
            "`regenerate` and `edit` need the message's `conversation_id`".into(),
        ));
    }
    if matches!(rerun, Rerun::Regenerate(_)) && !request.content.trim().is_empty() {
        return Err(Error::InvalidField(
            "a regenerate asks the same question again: give no `content` (edit the question to change it)".into(),
        ));
    }
    Ok(Some(rerun))
}

/// The message's content, trimmed, if the request is one a run can start from.
fn validated_content(request: &ChatRequest) -> Result<&str> {
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
    Ok(content)
}
