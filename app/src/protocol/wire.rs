//! The `Deserialize` of the internally tagged types, `Event` and `Segment`, written by hand for
//! the size of the browser's bundle.
//!
//! Derived, they (and `Event`'s envelope, with `EventKind` flattened into it) were read through
//! serde's buffering `Content`: every field went into a buffer and was read again from it, and
//! every type inside (a message, its segments) had a second deserializer for that buffer
//! (docs/benchmarks.md, "Bundle size"). Here one flat struct holds every field any variant has,
//! each read once straight from the parser, and the `type` tag picks which of them make the
//! variant. The wire format is the derived `Serialize`'s, unchanged; the tests compare this with
//! serde's derived reading of every kind. As with serde's, fields a kind does not have are
//! ignored (but a field another kind has must still have that kind's type), a field given twice
//! and a required field missing are errors. Unlike serde's, a segment written as a JSON array
//! (which serde's internally tagged enums also read, and nothing writes) is refused.

use serde::de::{self, value::MapAccessDeserializer, Deserializer, MapAccess, Visitor};
use serde::Deserialize;
use serde_json::Value;

use super::codes::{ErrorCode, ResolvedBy};
use super::event::{CancelledBy, Event, EventKind, ToolResultStatus};
use super::message::{
    Approval, Message, ReasoningPart, ReasoningSegment, Segment, TextSegment, ToolCallSegment,
    ToolCallStatus, Usage,
};
use super::records::{ApprovalDecision, ToolError};

const KINDS: &[&str] = &[
    "message_started",
    "reasoning_part_started",
    "reasoning_part_delta",
    "reasoning_part_completed",
    "tool_call_started",
    "tool_call_update",
    "tool_approval_requested",
    "tool_approval_resolved",
    "tool_result",
    "text_delta",
    "usage",
    "retrying",
    "agent_state",
    "message_final",
    "message_cancelled",
    "message_error",
];

/// Declares a flat struct of optional fields and its reader. Each field is read once, straight
/// from the parser; `null` reads as absent, except for the `raw` fields (a `Value`, `null` kept);
/// unknown keys are skipped and a key given twice is refused, as with serde's derive. Unlike the
/// derive it reads a map only: no sequence form and no byte-string keys, which JSON never sends
/// (the derive's two readers of this size were 25 K of the bundle's code).
macro_rules! flat_reader {
    (
        $(#[$meta:meta])* struct $name:ident, keys $key:ident {
            $($field:ident = $wire:literal: $ty:ty,)+
        }
        raw { $($raw:ident = $raw_wire:literal,)* }
    ) => {
        $(#[$meta])*
        #[derive(Default)]
        struct $name {
            $($field: Option<$ty>,)+
            $($raw: Option<Value>,)*
        }

        #[allow(non_camel_case_types)]
        #[derive(Clone, Copy)]
        enum $key {
            $($field,)+
            $($raw,)*
            Other,
        }

        const _: () = assert!(($key::Other as u32) < 64, "one bit per field in `seen`");

        impl<'de> Deserialize<'de> for $key {
            fn deserialize<D: Deserializer<'de>>(input: D) -> Result<Self, D::Error> {
                struct Name;
                impl<'de> Visitor<'de> for Name {
                    type Value = $key;

                    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                        f.write_str("a field name")
                    }

                    fn visit_str<E: de::Error>(self, text: &str) -> Result<$key, E> {
                        Ok(match text {
                            $($wire => $key::$field,)+
                            $($raw_wire => $key::$raw,)*
                            _ => $key::Other,
                        })
                    }
                }
                input.deserialize_identifier(Name)
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(input: D) -> Result<Self, D::Error> {
                struct Fields;
                impl<'de> Visitor<'de> for Fields {
                    type Value = $name;

                    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                        f.write_str(concat!("struct ", stringify!($name)))
                    }

                    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<$name, A::Error> {
                        let mut out = $name::default();
                        let mut seen = 0u64;
                        while let Some(found) = map.next_key::<$key>()? {
                            match found {
                                $($key::$field => {
                                    first(&mut seen, found as u32, $wire)?;
                                    out.$field = map.next_value::<Option<$ty>>()?;
                                })+
                                $($key::$raw => {
                                    first(&mut seen, found as u32, $raw_wire)?;
                                    out.$raw = Some(map.next_value::<Value>()?);
                                })*
                                $key::Other => {
                                    map.next_value::<de::IgnoredAny>()?;
                                }
                            }
                        }
                        Ok(out)
                    }
                }
                input.deserialize_map(Fields)
            }
        }
    };
}

/// Marks field `key` seen; serde's "duplicate field" error if it was already.
fn first<E: de::Error>(seen: &mut u64, key: u32, name: &'static str) -> Result<(), E> {
    let bit = 1u64 << key;
    if *seen & bit != 0 {
        return Err(E::duplicate_field(name));
    }
    *seen |= bit;
    Ok(())
}

flat_reader! {
    /// Every field of the envelope and of any kind, once (`type` is `kind`). A field two kinds
    /// share has the wider of their types (`reason`: a string for both `String` and `ErrorCode`;
    /// `error`: a string or a tool error). `args` and `state` keep a `null`, which
    /// `tool_call_started` and `agent_state` keep.
    struct Wire, keys WireKey {
        seq = "seq": u64,
        run_id = "run_id": String,
        ts = "ts": String,
        kind = "type": String,
        conversation_id = "conversation_id": String,
        user_message_id = "user_message_id": String,
        message_id = "message_id": String,
        trace_id = "trace_id": String,
        model = "model": String,
        segment_id = "segment_id": String,
        summary_index = "summary_index": u32,
        sequence_number = "sequence_number": u32,
        text_delta = "text_delta": String,
        final_text = "final_text": String,
        call_id = "call_id": String,
        name = "name": String,
        display = "display": String,
        output_delta = "output_delta": String,
        progress = "progress": Value,
        args_text = "args_text": String,
        decision = "decision": ApprovalDecision,
        by = "by": ResolvedBy,
        reason = "reason": String,
        status = "status": ToolResultStatus,
        duration_ms = "duration_ms": u64,
        output = "output": String,
        truncated = "truncated": bool,
        full_length = "full_length": u64,
        error = "error": ErrorField,
        delta = "delta": String,
        input_tokens = "input_tokens": u64,
        output_tokens = "output_tokens": u64,
        reasoning_tokens = "reasoning_tokens": u64,
        cache_read_tokens = "cache_read_tokens": u64,
        cache_write_tokens = "cache_write_tokens": u64,
        attempt = "attempt": u32,
        delay_ms = "delay_ms": u64,
        key = "key": String,
        message = "message": Message,
        cancelled_by = "cancelled_by": CancelledBy,
        code = "code": ErrorCode,
    }
    raw {
        args = "args",
        state = "state",
    }
}

/// `error`: `message_error`'s text or `tool_result`'s `{kind, message}`.
enum ErrorField {
    Text(String),
    Tool(ToolError),
}

impl<'de> Deserialize<'de> for ErrorField {
    fn deserialize<D: Deserializer<'de>>(input: D) -> Result<Self, D::Error> {
        struct Either;
        impl<'de> Visitor<'de> for Either {
            type Value = ErrorField;

            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a string or a tool error")
            }

            fn visit_str<E: de::Error>(self, text: &str) -> Result<ErrorField, E> {
                Ok(ErrorField::Text(text.to_owned()))
            }

            fn visit_string<E: de::Error>(self, text: String) -> Result<ErrorField, E> {
                Ok(ErrorField::Text(text))
            }

            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<ErrorField, A::Error> {
                ToolError::deserialize(MapAccessDeserializer::new(map)).map(ErrorField::Tool)
            }
        }
        input.deserialize_any(Either)
    }
}

/// A required field's value, or serde's "missing field" error.
fn need<T, E: de::Error>(value: Option<T>, name: &'static str) -> Result<T, E> {
    value.ok_or_else(|| E::missing_field(name))
}

impl<'de> Deserialize<'de> for Event {
    fn deserialize<D: Deserializer<'de>>(input: D) -> Result<Self, D::Error> {
        let mut wire = Wire::deserialize(input)?;
        let tag = need(wire.kind.take(), "type")?;
        let kind = match tag.as_str() {
            "message_started"
            | "reasoning_part_started"
            | "reasoning_part_delta"
            | "reasoning_part_completed"
            | "text_delta" => text_kind(&tag, &mut wire)?,
            "tool_call_started"
            | "tool_call_update"
            | "tool_approval_requested"
            | "tool_approval_resolved"
            | "tool_result" => tool_kind(&tag, &mut wire)?,
            _ => other_kind(&tag, &mut wire)?,
        };
        Ok(Event {
            seq: need(wire.seq, "seq")?,
            run_id: need(wire.run_id, "run_id")?,
            ts: need(wire.ts, "ts")?,
            kind,
        })
    }
}

/// The start of a message, its reasoning and its text.
fn text_kind<E: de::Error>(tag: &str, wire: &mut Wire) -> Result<EventKind, E> {
    Ok(match tag {
        "message_started" => EventKind::MessageStarted {
            conversation_id: need(wire.conversation_id.take(), "conversation_id")?,
            user_message_id: need(wire.user_message_id.take(), "user_message_id")?,
            message_id: need(wire.message_id.take(), "message_id")?,
            trace_id: need(wire.trace_id.take(), "trace_id")?,
            model: need(wire.model.take(), "model")?,
        },
        "reasoning_part_started" => EventKind::ReasoningPartStarted {
            segment_id: need(wire.segment_id.take(), "segment_id")?,
            summary_index: need(wire.summary_index, "summary_index")?,
            sequence_number: need(wire.sequence_number, "sequence_number")?,
        },
        "reasoning_part_delta" => EventKind::ReasoningPartDelta {
            segment_id: need(wire.segment_id.take(), "segment_id")?,
            summary_index: need(wire.summary_index, "summary_index")?,
            text_delta: need(wire.text_delta.take(), "text_delta")?,
        },
        "reasoning_part_completed" => EventKind::ReasoningPartCompleted {
            segment_id: need(wire.segment_id.take(), "segment_id")?,
            summary_index: need(wire.summary_index, "summary_index")?,
            final_text: wire.final_text.take(),
        },
        _ => EventKind::TextDelta {
            segment_id: need(wire.segment_id.take(), "segment_id")?,
            sequence_number: wire.sequence_number,
            delta: need(wire.delta.take(), "delta")?,
        },
    })
}

/// A tool call's events.
fn tool_kind<E: de::Error>(tag: &str, wire: &mut Wire) -> Result<EventKind, E> {
    let call_id = need(wire.call_id.take(), "call_id")?;
    Ok(match tag {
        "tool_call_started" => EventKind::ToolCallStarted {
            call_id,
            name: need(wire.name.take(), "name")?,
            display: wire.display.take(),
            args: need(wire.args.take(), "args")?,
            sequence_number: need(wire.sequence_number, "sequence_number")?,
        },
        "tool_call_update" => EventKind::ToolCallUpdate {
            call_id,
            output_delta: wire.output_delta.take(),
            progress: wire.progress.take(),
            args_text: wire.args_text.take(),
            args: wire.args.take().filter(|args| !args.is_null()),
        },
        "tool_approval_requested" => EventKind::ToolApprovalRequested {
            call_id,
            name: need(wire.name.take(), "name")?,
            args: need(wire.args.take(), "args")?,
        },
        "tool_approval_resolved" => EventKind::ToolApprovalResolved {
            call_id,
            decision: need(wire.decision, "decision")?,
            by: need(wire.by.take(), "by")?,
            reason: wire.reason.take(),
        },
        _ => EventKind::ToolResult {
            call_id,
            status: need(wire.status, "status")?,
            duration_ms: need(wire.duration_ms, "duration_ms")?,
            output: wire.output.take(),
            truncated: wire.truncated.unwrap_or(false),
            full_length: wire.full_length,
            error: match wire.error.take() {
                None => None,
                Some(ErrorField::Tool(error)) => Some(error),
                Some(ErrorField::Text(_)) => {
                    return Err(E::custom("tool_result's `error` is a string"))
                }
            },
        },
    })
}

/// Usage, retries, agent state and the terminal events.
fn other_kind<E: de::Error>(tag: &str, wire: &mut Wire) -> Result<EventKind, E> {
    Ok(match tag {
        "usage" => EventKind::Usage(Usage {
            input_tokens: need(wire.input_tokens, "input_tokens")?,
            output_tokens: need(wire.output_tokens, "output_tokens")?,
            reasoning_tokens: wire.reasoning_tokens,
            cache_read_tokens: wire.cache_read_tokens,
            cache_write_tokens: wire.cache_write_tokens,
        }),
        "retrying" => EventKind::Retrying {
            attempt: need(wire.attempt, "attempt")?,
            delay_ms: need(wire.delay_ms, "delay_ms")?,
            reason: ErrorCode::from(need(wire.reason.take(), "reason")?),
        },
        "agent_state" => EventKind::AgentState {
            key: need(wire.key.take(), "key")?,
            state: need(wire.state.take(), "state")?,
        },
        "message_final" => EventKind::MessageFinal {
            message: need(wire.message.take(), "message")?,
            trace_id: need(wire.trace_id.take(), "trace_id")?,
        },
        "message_cancelled" => EventKind::MessageCancelled {
            reason: need(wire.reason.take(), "reason")?,
            cancelled_by: need(wire.cancelled_by, "cancelled_by")?,
            message: need(wire.message.take(), "message")?,
        },
        "message_error" => EventKind::MessageError {
            code: need(wire.code.take(), "code")?,
            error: match need(wire.error.take(), "error")? {
                ErrorField::Text(text) => text,
                ErrorField::Tool(_) => {
                    return Err(E::custom("message_error's `error` is an object"))
                }
            },
            message: need(wire.message.take(), "message")?,
        },
        other => return Err(E::unknown_variant(other, KINDS)),
    })
}

flat_reader! {
    /// Every field of any segment kind, once (`type` is `kind`).
    struct SegmentWire, keys SegmentKey {
        kind = "type": String,
        id = "id": String,
        sequence_number = "sequence_number": u32,
        parts = "parts": Vec<ReasoningPart>,
        combined_text = "combined_text": String,
        started_at = "started_at": String,
        completed_at = "completed_at": String,
        duration_ms = "duration_ms": u64,
        call_id = "call_id": String,
        name = "name": String,
        display = "display": String,
        args_text = "args_text": String,
        status = "status": ToolCallStatus,
        output = "output": String,
        truncated = "truncated": bool,
        full_length = "full_length": u64,
        error = "error": ToolError,
        progress = "progress": Value,
        approval = "approval": Box<Approval>,
        text = "text": String,
    }
    raw {
        args = "args",
    }
}

impl<'de> Deserialize<'de> for Segment {
    fn deserialize<D: Deserializer<'de>>(input: D) -> Result<Self, D::Error> {
        let wire = SegmentWire::deserialize(input)?;
        let tag = need(wire.kind, "type")?;
        let sequence_number = need(wire.sequence_number, "sequence_number")?;
        Ok(match tag.as_str() {
            "reasoning" => Segment::Reasoning(ReasoningSegment {
                id: need(wire.id, "id")?,
                sequence_number,
                parts: need(wire.parts, "parts")?,
                combined_text: need(wire.combined_text, "combined_text")?,
                started_at: need(wire.started_at, "started_at")?,
                completed_at: wire.completed_at,
                duration_ms: wire.duration_ms,
            }),
            "tool_call" => Segment::ToolCall(ToolCallSegment {
                call_id: need(wire.call_id, "call_id")?,
                sequence_number,
                name: need(wire.name, "name")?,
                display: wire.display,
                args: need(wire.args, "args")?,
                args_text: wire.args_text.unwrap_or_default(),
                status: need(wire.status, "status")?,
                output: wire.output.unwrap_or_default(),
                truncated: wire.truncated.unwrap_or(false),
                full_length: wire.full_length,
                error: wire.error,
                progress: wire.progress,
                approval: wire.approval,
                started_at: need(wire.started_at, "started_at")?,
                duration_ms: wire.duration_ms,
            }),
            "text" => Segment::Text(TextSegment {
                id: need(wire.id, "id")?,
                sequence_number,
                text: need(wire.text, "text")?,
            }),
            other => return Err(de::Error::unknown_variant(other, SEGMENT_KINDS)),
        })
    }
}

const SEGMENT_KINDS: &[&str] = &["reasoning", "tool_call", "text"];

#[cfg(test)]
#[path = "wire_tests.rs"]
pub(crate) mod tests;
