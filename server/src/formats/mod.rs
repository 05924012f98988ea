//! Glassbox's runs in other projects' wire formats: pure mappings from a run's events, fed by
//! the same run log as Glassbox's own event stream (`http::sse`). `crate::ag_ui::outbound` is
//! the AG-UI one; it shares [`steps`] and [`LoggedDelta`] with the AI SDK's.

use serde_json::Value;

pub mod ai_sdk;
mod logged;
pub mod steps;

pub use logged::{is_empty, LoggedDelta};

/// Whether a call started without its arguments (`{}` or none): an agent that streams them
/// sends them later in `tool_call_update.args`, so a format holds the call's input until then.
pub fn started_without_args(args: &Value) -> bool {
    match args {
        Value::Null => true,
        Value::Object(map) => map.is_empty(),
        _ => false,
    }
}
