//! Tools the agent can call. A tool gets its arguments, a cancellation token and a sink for streamed
//! output; [`execute`] runs one model turn's calls concurrently through the run, each with a timeout,
//! and turns errors and panics into `tool_result` events with status `error`.

pub mod approval;
mod grep_search;
mod list_dir;
pub mod mcp;
mod read_file;
mod test_tools;
mod workspace;

use app::protocol::ToolErrorKind;
use std::{
    collections::BTreeMap,
    future::Future,
    panic::AssertUnwindSafe,
    pin::Pin,
    sync::{
        atomic::{AtomicBool, AtomicUsize, Ordering},
        Arc,
    },
    time::{Duration, Instant},
};

use app::protocol::{EventKind, ToolError, ToolResultStatus};
use futures::FutureExt;
use serde_json::Value;
use tokio::{sync::Semaphore, task::JoinSet};
use tokio_util::sync::CancellationToken;

pub use workspace::{Workspace, DEFAULT_DENY_FILES};

use crate::{sanitize::MAX_TOOL_OUTPUT_CHARS, sink::RunSink};

pub type ToolFuture = Pin<Box<dyn Future<Output = Result<String, ToolError>> + Send + 'static>>;

pub trait Tool: Send + Sync + 'static {
    fn name(&self) -> &str;
    /// What the model reads to decide when to call it.
    fn description(&self) -> &str;
    /// JSON Schema of the arguments object.
    fn parameters(&self) -> Value;
    /// A human-readable line for the UI, computed from the arguments ("Searching for 'TODO'…").
    fn display(&self, _args: &Value) -> Option<String> {
        None
    }
    fn call(&self, args: Value, context: ToolContext) -> ToolFuture;
}

/// At most this many tool calls do blocking work (file reads, directory walks) at once. A call
/// keeps its slot until its thread really returns, so calls stuck in I/O (a hung mount) cannot
/// take more than these threads of tokio's blocking pool, which static files also need.
pub const BLOCKING_TOOL_SLOTS: usize = 32;
/// How long a call waits for a slot before it ends with a `busy` error.
const BLOCKING_SLOT_WAIT: Duration = Duration::from_secs(5);

/// What a running tool gets besides its arguments.
#[derive(Clone)]
pub struct ToolContext {
    pub cancel: CancellationToken,
    pub output: OutputSink,
    pub workspace: Arc<Workspace>,
    blocking_slots: Arc<Semaphore>,
}

impl ToolContext {
    /// Runs blocking work on tokio's blocking pool, holding one of [`BLOCKING_TOOL_SLOTS`] until
    /// the work returns. A call that times out abandons its thread, not its slot.
    pub async fn blocking<T: Send + 'static>(
        &self,
        work: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, ToolError> {
        let busy = || {
            tool_error(
                ToolErrorKind::Busy,
                format!(
                    "{BLOCKING_TOOL_SLOTS} tool calls are already waiting on the file system; try again later."
                ),
            )
        };
        let permit = tokio::time::timeout(
            BLOCKING_SLOT_WAIT,
            self.blocking_slots.clone().acquire_owned(),
        )
        .await
        .map_err(|_| busy())?
        .map_err(|_| busy())?;
        tokio::task::spawn_blocking(move || {
            let _slot = permit;
            work()
        })
        .await
        .map_err(|error| tool_error(ToolErrorKind::Panic, error.to_string()))
    }

    /// Runs `work` on the workspace and a requested path in a blocking slot: resolving the path
    /// is blocking I/O too.
    pub async fn in_workspace<T: Send + 'static>(
        &self,
        requested: &str,
        work: fn(&Workspace, &str) -> Result<T, ToolError>,
    ) -> Result<T, ToolError> {
        let (workspace, requested) = (self.workspace.clone(), requested.to_owned());
        self.blocking(move || work(&workspace, &requested)).await?
    }
}

/// Streams a tool's output and progress as `tool_call_update` events. Usable from blocking
/// threads. Output past [`MAX_TOOL_OUTPUT_CHARS`] is not streamed (the final result says how long
/// it was).
#[derive(Clone)]
pub struct OutputSink {
    run: Arc<dyn RunSink>,
    call_id: String,
    streamed_chars: Arc<AtomicUsize>,
}

impl OutputSink {
    pub fn write(&self, delta: &str) {
        let chars = delta.chars().count();
        let before = self.streamed_chars.fetch_add(chars, Ordering::Relaxed);
        if before >= MAX_TOOL_OUTPUT_CHARS || delta.is_empty() {
            return;
        }
        let room = MAX_TOOL_OUTPUT_CHARS - before;
        let delta = crate::sanitize::shorten(delta, room).unwrap_or(delta);
        self.run.emit(EventKind::ToolCallUpdate {
            call_id: self.call_id.clone(),
            output_delta: Some(delta.to_owned()),
            progress: None,
            args_text: None,
            args: None,
        });
    }

    pub fn progress(&self, progress: Value) {
        self.run.emit(EventKind::ToolCallUpdate {
            call_id: self.call_id.clone(),
            output_delta: None,
            progress: Some(progress),
            args_text: None,
            args: None,
        });
    }
}

pub fn tool_error(kind: ToolErrorKind, message: impl Into<String>) -> ToolError {
    ToolError {
        kind,
        message: message.into(),
    }
}

/// Reads a required string argument.
pub fn string_arg<'a>(args: &'a Value, name: &str) -> Result<&'a str, ToolError> {
    args.get(name).and_then(Value::as_str).ok_or_else(|| {
        tool_error(
            ToolErrorKind::InvalidArguments,
            format!("`{name}` must be a string"),
        )
    })
}

/// Reads an optional non-negative integer argument.
pub fn optional_u64(args: &Value, name: &str) -> Result<Option<u64>, ToolError> {
    match args.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(value) => value.as_u64().map(Some).ok_or_else(|| {
            tool_error(
                ToolErrorKind::InvalidArguments,
                format!("`{name}` must be a non-negative integer"),
            )
        }),
    }
}

/// The tools a run may call, by name: the built-in ones and those of the MCP servers.
pub struct ToolRegistry {
    tools: BTreeMap<String, Arc<dyn Tool>>,
    mcp: Arc<mcp::McpHub>,
    approval: approval::ApprovalConfig,
    workspace: Arc<Workspace>,
    timeout: Duration,
    blocking_slots: Arc<Semaphore>,
}

impl ToolRegistry {
    pub fn new(
        workspace: Workspace,
        timeout: Duration,
        enable_test_tools: bool,
        mcp: Arc<mcp::McpHub>,
        approval: approval::ApprovalConfig,
    ) -> Self {
        let mut tools: Vec<Arc<dyn Tool>> = vec![
            Arc::new(grep_search::GrepSearch),
            Arc::new(read_file::ReadFile),
            Arc::new(list_dir::ListDir),
        ];
        if enable_test_tools {
            tools.push(Arc::new(test_tools::Sleep));
            tools.push(Arc::new(test_tools::Fail));
        }
        ToolRegistry {
            tools: tools
                .into_iter()
                .map(|tool| (tool.name().to_owned(), tool))
                .collect(),
            mcp,
            approval,
            workspace: Arc::new(workspace),
            timeout,
            blocking_slots: Arc::new(Semaphore::new(BLOCKING_TOOL_SLOTS)),
        }
    }

    pub fn get(&self, name: &str) -> Option<Arc<dyn Tool>> {
        match self.tools.get(name) {
            Some(tool) => Some(tool.clone()),
            None => self.mcp.tool(name).map(|tool| tool as Arc<dyn Tool>),
        }
    }

    /// The built-in tools, then every running MCP server's.
    /// How long an approval may wait before the timeout denies it (none unless configured).
    pub fn approval_timeout(&self) -> Option<Duration> {
        self.approval.timeout()
    }

    pub fn all(&self) -> Vec<Arc<dyn Tool>> {
        let mcp = self
            .mcp
            .tools()
            .into_iter()
            .map(|tool| tool as Arc<dyn Tool>);
        self.tools.values().cloned().chain(mcp).collect()
    }

    /// What `GET /api/tools` answers: every tool (name, description, source) and every MCP
    /// server's state.
    pub fn describe(&self) -> Value {
        let tools: Vec<Value> = self
            .all()
            .iter()
            .map(|tool| {
                let mut entry = serde_json::json!({
                    "name": tool.name(),
                    "description": tool.description(),
                    "source": "builtin",
                });
                if let Some((server, tool)) = tool.name().split_once(mcp::NAME_SEPARATOR) {
                    entry["source"] = "mcp".into();
                    entry["server"] = server.into();
                    entry["tool"] = tool.into();
                }
                entry
            })
            .collect();
        let servers: Vec<Value> = self
            .mcp
            .servers()
            .iter()
            .map(|server| {
                let mut entry = serde_json::to_value(server.status()).unwrap_or_default();
                entry["name"] = server.name().into();
                entry
            })
            .collect();
        serde_json::json!({ "tools": tools, "mcp_servers": servers })
    }

    pub fn workspace(&self) -> &Arc<Workspace> {
        &self.workspace
    }
}

/// One call the agent asks for.
#[derive(Clone, Debug)]
pub struct ToolCallRequest {
    /// The id the model gave the call, if any: its outcome carries it back, so the model loop
    /// pairs each result with its call by id.
    pub model_call_id: Option<String>,
    pub name: String,
    pub args: Value,
}

/// One call's outcome, with the full (untruncated) output for the model.
#[derive(Clone, Debug)]
pub struct ToolOutcome {
    pub call_id: String,
    /// [`ToolCallRequest::model_call_id`], as it was asked.
    pub model_call_id: Option<String>,
    pub name: String,
    pub args: Value,
    pub result: Result<String, ToolError>,
}

impl ToolCallRequest {
    /// A call Glassbox makes itself (no model gave it an id).
    pub fn new(name: impl Into<String>, args: Value) -> Self {
        ToolCallRequest {
            model_call_id: None,
            name: name.into(),
            args,
        }
    }
}

/// A call as [`execute`] started it: enough to end it if its task fails.
struct Started {
    call_id: String,
    model_call_id: Option<String>,
    name: String,
    args: Value,
    /// Set once the task has emitted the call's `tool_result`.
    ended: Arc<AtomicBool>,
}

/// Runs one turn's calls concurrently; every call ends in exactly one `tool_result`, and the
/// answer holds exactly one outcome per call, in the order asked, whatever happens to its task (a
/// panic outside the tool itself becomes that call's `panic` error, logged). Dropping the returned
/// future (the run was cancelled) aborts the calls: async tools stop at their next await,
/// blocking work is abandoned, child processes are killed on drop.
pub async fn execute(
    registry: &ToolRegistry,
    run: &Arc<dyn RunSink>,
    calls: Vec<ToolCallRequest>,
    mut next_sequence_number: impl FnMut() -> u32,
) -> Vec<ToolOutcome> {
    let mut running = JoinSet::new();
    let mut tasks = std::collections::HashMap::new();
    let mut started = Vec::with_capacity(calls.len());
    let mut outcomes: Vec<Option<ToolOutcome>> = vec![None; calls.len()];
    for (index, call) in calls.into_iter().enumerate() {
        let call_id = crate::stamps::new_id("call");
        let tool = registry.get(&call.name);
        let display = tool.as_ref().and_then(|tool| {
            std::panic::catch_unwind(AssertUnwindSafe(|| tool.display(&call.args)))
                .ok()
                .flatten()
        });
        run.emit(EventKind::ToolCallStarted {
            call_id: call_id.clone(),
            name: call.name.clone(),
            display,
            args: call.args.clone(),
            sequence_number: next_sequence_number(),
        });
        let ended = Arc::new(AtomicBool::new(false));
        started.push(Started {
            call_id: call_id.clone(),
            model_call_id: call.model_call_id.clone(),
            name: call.name.clone(),
            args: call.args.clone(),
            ended: ended.clone(),
        });
        let context = ToolContext::new(registry, run, &call_id);
        let limits = CallLimits {
            timeout: registry.timeout,
            policy: registry.approval.policy(&call.name),
            approval_timeout: registry.approval.timeout(),
        };
        let task = run_call(tool, call, call_id, context, run.clone(), limits, ended);
        let handle = running.spawn(async move { (index, task.await) });
        tasks.insert(handle.id(), index);
    }
    while let Some(joined) = running.join_next_with_id().await {
        match joined {
            Ok((_, (index, outcome))) => outcomes[index] = Some(outcome),
            Err(error) => {
                let call = tasks.get(&error.id()).and_then(|index| started.get(*index));
                tracing::error!(
                    tool = call.map(|call| call.name.as_str()),
                    call_id = call.map(|call| call.call_id.as_str()),
                    panicked = error.is_panic(),
                    "a tool call's task failed outside the tool"
                );
            }
        }
    }
    started
        .into_iter()
        .zip(outcomes)
        .map(|(call, outcome)| outcome.unwrap_or_else(|| failed_task(run.as_ref(), call)))
        .collect()
}

impl ToolContext {
    fn new(registry: &ToolRegistry, run: &Arc<dyn RunSink>, call_id: &str) -> Self {
        ToolContext {
            cancel: run.cancellation().child_token(),
            output: OutputSink {
                run: run.clone(),
                call_id: call_id.to_owned(),
                streamed_chars: Arc::default(),
            },
            workspace: registry.workspace.clone(),
            blocking_slots: registry.blocking_slots.clone(),
        }
    }
}

/// The outcome of a call whose task failed: its `tool_result` (unless the task sent it before it
/// failed) and a `panic` error for the model.
fn failed_task(run: &dyn RunSink, call: Started) -> ToolOutcome {
    let error = tool_error(ToolErrorKind::Panic, "The tool crashed.");
    if !call.ended.load(Ordering::Acquire) {
        run.emit(EventKind::ToolResult {
            call_id: call.call_id.clone(),
            status: ToolResultStatus::Error,
            duration_ms: 0,
            output: None,
            truncated: false,
            full_length: None,
            error: Some(error.clone()),
        });
    }
    ToolOutcome {
        call_id: call.call_id,
        model_call_id: call.model_call_id,
        name: call.name,
        args: call.args,
        result: Err(error),
    }
}

/// One call, from approval to its `tool_result`.
async fn run_call(
    tool: Option<Arc<dyn Tool>>,
    call: ToolCallRequest,
    call_id: String,
    context: ToolContext,
    run: Arc<dyn RunSink>,
    limits: CallLimits,
    ended: Arc<AtomicBool>,
) -> ToolOutcome {
    let CallEnd {
        result,
        duration_ms,
        refused,
    } = approve_and_call(tool, &call, &call_id, context, run.as_ref(), limits).await;
    let (status, output, error) = match &result {
        Ok(output) => (ToolResultStatus::Success, Some(output.clone()), None),
        Err(error) if refused => (ToolResultStatus::Denied, None, Some(error.clone())),
        // A tool that gave up because the run was stopped did not fail: it was cancelled.
        Err(_) if run.cancellation().is_cancelled() => (
            ToolResultStatus::Cancelled,
            None,
            Some(tool_error(
                ToolErrorKind::Cancelled,
                "The run was stopped before this tool finished.",
            )),
        ),
        Err(error) => (ToolResultStatus::Error, None, Some(error.clone())),
    };
    run.emit(EventKind::ToolResult {
        call_id: call_id.clone(),
        status,
        duration_ms,
        output,
        truncated: false,
        full_length: None,
        error,
    });
    ended.store(true, Ordering::Release);
    ToolOutcome {
        call_id,
        model_call_id: call.model_call_id,
        name: call.name,
        args: call.args,
        result,
    }
}

/// What one call may take: its run time, and the approval its tool's policy asks for.
#[derive(Clone, Copy)]
struct CallLimits {
    timeout: Duration,
    policy: approval::Policy,
    approval_timeout: Option<Duration>,
}

/// How one call ended: its result, the milliseconds it ran, and whether it was refused (by a
/// person, the approval timeout or its `deny` policy) rather than run.
struct CallEnd {
    result: Result<String, ToolError>,
    duration_ms: u64,
    refused: bool,
}

/// One call: approval first when its policy asks (the wait is not counted in its duration),
/// then the tool, within the tool timeout.
async fn approve_and_call(
    tool: Option<Arc<dyn Tool>>,
    call: &ToolCallRequest,
    call_id: &str,
    context: ToolContext,
    run: &dyn RunSink,
    limits: CallLimits,
) -> CallEnd {
    let ended = |result, refused| CallEnd {
        result,
        duration_ms: 0,
        refused,
    };
    let Some(tool) = tool else {
        let error = tool_error(
            ToolErrorKind::UnknownTool,
            format!("There is no tool named `{}`.", call.name),
        );
        return ended(Err(error), false);
    };
    let approved = match limits.policy {
        approval::Policy::Auto => Ok(()),
        approval::Policy::Deny => Err(approval::denied(approval::Denial::Policy, None)),
        approval::Policy::Ask => {
            approval::ask(
                run,
                call_id,
                &call.name,
                &call.args,
                limits.approval_timeout,
            )
            .await
        }
    };
    if let Err(error) = approved {
        // An approval that ended without an answer (the run stopped) is not a refusal.
        let refused = error.kind == ToolErrorKind::Denied;
        return ended(Err(error), refused);
    }
    let started = Instant::now();
    // The call itself inside the guard too: a tool may panic before it returns its future.
    let args = call.args.clone();
    let future = AssertUnwindSafe(async { tool.call(args, context.clone()).await }).catch_unwind();
    let result = match tokio::time::timeout(limits.timeout, future).await {
        Ok(Ok(result)) => result,
        Ok(Err(panic)) => Err(tool_error(
            ToolErrorKind::Panic,
            format!("The tool crashed: {}", panic_message(&panic)),
        )),
        Err(_) => {
            context.cancel.cancel();
            Err(tool_error(
                ToolErrorKind::Timeout,
                format!(
                    "The tool did not finish within {} s.",
                    limits.timeout.as_secs()
                ),
            ))
        }
    };
    CallEnd {
        result,
        duration_ms: started.elapsed().as_millis() as u64,
        refused: false,
    }
}

fn panic_message(panic: &Box<dyn std::any::Any + Send>) -> String {
    if let Some(text) = panic.downcast_ref::<&str>() {
        (*text).to_owned()
    } else if let Some(text) = panic.downcast_ref::<String>() {
        text.clone()
    } else {
        "unknown panic".to_owned()
    }
}
