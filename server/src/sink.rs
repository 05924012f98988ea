//! What agents and tools may do to the run they work in: emit events, see whether it was
//! cancelled, ask a person. The engine's [`crate::runs::Run`] is the one implementation; agents
//! and tools name only this trait, so they sit below the engine in the module graph (the engine
//! starts agents; agents never reach back into the engine).

use app::protocol::{ApprovalDecision, EventKind, ResolvedBy};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

/// A person's (or the timeout's) answer to an approval request.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct ApprovalAnswer {
    pub decision: ApprovalDecision,
    pub by: ResolvedBy,
    pub reason: Option<String>,
}

/// Why an answer was not taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ApprovalRefused {
    /// No call of this run asked for approval under that id.
    UnknownCall,
    /// The call was already answered (by someone else, or by the timeout).
    AlreadyAnswered,
}

pub trait RunSink: Send + Sync {
    /// Sanitizes, stamps (`seq`, `ts`), logs and publishes one event. Returns its seq, or `None`
    /// when the run has already ended (late output from an abandoned tool, say).
    fn emit(&self, kind: EventKind) -> Option<u64>;
    fn run_id(&self) -> &str;
    /// The conversation the run answers in.
    fn conversation_id(&self) -> &str;
    /// How many events the run has emitted.
    fn event_count(&self) -> u64;
    /// Cancelled when the run is stopped (by a person, its time limit or shutdown).
    fn cancellation(&self) -> &CancellationToken;
    /// Records that a call waits for approval (`tool_approval_requested`); the receiver gets the
    /// first answer.
    fn request_approval(
        &self,
        call_id: &str,
        name: &str,
        args: &serde_json::Value,
    ) -> oneshot::Receiver<ApprovalAnswer>;
    /// Takes the first answer to a call's request (`tool_approval_resolved`); later answers are
    /// refused.
    fn resolve_approval(
        &self,
        call_id: &str,
        answer: ApprovalAnswer,
    ) -> Result<(), ApprovalRefused>;
}
