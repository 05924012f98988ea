//! Whether a tool call runs at once, waits for a person, or is refused: a policy per tool from the
//! providers file (`approval`), with a default per source (built-in tools `auto`, MCP tools
//! `ask`). A call that asks emits `tool_approval_requested` and waits, with no timer unless
//! `timeout_secs` is set; the first answer (`tool_approval_resolved`) decides.

use app::protocol::{ResolvedBy, ToolErrorKind};
use std::{collections::BTreeMap, time::Duration};

use app::protocol::{ApprovalDecision, ToolError};
use serde::Deserialize;
use serde_json::Value;

use super::{mcp::NAME_SEPARATOR, tool_error};
use crate::sink::{ApprovalAnswer, RunSink};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Policy {
    /// Runs at once.
    Auto,
    /// Waits for a person to approve or deny it.
    Ask,
    /// Never runs; the model is told it was denied.
    Deny,
}

/// The `approval` section of the providers file.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApprovalConfig {
    /// Built-in tools (all read-only): `auto` unless set.
    #[serde(default = "policy_auto")]
    pub builtin: Policy,
    /// MCP tools: `ask` unless set.
    #[serde(default = "policy_ask")]
    pub mcp: Policy,
    /// Overrides by tool name (`read_file`, `everything__echo`) or by MCP server
    /// (`everything__*`).
    #[serde(default)]
    pub tools: BTreeMap<String, Policy>,
    /// Denies a call nobody answered within this many seconds (reason `timeout`). Off unless set.
    #[serde(default)]
    pub timeout_secs: Option<u64>,
}

fn policy_auto() -> Policy {
    Policy::Auto
}

fn policy_ask() -> Policy {
    Policy::Ask
}

impl Default for ApprovalConfig {
    fn default() -> Self {
        ApprovalConfig {
            builtin: Policy::Auto,
            mcp: Policy::Ask,
            tools: BTreeMap::new(),
            timeout_secs: None,
        }
    }
}

impl ApprovalConfig {
    /// The policy of the tool named `name` (as the model sees it).
    pub fn policy(&self, name: &str) -> Policy {
        if let Some(policy) = self.tools.get(name) {
            return *policy;
        }
        match name.split_once(NAME_SEPARATOR) {
            Some((server, _)) => self
                .tools
                .get(&format!("{server}{NAME_SEPARATOR}*"))
                .copied()
                .unwrap_or(self.mcp),
            None => self.builtin,
        }
    }

    pub fn timeout(&self) -> Option<Duration> {
        self.timeout_secs.map(Duration::from_secs)
    }
}

/// Asks for approval of one call and waits for the first answer (or the timeout's denial).
/// `Err` is the tool error a denied call ends with.
pub async fn ask(
    run: &dyn RunSink,
    call_id: &str,
    name: &str,
    args: &Value,
    timeout: Option<Duration>,
) -> Result<(), ToolError> {
    let mut answer = run.request_approval(call_id, name, args);
    let answer = match timeout {
        None => (&mut answer).await,
        Some(limit) => match tokio::time::timeout(limit, &mut answer).await {
            Ok(answer) => answer,
            Err(_) => {
                // Unless a person answered at this very moment, the timeout's denial is first.
                let _ = run.resolve_approval(
                    call_id,
                    ApprovalAnswer {
                        decision: ApprovalDecision::Deny,
                        by: ResolvedBy::Timeout,
                        reason: Some("timeout".into()),
                    },
                );
                answer.await
            }
        },
    };
    match answer {
        Ok(ApprovalAnswer {
            decision: ApprovalDecision::Approve,
            ..
        }) => Ok(()),
        Ok(ApprovalAnswer { by, reason, .. }) => {
            let denial = match by {
                ResolvedBy::Timeout => Denial::Timeout,
                ResolvedBy::User(_) => Denial::Person,
            };
            Err(denied(denial, reason.as_deref()))
        }
        Err(_) => Err(tool_error(
            ToolErrorKind::Cancelled,
            "The run ended before an answer.",
        )),
    }
}

/// Who refused a call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Denial {
    /// The tool's policy is `deny`.
    Policy,
    /// Nobody answered within the approval timeout.
    Timeout,
    Person,
}

/// The error of a denied call, as the model reads it.
pub fn denied(by: Denial, reason: Option<&str>) -> ToolError {
    let who = match by {
        Denial::Timeout => {
            return tool_error(ToolErrorKind::Denied, "Nobody approved this call in time.")
        }
        Denial::Policy => "This tool is not allowed here",
        Denial::Person => "The person denied this call",
    };
    let message = match reason {
        Some(reason) => format!("{who}: {reason}"),
        None => format!("{who}."),
    };
    tool_error(ToolErrorKind::Denied, message)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tool_override_beats_its_server_and_its_source() {
        let config: ApprovalConfig = serde_json::from_value(serde_json::json!({
            "tools": {"list_dir": "ask", "everything__*": "auto", "everything__echo": "deny"}
        }))
        .expect("config");
        assert_eq!(config.policy("read_file"), Policy::Auto);
        assert_eq!(config.policy("list_dir"), Policy::Ask);
        assert_eq!(config.policy("everything__echo"), Policy::Deny);
        assert_eq!(config.policy("everything__get-sum"), Policy::Auto);
        assert_eq!(config.policy("other__tool"), Policy::Ask);
    }
}
