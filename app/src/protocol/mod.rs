//! The wire protocol: the events a run emits, the canonical message they fold into, and the one
//! pure reducer that does the folding. The server builds terminal events with it; the browser
//! builds its live view with it. `docs/protocol.md` is the human-readable contract for this module.

mod codes;
mod event;
mod message;
mod records;
mod reducer;
mod time;
mod wire;
/// Every event and segment kind as JSON, for other modules' reader tests.
#[cfg(test)]
pub(crate) use wire::tests as wire_fixtures;

pub use codes::{ErrorCode, ResolvedBy, ToolErrorKind, TraceStatus};
pub use event::*;
pub use message::*;
pub use records::*;
pub use reducer::{fold, Reducer};
pub use time::{elapsed_ms, format_rfc3339_millis, parse_rfc3339_millis, write_rfc3339_millis};

/// The first `max_chars` characters of `text`, or `None` when it is not longer than that.
pub fn shorten_chars(text: &str, max_chars: usize) -> Option<&str> {
    text.char_indices()
        .nth(max_chars)
        .map(|(index, _)| &text[..index])
}
