//! Payload safety, applied once before an event enters a run's log: nothing downstream (the SSE
//! stream, the database, the logs, a share link) can see what this removes. [`sanitize`] is the one
//! path every event takes (`Run::append`); its match names every event kind, so a new kind cannot
//! be added without deciding what of it is cleaned.
//!
//! - Values under keys that look like secrets become `"[redacted]"` (except token counts: a number
//!   under a key ending in `tokens`), and so does every value shaped like a credential
//!   ([`crate::redact`]); text that streams in deltas is redacted there too.
//! - Strings inside tool arguments (of `tool_call_started` and `tool_approval_requested`) and
//!   progress longer than [`MAX_ARG_STRING_CHARS`] are cut, with a marker saying how long they
//!   were.
//! - What a person wrote (an approval's or a cancel's reason) is redacted and cut the same way.
//! - A tool's output longer than [`MAX_TOOL_OUTPUT_CHARS`] is cut, flagged `truncated` with
//!   `full_length`.
//! - A non-terminal event's JSON never exceeds [`MAX_EVENT_BYTES`].

use serde_json::Value;

use app::protocol::EventKind;

pub use crate::redact::is_secret_key;
pub use crate::redact::REDACTED;
use crate::redact::{redact_in_place, redact_raw_json, Streams};
/// The key under which tool arguments that are not valid JSON travel, as the model sent them.
pub const RAW_ARGUMENTS_KEY: &str = "_raw";
pub const MAX_ARG_STRING_CHARS: usize = 4096;
pub const MAX_TOOL_OUTPUT_CHARS: usize = 16 * 1024;
pub const MAX_DELTA_CHARS: usize = 8 * 1024;
pub const MAX_EVENT_BYTES: usize = 64 * 1024;

/// A number under a key ending in `tokens` (`max_tokens`, `output_tokens`) counts tokens, and so
/// does an object of numbers under one ending in `tokens_details` (OpenAI's
/// `prompt_tokens_details`); neither is a credential.
fn is_token_count(key: &str, value: &Value) -> bool {
    let key = key.to_ascii_lowercase();
    match value {
        Value::Number(_) => key.ends_with("tokens"),
        Value::Object(details) => {
            key.ends_with("tokens_details") && details.values().all(Value::is_number)
        }
        _ => false,
    }
}

/// Redacts secret-looking keys and shortens long strings, recursively.
pub fn sanitize_value(value: &mut Value) {
    match value {
        Value::Object(map) => {
            for (key, inner) in map.iter_mut() {
                if is_secret_key(key) && !is_token_count(key, inner) {
                    *inner = Value::String(REDACTED.to_owned());
                } else if let (RAW_ARGUMENTS_KEY, Value::String(raw)) = (key.as_str(), &*inner) {
                    *inner = Value::String(redact_raw_json(raw));
                    sanitize_value(inner);
                } else {
                    sanitize_value(inner);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(sanitize_value),
        Value::String(text) => {
            // Only what can be kept is scanned, with a margin, as for tool output.
            let total = text.chars().count();
            if let Some(cut) = shorten(text, MAX_ARG_STRING_CHARS + SCAN_MARGIN) {
                let cut = cut.len();
                text.truncate(cut);
            }
            redact_in_place(text);
            if let Some(cut) = shorten(text, MAX_ARG_STRING_CHARS) {
                let more = total.saturating_sub(MAX_ARG_STRING_CHARS);
                *text = format!("{cut}… [{more} more characters]");
            }
        }
        _ => {}
    }
}

pub use app::protocol::shorten_chars as shorten;

/// How far past a cut a string is still scanned for credentials, so one that straddles the cut
/// is seen whole (and cut away with the rest).
const SCAN_MARGIN: usize = 512;

/// Redacts a tool's output. Only what can be kept is scanned, with a margin so a credential that
/// straddles the cut is still seen whole: a 100 KiB result costs a 16 KiB scan.
fn redact_output(text: &mut String, truncated: &mut bool, full_length: &mut Option<u64>) {
    if let Some(cut) = shorten(text, MAX_TOOL_OUTPUT_CHARS + SCAN_MARGIN) {
        let total = text.chars().count() as u64;
        let cut = cut.len();
        text.truncate(cut);
        *truncated = true;
        *full_length = Some(full_length.unwrap_or(0).max(total));
    }
    redact_in_place(text);
}

/// Makes one event safe to send and store: the one path every event takes before the log. A
/// delta comes back with what can be sent now (`None`: all of it is held back, see [`Streams`]);
/// any other event comes back after the held ends of the texts it ends.
pub fn sanitize(streams: &mut Streams, mut kind: EventKind) -> (Vec<EventKind>, Option<EventKind>) {
    sanitize_event(&mut kind);
    streams.pass(kind)
}

/// Makes one event's payload safe to send and store (deltas: [`Streams`], through [`sanitize`]).
/// Every kind is named: a new one is a compile error here until it says what it carries.
fn sanitize_event(kind: &mut EventKind) {
    match kind {
        EventKind::ToolCallStarted { args, display, .. } => {
            sanitize_value(args);
            display.iter_mut().for_each(sanitize_display);
        }
        EventKind::ToolResult { .. } => sanitize_result(kind),
        EventKind::ToolApprovalRequested { args, .. } => sanitize_value(args),
        EventKind::ToolApprovalResolved {
            reason: Some(reason),
            ..
        } => sanitize_text(reason),
        EventKind::MessageCancelled {
            reason, message, ..
        } => {
            sanitize_text(reason);
            if let Some(ended) = &mut message.ended_reason {
                sanitize_text(ended);
            }
        }
        EventKind::ToolCallUpdate {
            output_delta,
            progress,
            args_text,
            args,
            ..
        } => {
            if let Some(progress) = progress {
                sanitize_value(progress);
            }
            if let Some(args) = args {
                sanitize_value(args);
            }
            if let Some(text) = args_text {
                *text = crate::redact::redact_raw_json(text);
                if let Some(cut) = shorten(text, MAX_DELTA_CHARS) {
                    *text = cut.to_owned();
                }
            }
            if let Some(delta) = output_delta {
                if let Some(cut) = shorten(delta, MAX_DELTA_CHARS) {
                    *delta = cut.to_owned();
                }
            }
        }
        EventKind::ReasoningPartCompleted {
            final_text: Some(text),
            ..
        } => redact_in_place(text),
        EventKind::MessageError { error, message, .. } => {
            redact_in_place(error);
            if let Some(ended) = &mut message.ended_reason {
                sanitize_text(ended);
            }
        }
        // Text and reasoning deltas: `Streams`, in `sanitize`.
        EventKind::TextDelta { .. } | EventKind::ReasoningPartDelta { .. } => {}
        // Ids, counts, tool and model names, a completed run's message (built from sanitized events).
        EventKind::MessageStarted { .. }
        | EventKind::ReasoningPartStarted { .. }
        | EventKind::ReasoningPartCompleted {
            final_text: None, ..
        }
        | EventKind::ToolApprovalResolved { reason: None, .. }
        | EventKind::Usage(_)
        | EventKind::Retrying { .. }
        | EventKind::MessageFinal { .. } => {}
        // Opaque to Glassbox (an agent's encrypted reasoning), sent back to the agent byte for
        // byte: redaction would break it. Its size is capped where it is made.
        EventKind::AgentState { .. } => {}
    }
}

/// A call's display line: redacted, at most 200 characters.
fn sanitize_display(text: &mut String) {
    redact_in_place(text);
    if let Some(cut) = shorten(text, 200) {
        *text = format!("{cut}…");
    }
}

/// A `tool_result`'s output (redacted, cut and flagged) and error message (redacted, cut).
fn sanitize_result(kind: &mut EventKind) {
    let EventKind::ToolResult {
        output,
        truncated,
        full_length,
        error,
        ..
    } = kind
    else {
        return;
    };
    if let Some(text) = output {
        redact_output(text, truncated, full_length);
        if let Some(cut) = shorten(text, MAX_TOOL_OUTPUT_CHARS) {
            let total = text.chars().count() as u64;
            *text = cut.to_owned();
            *truncated = true;
            *full_length = Some(full_length.unwrap_or(0).max(total));
        }
    }
    if let Some(error) = error {
        redact_in_place(&mut error.message);
        if let Some(cut) = shorten(&error.message, MAX_ARG_STRING_CHARS) {
            error.message = format!("{cut}…");
        }
    }
}

/// Text a person wrote: redacted, and cut like an argument string. Also what a trace stores as
/// its run's cancellation or failure reason, which does not pass through an event.
pub fn sanitize_text(text: &mut String) {
    redact_in_place(text);
    if let Some(cut) = shorten(text, MAX_ARG_STRING_CHARS) {
        *text = format!("{cut}…");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn secrets_are_redacted_at_any_depth_and_case() {
        let mut args = json!({
            "query": "TODO",
            "API_KEY": "sk-123",
            "nested": {"Authorization": "Bearer x", "list": [{"session_token": "t"}, "plain"]},
            "Password": 12,
            "max_tokens": 8192,
            "prompt_tokens_details": {"cached_tokens": 10},
            "api_tokens": "t1 t2",
        });
        sanitize_value(&mut args);
        assert_eq!(
            args,
            json!({
                "query": "TODO",
                "API_KEY": REDACTED,
                "nested": {"Authorization": REDACTED, "list": [{"session_token": REDACTED}, "plain"]},
                "Password": REDACTED,
                "max_tokens": 8192,
                "prompt_tokens_details": {"cached_tokens": 10},
                "api_tokens": REDACTED,
            })
        );
    }

    #[test]
    fn long_strings_are_cut_on_a_char_boundary_and_say_so() {
        let mut value = json!({ "text": "é".repeat(MAX_ARG_STRING_CHARS + 10) });
        sanitize_value(&mut value);
        let text = value["text"].as_str().unwrap_or_default();
        assert!(text.starts_with(&"é".repeat(MAX_ARG_STRING_CHARS)));
        assert!(text.ends_with("[10 more characters]"));
    }

    #[test]
    fn a_credential_straddling_an_argument_cut_shows_none_of_itself() {
        let key = "sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz0123";
        let long = format!(
            "{}{key} {}",
            "a".repeat(MAX_ARG_STRING_CHARS - 12),
            "b".repeat(100_000)
        );
        let mut value = json!({ "content": long });
        sanitize_value(&mut value);
        let text = value["content"].as_str().unwrap_or_default();
        assert!(!text.contains("sk-proj"), "{}", &text[text.len() - 80..]);
        // (The count is of the string as it came: the redaction made it shorter.)
        let more = format!(
            "[{} more characters]",
            long.chars().count() - MAX_ARG_STRING_CHARS
        );
        assert!(text.ends_with(&more), "{}", &text[text.len() - 80..]);
        assert!(text.contains("a[redacted] b"));
    }

    const SECRET: &str = "sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz0123";

    /// The message of a terminal event that ended early, with a person's or an error's reason.
    fn ended(reason: &str) -> app::protocol::Message {
        let mut message = app::protocol::Message::assistant("m".into(), "x".into(), "t".into());
        message.ended_reason = Some(reason.to_owned());
        message
    }

    /// One event of every kind, in [`kind_index`] order, with a credential in each field that
    /// carries what a model, a tool or a person wrote.
    fn every_kind() -> Vec<EventKind> {
        let words = format!("use {SECRET} now ");
        let mut kinds = model_kinds(&words);
        kinds.extend(tool_kinds(&words));
        kinds.extend(end_kinds(&words));
        kinds
    }

    /// The kinds before the first tool's, in [`kind_index`] order.
    fn model_kinds(words: &str) -> Vec<EventKind> {
        vec![
            EventKind::MessageStarted {
                conversation_id: "c".into(),
                user_message_id: "u".into(),
                message_id: "m".into(),
                trace_id: "t".into(),
                model: "x".into(),
            },
            EventKind::ReasoningPartStarted {
                segment_id: "r".into(),
                summary_index: 0,
                sequence_number: 0,
            },
            EventKind::ReasoningPartDelta {
                segment_id: "r".into(),
                summary_index: 0,
                text_delta: words.to_owned(),
            },
            EventKind::ReasoningPartCompleted {
                segment_id: "r".into(),
                summary_index: 0,
                final_text: Some(words.to_owned()),
            },
        ]
    }

    /// A tool call's kinds, in [`kind_index`] order.
    fn tool_kinds(words: &str) -> Vec<EventKind> {
        use app::protocol::{ApprovalDecision, ToolError, ToolResultStatus};
        let args = json!({ "api_key": "plain", "text": words, "long": "x".repeat(6000) });
        vec![
            EventKind::ToolCallStarted {
                call_id: "a".into(),
                name: "n".into(),
                display: Some(words.to_owned()),
                args: args.clone(),
                sequence_number: 1,
            },
            EventKind::ToolCallUpdate {
                call_id: "a".into(),
                output_delta: Some(words.to_owned()),
                progress: Some(json!({ "message": words })),
                args_text: Some(json!({ "api_key": "plain", "text": words }).to_string()),
                args: Some(args.clone()),
            },
            EventKind::ToolApprovalRequested {
                call_id: "a".into(),
                name: "n".into(),
                args,
            },
            EventKind::ToolApprovalResolved {
                call_id: "a".into(),
                decision: ApprovalDecision::Deny,
                by: app::protocol::ResolvedBy::User("local".into()),
                reason: Some(words.to_owned()),
            },
            EventKind::ToolResult {
                call_id: "a".into(),
                status: ToolResultStatus::Error,
                duration_ms: 1,
                output: Some(words.to_owned()),
                truncated: false,
                full_length: None,
                error: Some(ToolError {
                    kind: "io".into(),
                    message: words.to_owned(),
                }),
            },
        ]
    }

    /// The answer's text, usage and the three endings, in [`kind_index`] order.
    fn end_kinds(words: &str) -> Vec<EventKind> {
        vec![
            EventKind::TextDelta {
                segment_id: "s".into(),
                sequence_number: Some(2),
                delta: words.to_owned(),
            },
            EventKind::Usage(Default::default()),
            EventKind::MessageFinal {
                message: ended(""),
                trace_id: "t".into(),
            },
            EventKind::MessageCancelled {
                reason: words.to_owned(),
                cancelled_by: app::protocol::CancelledBy::User,
                message: ended(words),
            },
            EventKind::MessageError {
                code: "e".into(),
                error: words.to_owned(),
                message: ended(words),
            },
            // Opaque and passed through unchanged (an agent's encrypted reasoning): its example
            // carries none of the words, which it would keep.
            EventKind::AgentState {
                key: "rs_1:0".into(),
                state: json!({"ag_ui": {"encryptedValue": "gAAAAB-opaque"}}),
            },
            EventKind::Retrying {
                attempt: 1,
                delay_ms: 2000,
                reason: app::protocol::ErrorCode::RateLimited,
            },
        ]
    }

    /// How many kinds there are, and each one's place in [`every_kind`]. No wildcard: a new kind
    /// does not compile until it is named here, and then fails the test until it has an example.
    const KINDS: usize = 16;
    fn kind_index(kind: &EventKind) -> usize {
        match kind {
            EventKind::MessageStarted { .. } => 0,
            EventKind::ReasoningPartStarted { .. } => 1,
            EventKind::ReasoningPartDelta { .. } => 2,
            EventKind::ReasoningPartCompleted { .. } => 3,
            EventKind::ToolCallStarted { .. } => 4,
            EventKind::ToolCallUpdate { .. } => 5,
            EventKind::ToolApprovalRequested { .. } => 6,
            EventKind::ToolApprovalResolved { .. } => 7,
            EventKind::ToolResult { .. } => 8,
            EventKind::TextDelta { .. } => 9,
            EventKind::Usage(_) => 10,
            EventKind::MessageFinal { .. } => 11,
            EventKind::MessageCancelled { .. } => 12,
            EventKind::MessageError { .. } => 13,
            EventKind::AgentState { .. } => 14,
            EventKind::Retrying { .. } => 15,
        }
    }

    #[test]
    fn every_event_kind_goes_through_the_one_path_and_keeps_no_secret() {
        let kinds = every_kind();
        let order: Vec<usize> = kinds.iter().map(kind_index).collect();
        assert_eq!(
            order,
            (0..KINDS).collect::<Vec<_>>(),
            "one example per kind"
        );
        let mut streams = Streams::default();
        for kind in kinds {
            let name = kind.type_name();
            let (ended, kind) = sanitize(&mut streams, kind);
            for event in ended.iter().chain(&kind) {
                let text = serde_json::to_string(event).expect("JSON");
                assert!(!text.contains(SECRET), "{name}: {text}");
                assert!(
                    !text.contains(&"x".repeat(MAX_ARG_STRING_CHARS + 1)),
                    "{name}"
                );
                assert!(!text.contains("plain"), "{name}: {text}");
            }
        }
        for event in streams.flush_all() {
            let text = serde_json::to_string(&event).expect("JSON");
            assert!(!text.contains(SECRET), "{text}");
        }
    }

    #[test]
    fn secret_key_names_include_whole_words_like_auth() {
        for key in [
            "auth",
            "basicAuth",
            "x-auth",
            "OAUTH",
            "credentials",
            "db_passwd",
            "PWD",
        ] {
            assert!(is_secret_key(key), "{key}");
        }
        for key in ["author", "authority", "path", "query", "pwdx"] {
            assert!(!is_secret_key(key), "{key}");
        }
    }

    #[test]
    fn long_tool_output_is_truncated_with_its_full_length() {
        let mut kind = EventKind::ToolResult {
            call_id: "c".into(),
            status: app::protocol::ToolResultStatus::Success,
            duration_ms: 1,
            output: Some("x".repeat(MAX_TOOL_OUTPUT_CHARS + 5)),
            truncated: false,
            full_length: None,
            error: None,
        };
        sanitize_event(&mut kind);
        let EventKind::ToolResult {
            output,
            truncated,
            full_length,
            ..
        } = kind
        else {
            unreachable!()
        };
        assert_eq!(output.map(|o| o.len()), Some(MAX_TOOL_OUTPUT_CHARS));
        assert!(truncated);
        assert_eq!(full_length, Some(MAX_TOOL_OUTPUT_CHARS as u64 + 5));
    }
}
