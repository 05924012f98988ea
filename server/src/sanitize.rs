//! Payload safety, applied once before an event enters a run's log: nothing downstream (the SSE
//! stream, the database, the logs) can see what this removes.
//!
//! - Values under keys that look like secrets become `"[redacted]"` (except token counts: a number
//!   under a key ending in `tokens`), and so does every value shaped like a credential
//!   ([`crate::redact`]); text that streams in deltas is redacted there too.
//! - Strings inside tool arguments and progress longer than [`MAX_ARG_STRING_CHARS`] are cut, with a
//!   marker saying how long they were.
//! - A tool's output longer than [`MAX_TOOL_OUTPUT_CHARS`] is cut, flagged `truncated` with
//!   `full_length`.
//! - A non-terminal event's JSON never exceeds [`MAX_EVENT_BYTES`].

use serde_json::Value;

use app::protocol::EventKind;

pub use crate::redact::REDACTED;
use crate::redact::{redact_in_place, redact_raw_json};
/// The key under which tool arguments that are not valid JSON travel, as the model sent them.
pub const RAW_ARGUMENTS_KEY: &str = "_raw";
/// Substrings (case-insensitive) of a key whose value is never shown.
pub const SECRET_KEY_PARTS: [&str; 6] = [
    "key",
    "token",
    "secret",
    "password",
    "authorization",
    "cookie",
];
pub const MAX_ARG_STRING_CHARS: usize = 4096;
pub const MAX_TOOL_OUTPUT_CHARS: usize = 16 * 1024;
pub const MAX_DELTA_CHARS: usize = 8 * 1024;
pub const MAX_EVENT_BYTES: usize = 64 * 1024;

pub fn is_secret_key(key: &str) -> bool {
    let key = key.to_ascii_lowercase();
    SECRET_KEY_PARTS.iter().any(|part| key.contains(part))
}

/// A number under a key ending in `tokens` (`max_tokens`, `output_tokens`) counts tokens; it is
/// not a credential.
fn is_token_count(key: &str, value: &Value) -> bool {
    value.is_number() && key.to_ascii_lowercase().ends_with("tokens")
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

/// Makes one event's payload safe to send and store.
pub fn sanitize_event(kind: &mut EventKind) {
    match kind {
        EventKind::ToolCallStarted { args, display, .. } => {
            sanitize_value(args);
            if let Some(text) = display {
                redact_in_place(text);
                if let Some(cut) = shorten(text, 200) {
                    *text = format!("{cut}…");
                }
            }
        }
        EventKind::ToolCallUpdate {
            output_delta,
            progress,
            ..
        } => {
            if let Some(progress) = progress {
                sanitize_value(progress);
            }
            if let Some(delta) = output_delta {
                if let Some(cut) = shorten(delta, MAX_DELTA_CHARS) {
                    *delta = cut.to_owned();
                }
            }
        }
        EventKind::ToolResult {
            output,
            truncated,
            full_length,
            error,
            ..
        } => {
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
        EventKind::ReasoningPartCompleted {
            final_text: Some(text),
            ..
        } => redact_in_place(text),
        EventKind::MessageError { error, .. } => redact_in_place(error),
        // Text and reasoning deltas and tool output deltas: `redact::Streams`, in the run.
        _ => {}
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
