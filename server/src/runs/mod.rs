//! The run engine. A run executes in its own task, decoupled from every HTTP connection; it
//! appends events to its own log ([`Run::emit`]), one [`Checkpointer`] stores them for all runs, and subscribers read that log from any seq at
//! their own pace ([`Run::subscribe`]). Live streaming, resume and multi-tab are all "read the log
//! from N". The [`Engine`] starts runs, cancels them, checkpoints them and closes their traces.

mod checkpoint;
mod drive;
mod engine;
mod limits;
mod remote;
mod run;
mod terminal;

pub use checkpoint::{Checkpointer, CHECKPOINT_INTERVAL};
pub use engine::{Answered, ChatRequest, Engine, StartedChat};
pub use limits::{trim_allocator, MemoryBudget, RunLimits, UserLimits, UserRuns, UserSlot};
pub use run::{Overflow, Published, Run, RunEnding, RunIds, MAX_RUN_LOG_BYTES};
