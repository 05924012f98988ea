//! The canonical message: what a run's events fold into, what the database keeps and what the
//! persisted view draws. User messages use the same shape with one text segment.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::codes::{ResolvedBy, TraceStatus};
use super::records::{ApprovalDecision, ToolError};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Message {
    pub id: String,
    pub role: Role,
    pub status: MessageStatus,
    #[serde(default)]
    pub model: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    pub created_at: String,
    /// Ordered by `sequence_number`: reasoning, tools, reasoning again, text ... as they happened.
    #[serde(default)]
    pub segments: Vec<Segment>,
    /// Why the message ended early, for cancelled, failed and interrupted messages.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_reason: Option<String>,
    /// The trace of the run that wrote this (assistant) message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace_id: Option<String>,
    /// How long the run took, start to end, once it has ended (set in its terminal event).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    /// What the agent needs to continue from this message in a later request, by segment (see
    /// `agent_state` events): never shown.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub agent_state: BTreeMap<String, Value>,
    /// While the run waits to send the model's request again (a `retrying` event): live only,
    /// cleared by the next content and in every ended message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retrying: Option<Retrying>,
    /// Where this message stands among its versions (a regenerated answer, an edited question),
    /// when it has more than one: computed on read from the conversation's branches, never
    /// stored in the body.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub siblings: Option<Siblings>,
}

/// A message's place among its siblings (the messages following the same message with the same
/// role), oldest first: `index` counts from 1, the neighbours are `None` at either end.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Siblings {
    pub index: usize,
    pub count: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_id: Option<String>,
    /// For an answer: the trace of the sibling to compare it with (the previous one, or the
    /// next for the first), what its compare link names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compare_trace_id: Option<String>,
}

/// A wait before the model's request is sent again, as the message shows it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Retrying {
    pub attempt: u32,
    pub delay_ms: u64,
    pub reason: super::codes::ErrorCode,
}

impl Message {
    /// A user's message: one text segment.
    pub fn user(id: String, text: String, created_at: String) -> Self {
        Message {
            id: id.clone(),
            role: Role::User,
            status: MessageStatus::Complete,
            model: String::new(),
            usage: None,
            created_at,
            segments: vec![Segment::Text(TextSegment {
                id,
                sequence_number: 0,
                text,
            })],
            ended_reason: None,
            trace_id: None,
            duration_ms: None,
            agent_state: BTreeMap::new(),
            retrying: None,
            siblings: None,
        }
    }

    /// An assistant message that has not received any content yet.
    pub fn assistant(id: String, model: String, created_at: String) -> Self {
        Message {
            id,
            role: Role::Assistant,
            status: MessageStatus::Streaming,
            model,
            usage: None,
            created_at,
            segments: Vec::new(),
            ended_reason: None,
            trace_id: None,
            duration_ms: None,
            agent_state: BTreeMap::new(),
            retrying: None,
            siblings: None,
        }
    }

    /// The answer text: every text segment, in order.
    pub fn text(&self) -> String {
        self.segments
            .iter()
            .filter_map(|segment| match segment {
                Segment::Text(text) => Some(text.text.as_str()),
                _ => None,
            })
            .collect()
    }

    pub fn tool_calls(&self) -> impl Iterator<Item = &ToolCallSegment> {
        self.segments.iter().filter_map(|segment| match segment {
            Segment::ToolCall(call) => Some(call),
            _ => None,
        })
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    User,
    Assistant,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MessageStatus {
    /// The run is still going.
    Streaming,
    Complete,
    Cancelled,
    Error,
    /// The server stopped while the run was going; the message keeps what was saved.
    Interrupted,
}

impl MessageStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            MessageStatus::Streaming => "streaming",
            MessageStatus::Complete => "complete",
            MessageStatus::Cancelled => "cancelled",
            MessageStatus::Error => "error",
            MessageStatus::Interrupted => "interrupted",
        }
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Every input token billed, cached ones included (for Anthropic: `input_tokens` plus
    /// `cache_creation_input_tokens` plus `cache_read_input_tokens`).
    pub input_tokens: u64,
    /// Every output token billed, reasoning included.
    pub output_tokens: u64,
    /// Of `output_tokens`, those spent reasoning, when the provider says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_tokens: Option<u64>,
    /// Of `input_tokens`, those read from the provider's prompt cache, when it says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_read_tokens: Option<u64>,
    /// Of `input_tokens`, those written to the provider's prompt cache, when it says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write_tokens: Option<u64>,
}

impl Usage {
    /// The counts as people read them, the cached and reasoning parts beside their totals:
    /// `1200 in (1024 cached) · 40 out (32 reasoning) tokens`.
    pub fn summary(&self) -> String {
        let cached: Vec<String> = [
            self.cache_read_tokens.map(|n| format!("{n} cached")),
            self.cache_write_tokens
                .map(|n| format!("{n} written to cache")),
        ]
        .into_iter()
        .flatten()
        .collect();
        let part = |parts: Vec<String>| match parts.is_empty() {
            true => String::new(),
            false => format!(" ({})", parts.join(", ")),
        };
        let reasoning = self.reasoning_tokens.map(|n| format!("{n} reasoning"));
        format!(
            "{} in{} · {} out{} tokens",
            self.input_tokens,
            part(cached),
            self.output_tokens,
            part(reasoning.into_iter().collect())
        )
    }

    pub fn add(&mut self, other: &Usage) {
        // Saturating: the counts come from a provider, and a wild one must not overflow.
        self.input_tokens = self.input_tokens.saturating_add(other.input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(other.output_tokens);
        self.reasoning_tokens = add_known(self.reasoning_tokens, other.reasoning_tokens);
        self.cache_read_tokens = add_known(self.cache_read_tokens, other.cache_read_tokens);
        self.cache_write_tokens = add_known(self.cache_write_tokens, other.cache_write_tokens);
    }
}

/// The sum of two counts a provider may leave out: unknown only when both are.
fn add_known(mine: Option<u64>, theirs: Option<u64>) -> Option<u64> {
    match (mine, theirs) {
        (None, None) => None,
        (mine, theirs) => Some(mine.unwrap_or(0).saturating_add(theirs.unwrap_or(0))),
    }
}

/// Its `Deserialize` is written by hand (`wire.rs`), for the browser's bundle; the derived one,
/// in the tests only, is that one's reference (`SerdeSegment`).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Segment {
    Reasoning(ReasoningSegment),
    ToolCall(ToolCallSegment),
    Text(TextSegment),
}

impl Segment {
    pub fn sequence_number(&self) -> u32 {
        match self {
            Segment::Reasoning(segment) => segment.sequence_number,
            Segment::ToolCall(segment) => segment.sequence_number,
            Segment::Text(segment) => segment.sequence_number,
        }
    }
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ReasoningSegment {
    pub id: String,
    pub sequence_number: u32,
    /// Ordered by `summary_index`.
    pub parts: Vec<ReasoningPart>,
    /// Every part's text, joined by blank lines.
    pub combined_text: String,
    pub started_at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completed_at: Option<String>,
    /// From the first part's start to the last part's completion: how long the model thought.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReasoningPart {
    pub summary_index: u32,
    pub text: String,
    pub is_complete: bool,
    pub started_at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completed_at: Option<String>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolCallStatus {
    #[default]
    Running,
    /// Waiting for a person to approve or deny it.
    AwaitingApproval,
    Success,
    Error,
    Cancelled,
    Denied,
}

/// A call's approval: asked when, answered when, by whom, how.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Approval {
    pub requested_at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision: Option<ApprovalDecision>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<ResolvedBy>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolved_at: Option<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ToolCallSegment {
    pub call_id: String,
    pub sequence_number: u32,
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display: Option<String>,
    pub args: Value,
    /// The arguments' JSON text while an agent streams it; empty once `args` holds them whole.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub args_text: String,
    pub status: ToolCallStatus,
    /// The streamed output while running; the final output once the result arrived.
    #[serde(default)]
    pub output: String,
    #[serde(default)]
    pub truncated: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub full_length: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ToolError>,
    /// The latest progress report, if the tool sends any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progress: Option<Value>,
    /// Present when the call had to be approved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<Box<Approval>>,
    pub started_at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TextSegment {
    pub id: String,
    pub sequence_number: u32,
    pub text: String,
}

/// A trace's status is its message's: `running` while the message streams.
impl From<MessageStatus> for TraceStatus {
    fn from(status: MessageStatus) -> Self {
        match status {
            MessageStatus::Streaming => TraceStatus::Running,
            MessageStatus::Complete => TraceStatus::Completed,
            MessageStatus::Cancelled => TraceStatus::Cancelled,
            MessageStatus::Error => TraceStatus::Error,
            MessageStatus::Interrupted => TraceStatus::Interrupted,
        }
    }
}

#[cfg(test)]
mod usage_tests {
    use super::Usage;

    #[test]
    fn a_summary_shows_cached_and_reasoning_tokens_as_parts_of_their_totals() {
        let mut usage = Usage {
            input_tokens: 120,
            output_tokens: 40,
            ..Usage::default()
        };
        assert_eq!(usage.summary(), "120 in · 40 out tokens");
        usage.cache_read_tokens = Some(100);
        usage.cache_write_tokens = Some(20);
        usage.reasoning_tokens = Some(30);
        assert_eq!(
            usage.summary(),
            "120 in (100 cached, 20 written to cache) · 40 out (30 reasoning) tokens"
        );
    }
}
