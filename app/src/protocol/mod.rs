//! The wire protocol: the events a run emits, the canonical message they fold into, and the one
//! pure reducer that does the folding. The server builds terminal events with it; the browser
//! builds its live view with it. `docs/protocol.md` is the human-readable contract for this module.

mod event;
mod message;
mod reducer;
mod time;

pub use event::*;
pub use message::*;
pub use reducer::{fold, Reducer};
pub use time::{format_rfc3339_millis, parse_rfc3339_millis};
