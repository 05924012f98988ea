use app::protocol::{
    ApprovalDecision, CancelledBy, ErrorCode, Event, EventKind, Message, ResolvedBy, ToolError,
    ToolErrorKind, ToolResultStatus, Usage,
};
use serde_json::{json, Value};

use super::UiMessageStream;

fn started() -> EventKind {
    EventKind::MessageStarted {
        conversation_id: "conv".into(),
        user_message_id: "msg-u".into(),
        message_id: "msg-a".into(),
        trace_id: "trace-1".into(),
        model: "demo".into(),
    }
}

fn text(segment: &str, delta: &str) -> EventKind {
    EventKind::TextDelta {
        segment_id: segment.into(),
        sequence_number: None,
        delta: delta.into(),
    }
}

fn call(id: &str) -> EventKind {
    EventKind::ToolCallStarted {
        call_id: id.into(),
        name: "read_file".into(),
        display: None,
        args: json!({ "path": "a.rs" }),
        sequence_number: 1,
    }
}

fn result(id: &str, status: ToolResultStatus) -> EventKind {
    EventKind::ToolResult {
        call_id: id.into(),
        status,
        duration_ms: 7,
        output: Some("fn main() {}".into()),
        truncated: false,
        full_length: None,
        error: (status == ToolResultStatus::Error).then(|| ToolError {
            kind: ToolErrorKind::Io,
            message: "no such file".into(),
        }),
    }
}

fn usage() -> EventKind {
    EventKind::Usage(Usage {
        input_tokens: 10,
        output_tokens: 5,
        reasoning_tokens: None,
        ..Usage::default()
    })
}

fn ended() -> Message {
    let mut message = Message::assistant("msg-a".into(), "demo".into(), "t".into());
    message.duration_ms = Some(42);
    message
}

fn final_event() -> EventKind {
    EventKind::MessageFinal {
        message: ended(),
        trace_id: "trace-1".into(),
    }
}

fn reasoning(kind: &str) -> EventKind {
    match kind {
        "start" => EventKind::ReasoningPartStarted {
            segment_id: "r1".into(),
            summary_index: 0,
            sequence_number: 0,
        },
        "delta" => EventKind::ReasoningPartDelta {
            segment_id: "r1".into(),
            summary_index: 0,
            text_delta: "hmm".into(),
        },
        _ => EventKind::ReasoningPartCompleted {
            segment_id: "r1".into(),
            summary_index: 0,
            final_text: None,
        },
    }
}

/// Every chunk of `kinds` as a run's events, in order.
fn map(kinds: Vec<EventKind>) -> Vec<Value> {
    let mut stream = UiMessageStream::new();
    events(kinds)
        .iter()
        .flat_map(|event| stream.push(event))
        .collect()
}

fn events(kinds: Vec<EventKind>) -> Vec<Event> {
    kinds
        .into_iter()
        .enumerate()
        .map(|(index, kind)| Event {
            seq: index as u64 + 1,
            run_id: "run-1".into(),
            ts: "t".into(),
            kind,
        })
        .collect()
}

fn types(chunks: &[Value]) -> Vec<&str> {
    chunks
        .iter()
        .map(|chunk| chunk["type"].as_str().unwrap_or("?"))
        .collect()
}

#[test]
fn a_demo_run_is_one_step_with_its_tool_and_answer() {
    let chunks = map(vec![
        started(),
        call("c1"),
        result("c1", ToolResultStatus::Success),
        text("t1", "Hello"),
        text("t1", " world"),
        final_event(),
    ]);
    assert_eq!(
        types(&chunks),
        [
            "start",
            "data-glassbox-run",
            "start-step",
            "tool-input-start",
            "tool-input-available",
            "tool-output-available",
            "data-glassbox-tool",
            "text-start",
            "text-delta",
            "text-delta",
            "text-end",
            "finish-step",
            "data-glassbox-run",
            "finish",
        ]
    );
    assert_eq!(chunks[0]["messageId"], "msg-a");
    assert_eq!(chunks[1]["data"]["trace_id"], "trace-1");
    assert_eq!(chunks[3]["dynamic"], true);
    assert_eq!(chunks[4]["input"], json!({ "path": "a.rs" }));
    assert_eq!(chunks[5]["output"], "fn main() {}");
    assert_eq!(chunks[6]["data"]["duration_ms"], 7);
    assert_eq!(chunks[12]["id"], chunks[1]["id"]);
    assert_eq!(chunks[12]["data"]["duration_ms"], 42);
    assert_eq!(chunks[12]["data"]["status"], "complete");
    assert_eq!(chunks[13]["finishReason"], "stop");
    assert_eq!(chunks[13]["messageMetadata"]["trace_id"], "trace-1");
}

#[test]
fn each_model_turn_is_a_step_and_keeps_its_calls() {
    let chunks = map(vec![
        started(),
        reasoning("start"),
        reasoning("delta"),
        reasoning("end"),
        text("t1", "Let me look."),
        usage(),
        call("c1"),
        result("c1", ToolResultStatus::Error),
        text("t2", "Done."),
        usage(),
        final_event(),
    ]);
    assert_eq!(
        types(&chunks)[2..],
        [
            "start-step",
            "reasoning-start",
            "reasoning-delta",
            "reasoning-end",
            "text-start",
            "text-delta",
            "text-end",
            "tool-input-start",
            "tool-input-available",
            "tool-output-error",
            "data-glassbox-tool",
            "finish-step",
            "start-step",
            "text-start",
            "text-delta",
            "text-end",
            "finish-step",
            "data-glassbox-run",
            "finish",
        ]
    );
    assert_eq!(chunks[3]["id"], "r1:0");
    assert_eq!(chunks[11]["errorText"], "no such file");
}

#[test]
fn a_turn_of_calls_only_gets_its_own_step() {
    let chunks = map(vec![
        started(),
        usage(),
        call("c1"),
        result("c1", ToolResultStatus::Success),
        usage(),
        call("c2"),
        result("c2", ToolResultStatus::Success),
        text("t1", "ok"),
        usage(),
        final_event(),
    ]);
    let steps = types(&chunks)
        .iter()
        .filter(|kind| **kind == "start-step")
        .count();
    assert_eq!(steps, 3);
    let all = types(&chunks);
    let second = all.iter().position(|kind| *kind == "finish-step").unwrap();
    assert_eq!(
        all[second + 1..second + 3],
        ["start-step", "tool-input-start"]
    );
}

#[test]
fn an_approval_pauses_and_the_continuation_has_no_duplicates() {
    let log = events(vec![
        started(),
        text("t1", "Reading."),
        usage(),
        call("c1"),
        EventKind::ToolApprovalRequested {
            call_id: "c1".into(),
            name: "read_file".into(),
            args: json!({}),
        },
        EventKind::ToolApprovalResolved {
            call_id: "c1".into(),
            decision: ApprovalDecision::Deny,
            by: ResolvedBy::User("ann".into()),
            reason: Some("no".into()),
        },
        result("c1", ToolResultStatus::Denied),
        text("t2", "Denied, so I stop."),
        usage(),
        final_event(),
    ]);
    let mut first = UiMessageStream::new();
    let mut seen: Vec<Value> = log[..5].iter().flat_map(|e| first.push(e)).collect();
    let request = seen.last().cloned().unwrap_or_default();
    assert_eq!(request["type"], "tool-approval-request");
    assert_eq!(request["approvalId"], "c1");
    seen.extend(first.pause());
    assert_eq!(
        types(&seen)[seen.len() - 3..],
        ["tool-approval-request", "finish-step", "finish"]
    );
    assert_eq!(seen.last().unwrap()["finishReason"], "tool-calls");
    // The next request replays the same prefix silently, pauses, then continues.
    let mut next = UiMessageStream::new();
    for event in &log[..5] {
        next.push(event);
    }
    next.pause();
    let mut more = vec![next.restart()];
    more.extend(log[5..].iter().flat_map(|e| next.push(e)));
    assert_eq!(
        types(&more),
        [
            "start",
            "tool-approval-response",
            "tool-output-denied",
            "data-glassbox-tool",
            "start-step",
            "text-start",
            "text-delta",
            "text-end",
            "finish-step",
            "data-glassbox-run",
            "finish",
        ]
    );
    assert_eq!(more[0]["messageId"], "msg-a");
    assert_eq!(more[1]["approved"], false);
    assert_eq!(more[1]["reason"], "no");
}

#[test]
fn cancel_closes_what_is_open_then_aborts() {
    let chunks = map(vec![
        started(),
        reasoning("start"),
        text("t1", "half"),
        EventKind::MessageCancelled {
            reason: "Stopped by the user.".into(),
            cancelled_by: CancelledBy::User,
            message: ended(),
        },
        text("t1", "late"),
    ]);
    assert_eq!(
        types(&chunks)[2..],
        [
            "start-step",
            "reasoning-start",
            "text-start",
            "text-delta",
            "text-end",
            "reasoning-end",
            "finish-step",
            "data-glassbox-run",
            "abort",
        ]
    );
    assert_eq!(chunks[9]["data"]["status"], "cancelled");
    assert_eq!(chunks[10]["reason"], "Stopped by the user.");
}

#[test]
fn an_error_is_an_error_chunk_then_finish() {
    let chunks = map(vec![
        started(),
        EventKind::MessageError {
            code: ErrorCode::ProviderError,
            error: "the provider failed".into(),
            message: ended(),
        },
    ]);
    assert_eq!(
        types(&chunks)[2..],
        ["data-glassbox-run", "error", "finish"]
    );
    assert_eq!(chunks[3]["errorText"], "the provider failed");
    assert_eq!(chunks[4]["finishReason"], "error");
}

#[test]
fn outputs_of_calls_the_client_never_saw_are_left_out() {
    let chunks = map(vec![
        started(),
        result("c9", ToolResultStatus::Success),
        EventKind::ToolApprovalResolved {
            call_id: "c9".into(),
            decision: ApprovalDecision::Approve,
            by: ResolvedBy::Timeout,
            reason: None,
        },
        final_event(),
    ]);
    assert_eq!(
        types(&chunks),
        ["start", "data-glassbox-run", "data-glassbox-run", "finish"]
    );
}

#[test]
fn the_run_waits_for_people_once_every_call_in_flight_has_asked() {
    let log = events(vec![
        started(),
        usage(),
        call("c1"),
        call("c2"),
        EventKind::ToolApprovalRequested {
            call_id: "c2".into(),
            name: "list_dir".into(),
            args: json!({}),
        },
        result("c1", ToolResultStatus::Success),
        EventKind::ToolApprovalResolved {
            call_id: "c2".into(),
            decision: ApprovalDecision::Approve,
            by: ResolvedBy::User("ann".into()),
            reason: None,
        },
    ]);
    let mut stream = UiMessageStream::new();
    let waits: Vec<bool> = log
        .iter()
        .map(|event| {
            stream.push(event);
            stream.waits_for_people()
        })
        .collect();
    // c1 still runs when c2 asks; once c1 has its output only c2 is in flight, and it waits.
    assert_eq!(waits, [false, false, false, false, false, true, false]);
    assert_eq!(stream.open_calls().collect::<Vec<_>>(), ["c2"]);
    let mut paused = UiMessageStream::new();
    for event in &log[..6] {
        paused.push(event);
    }
    paused.pause();
    assert!(!paused.waits_for_people(), "a pause happens once");
}

#[test]
fn a_delta_of_an_open_part_maps_the_same_from_its_json() {
    let log = events(vec![
        started(),
        reasoning("start"),
        reasoning("delta"),
        text("t1", "Hello \"quoted\"\n"),
        text("t1", "world"),
        // Copied as the log escaped it: quotes, line breaks, controls, non-ASCII, markup.
        text("t1", " \"two\"\n\t\u{1}é😀</script>\\"),
        text("t2", "new"),
    ]);
    let mut whole = UiMessageStream::new();
    let mut fast = UiMessageStream::new();
    let mut short = 0;
    for event in &log {
        let expected: Vec<String> = whole.push(event).iter().map(Value::to_string).collect();
        let json = serde_json::to_string(event).unwrap_or_default();
        let mut frame = Vec::new();
        let got = match fast.push_delta(&json, &mut frame) {
            true => {
                short += 1;
                vec![String::from_utf8(frame).unwrap_or_default()]
            }
            false => {
                assert!(frame.is_empty(), "nothing written for {json}");
                fast.push(event).iter().map(Value::to_string).collect()
            }
        };
        let parsed = |frames: &[String]| -> Vec<Value> {
            frames
                .iter()
                .map(|frame| serde_json::from_str(frame).unwrap_or_default())
                .collect()
        };
        assert_eq!(parsed(&got), parsed(&expected), "{json}");
    }
    // The reasoning delta and the later deltas of t1; not the first of each text.
    assert_eq!(short, 3);
    // Only the deltas of open parts take the short way.
    let mut stream = UiMessageStream::new();
    let first_text = serde_json::to_string(&log[3]).unwrap_or_default();
    assert!(!stream.push_delta(&first_text, Vec::new()));
}

#[test]
fn streamed_arguments_are_input_deltas_then_the_whole_input() {
    let update = |text: Option<&str>, args: Option<Value>| EventKind::ToolCallUpdate {
        call_id: "c1".into(),
        output_delta: None,
        progress: None,
        args_text: text.map(str::to_owned),
        args,
    };
    let mut start = call("c1");
    if let EventKind::ToolCallStarted { args, .. } = &mut start {
        *args = json!({});
    }
    let chunks = map(vec![
        started(),
        start,
        update(Some("{\"path\":"), None),
        update(Some("{\"path\":\"a.rs\"}"), None),
        // Redaction rewrote what the client has: no delta, the whole input still comes.
        update(Some("{\"path\":\"[REDACTED]\"}"), None),
        update(None, Some(json!({ "path": "a.rs" }))),
        result("c1", ToolResultStatus::Success),
        final_event(),
    ]);
    assert_eq!(
        types(&chunks)[2..8],
        [
            "start-step",
            "tool-input-start",
            "tool-input-delta",
            "tool-input-delta",
            "tool-input-available",
            "tool-output-available",
        ]
    );
    assert_eq!(chunks[4]["inputTextDelta"], "{\"path\":");
    assert_eq!(chunks[5]["inputTextDelta"], "\"a.rs\"}");
    assert_eq!(chunks[6]["input"], json!({ "path": "a.rs" }));
}

#[test]
fn a_call_whose_arguments_never_come_gets_its_input_before_its_output() {
    let mut start = call("c1");
    if let EventKind::ToolCallStarted { args, .. } = &mut start {
        *args = json!({});
    }
    let chunks = map(vec![
        started(),
        start,
        result("c1", ToolResultStatus::Success),
        final_event(),
    ]);
    assert_eq!(
        types(&chunks)[2..6],
        [
            "start-step",
            "tool-input-start",
            "tool-input-available",
            "tool-output-available",
        ]
    );
    assert_eq!(chunks[4]["input"], json!({}));
}

/// The chunk written by hand is what serde's derive writes, byte for byte.
#[test]
fn a_delta_chunk_is_written_as_serde_would() {
    #[derive(serde::Serialize)]
    struct DeltaChunk<'a> {
        #[serde(rename = "type")]
        kind: &'a str,
        id: &'a str,
        delta: &'a serde_json::value::RawValue,
    }
    for (kind, id, delta) in [
        ("text-delta", "txt_1", "plain"),
        (
            "reasoning-delta",
            "rsn_\"odd\"\n:0",
            " \"two\"\n\t\u{1}é😀</script>\\",
        ),
        ("text-delta", "", ""),
    ] {
        let raw = serde_json::value::RawValue::from_string(serde_json::to_string(delta).unwrap())
            .unwrap();
        let mut written = Vec::new();
        assert!(super::write_delta_chunk(&mut written, kind, id, &raw).is_ok());
        let expected = serde_json::to_vec(&DeltaChunk {
            kind,
            id,
            delta: &raw,
        })
        .unwrap();
        assert_eq!(String::from_utf8(written), String::from_utf8(expected));
    }
}

/// The mapper's state stays small (what every delta reads is at its start, the rest out of
/// line), so that a reader touches few cache lines per delta.
#[test]
fn the_state_a_delta_reads_is_small() {
    assert!(std::mem::size_of::<UiMessageStream>() <= 128);
}
