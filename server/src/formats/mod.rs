//! Glassbox's runs in other projects' wire formats: pure mappings from a run's events, fed by
//! the same run log as Glassbox's own event stream (`http::sse`). `crate::ag_ui::outbound` is
//! the AG-UI one; it shares [`steps`] and [`LoggedDelta`] with the AI SDK's.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::Value;

pub mod ai_sdk;
pub mod steps;

/// A text or reasoning delta read from its logged JSON without building the event: what a
/// format's reader needs for nearly every event (a delta that continues the part already open),
/// borrowed from the log's copy. Other events lack `segment_id` and fail to read as this (then
/// they are parsed whole).
pub enum LoggedDelta<'a> {
    Text {
        segment_id: Cow<'a, str>,
        delta: Cow<'a, str>,
        ts: Cow<'a, str>,
    },
    Reasoning {
        segment_id: Cow<'a, str>,
        summary_index: u32,
        delta: Cow<'a, str>,
        ts: Cow<'a, str>,
    },
}

#[derive(Deserialize)]
struct Logged<'a> {
    #[serde(borrow)]
    ts: Cow<'a, str>,
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(borrow)]
    segment_id: Cow<'a, str>,
    #[serde(default, borrow)]
    delta: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    text_delta: Option<Cow<'a, str>>,
    #[serde(default)]
    summary_index: Option<u32>,
}

impl<'a> LoggedDelta<'a> {
    /// The delta `json` holds, if it is a `text_delta` or a `reasoning_part_delta`.
    pub fn read(json: &'a str) -> Option<Self> {
        let logged: Logged<'a> = serde_json::from_str(json).ok()?;
        match (logged.kind.as_ref(), logged.delta, logged.text_delta) {
            ("text_delta", Some(delta), None) => Some(LoggedDelta::Text {
                segment_id: logged.segment_id,
                delta,
                ts: logged.ts,
            }),
            ("reasoning_part_delta", None, Some(delta)) => Some(LoggedDelta::Reasoning {
                segment_id: logged.segment_id,
                summary_index: logged.summary_index?,
                delta,
                ts: logged.ts,
            }),
            _ => None,
        }
    }
}

/// Whether a call started without its arguments (`{}` or none): an agent that streams them
/// sends them later in `tool_call_update.args`, so a format holds the call's input until then.
pub fn started_without_args(args: &Value) -> bool {
    match args {
        Value::Null => true,
        Value::Object(map) => map.is_empty(),
        _ => false,
    }
}
