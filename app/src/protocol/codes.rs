//! The closed vocabularies of the protocol and the store: a trace's status, why a run failed, why
//! a tool call failed, who answered an approval. Each has one string form (the one on the wire and
//! in the database) and is compared as a type everywhere else. A leaf module: it uses no other.

use std::fmt;

use serde::{Deserialize, Serialize};

/// Declares an enum of known codes with their wire strings, plus one variant that carries any
/// other string (codes an agent or a tool server chose), so that no string is lost on a round trip.
macro_rules! open_code {
    ($(#[$meta:meta])* $name:ident, $other:ident, { $($(#[$vmeta:meta])* $variant:ident = $text:literal,)+ }) => {
        $(#[$meta])*
        #[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
        #[serde(from = "String", into = "String")]
        pub enum $name {
            $($(#[$vmeta])* $variant,)+
            /// A code that is none of the above, kept as it came.
            $other(String),
        }

        impl $name {
            pub fn as_str(&self) -> &str {
                match self {
                    $($name::$variant => $text,)+
                    $name::$other(text) => text,
                }
            }
        }

        impl From<&str> for $name {
            fn from(text: &str) -> Self {
                match text {
                    $($text => $name::$variant,)+
                    other => $name::$other(other.to_owned()),
                }
            }
        }

        impl From<String> for $name {
            fn from(text: String) -> Self {
                match $name::from(text.as_str()) {
                    $name::$other(_) => $name::$other(text),
                    known => known,
                }
            }
        }

        impl From<$name> for String {
            fn from(code: $name) -> Self {
                match code {
                    $name::$other(text) => text,
                    known => known.as_str().to_owned(),
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

open_code!(
    /// Why a run ended with `message_error`: the `code` of that event and the trace's `error_code`.
    ErrorCode, Agent, {
        /// The server went away during the run; appended when the run is recovered.
        Interrupted = "interrupted",
        UnknownModel = "unknown_model",
        RunTooLarge = "run_too_large",
        MemoryExhausted = "memory_exhausted",
        StepLimit = "step_limit",
        ProviderAuth = "provider_auth",
        RateLimited = "rate_limited",
        ProviderUnavailable = "provider_unavailable",
        ProviderError = "provider_error",
        MalformedStream = "malformed_stream",
        StreamInterrupted = "stream_interrupted",
        ConnectionFailed = "connection_failed",
        /// The provider said it is overloaded (HTTP 529, or an overloaded error in its stream).
        Overloaded = "overloaded",
        /// The conversation is longer than the model's context window.
        ContextLength = "context_length",
        /// The provider's content filter refused the prompt or stopped the answer.
        ContentFilter = "content_filter",
        /// An AG-UI agent sent nothing for its idle timeout, or did not answer.
        AgentTimeout = "agent_timeout",
        /// An AG-UI agent's stream broke the protocol (bad JSON, an event out of order).
        AgentProtocol = "agent_protocol",
        /// An AG-UI agent answered with a status that is not a success.
        AgentRefused = "agent_refused",
        /// An AG-UI agent's `RUN_ERROR` without a code of its own.
        AgentError = "agent_error",
    }
);

open_code!(
    /// A short machine-readable class of a tool call's error (`tool_result.error.kind`).
    ToolErrorKind, Other, {
        InvalidArguments = "invalid_arguments",
        OutsideWorkspace = "outside_workspace",
        NotFound = "not_found",
        Timeout = "timeout",
        Panic = "panic",
        Io = "io",
        Cancelled = "cancelled",
        /// A person, the approval timeout or the tool's `deny` policy refused the call.
        Denied = "denied",
        /// The MCP server answered the call with a protocol error.
        McpError = "mcp_error",
        /// The tool ran and reported an error (an MCP tool's `isError`).
        ToolError = "tool_error",
        Failed = "failed",
        TooLarge = "too_large",
        BinaryFile = "binary_file",
        NotAFile = "not_a_file",
        Busy = "busy",
        McpUnavailable = "mcp_unavailable",
        UnknownTool = "unknown_tool",
    }
);

/// A stored trace's status (`agent_traces.status`): `running` until its terminal event is stored,
/// then what that event says.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TraceStatus {
    Running,
    Completed,
    Cancelled,
    Error,
    Interrupted,
}

impl TraceStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            TraceStatus::Running => "running",
            TraceStatus::Completed => "completed",
            TraceStatus::Cancelled => "cancelled",
            TraceStatus::Error => "error",
            TraceStatus::Interrupted => "interrupted",
        }
    }

    /// The status of a stored column; `None` for a value no version of Glassbox wrote.
    pub fn parse(text: &str) -> Option<TraceStatus> {
        Some(match text {
            "running" => TraceStatus::Running,
            "completed" => TraceStatus::Completed,
            "cancelled" => TraceStatus::Cancelled,
            "error" => TraceStatus::Error,
            "interrupted" => TraceStatus::Interrupted,
            _ => return None,
        })
    }
}

impl fmt::Display for TraceStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Who answered an approval request: a signed-in user (by name), or the approval timeout. On the
/// wire it is one string, as it has been since the first version: `timeout` for the timeout (so
/// a user who is named `timeout` reads back as the timeout; the event's `reason` tells them apart).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(from = "String", into = "String")]
pub enum ResolvedBy {
    User(String),
    Timeout,
}

impl From<String> for ResolvedBy {
    fn from(text: String) -> Self {
        if text == "timeout" {
            ResolvedBy::Timeout
        } else {
            ResolvedBy::User(text)
        }
    }
}

impl From<ResolvedBy> for String {
    fn from(by: ResolvedBy) -> Self {
        match by {
            ResolvedBy::User(name) => name,
            ResolvedBy::Timeout => "timeout".to_owned(),
        }
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)]
mod tests {
    use super::*;

    #[test]
    fn codes_keep_their_string_form_both_ways() {
        for text in ["interrupted", "step_limit", "my_agent_code"] {
            let code = ErrorCode::from(text);
            assert_eq!(code.as_str(), text);
            let json = serde_json::to_string(&code).unwrap();
            assert_eq!(json, format!("\"{text}\""));
            assert_eq!(crate::json::parse::<ErrorCode>(&json).unwrap(), code);
        }
        assert_eq!(ErrorCode::from("interrupted"), ErrorCode::Interrupted);
        assert_eq!(ToolErrorKind::from("denied"), ToolErrorKind::Denied);
        assert_eq!(
            ToolErrorKind::from("weird"),
            ToolErrorKind::Other("weird".into())
        );
        for status in ["running", "completed", "cancelled", "error", "interrupted"] {
            let parsed = TraceStatus::parse(status).unwrap();
            assert_eq!(parsed.as_str(), status);
            assert_eq!(
                serde_json::to_string(&parsed).unwrap(),
                format!("\"{status}\"")
            );
        }
        assert_eq!(TraceStatus::parse("done"), None);
        let by: ResolvedBy = crate::json::parse("\"timeout\"").unwrap();
        assert_eq!(by, ResolvedBy::Timeout);
        assert_eq!(
            serde_json::to_string(&ResolvedBy::User("ann".into())).unwrap(),
            "\"ann\""
        );
    }
}
