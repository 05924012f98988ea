//! Two runs side by side (issue 36): their steps aligned row by row, their answers as a word diff,
//! their totals and their timelines. Pure: the server builds a [`Comparison`] from two stored
//! traces (`GET /api/compare/{a}/{b}` and the compare page's server function, docs/protocol.md)
//! and the page draws it, so the server's render and the browser's hydration read the same data.
//! The steps come from each trace's message as the one reducer folds it ([`crate::protocol::fold`]).

mod align;
mod steps;
mod words;

#[cfg(test)]
mod tests;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::protocol::TraceStatus;

pub use align::{align, similarity};
pub use steps::{side_of, steps_of};
pub use words::word_diff;

/// What `GET /api/compare/{a}/{b}` answers.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    pub a: RunSide,
    pub b: RunSide,
    /// The two runs' steps aligned, in order.
    pub rows: Vec<Row>,
    /// Run `a`'s answer turned into run `b`'s, word by word.
    pub answer_diff: Vec<WordChange>,
}

impl Comparison {
    /// Compares two runs already read as [`RunSide`]s.
    pub fn of(a: RunSide, b: RunSide) -> Self {
        let rows = align(&a.steps, &b.steps);
        let answer_diff = word_diff(&a.answer, &b.answer);
        Comparison {
            a,
            b,
            rows,
            answer_diff,
        }
    }
}

/// One run as the comparison shows it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunSide {
    pub trace_id: String,
    pub conversation_id: String,
    /// The question the run answered (empty when it could not be read).
    pub question: String,
    pub model: String,
    pub status: TraceStatus,
    pub started_at: String,
    pub steps: Vec<Step>,
    /// The answer text (every text segment).
    pub answer: String,
    pub totals: Totals,
    /// The owner's feedback on the answer (issue 36), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub feedback: Option<crate::models::Feedback>,
}

/// What kind of block a step is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepKind {
    Reasoning,
    ToolCall,
    Answer,
}

/// One block of a run: a reasoning block, a tool call or a piece of the answer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Step {
    pub kind: StepKind,
    /// The tool's name for a tool call, else empty.
    pub name: String,
    /// A tool call's arguments; `null` for the other kinds.
    pub args: Value,
    /// One line about it: a call's arguments as JSON, the start of a text.
    pub summary: String,
    /// A call's status (`success`, `error`, `running`, …); `complete` or `running` for text.
    pub status: String,
    /// When it started, in milliseconds from the run's start.
    pub start_ms: i64,
    pub duration_ms: Option<u64>,
    /// The output tokens of the model turn that wrote it, on the turn's first step only (the
    /// providers count tokens per turn, not per block).
    pub tokens: Option<u64>,
    /// The owner's note on this step (a reasoning block or tool call), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// A run's totals.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Totals {
    pub duration_ms: Option<u64>,
    pub tool_calls: usize,
    /// Tool calls that failed (error, denied, cancelled), plus one when the run itself failed.
    pub errors: usize,
    pub input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
}

/// How a row's two sides relate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RowChange {
    /// The same step in both: same kind, same tool, same arguments, same status.
    Same,
    /// The same kind of step (for a call, the same tool) with other arguments or another status.
    Changed,
    /// Only in run `b`.
    Inserted,
    /// Only in run `a`.
    Deleted,
}

/// What of a paired step differs, for the view to highlight.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Field {
    Args,
    Status,
    Duration,
    Tokens,
}

/// One row of the aligned steps: indexes into `a.steps` and `b.steps`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Row {
    pub change: RowChange,
    pub a: Option<usize>,
    pub b: Option<usize>,
    /// A paired step that sits elsewhere in `b`'s order (parallel calls reordered).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub moved: bool,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub differs: Vec<Field>,
}

/// A run of words of the answers' diff.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WordChange {
    pub op: WordOp,
    pub text: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WordOp {
    Equal,
    Delete,
    Insert,
}

/// A trace the user may compare another with, as the trace page's "Compare with…" lists it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TraceChoice {
    pub trace_id: String,
    pub conversation_id: String,
    pub conversation_title: String,
    /// The question the run answered (empty when it could not be read).
    pub question: String,
    pub model: String,
    pub status: TraceStatus,
    pub started_at: String,
}

/// How many traces "Compare with…" lists at most (those of the same conversation first).
pub const MAX_CHOICES: usize = 50;
