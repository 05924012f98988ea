use app::protocol::{
    CancelledBy, ErrorCode, EventKind, Message, ToolError, ToolErrorKind, ToolResultStatus, Usage,
};
use serde_json::{json, Value};

use super::{call_of_interrupt, Outbound};
use crate::ag_ui::wire::{Event, Outcome, Stamped};

fn started() -> EventKind {
    EventKind::MessageStarted {
        conversation_id: "c".into(),
        user_message_id: "u".into(),
        message_id: "m".into(),
        trace_id: "t".into(),
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

fn reasoning(segment: &str, index: u32) -> Vec<EventKind> {
    vec![
        EventKind::ReasoningPartStarted {
            segment_id: segment.into(),
            summary_index: index,
            sequence_number: 0,
        },
        EventKind::ReasoningPartDelta {
            segment_id: segment.into(),
            summary_index: index,
            text_delta: "hm".into(),
        },
        EventKind::ReasoningPartCompleted {
            segment_id: segment.into(),
            summary_index: index,
            final_text: None,
        },
    ]
}

fn call(id: &str, args: Value) -> EventKind {
    EventKind::ToolCallStarted {
        call_id: id.into(),
        name: "search".into(),
        display: None,
        args,
        sequence_number: 0,
    }
}

fn result(id: &str, status: ToolResultStatus) -> EventKind {
    let error = (status == ToolResultStatus::Error).then(|| ToolError {
        kind: ToolErrorKind::from("io"),
        message: "disk gone".into(),
    });
    EventKind::ToolResult {
        call_id: id.into(),
        status,
        duration_ms: 12,
        output: error.is_none().then(|| "found".to_owned()),
        truncated: false,
        full_length: None,
        error,
    }
}

fn message() -> Message {
    Message::assistant("m".into(), "demo".into(), "2026-01-01T00:00:00.000Z".into())
}

fn run(kinds: Vec<EventKind>) -> Vec<Event> {
    let mut outbound = Outbound::new("thread".into(), "run".into());
    let mut events = vec![outbound.started()];
    for kind in &kinds {
        events.extend(outbound.map(kind));
    }
    events
}

/// The rules a verifying client applies: one RUN_STARTED first, everything opened closed before
/// the one terminal event, which is last; no null anywhere.
fn check(events: &[Event]) {
    assert!(matches!(events.first(), Some(Event::RunStarted { .. })));
    let mut open: Vec<String> = Vec::new();
    for (at, event) in events.iter().enumerate() {
        let text = serde_json::to_string(event).unwrap();
        assert!(!text.contains("null"), "a null in {text}");
        let value: Value = serde_json::from_str(&text).unwrap();
        let kind = value["type"].as_str().unwrap().to_owned();
        let id = ["messageId", "toolCallId", "stepName"]
            .iter()
            .find_map(|key| value[key].as_str())
            .unwrap_or("")
            .to_owned();
        let (family, edge) = kind.rsplit_once('_').unwrap_or((kind.as_str(), ""));
        match edge {
            "START" | "STARTED" if family != "RUN" => open.push(format!("{family}:{id}")),
            "END" | "FINISHED" if family != "RUN" => {
                let key = format!("{family}:{id}");
                let found = open.iter().position(|entry| *entry == key);
                assert!(found.is_some(), "{kind} of {id} was not open: {events:?}");
                open.retain(|entry| *entry != key);
            }
            _ => {}
        }
        let terminal = matches!(event, Event::RunFinished { .. } | Event::RunError { .. });
        assert_eq!(terminal, at == events.len() - 1, "terminal must be last");
        if terminal {
            assert!(open.is_empty(), "still open at the end: {open:?}");
        }
    }
}

fn types(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .map(|event| {
            serde_json::to_value(event).unwrap()["type"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect()
}

#[test]
fn a_run_maps_event_by_event_and_closes_what_it_opens() {
    let mut kinds = vec![started()];
    kinds.extend(reasoning("r1", 0));
    kinds.extend(reasoning("r1", 1));
    kinds.extend([
        text("s1", "Hello"),
        text("s1", " there"),
        call("c1", json!({"q": "x"})),
        result("c1", ToolResultStatus::Success),
        text("s2", "Done"),
        EventKind::Usage(Usage {
            input_tokens: 3,
            output_tokens: 4,
            reasoning_tokens: None,
            ..Usage::default()
        }),
        EventKind::MessageFinal {
            message: message(),
            trace_id: "t".into(),
        },
    ]);
    let events = run(kinds);
    check(&events);
    assert_eq!(
        types(&events),
        [
            "RUN_STARTED",
            "CUSTOM",
            "STEP_STARTED",
            "REASONING_START",
            "REASONING_MESSAGE_START",
            "REASONING_MESSAGE_CONTENT",
            "REASONING_MESSAGE_END",
            "REASONING_MESSAGE_START",
            "REASONING_MESSAGE_CONTENT",
            "REASONING_MESSAGE_END",
            "REASONING_END",
            "TEXT_MESSAGE_START",
            "TEXT_MESSAGE_CONTENT",
            "TEXT_MESSAGE_CONTENT",
            "TEXT_MESSAGE_END",
            "TOOL_CALL_START",
            "TOOL_CALL_ARGS",
            "TOOL_CALL_END",
            "TOOL_CALL_RESULT",
            "TEXT_MESSAGE_START",
            "TEXT_MESSAGE_CONTENT",
            "TEXT_MESSAGE_END",
            "STEP_FINISHED",
            "RUN_FINISHED"
        ]
    );
    let last = serde_json::to_value(events.last().unwrap()).unwrap();
    assert_eq!(last["usage"][0]["inputTokens"], 3);
    assert_eq!(last["usage"][0]["outputTokens"], 4);
    assert_eq!(last["outcome"]["type"], "success");
}

#[test]
fn each_model_turn_is_a_step() {
    let usage = || EventKind::Usage(Usage::default());
    let events = run(vec![
        started(),
        text("s1", "Let me look."),
        usage(),
        call("c1", json!({"q": "x"})),
        result("c1", ToolResultStatus::Success),
        text("s2", "Found it."),
        usage(),
        EventKind::MessageFinal {
            message: message(),
            trace_id: "t".into(),
        },
    ]);
    check(&events);
    let steps: Vec<String> = events
        .iter()
        .filter_map(|event| match event {
            Event::StepStarted { step_name } => Some(format!("+{step_name}")),
            Event::StepFinished { step_name } => Some(format!("-{step_name}")),
            _ => None,
        })
        .collect();
    assert_eq!(steps, ["+turn_1", "-turn_1", "+turn_2", "-turn_2"]);
    // The call stays in the step of the turn that made it.
    let at = |name: &str| types(&events).iter().position(|kind| kind == name);
    assert!(
        at("TOOL_CALL_RESULT")
            < Some(
                events
                    .iter()
                    .position(|e| matches!(e, Event::StepFinished { .. }))
                    .unwrap_or(0)
            )
    );
}

#[test]
fn a_tool_error_carries_its_text_and_status() {
    let events = run(vec![
        call("c1", json!({"q": 1})),
        result("c1", ToolResultStatus::Error),
    ]);
    let Some(Event::ToolCallResult {
        content, metadata, ..
    }) = events.last()
    else {
        panic!("no result: {events:?}");
    };
    assert_eq!(content, "disk gone");
    let metadata = metadata.clone().unwrap();
    assert_eq!(metadata["glassbox"]["status"], "error");
    assert_eq!(metadata["glassbox"]["error"]["kind"], "io");
}

#[test]
fn streamed_arguments_go_as_one_delta_and_cut_runs_close_everything() {
    let events = run(vec![
        text("s1", "a"),
        call("c1", json!({})),
        EventKind::ToolCallUpdate {
            call_id: "c1".into(),
            output_delta: None,
            progress: None,
            args_text: Some("{\"q\":".into()),
            args: None,
        },
        EventKind::ToolCallUpdate {
            call_id: "c1".into(),
            output_delta: None,
            progress: None,
            args_text: None,
            args: Some(json!({"q": 2})),
        },
        call("c2", json!({})),
        EventKind::MessageCancelled {
            reason: "Stopped by the user.".into(),
            cancelled_by: CancelledBy::User,
            message: message(),
        },
    ]);
    check(&events);
    let args: Vec<&Event> = events
        .iter()
        .filter(|event| matches!(event, Event::ToolCallArgs { .. }))
        .collect();
    assert_eq!(args.len(), 1);
    let last = serde_json::to_value(events.last().unwrap()).unwrap();
    assert_eq!(last["type"], "RUN_ERROR");
    assert_eq!(last["code"], "cancelled_by_user");
}

#[test]
fn an_error_is_run_error_with_its_code() {
    let events = run(vec![
        EventKind::ReasoningPartStarted {
            segment_id: "r".into(),
            summary_index: 0,
            sequence_number: 0,
        },
        EventKind::MessageError {
            code: ErrorCode::from("provider_error"),
            error: "boom".into(),
            message: message(),
        },
    ]);
    check(&events);
    let last = serde_json::to_value(events.last().unwrap()).unwrap();
    assert_eq!(
        last,
        json!({"type": "RUN_ERROR", "message": "boom", "code": "provider_error"})
    );
}

#[test]
fn an_approval_request_ends_the_run_with_an_interrupt() {
    let mut outbound = Outbound::new("thread".into(), "run".into());
    let mut events = vec![outbound.started()];
    for kind in [
        call("c1", json!({})),
        EventKind::ToolApprovalRequested {
            call_id: "c1".into(),
            name: "search".into(),
            args: json!({"q": 3}),
        },
    ] {
        events.extend(outbound.map(&kind));
    }
    check(&events);
    assert!(outbound.ended());
    assert!(outbound.map(&text("s", "late")).is_empty());
    let Some(Event::RunFinished {
        outcome: Some(Outcome::Interrupt { interrupts }),
        ..
    }) = events.last()
    else {
        panic!("no interrupt: {events:?}");
    };
    assert_eq!(interrupts[0].tool_call_id.as_deref(), Some("c1"));
    assert_eq!(call_of_interrupt(&interrupts[0].id), Some("c1"));
    assert_eq!(
        interrupts[0].response_schema.as_ref().unwrap()["required"],
        json!(["approved"])
    );
}

#[test]
fn a_delta_of_an_open_message_maps_the_same_from_its_json() {
    let kinds = vec![
        started(),
        text("s1", "Hello"),
        text("s1", " there, \"you\""),
        reasoning("r1", 0)[0].clone(),
        reasoning("r1", 0)[1].clone(),
        text("s\"2\u{e9}", "a"),
        text("s\"2\u{e9}", "b\n\u{1}\u{2028}"),
    ];
    let mut outbound = Outbound::new("thread".into(), "run".into());
    for (at, kind) in kinds.into_iter().enumerate() {
        let event = app::protocol::Event {
            seq: at as u64 + 1,
            run_id: "r".into(),
            ts: "2026-01-22T10:30:00.250Z".into(),
            kind,
        };
        let json = serde_json::to_string(&event).unwrap();
        let mut written = Vec::new();
        let fast = outbound
            .push_delta(&json, &mut written)
            .then(|| String::from_utf8(written).unwrap());
        let timestamp = app::protocol::parse_rfc3339_millis(&event.ts).unwrap() as u64;
        let stamped: Vec<String> = outbound
            .map(&event.kind)
            .into_iter()
            .map(|event| serde_json::to_string(&Stamped { event, timestamp }).unwrap())
            .collect();
        match fast {
            // Only a delta that continues what is open takes the short way, and gives the same
            // bytes.
            Some(frame) => assert_eq!(vec![frame], stamped, "event {at}"),
            None => assert!(
                ![2, 4, 6].contains(&at),
                "event {at} should map from its JSON"
            ),
        }
    }
}

/// docs/benchmarks.md: with a thousand readers, each delta finds its reader's state out of the
/// cache, and every line of it read costs. A delta reads `ended` and the open id, which lead.
#[test]
fn the_state_a_delta_reads_is_small() {
    assert!(std::mem::size_of::<Outbound>() <= 128);
}
