//! ThoughtFlow (seed 004): a conversation is a session, each user turn a run, and each run a list
//! of typed steps with `depends_on` edges; and the same as a D2 diagram. The owner's feedback
//! (issue 36) is a `feedback` object (`rating`, `comment`, `updated_at`): the answer's on its run,
//! a note on its reasoning or `tool_call` step.

use app::models::{answer_feedback, step_note, Conversation, Feedback};
use app::protocol::{
    elapsed_ms, fold, parse_rfc3339_millis, Approval, ReasoningSegment, Segment, TextSegment,
    ToolCallSegment, ToolCallStatus, TraceStatus,
};
use serde_json::{json, Value};

use crate::store::Trace;

/// The consolidated ThoughtFlow JSON of a conversation and its traces (oldest first).
pub fn thoughtflow(conversation: &Conversation, traces: &[Trace]) -> Value {
    let runs: Vec<Value> = traces
        .iter()
        .enumerate()
        .map(|(index, trace)| run(conversation, trace, index + 1))
        .collect();
    let ended_at = traces.iter().filter_map(|t| t.completed_at.clone()).max();
    json!({
        "session_id": conversation.summary.id,
        "title": conversation.summary.title,
        "started_at": conversation.summary.created_at,
        "ended_at": ended_at,
        "runs": runs,
    })
}

fn step(
    id: &str,
    label: &str,
    depends_on: Value,
    started_at: &str,
    ended_at: &str,
    started: Value,
    completed: Value,
) -> Value {
    let mut step = json!({
        "step_id": id,
        "label": label,
        "started_at": started_at,
        "ended_at": ended_at,
        "duration_ms": elapsed_ms(started_at, ended_at).unwrap_or(0),
        "payload_started": started,
        "payload_completed": completed,
    });
    if !depends_on.is_null() {
        step["depends_on"] = depends_on;
    }
    step
}

/// One run: its user message, a step per reasoning, tool call (with its approval and its output)
/// and answer, and a `run_end` step when it did not complete with an answer.
fn run(conversation: &Conversation, trace: &Trace, number: usize) -> Value {
    let user_text = conversation
        .messages
        .iter()
        .find(|m| m.id == trace.user_message_id)
        .map(|m| m.text())
        .unwrap_or_default();
    let mut steps = RunSteps::new(number, trace, user_text);
    let note = |step_id: &str| step_note(&trace.feedback, &trace.message_id, step_id);
    let ended_at = trace
        .completed_at
        .clone()
        .or_else(|| trace.events.last().map(|e| e.ts.clone()))
        .unwrap_or_else(|| trace.started_at.clone());
    let mut answered = false;
    let segments = fold(&trace.events).map(|m| m.segments).unwrap_or_default();
    for segment in &segments {
        match segment {
            Segment::Reasoning(reasoning) => {
                steps.reasoning(reasoning);
                steps.annotate_last(note(&reasoning.id));
            }
            Segment::ToolCall(call) => {
                steps.tool_call(call);
                steps.annotate_call(note(&call.call_id));
            }
            Segment::Text(text) => {
                steps.answer(text, &ended_at);
                answered = true;
            }
        }
    }
    if !answered || trace.status != TraceStatus::Completed {
        steps.run_end(trace, &ended_at);
    }
    let mut run = json!({
        "run_id": trace.run_id,
        "trace_id": trace.trace_id,
        "channel": "text",
        "status": trace.status,
        "model": trace.model,
        "started_at": trace.started_at,
        "ended_at": trace.completed_at,
        "duration_ms": trace.total_duration_ms.map(|ms| ms.max(0) as u64).or_else(|| elapsed_ms(&trace.started_at, &ended_at)),
        "usage": usage(trace),
        "steps": steps.steps,
    });
    if let Some(feedback) = answer_feedback(&trace.feedback, &trace.message_id) {
        run["feedback"] = feedback_json(feedback);
    }
    run
}

/// The reader's feedback (issue 36) as a run's or a step's `feedback` object.
fn feedback_json(feedback: &Feedback) -> Value {
    let mut out = json!({"comment": feedback.comment, "updated_at": feedback.updated_at});
    if let Some(rating) = feedback.rating {
        out["rating"] = json!(rating.as_str());
    }
    out
}

/// The run's tokens as billed: cached and reasoning ones are parts of input and output. Null
/// when no count was reported.
fn usage(trace: &Trace) -> Value {
    if trace.input_tokens.is_none() && trace.output_tokens.is_none() {
        return Value::Null;
    }
    let mut usage =
        json!({"input_tokens": trace.input_tokens, "output_tokens": trace.output_tokens});
    for (key, count) in [
        ("cache_read_tokens", trace.cache_read_tokens),
        ("cache_write_tokens", trace.cache_write_tokens),
        ("reasoning_tokens", trace.reasoning_tokens),
    ] {
        if let Some(count) = count {
            usage[key] = count.into();
        }
    }
    usage
}

/// A run's steps as they are made: ids `r<run>_s<n>` in order, the user's step first, and the
/// tool outputs an answer depends on.
struct RunSteps {
    prefix: String,
    counter: usize,
    user_step: String,
    outputs: Vec<String>,
    steps: Vec<Value>,
}

impl RunSteps {
    /// Starts with the user's message, step 1.
    fn new(number: usize, trace: &Trace, user_text: String) -> Self {
        let prefix = format!("r{number}");
        let user_step = format!("{prefix}_s1");
        let first = step(
            &user_step,
            "user_message",
            Value::Null,
            &trace.started_at,
            &trace.started_at,
            json!({"text": user_text}),
            json!({"ok": true}),
        );
        RunSteps {
            prefix,
            counter: 1,
            user_step,
            outputs: Vec::new(),
            steps: vec![first],
        }
    }

    /// Puts a note on the step just added.
    fn annotate_last(&mut self, note: Option<&Feedback>) {
        if let (Some(note), Some(step)) = (note, self.steps.last_mut()) {
            step["feedback"] = feedback_json(note);
        }
    }

    /// Puts a note on the `tool_call` step of the call just added (before its output step).
    fn annotate_call(&mut self, note: Option<&Feedback>) {
        let Some(note) = note else {
            return;
        };
        let call = self
            .steps
            .iter_mut()
            .rev()
            .find(|step| step["label"] == "tool_call");
        if let Some(step) = call {
            step["feedback"] = feedback_json(note);
        }
    }

    fn next_id(&mut self) -> String {
        self.counter += 1;
        format!("{}_s{}", self.prefix, self.counter)
    }

    fn reasoning(&mut self, reasoning: &ReasoningSegment) {
        let end = reasoning
            .completed_at
            .clone()
            .unwrap_or_else(|| reasoning.started_at.clone());
        let id = self.next_id();
        self.steps.push(step(
            &id,
            "generic",
            json!(self.user_step),
            &reasoning.started_at,
            &end,
            json!({"kind": "reasoning"}),
            json!({"text": reasoning.combined_text}),
        ));
    }

    /// A call, after its `approval` step when it waited for a person, and its output or error.
    fn tool_call(&mut self, call: &ToolCallSegment) {
        // A call that waited for a person depends on its `approval` step, and ran (for
        // `duration_ms`) from the answer on.
        let (depends, ran_from) = match &call.approval {
            Some(approval) => self.approval(call, approval),
            None => (json!(self.user_step), call.started_at.clone()),
        };
        let call_step = self.next_id();
        let end = parse_rfc3339_millis(&ran_from)
            .zip(call.duration_ms)
            .map(|(start, ms)| app::protocol::format_rfc3339_millis(start + ms as i64))
            .unwrap_or_else(|| ran_from.clone());
        self.steps.push(step(
            &call_step,
            "tool_call",
            depends,
            &call.started_at,
            &end,
            json!({"name": call.name, "args": call.args}),
            json!({"ok": call.status == ToolCallStatus::Success, "status": call.status}),
        ));
        let output_step = self.next_id();
        let (label, completed) = tool_outcome(call);
        self.steps.push(step(
            &output_step,
            label,
            json!(call_step),
            &end,
            &end,
            json!({}),
            completed,
        ));
        self.outputs.push(output_step);
    }

    /// The `approval` step of `call`; answers what the call depends on and when it started to run.
    fn approval(&mut self, call: &ToolCallSegment, approval: &Approval) -> (Value, String) {
        let approval_step = self.next_id();
        let answered = approval
            .resolved_at
            .clone()
            .unwrap_or_else(|| approval.requested_at.clone());
        self.steps.push(step(
            &approval_step,
            "approval",
            json!(self.user_step),
            &approval.requested_at,
            &answered,
            json!({"tool": call.name, "args": call.args}),
            json!({"decision": approval.decision, "by": approval.by, "reason": approval.reason}),
        ));
        (json!(approval_step), answered)
    }

    /// The user's step and every tool output so far.
    fn all_before(&self) -> Value {
        let mut depends = vec![self.user_step.clone()];
        depends.extend(self.outputs.iter().cloned());
        json!(depends)
    }

    fn answer(&mut self, text: &TextSegment, ended_at: &str) {
        let (depends, id) = (self.all_before(), self.next_id());
        self.steps.push(step(
            &id,
            "assistant_message",
            depends,
            ended_at,
            ended_at,
            json!({}),
            json!({"text": text.text}),
        ));
    }

    fn run_end(&mut self, trace: &Trace, ended_at: &str) {
        let (depends, id) = (self.all_before(), self.next_id());
        self.steps.push(step(
            &id,
            "generic",
            depends,
            ended_at,
            ended_at,
            json!({"kind": "run_end"}),
            json!({"status": trace.status, "reason": trace.cancellation_reason, "cancelled_by": trace.cancelled_by}),
        ));
    }
}

/// A call's output step: its label and what it completed with.
fn tool_outcome(call: &ToolCallSegment) -> (&'static str, Value) {
    match (&call.status, &call.error) {
        (ToolCallStatus::Success, _) => (
            "tool_output",
            json!({"result": call.output, "truncated": call.truncated}),
        ),
        (_, Some(error)) => (
            "tool_error",
            json!({"error": {"kind": error.kind, "message": error.message}}),
        ),
        (status, None) => (
            "tool_error",
            json!({"error": {"kind": format!("{status:?}").to_lowercase(), "message": "The tool did not finish."}}),
        ),
    }
}

/// A D2 diagram of the ThoughtFlow: runs as containers, steps as nodes, `depends_on` as edges.
/// Keys are generated ids; every piece of text goes into a quoted, escaped label, so nothing the
/// model or a tool wrote can change the diagram's structure.
pub fn to_d2(flow: &Value) -> String {
    let mut out = String::from("direction: down\n");
    out.push_str(&format!(
        "title: {} {{\n  shape: text\n  near: top-center\n}}\n",
        quote(&format!("ThoughtFlow: {}", text(&flow["title"])))
    ));
    for (index, run) in flow["runs"].as_array().into_iter().flatten().enumerate() {
        let run_key = format!("run{}", index + 1);
        let duration = run["duration_ms"]
            .as_u64()
            .map(|ms| format!(" · {:.1} s", ms as f64 / 1000.0))
            .unwrap_or_default();
        out.push_str(&format!(
            "{run_key}: {} {{\n",
            quote(&format!(
                "Run {} · {}{duration}",
                index + 1,
                text(&run["status"])
            ))
        ));
        let steps = run["steps"].as_array().cloned().unwrap_or_default();
        for step in &steps {
            let id = text(&step["step_id"]);
            out.push_str(&format!("  {}: {}\n", key(&id), quote(&step_label(step))));
        }
        for step in &steps {
            let id = text(&step["step_id"]);
            let depends: Vec<String> = match &step["depends_on"] {
                Value::String(one) => vec![one.clone()],
                Value::Array(many) => many.iter().map(text).collect(),
                _ => Vec::new(),
            };
            for from in depends {
                out.push_str(&format!("  {} -> {}\n", key(&from), key(&id)));
            }
        }
        out.push_str("}\n");
    }
    out
}

fn text(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// Step ids are ours (`r1_s2`), but keep keys to `[A-Za-z0-9_]` whatever happens.
fn key(id: &str) -> String {
    id.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

fn step_label(step: &Value) -> String {
    let label = text(&step["label"]);
    let detail = match label.as_str() {
        "user_message" => text(&step["payload_started"]["text"]),
        "assistant_message" => text(&step["payload_completed"]["text"]),
        "tool_call" => format!(
            "{} {}",
            text(&step["payload_started"]["name"]),
            step["payload_started"]["args"]
        ),
        "tool_output" => text(&step["payload_completed"]["result"]),
        "tool_error" => text(&step["payload_completed"]["error"]["message"]),
        "approval" => format!(
            "{} {} by {}",
            text(&step["payload_started"]["tool"]),
            text(&step["payload_completed"]["decision"]),
            text(&step["payload_completed"]["by"])
        ),
        _ => {
            text(&step["payload_completed"]["text"]).to_owned()
                + &text(&step["payload_completed"]["status"])
        }
    };
    let detail: String = detail.split_whitespace().collect::<Vec<_>>().join(" ");
    let detail = match crate::sanitize::shorten(&detail, 80) {
        Some(cut) => format!("{cut}…"),
        None => detail,
    };
    let ms = step["duration_ms"]
        .as_u64()
        .filter(|ms| *ms > 0)
        .map(|ms| format!(" ({ms} ms)"))
        .unwrap_or_default();
    if detail.is_empty() {
        format!("{label}{ms}")
    } else {
        format!("{label}{ms}\n{detail}")
    }
}

/// A D2 double-quoted string: backslashes, quotes and `$` escaped, newlines as `\n`, other
/// control characters dropped.
pub fn quote(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '$' => out.push_str("\\$"),
            '\n' => out.push_str("\\n"),
            c if c.is_control() => out.push(' '),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting_keeps_any_text_inside_one_string() {
        assert_eq!(
            quote("say \"hi\" {x} \\ $HOME\nnext\t"),
            "\"say \\\"hi\\\" {x} \\\\ \\$HOME\\nnext \""
        );
        assert_eq!(key("r1_s2; x -> y"), "r1_s2__x____y");
    }
}
