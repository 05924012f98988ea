//! The one pure reducer: events in, canonical message out. No I/O, no clock, no randomness, so the
//! server's terminal message and the browser's live view cannot disagree.

use super::codes::ErrorCode;
use super::event::{Event, EventKind, ToolResultStatus};
use super::message::{
    Approval, Message, MessageStatus, ReasoningPart, ReasoningSegment, Segment, TextSegment,
    ToolCallSegment, ToolCallStatus, Usage,
};
use super::records::ApprovalDecision;
use super::time::elapsed_ms;

/// Folds a run's events into its message. Events are applied in `seq` order and a repeated `seq` is
/// applied once, so a list gathered from a reconnecting stream folds to the same message.
/// Returns `None` when no event names the message (no `message_started` and no terminal event).
pub fn fold<'a>(events: impl IntoIterator<Item = &'a Event>) -> Option<Message> {
    let mut ordered: Vec<&Event> = events.into_iter().collect();
    ordered.sort_by_key(|event| event.seq);
    let mut reducer = Reducer::default();
    for event in ordered {
        reducer.apply(event);
    }
    reducer.into_message()
}

/// The incremental form of [`fold`], for a live stream: apply each event as it arrives.
#[derive(Clone, Debug, Default)]
pub struct Reducer {
    message: Option<Message>,
    last_seq: u64,
    /// Tool results that arrived before their call started (never on our wire, but a reducer that
    /// drops data on odd input would make the stored view lie).
    early_results: Vec<Event>,
}

impl Reducer {
    pub fn message(&self) -> Option<&Message> {
        self.message.as_ref()
    }

    pub fn into_message(self) -> Option<Message> {
        self.message
    }

    /// The highest `seq` applied so far: where a reconnecting stream resumes.
    pub fn last_seq(&self) -> u64 {
        self.last_seq
    }

    /// Whether a terminal event has been applied.
    pub fn is_finished(&self) -> bool {
        self.message
            .as_ref()
            .is_some_and(|message| message.status != MessageStatus::Streaming)
    }

    /// Applies one event. Returns false (and changes nothing) for an event already applied.
    pub fn apply(&mut self, event: &Event) -> bool {
        if event.seq <= self.last_seq {
            return false;
        }
        self.last_seq = event.seq;
        match &event.kind {
            EventKind::MessageStarted {
                message_id,
                model,
                trace_id,
                ..
            } => {
                if self.message.is_none() {
                    let mut message =
                        Message::assistant(message_id.clone(), model.clone(), event.ts.clone());
                    message.trace_id = Some(trace_id.clone());
                    self.message = Some(message);
                }
            }
            EventKind::MessageFinal { message, .. } => {
                self.finish(message, MessageStatus::Complete)
            }
            EventKind::MessageCancelled { message, .. } => {
                self.finish(message, MessageStatus::Cancelled)
            }
            // A run cut off by its server's end (a crash, a lost instance) ends with `message_error`
            // of code `interrupted`, so that every subscriber still sees one terminal event.
            EventKind::MessageError { message, code, .. } if *code == ErrorCode::Interrupted => {
                self.finish(message, MessageStatus::Interrupted)
            }
            EventKind::MessageError { message, .. } => self.finish(message, MessageStatus::Error),
            kind => {
                let Some(message) = self.message.as_mut() else {
                    return true;
                };
                if message.status != MessageStatus::Streaming {
                    return true;
                }
                match kind {
                    EventKind::ToolResult { call_id, .. }
                        if find_tool(message, call_id).is_none() =>
                    {
                        self.early_results.push(event.clone());
                    }
                    EventKind::ToolCallStarted { call_id, .. } => {
                        apply_content(message, event);
                        let call_id = call_id.clone();
                        let (early, rest): (Vec<Event>, Vec<Event>) = std::mem::take(&mut self.early_results)
                            .into_iter()
                            .partition(|early| matches!(&early.kind, EventKind::ToolResult { call_id: id, .. } if *id == call_id));
                        self.early_results = rest;
                        for early in &early {
                            apply_content(message, early);
                        }
                    }
                    _ => apply_content(message, event),
                }
            }
        }
        true
    }

    /// A terminal event carries the message as the server's reducer built it: that is canonical.
    fn finish(&mut self, carried: &Message, status: MessageStatus) {
        let mut message = carried.clone();
        message.status = status;
        message.retrying = None;
        self.message = Some(message);
        self.early_results.clear();
    }
}

fn apply_content(message: &mut Message, event: &Event) {
    // A wait for a retry lasts until the model sends something.
    if !matches!(
        event.kind,
        EventKind::Usage(_) | EventKind::AgentState { .. } | EventKind::Retrying { .. }
    ) {
        message.retrying = None;
    }
    match &event.kind {
        EventKind::ReasoningPartStarted { .. }
        | EventKind::ReasoningPartDelta { .. }
        | EventKind::ReasoningPartCompleted { .. } => apply_reasoning(message, event),
        EventKind::ToolCallStarted { .. }
        | EventKind::ToolCallUpdate { .. }
        | EventKind::ToolResult { .. } => apply_tool(message, event),
        EventKind::ToolApprovalRequested { .. } | EventKind::ToolApprovalResolved { .. } => {
            apply_approval(message, event)
        }
        EventKind::TextDelta { .. } => apply_text(message, event),
        EventKind::Usage(usage) => message.usage.get_or_insert_with(Usage::default).add(usage),
        EventKind::AgentState { key, state } => {
            message.agent_state.insert(key.clone(), state.clone());
        }
        EventKind::Retrying {
            attempt,
            delay_ms,
            reason,
        } => {
            message.retrying = Some(super::message::Retrying {
                attempt: *attempt,
                delay_ms: *delay_ms,
                reason: reason.clone(),
            })
        }
        EventKind::MessageStarted { .. }
        | EventKind::MessageFinal { .. }
        | EventKind::MessageCancelled { .. }
        | EventKind::MessageError { .. } => {}
    }
}

/// A reasoning part starts, grows or completes.
fn apply_reasoning(message: &mut Message, event: &Event) {
    match &event.kind {
        EventKind::ReasoningPartStarted {
            segment_id,
            summary_index,
            sequence_number,
        } => {
            if find_reasoning(message, segment_id).is_none() {
                insert_segment(
                    message,
                    Segment::Reasoning(ReasoningSegment {
                        id: segment_id.clone(),
                        sequence_number: *sequence_number,
                        parts: Vec::new(),
                        combined_text: String::new(),
                        started_at: event.ts.clone(),
                        completed_at: None,
                        duration_ms: None,
                    }),
                );
            }
            let Some(segment) = find_reasoning(message, segment_id) else {
                return;
            };
            let parts = segment.parts.len();
            reasoning_part(segment, *summary_index, &event.ts);
            if segment.parts.len() != parts {
                segment.combined_text = combine(&segment.parts);
            }
        }
        EventKind::ReasoningPartDelta {
            segment_id,
            summary_index,
            text_delta,
        } => {
            if let Some(segment) = find_reasoning(message, segment_id) {
                append_reasoning(segment, *summary_index, &event.ts, text_delta);
            }
        }
        EventKind::ReasoningPartCompleted {
            segment_id,
            summary_index,
            final_text,
        } => {
            if let Some(segment) = find_reasoning(message, segment_id) {
                complete_part(segment, *summary_index, &event.ts, final_text.as_ref());
            }
        }
        _ => {}
    }
}

fn complete_part(
    segment: &mut ReasoningSegment,
    summary_index: u32,
    ts: &str,
    final_text: Option<&String>,
) {
    let part = reasoning_part(segment, summary_index, ts);
    if let Some(final_text) = final_text {
        part.text.clone_from(final_text);
    }
    part.is_complete = true;
    part.completed_at = Some(ts.to_owned());
    segment.combined_text = combine(&segment.parts);
    if segment.parts.iter().all(|part| part.is_complete) {
        segment.completed_at = Some(ts.to_owned());
        segment.duration_ms = elapsed_ms(&segment.started_at, ts);
    }
}

/// A tool call starts, streams output or ends.
fn apply_tool(message: &mut Message, event: &Event) {
    match &event.kind {
        EventKind::ToolCallStarted {
            call_id,
            name,
            display,
            args,
            sequence_number,
        } if find_tool(message, call_id).is_none() => {
            insert_segment(
                message,
                Segment::ToolCall(ToolCallSegment {
                    call_id: call_id.clone(),
                    sequence_number: *sequence_number,
                    name: name.clone(),
                    display: display.clone(),
                    args: args.clone(),
                    args_text: String::new(),
                    status: ToolCallStatus::Running,
                    output: String::new(),
                    truncated: false,
                    full_length: None,
                    error: None,
                    progress: None,
                    approval: None,
                    started_at: event.ts.clone(),
                    duration_ms: None,
                }),
            );
        }
        EventKind::ToolCallUpdate {
            call_id,
            output_delta,
            progress,
            args_text,
            args,
        } => {
            let call = find_tool(message, call_id);
            if let Some(call) = call.filter(|call| call.status == ToolCallStatus::Running) {
                if let Some(delta) = output_delta {
                    call.output.push_str(delta);
                }
                if progress.is_some() {
                    call.progress.clone_from(progress);
                }
                if let Some(text) = args_text {
                    call.args_text.clone_from(text);
                }
                if let Some(args) = args {
                    call.args.clone_from(args);
                    call.args_text.clear();
                }
            }
        }
        EventKind::ToolResult { call_id, .. } => {
            if let Some(call) = find_tool(message, call_id) {
                finish_tool(call, &event.kind);
            }
        }
        _ => {}
    }
}

/// A call's `tool_result`: its status, duration, final output and error.
fn finish_tool(call: &mut ToolCallSegment, result: &EventKind) {
    let EventKind::ToolResult {
        status,
        duration_ms,
        output,
        truncated,
        full_length,
        error,
        ..
    } = result
    else {
        return;
    };
    call.status = match status {
        ToolResultStatus::Success => ToolCallStatus::Success,
        ToolResultStatus::Error => ToolCallStatus::Error,
        ToolResultStatus::Cancelled => ToolCallStatus::Cancelled,
        ToolResultStatus::Denied => ToolCallStatus::Denied,
    };
    call.duration_ms = Some(*duration_ms);
    if let Some(output) = output {
        call.output.clone_from(output);
    }
    call.truncated = *truncated;
    call.full_length = *full_length;
    call.error.clone_from(error);
}

/// A call asks a person, or is answered.
fn apply_approval(message: &mut Message, event: &Event) {
    match &event.kind {
        EventKind::ToolApprovalRequested { call_id, .. } => {
            if let Some(call) = find_tool(message, call_id) {
                if call.status == ToolCallStatus::Running && call.approval.is_none() {
                    call.status = ToolCallStatus::AwaitingApproval;
                    call.approval = Some(Box::new(Approval {
                        requested_at: event.ts.clone(),
                        ..Approval::default()
                    }));
                }
            }
        }
        EventKind::ToolApprovalResolved {
            call_id,
            decision,
            by,
            reason,
        } => {
            if let Some(call) = find_tool(message, call_id) {
                if let Some(approval) = call
                    .approval
                    .as_mut()
                    .filter(|approval| approval.decision.is_none())
                {
                    approval.decision = Some(*decision);
                    approval.by = Some(by.clone());
                    approval.reason.clone_from(reason);
                    approval.resolved_at = Some(event.ts.clone());
                    if *decision == ApprovalDecision::Approve {
                        call.status = ToolCallStatus::Running;
                    }
                }
            }
        }
        _ => {}
    }
}

/// Answer text grows, or a text block starts.
fn apply_text(message: &mut Message, event: &Event) {
    let EventKind::TextDelta {
        segment_id,
        sequence_number,
        delta,
    } = &event.kind
    else {
        return;
    };
    // From the last segment, as in `find_reasoning` and `find_tool`: a delta is nearly always
    // for the one last opened, and a long run's message has many.
    let existing = message
        .segments
        .iter_mut()
        .rev()
        .find_map(|segment| match segment {
            Segment::Text(text) if text.id == *segment_id => Some(text),
            _ => None,
        });
    match existing {
        Some(text) => text.text.push_str(delta),
        None => {
            let sequence_number = sequence_number.unwrap_or_else(|| next_sequence_number(message));
            insert_segment(
                message,
                Segment::Text(TextSegment {
                    id: segment_id.clone(),
                    sequence_number,
                    text: delta.clone(),
                }),
            );
        }
    }
}

/// Keeps `segments` ordered by `sequence_number`; equal numbers keep arrival order.
fn insert_segment(message: &mut Message, segment: Segment) {
    let key = segment.sequence_number();
    let position = message
        .segments
        .partition_point(|existing| existing.sequence_number() <= key);
    message.segments.insert(position, segment);
}

fn next_sequence_number(message: &Message) -> u32 {
    message
        .segments
        .iter()
        .map(|segment| segment.sequence_number() + 1)
        .max()
        .unwrap_or(0)
}

fn find_reasoning<'m>(
    message: &'m mut Message,
    segment_id: &str,
) -> Option<&'m mut ReasoningSegment> {
    message
        .segments
        .iter_mut()
        .rev()
        .find_map(|segment| match segment {
            Segment::Reasoning(reasoning) if reasoning.id == segment_id => Some(reasoning),
            _ => None,
        })
}

fn find_tool<'m>(message: &'m mut Message, call_id: &str) -> Option<&'m mut ToolCallSegment> {
    message
        .segments
        .iter_mut()
        .rev()
        .find_map(|segment| match segment {
            Segment::ToolCall(call) if call.call_id == call_id => Some(call),
            _ => None,
        })
}

/// The part with this index, created (in `summary_index` order) when it is new.
fn reasoning_part<'s>(
    segment: &'s mut ReasoningSegment,
    summary_index: u32,
    ts: &str,
) -> &'s mut ReasoningPart {
    let position = segment
        .parts
        .partition_point(|part| part.summary_index < summary_index);
    let exists = segment
        .parts
        .get(position)
        .is_some_and(|part| part.summary_index == summary_index);
    if !exists {
        segment.parts.insert(
            position,
            ReasoningPart {
                summary_index,
                text: String::new(),
                is_complete: false,
                started_at: ts.to_owned(),
                completed_at: None,
            },
        );
        segment.completed_at = None;
        segment.duration_ms = None;
    }
    &mut segment.parts[position]
}

/// Adds a delta to a part. When the part is the last one (the usual case) the combined text grows
/// in place, so a long stream of small deltas costs linear time, not quadratic.
fn append_reasoning(segment: &mut ReasoningSegment, summary_index: u32, ts: &str, delta: &str) {
    let parts = segment.parts.len();
    reasoning_part(segment, summary_index, ts)
        .text
        .push_str(delta);
    let last_existing = segment.parts.len() == parts
        && segment
            .parts
            .last()
            .is_some_and(|part| part.summary_index == summary_index);
    if last_existing {
        segment.combined_text.push_str(delta);
    } else {
        segment.combined_text = combine(&segment.parts);
    }
}

fn combine(parts: &[ReasoningPart]) -> String {
    parts
        .iter()
        .map(|part| part.text.as_str())
        .collect::<Vec<_>>()
        .join("\n\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{format_rfc3339_millis, CancelledBy, ToolError};
    use serde_json::json;

    /// Builds a run's events with consecutive seq numbers and a clock that ticks 100 ms per event.
    struct Script {
        events: Vec<Event>,
    }

    impl Script {
        fn new() -> Self {
            let mut script = Script { events: Vec::new() };
            script.push(EventKind::MessageStarted {
                conversation_id: "c1".into(),
                user_message_id: "u1".into(),
                message_id: "m1".into(),
                trace_id: "t1".into(),
                model: "scenario:test".into(),
            });
            script
        }

        fn push(&mut self, kind: EventKind) -> &mut Self {
            let seq = self.events.len() as u64 + 1;
            let ts = format_rfc3339_millis(1_769_077_800_000 + seq as i64 * 100);
            self.events.push(Event {
                seq,
                run_id: "r1".into(),
                ts,
                kind,
            });
            self
        }

        fn tool_start(&mut self, call_id: &str, sequence_number: u32) -> &mut Self {
            self.push(EventKind::ToolCallStarted {
                call_id: call_id.into(),
                name: "grep_search".into(),
                display: Some(format!("Searching for '{call_id}'")),
                args: json!({"query": call_id}),
                sequence_number,
            })
        }

        fn tool_output(&mut self, call_id: &str, delta: &str) -> &mut Self {
            self.push(EventKind::ToolCallUpdate {
                call_id: call_id.into(),
                output_delta: Some(delta.into()),
                progress: None,
                args_text: None,
                args: None,
            })
        }

        fn tool_args(
            &mut self,
            call_id: &str,
            text: Option<&str>,
            args: Option<serde_json::Value>,
        ) -> &mut Self {
            self.push(EventKind::ToolCallUpdate {
                call_id: call_id.into(),
                output_delta: None,
                progress: None,
                args_text: text.map(Into::into),
                args,
            })
        }

        fn tool_result(&mut self, call_id: &str, status: ToolResultStatus) -> &mut Self {
            self.push(EventKind::ToolResult {
                call_id: call_id.into(),
                status,
                duration_ms: 42,
                output: None,
                truncated: false,
                full_length: None,
                error: (status == ToolResultStatus::Error).then(|| ToolError {
                    kind: "io".into(),
                    message: "disk on fire".into(),
                }),
            })
        }

        fn text(
            &mut self,
            segment_id: &str,
            sequence_number: Option<u32>,
            delta: &str,
        ) -> &mut Self {
            self.push(EventKind::TextDelta {
                segment_id: segment_id.into(),
                sequence_number,
                delta: delta.into(),
            })
        }

        fn message(&self) -> Message {
            fold(&self.events).expect("a started run folds to a message")
        }
    }

    fn tool<'m>(message: &'m Message, call_id: &str) -> &'m ToolCallSegment {
        message
            .tool_calls()
            .find(|call| call.call_id == call_id)
            .expect("tool call present")
    }

    #[test]
    fn no_events_no_message() {
        assert_eq!(fold(&[]), None);
    }

    #[test]
    fn reasoning_parts_stream_complete_and_time_the_thinking() {
        let mut script = Script::new();
        script
            .push(EventKind::ReasoningPartStarted {
                segment_id: "rs".into(),
                summary_index: 0,
                sequence_number: 0,
            })
            .push(EventKind::ReasoningPartDelta {
                segment_id: "rs".into(),
                summary_index: 0,
                text_delta: "Look".into(),
            })
            .push(EventKind::ReasoningPartDelta {
                segment_id: "rs".into(),
                summary_index: 0,
                text_delta: "ing".into(),
            });
        let live = script.message();
        let Segment::Reasoning(reasoning) = &live.segments[0] else {
            panic!("reasoning first")
        };
        assert_eq!(reasoning.parts[0].text, "Looking");
        assert!(!reasoning.parts[0].is_complete);
        assert_eq!(reasoning.duration_ms, None);

        script
            .push(EventKind::ReasoningPartCompleted {
                segment_id: "rs".into(),
                summary_index: 0,
                final_text: Some("Looking.".into()),
            })
            .push(EventKind::ReasoningPartStarted {
                segment_id: "rs".into(),
                summary_index: 1,
                sequence_number: 0,
            })
            .push(EventKind::ReasoningPartCompleted {
                segment_id: "rs".into(),
                summary_index: 1,
                final_text: Some("Found it.".into()),
            });
        let done = script.message();
        assert_eq!(done.segments.len(), 1, "both parts share one segment");
        let Segment::Reasoning(reasoning) = &done.segments[0] else {
            panic!("reasoning first")
        };
        assert_eq!(
            reasoning
                .parts
                .iter()
                .map(|p| p.summary_index)
                .collect::<Vec<_>>(),
            [0, 1]
        );
        assert!(reasoning.parts.iter().all(|part| part.is_complete));
        assert_eq!(reasoning.combined_text, "Looking.\n\nFound it.");
        // Started at seq 2 (t=200 ms), last completion at seq 7 (t=700 ms).
        assert_eq!(reasoning.duration_ms, Some(500));
    }

    #[test]
    fn reasoning_parts_are_ordered_by_summary_index_whatever_the_arrival() {
        let mut script = Script::new();
        script
            .push(EventKind::ReasoningPartStarted {
                segment_id: "rs".into(),
                summary_index: 1,
                sequence_number: 0,
            })
            .push(EventKind::ReasoningPartStarted {
                segment_id: "rs".into(),
                summary_index: 0,
                sequence_number: 0,
            });
        let Segment::Reasoning(reasoning) = &script.message().segments[0] else {
            panic!()
        };
        assert_eq!(
            reasoning
                .parts
                .iter()
                .map(|p| p.summary_index)
                .collect::<Vec<_>>(),
            [0, 1]
        );
    }

    #[test]
    fn segments_follow_sequence_numbers_across_kinds() {
        let mut script = Script::new();
        script
            .push(EventKind::ReasoningPartStarted {
                segment_id: "rs1".into(),
                summary_index: 0,
                sequence_number: 0,
            })
            .tool_start("a", 1)
            .tool_result("a", ToolResultStatus::Success)
            .push(EventKind::ReasoningPartStarted {
                segment_id: "rs2".into(),
                summary_index: 0,
                sequence_number: 2,
            })
            .text("txt", Some(3), "Done");
        let kinds: Vec<&str> = script
            .message()
            .segments
            .iter()
            .map(|segment| match segment {
                Segment::Reasoning(_) => "reasoning",
                Segment::ToolCall(_) => "tool",
                Segment::Text(_) => "text",
            })
            .collect();
        assert_eq!(kinds, ["reasoning", "tool", "reasoning", "text"]);
    }

    #[test]
    fn streamed_arguments_show_as_text_until_they_are_whole() {
        let mut script = Script::new();
        script
            .tool_start("a", 0)
            .tool_args("a", Some("{\"city\":"), None)
            .tool_args("a", Some("{\"city\": \"Paris\"}"), None);
        assert_eq!(
            tool(&script.message(), "a").args_text,
            "{\"city\": \"Paris\"}"
        );
        script.tool_args("a", None, Some(json!({"city": "Paris"})));
        let whole = script.message();
        assert!(tool(&whole, "a").args_text.is_empty());
        assert_eq!(tool(&whole, "a").args, json!({"city": "Paris"}));
    }

    #[test]
    fn interleaved_parallel_tools_keep_their_own_output() {
        let mut script = Script::new();
        script
            .tool_start("a", 0)
            .tool_start("b", 1)
            .tool_output("a", "a1 ")
            .tool_output("b", "b1 ")
            .tool_output("a", "a2")
            .tool_output("b", "b2");
        let live = script.message();
        assert_eq!(tool(&live, "a").output, "a1 a2");
        assert_eq!(tool(&live, "b").output, "b1 b2");
        assert!(live
            .tool_calls()
            .all(|call| call.status == ToolCallStatus::Running));
    }

    #[test]
    fn tool_results_in_any_order_land_on_their_call() {
        let mut script = Script::new();
        script
            .tool_start("a", 0)
            .tool_start("b", 1)
            .tool_start("c", 2)
            .tool_result("c", ToolResultStatus::Success)
            .tool_result("a", ToolResultStatus::Error)
            .tool_result("b", ToolResultStatus::Cancelled);
        let message = script.message();
        assert_eq!(tool(&message, "a").status, ToolCallStatus::Error);
        assert_eq!(
            tool(&message, "a")
                .error
                .as_ref()
                .map(|e| e.message.as_str()),
            Some("disk on fire")
        );
        assert_eq!(tool(&message, "b").status, ToolCallStatus::Cancelled);
        assert_eq!(tool(&message, "c").status, ToolCallStatus::Success);
        assert_eq!(tool(&message, "c").duration_ms, Some(42));
        let order: Vec<&str> = message
            .tool_calls()
            .map(|call| call.call_id.as_str())
            .collect();
        assert_eq!(
            order,
            ["a", "b", "c"],
            "blocks stay in start order, not finish order"
        );
    }

    #[test]
    fn a_result_before_its_start_is_kept_until_the_start_arrives() {
        let mut script = Script::new();
        script
            .tool_result("a", ToolResultStatus::Success)
            .tool_start("a", 0);
        assert_eq!(tool(&script.message(), "a").status, ToolCallStatus::Success);
    }

    #[test]
    fn final_output_replaces_the_streamed_preview_and_keeps_truncation() {
        let mut script = Script::new();
        script
            .tool_start("a", 0)
            .tool_output("a", "partial")
            .push(EventKind::ToolResult {
                call_id: "a".into(),
                status: ToolResultStatus::Success,
                duration_ms: 5,
                output: Some("complete output".into()),
                truncated: true,
                full_length: Some(4523),
                error: None,
            });
        let message = script.message();
        let call = tool(&message, "a");
        assert_eq!(call.output, "complete output");
        assert!(call.truncated);
        assert_eq!(call.full_length, Some(4523));
    }

    #[test]
    fn text_deltas_join_and_late_segments_take_the_next_number() {
        let mut script = Script::new();
        script
            .text("t1", Some(0), "Hello, ")
            .text("t1", None, "world")
            .tool_start("a", 1)
            .text("t2", None, "!");
        let message = script.message();
        assert_eq!(message.text(), "Hello, world!");
        assert_eq!(
            message.segments.last().map(Segment::sequence_number),
            Some(2)
        );
    }

    #[test]
    fn duplicates_from_a_reconnect_are_applied_once() {
        let mut script = Script::new();
        script.text("t", Some(0), "one ").text("t", None, "two");
        let mut events = script.events.clone();
        events.extend(script.events[1..].iter().cloned());
        events.reverse();
        assert_eq!(fold(&events).map(|m| m.text()), Some("one two".to_owned()));

        let mut reducer = Reducer::default();
        for event in &script.events {
            assert!(reducer.apply(event));
        }
        assert!(
            !reducer.apply(&script.events[2]),
            "a replayed seq is ignored"
        );
        assert_eq!(reducer.last_seq(), 3);
    }

    #[test]
    fn usage_events_add_up() {
        let mut script = Script::new();
        script
            .push(EventKind::Usage(Usage {
                input_tokens: 10,
                output_tokens: 5,
                reasoning_tokens: None,
                ..Usage::default()
            }))
            .push(EventKind::Usage(Usage {
                input_tokens: 20,
                output_tokens: 7,
                reasoning_tokens: Some(3),
                ..Usage::default()
            }));
        assert_eq!(
            script.message().usage,
            Some(Usage {
                input_tokens: 30,
                output_tokens: 12,
                reasoning_tokens: Some(3),
                ..Usage::default()
            })
        );
    }

    #[test]
    fn a_terminal_event_carries_the_canonical_message_and_freezes_it() {
        let mut script = Script::new();
        script.text("t", Some(0), "partial");
        let partial = script.message();
        script
            .push(EventKind::MessageCancelled {
                reason: "Stopped by the user".into(),
                cancelled_by: CancelledBy::User,
                message: partial.clone(),
            })
            .text("t", None, " and more after the end");
        let message = script.message();
        assert_eq!(message.status, MessageStatus::Cancelled);
        assert_eq!(
            message.text(),
            "partial",
            "nothing applies after the terminal event"
        );
    }

    #[test]
    fn events_round_trip_through_json_with_the_type_tag_beside_seq() {
        let mut script = Script::new();
        script
            .tool_start("a", 0)
            .tool_result("a", ToolResultStatus::Success)
            .push(EventKind::MessageFinal {
                message: Message::assistant(
                    "m1".into(),
                    "x".into(),
                    "2026-01-01T00:00:00.000Z".into(),
                ),
                trace_id: "t1".into(),
            });
        for event in &script.events {
            let json = serde_json::to_value(event).expect("serializes");
            assert_eq!(json["type"], event.kind.type_name());
            assert_eq!(json["seq"], event.seq);
            let back: Event = serde_json::from_value(json).expect("deserializes");
            assert_eq!(&back, event);
        }
    }
}
