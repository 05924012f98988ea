//! Records that both the events and the message carry. It uses only `codes` (a leaf), so `event`
//! (which carries messages) and `message` (which carries these) do not use each other.

use serde::{Deserialize, Serialize};

use super::codes::ToolErrorKind;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalDecision {
    Approve,
    Deny,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolError {
    /// A short machine-readable class: `invalid_arguments`, `outside_workspace`, `timeout`,
    /// `panic`, `io`, `cancelled`, ...
    pub kind: ToolErrorKind,
    pub message: String,
}
