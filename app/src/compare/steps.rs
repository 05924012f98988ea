//! A stored trace as the comparison's steps: its events folded by the one reducer, each block
//! timed from the run's start and given its model turn's tokens.

use std::collections::HashMap;

use serde_json::Value;

use super::{RunSide, Step, StepKind, Totals};
use crate::models::Trace;
use crate::protocol::{
    fold, parse_rfc3339_millis, shorten_chars, Event, EventKind, Segment, ToolCallStatus,
    TraceStatus,
};

/// How long a step's one-line summary may be, in characters.
const SUMMARY_CHARS: usize = 160;

/// Where each block's first event is and which model turn wrote it, by segment or call id.
struct Marks {
    /// Block id → (turn, time of its first event, time of its last event).
    blocks: HashMap<String, (usize, i64, i64)>,
    /// Each turn's output tokens.
    turn_tokens: Vec<u64>,
}

/// `turn_starts`: the seq of the run's last event before each model request went out (the
/// stored model turns); a turn's events are those after its start, up to the next one's. A run
/// without stored turns (a scenario, an AG-UI agent) counts a turn as closed by its `usage`
/// event.
fn marks(events: &[Event], turn_starts: &[u64]) -> Marks {
    let mut blocks: HashMap<String, (usize, i64, i64)> = HashMap::new();
    let mut turn_tokens: Vec<u64> = vec![0; turn_starts.len()];
    let mut usages_seen = 0;
    for event in events {
        let turn = match turn_starts.is_empty() {
            true => usages_seen,
            false => turn_starts
                .partition_point(|&after| after < event.seq)
                .saturating_sub(1),
        };
        let ms = parse_rfc3339_millis(&event.ts).unwrap_or(0);
        let id = match &event.kind {
            EventKind::ReasoningPartStarted { segment_id, .. }
            | EventKind::ReasoningPartDelta { segment_id, .. }
            | EventKind::TextDelta { segment_id, .. } => segment_id,
            EventKind::ToolCallStarted { call_id, .. } => call_id,
            EventKind::Usage(usage) => {
                if turn_tokens.len() <= turn {
                    turn_tokens.resize(turn + 1, 0);
                }
                turn_tokens[turn] = turn_tokens[turn].saturating_add(usage.output_tokens);
                usages_seen += 1;
                continue;
            }
            _ => continue,
        };
        blocks
            .entry(id.clone())
            .and_modify(|(_, _, last)| *last = ms)
            .or_insert((turn, ms, ms));
    }
    Marks {
        blocks,
        turn_tokens,
    }
}

fn one_line(text: &str) -> String {
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match shorten_chars(&line, SUMMARY_CHARS) {
        Some(short) => format!("{short}…"),
        None => line,
    }
}

/// The steps of a trace, in the order they happened, and its answer text (`turn_starts`: see
/// [`marks`]).
pub fn steps_of(trace: &Trace, turn_starts: &[u64]) -> (Vec<Step>, String) {
    let Some(message) = fold(&trace.events) else {
        return (Vec::new(), String::new());
    };
    let origin = parse_rfc3339_millis(&trace.started_at).unwrap_or(0);
    let marks = marks(&trace.events, turn_starts);
    let mut seen_turns = std::collections::HashSet::new();
    let running = message.status == crate::protocol::MessageStatus::Streaming;
    let mut steps = Vec::with_capacity(message.segments.len());
    for segment in &message.segments {
        let (id, mut step) = match segment {
            Segment::Reasoning(reasoning) => (
                reasoning.id.as_str(),
                Step {
                    kind: StepKind::Reasoning,
                    name: String::new(),
                    args: Value::Null,
                    summary: one_line(&reasoning.combined_text),
                    status: text_status(reasoning.completed_at.is_some() || !running),
                    start_ms: stamp(&reasoning.started_at, origin),
                    duration_ms: reasoning.duration_ms,
                    tokens: None,
                    note: None,
                },
            ),
            Segment::ToolCall(call) => (call.call_id.as_str(), call_step(call, origin)),
            Segment::Text(text) => (
                text.id.as_str(),
                Step {
                    kind: StepKind::Answer,
                    name: String::new(),
                    args: Value::Null,
                    summary: one_line(&text.text),
                    status: text_status(!running),
                    start_ms: 0,
                    duration_ms: None,
                    tokens: None,
                    note: None,
                },
            ),
        };
        step.note = step_note(trace, &message.id, id);
        if let Some(&(turn, first, last)) = marks.blocks.get(id) {
            if step.kind == StepKind::Answer {
                step.start_ms = first - origin;
                step.duration_ms = Some(u64::try_from(last - first).unwrap_or(0));
            }
            if seen_turns.insert(turn) {
                step.tokens = marks.turn_tokens.get(turn).copied();
            }
        }
        steps.push(step);
    }
    (steps, message.text())
}

/// The owner's note on step `step_id` of message `message_id`, from the trace's feedback.
fn step_note(trace: &Trace, message_id: &str, step_id: &str) -> Option<String> {
    trace
        .feedback
        .iter()
        .find(|item| item.message_id == message_id && item.step_id.as_deref() == Some(step_id))
        .map(|item| item.comment.clone())
}

fn text_status(done: bool) -> String {
    match done {
        true => "complete",
        false => "running",
    }
    .to_owned()
}

fn stamp(at: &str, origin: i64) -> i64 {
    parse_rfc3339_millis(at).map_or(0, |ms| ms - origin)
}

fn call_step(call: &crate::protocol::ToolCallSegment, origin: i64) -> Step {
    let status = serde_json::to_value(call.status)
        .ok()
        .and_then(|value| value.as_str().map(str::to_owned))
        .unwrap_or_default();
    Step {
        kind: StepKind::ToolCall,
        name: call.name.clone(),
        args: call.args.clone(),
        summary: one_line(&call.args.to_string()),
        status,
        start_ms: stamp(&call.started_at, origin),
        duration_ms: call.duration_ms,
        tokens: None,
        note: None,
    }
}

/// A trace as one side of a comparison; `question` is the user's message it answered,
/// `turn_starts` where its model turns began (see [`marks`]).
pub fn side_of(trace: &Trace, question: String, turn_starts: &[u64]) -> RunSide {
    let (steps, answer) = steps_of(trace, turn_starts);
    let count = |n: Option<i64>| n.and_then(|n| u64::try_from(n).ok());
    let calls = steps.iter().filter(|s| s.kind == StepKind::ToolCall);
    let failed = |status: &str| {
        [
            ToolCallStatus::Error,
            ToolCallStatus::Denied,
            ToolCallStatus::Cancelled,
        ]
        .iter()
        .any(|bad| serde_json::to_value(bad).is_ok_and(|bad| bad == status))
    };
    let run_failed = matches!(trace.status, TraceStatus::Error | TraceStatus::Interrupted);
    let totals = Totals {
        duration_ms: count(trace.total_duration_ms),
        tool_calls: calls.clone().count(),
        errors: calls.filter(|s| failed(&s.status)).count() + usize::from(run_failed),
        input_tokens: count(trace.input_tokens),
        output_tokens: count(trace.output_tokens),
    };
    RunSide {
        trace_id: trace.trace_id.clone(),
        conversation_id: trace.conversation_id.clone(),
        question,
        model: trace.model.clone(),
        status: trace.status,
        started_at: trace.started_at.clone(),
        steps,
        answer,
        totals,
        feedback: crate::models::answer_feedback(&trace.feedback, &trace.message_id).cloned(),
    }
}
