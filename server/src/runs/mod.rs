//! The run engine. A run executes in its own task, decoupled from every HTTP connection; it
//! appends events to its own log ([`Run::emit`]), one [`Checkpointer`] stores them for all runs, and subscribers read that log from any seq at
//! their own pace ([`Run::subscribe`]). Live streaming, resume and multi-tab are all "read the log
//! from N". The [`Engine`] starts runs, cancels them, checkpoints them and closes their traces.

mod checkpoint;
mod engine;
mod limits;
mod run;
mod terminal;

pub use checkpoint::{Checkpointer, CHECKPOINT_INTERVAL};
pub use engine::{ChatRequest, Engine, StartedChat, RETRY_AFTER_SECS};
pub use limits::{trim_allocator, MemoryBudget, RunLimits, UserLimits, UserRuns, UserSlot};
pub use run::{
    ApprovalAnswer, ApprovalRefused, Overflow, Published, Run, RunEnding, MAX_RUN_LOG_BYTES,
};

/// "2026-01-22T10:30:00.123Z" for now.
pub fn now_rfc3339() -> String {
    app::protocol::format_rfc3339_millis(now_unix_ms())
}

pub fn now_unix_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|elapsed| elapsed.as_millis() as i64)
        .unwrap_or(0)
}

/// A short random id with a readable prefix: `call_3f2a...`.
pub fn new_id(prefix: &str) -> String {
    format!("{prefix}_{}", uuid::Uuid::new_v4().simple())
}
