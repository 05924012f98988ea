//! The hand-written readers against serde's derived ones (`EventKind`'s derived `Deserialize`,
//! flattened into its envelope, as `Event` was before; `Segment` and `Conversation` as they were
//! derived), on every kind; `Conversation`'s reader is checked in `models` with the fixtures
//! here.

#![allow(clippy::disallowed_methods)]

use serde::Deserialize;
use serde_json::{json, Value};

use crate::protocol::{
    Event, EventKind, Message, ReasoningSegment, Segment, TextSegment, ToolCallSegment,
};

/// `Event` as serde derives it: the reference.
#[derive(Debug, Deserialize)]
struct SerdeEvent {
    seq: u64,
    run_id: String,
    ts: String,
    #[serde(flatten)]
    kind: EventKind,
}

pub(crate) fn message() -> Value {
    let mut message = Message::assistant(
        "m1".into(),
        "demo".into(),
        "2026-01-01T00:00:00.000Z".into(),
    );
    message.trace_id = Some("t".into());
    message.duration_ms = Some(12);
    serde_json::to_value(message).unwrap()
}

/// One payload per kind with every field it may have, then with only the ones it must have.
fn payloads() -> Vec<Value> {
    let error = json!({"kind": "timeout", "message": "took too long"});
    vec![
        json!({"type": "message_started", "conversation_id": "c", "user_message_id": "u", "message_id": "m", "trace_id": "t", "model": "demo"}),
        json!({"type": "reasoning_part_started", "segment_id": "r", "summary_index": 0, "sequence_number": 1}),
        json!({"type": "reasoning_part_delta", "segment_id": "r", "summary_index": 2, "text_delta": "think \"quoted\" \u{e9}"}),
        json!({"type": "reasoning_part_completed", "segment_id": "r", "summary_index": 2, "final_text": "all"}),
        json!({"type": "reasoning_part_completed", "segment_id": "r", "summary_index": 2}),
        json!({"type": "reasoning_part_completed", "segment_id": "r", "summary_index": 2, "final_text": null}),
        json!({"type": "tool_call_started", "call_id": "a", "name": "grep", "display": "grep x", "args": {"q": [1, 2.5, null]}, "sequence_number": 3}),
        json!({"type": "tool_call_started", "call_id": "a", "name": "grep", "args": null, "sequence_number": 3}),
        json!({"type": "tool_call_update", "call_id": "a", "output_delta": "line\n", "progress": {"done": 1}, "args_text": "{\"q\"", "args": {"q": 1}}),
        json!({"type": "tool_call_update", "call_id": "a"}),
        json!({"type": "tool_call_update", "call_id": "a", "progress": null, "args": null}),
        json!({"type": "tool_approval_requested", "call_id": "a", "name": "rm", "args": {"path": "/"}}),
        json!({"type": "tool_approval_resolved", "call_id": "a", "decision": "deny", "by": "timeout", "reason": "no answer"}),
        json!({"type": "tool_approval_resolved", "call_id": "a", "decision": "approve", "by": "ann"}),
        json!({"type": "tool_result", "call_id": "a", "status": "error", "duration_ms": 12, "output": "out", "truncated": true, "full_length": 99, "error": error}),
        json!({"type": "tool_result", "call_id": "a", "status": "success", "duration_ms": 0}),
        json!({"type": "tool_result", "call_id": "a", "status": "denied", "duration_ms": 0, "error": null}),
        json!({"type": "text_delta", "segment_id": "s", "sequence_number": 4, "delta": "Hello"}),
        json!({"type": "text_delta", "segment_id": "s", "delta": ""}),
        json!({"type": "usage", "input_tokens": 10, "output_tokens": 5, "reasoning_tokens": 2, "cache_read_tokens": 1, "cache_write_tokens": 3}),
        json!({"type": "usage", "input_tokens": 10, "output_tokens": 5}),
        json!({"type": "retrying", "attempt": 2, "delay_ms": 1500, "reason": "rate_limited"}),
        json!({"type": "retrying", "attempt": 2, "delay_ms": 1500, "reason": "a_new_reason"}),
        json!({"type": "agent_state", "key": "s:0", "state": {"blob": "x"}}),
        json!({"type": "agent_state", "key": "s:0", "state": null}),
        json!({"type": "message_final", "message": message(), "trace_id": "t"}),
        json!({"type": "message_cancelled", "reason": "Stopped", "cancelled_by": "user", "message": message()}),
        json!({"type": "message_error", "code": "step_limit", "error": "too many steps", "message": message()}),
        json!({"type": "message_error", "code": "my_agent_code", "error": "", "message": message()}),
    ]
}

/// `payload` inside an envelope, the envelope's fields first or last, with or without a field
/// no kind has.
fn framings(payload: &Value) -> Vec<String> {
    let body = payload.to_string();
    let inner = &body[1..body.len() - 1];
    let envelope = r#""seq":7,"run_id":"run-1","ts":"2026-01-01T00:00:00.123Z""#;
    vec![
        format!("{{{envelope},{inner}}}"),
        format!("{{{inner},{envelope}}}"),
        format!("{{\"later\":[1,{{\"a\":null}}],{inner},{envelope},\"x\":true}}"),
    ]
}

fn ours(text: &str) -> Result<Event, serde_json::Error> {
    crate::json::parse::<Event>(text)
}

fn serde_s(text: &str) -> Result<Event, serde_json::Error> {
    crate::json::parse::<SerdeEvent>(text).map(|event| Event {
        seq: event.seq,
        run_id: event.run_id,
        ts: event.ts,
        kind: event.kind,
    })
}

#[test]
fn every_kind_reads_as_serde_reads_it_and_writes_back_the_same_bytes() {
    let mut kinds = std::collections::BTreeSet::new();
    for payload in payloads() {
        for text in framings(&payload) {
            let event = ours(&text).unwrap_or_else(|error| panic!("{text}: {error}"));
            assert_eq!(event, serde_s(&text).unwrap(), "{text}");
            kinds.insert(event.kind.type_name());
            let written = serde_json::to_string(&event).unwrap();
            assert_eq!(ours(&written).unwrap(), event);
            assert_eq!(
                serde_json::to_string(&ours(&written).unwrap()).unwrap(),
                written
            );
            let from_value: Event =
                serde_json::from_value(serde_json::from_str(&text).unwrap()).unwrap();
            assert_eq!(from_value, event, "from a Value: {text}");
        }
    }
    assert_eq!(
        kinds.len(),
        super::KINDS.len(),
        "every kind is covered: {kinds:?}"
    );
}

#[test]
fn what_serde_refuses_is_refused() {
    let envelope = json!({"seq": 1, "run_id": "r", "ts": "t"});
    let mut cases: Vec<Value> = Vec::new();
    for payload in payloads() {
        let object = payload.as_object().unwrap();
        // Every field left out in turn: a required one is an error in both.
        for field in object.keys() {
            let mut without = object.clone();
            without.remove(field);
            cases.push(Value::Object(without));
        }
    }
    cases.push(json!({"type": "no_such_kind"}));
    cases.push(json!({"type": "text_delta", "segment_id": "s", "delta": 5}));
    cases.push(json!({"type": "tool_result", "call_id": "a", "status": "maybe", "duration_ms": 0}));
    cases.push(json!({"type": "tool_result", "call_id": "a", "status": "error", "duration_ms": 0, "error": "text"}));
    cases.push(json!({"type": "message_error", "code": "x", "error": {"kind": "io", "message": "m"}, "message": message()}));
    cases.push(json!({"type": "reasoning_part_started", "segment_id": "r", "summary_index": -1, "sequence_number": 1}));
    for case in cases {
        let mut whole = envelope.as_object().unwrap().clone();
        whole.extend(case.as_object().unwrap().clone());
        let text = Value::Object(whole).to_string();
        assert_eq!(ours(&text).is_ok(), serde_s(&text).is_ok(), "{text}");
        if let Ok(event) = ours(&text) {
            assert_eq!(event, serde_s(&text).unwrap(), "{text}");
        }
    }
    for field in ["seq", "run_id", "ts"] {
        let mut whole = envelope.as_object().unwrap().clone();
        whole.remove(field);
        whole.insert("type".into(), json!("usage"));
        whole.insert("input_tokens".into(), json!(1));
        whole.insert("output_tokens".into(), json!(1));
        let text = Value::Object(whole).to_string();
        assert!(ours(&text).is_err() && serde_s(&text).is_err(), "{text}");
    }
}

/// `Segment` as serde derives it: the reference.
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum SerdeSegment {
    Reasoning(ReasoningSegment),
    ToolCall(ToolCallSegment),
    Text(TextSegment),
}

impl From<SerdeSegment> for Segment {
    fn from(segment: SerdeSegment) -> Self {
        match segment {
            SerdeSegment::Reasoning(segment) => Segment::Reasoning(segment),
            SerdeSegment::ToolCall(segment) => Segment::ToolCall(segment),
            SerdeSegment::Text(segment) => Segment::Text(segment),
        }
    }
}

pub(crate) fn segments() -> Vec<Value> {
    let part = json!({"summary_index": 0, "text": "hm", "is_complete": true, "started_at": "a", "completed_at": "b"});
    let approval = json!({"requested_at": "a", "decision": "approve", "by": "ann", "reason": "ok", "resolved_at": "b"});
    vec![
        json!({"type": "reasoning", "id": "r", "sequence_number": 0, "parts": [part], "combined_text": "hm", "started_at": "a", "completed_at": "b", "duration_ms": 5}),
        json!({"type": "reasoning", "id": "r", "sequence_number": 0, "parts": [], "combined_text": "", "started_at": "a"}),
        json!({"type": "tool_call", "call_id": "c", "sequence_number": 1, "name": "grep", "display": "grep x", "args": {"q": "x"}, "args_text": "{", "status": "error", "output": "o", "truncated": true, "full_length": 9, "error": {"kind": "io", "message": "m"}, "progress": [1], "approval": approval, "started_at": "a", "duration_ms": 3}),
        json!({"type": "tool_call", "call_id": "c", "sequence_number": 1, "name": "grep", "args": null, "status": "running", "started_at": "a"}),
        json!({"type": "tool_call", "call_id": "c", "sequence_number": 1, "name": "grep", "args": [], "status": "awaiting_approval", "output": "", "started_at": "a", "progress": null, "error": null}),
        json!({"type": "text", "id": "t", "sequence_number": 2, "text": "Hello **world**"}),
    ]
}

fn our_segment(text: &str) -> Result<Segment, serde_json::Error> {
    crate::json::parse::<Segment>(text)
}

fn serde_segment(text: &str) -> Result<Segment, serde_json::Error> {
    crate::json::parse::<SerdeSegment>(text).map(Segment::from)
}

#[test]
fn every_segment_kind_reads_as_serde_reads_it_and_writes_back_the_same_bytes() {
    let mut cases = Vec::new();
    for segment in segments() {
        let text = segment.to_string();
        let segment = our_segment(&text).unwrap_or_else(|error| panic!("{text}: {error}"));
        assert_eq!(segment, serde_segment(&text).unwrap(), "{text}");
        let written = serde_json::to_string(&segment).unwrap();
        assert_eq!(
            serde_json::to_string(&our_segment(&written).unwrap()).unwrap(),
            written
        );
        // The tag last, a field no kind has, and every field left out in turn.
        let object = serde_json::from_str::<Value>(&text).unwrap();
        let object = object.as_object().unwrap();
        let mut moved = object.clone();
        let kind = moved.remove("type").unwrap();
        moved.insert("later".into(), json!({"x": [null]}));
        moved.insert("type".into(), kind);
        cases.push(Value::Object(moved));
        for field in object.keys() {
            let mut without = object.clone();
            without.remove(field);
            cases.push(Value::Object(without));
        }
    }
    cases.push(json!({"type": "picture", "sequence_number": 0}));
    cases.push(json!({"type": "text", "id": "t", "sequence_number": 2, "text": 3}));
    for case in cases {
        let text = case.to_string();
        assert_eq!(
            our_segment(&text).is_ok(),
            serde_segment(&text).is_ok(),
            "{text}"
        );
        if let Ok(segment) = our_segment(&text) {
            assert_eq!(segment, serde_segment(&text).unwrap(), "{text}");
        }
    }
}

#[test]
fn a_field_given_twice_or_no_object_is_refused_as_serde_refuses_it() {
    let events = [
        r#"{"seq":1,"seq":2,"run_id":"r","ts":"t","type":"usage","input_tokens":1,"output_tokens":1}"#,
        r#"{"seq":1,"run_id":"r","ts":"t","type":"tool_call_started","call_id":"a","name":"n","args":null,"args":{},"sequence_number":1}"#,
        r#"{"seq":1,"run_id":"r","ts":"t","type":"reasoning_part_completed","segment_id":"s","summary_index":0,"final_text":null,"final_text":"x"}"#,
        r#"[1,"r","t"]"#,
        r#""text_delta""#,
    ];
    for text in events {
        assert!(ours(text).is_err() && serde_s(text).is_err(), "{text}");
    }
    let segments = [
        r#"{"type":"text","type":"text","id":"t","sequence_number":1,"text":"x"}"#,
        r#"{"type":"text","id":"t","sequence_number":1,"text":"x","text":"y"}"#,
        r#"null"#,
    ];
    for text in segments {
        assert!(
            our_segment(text).is_err() && serde_segment(text).is_err(),
            "{text}"
        );
    }
}
