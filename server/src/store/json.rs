//! Messages and events as the store keeps them: JSON text, read back with clear errors.

use std::sync::Arc;

use app::protocol::{Event, Message};

use super::rows::ChunkRow;
use crate::error::{Error, Result};

/// `[a,b,c]` from JSON texts, without parsing them.
pub fn join_json_array<T: AsRef<str>>(items: &[T]) -> String {
    let mut out = String::with_capacity(
        items
            .iter()
            .map(|item| item.as_ref().len() + 1)
            .sum::<usize>()
            + 2,
    );
    out.push('[');
    for (index, item) in items.iter().enumerate() {
        if index > 0 {
            out.push(',');
        }
        out.push_str(item.as_ref());
    }
    out.push(']');
    out
}

pub(super) fn encode_message(message: &Message) -> Result<String> {
    serde_json::to_string(message).map_err(|error| Error::Internal(error.to_string()))
}

pub(super) fn decode_message(json: String) -> Result<Message> {
    serde_json::from_str(&json).map_err(|error| Error::Internal(format!("stored message: {error}")))
}

/// Every event of a closed trace (its stored JSON array).
pub(super) fn decode_events(json: &str) -> Result<Vec<Event>> {
    serde_json::from_str(json).map_err(|error| Error::Internal(format!("stored events: {error}")))
}

/// The events of a running trace's checkpoint rows, in order. A damaged row ends them: the events
/// before it are kept, the rest (which would leave a gap) are dropped and logged.
pub(super) fn decode_chunks(trace_id: &str, chunks: &[ChunkRow]) -> Vec<Event> {
    let mut events = Vec::new();
    for chunk in chunks {
        match serde_json::from_str::<Vec<Event>>(&chunk.events) {
            Ok(decoded) => events.extend(decoded),
            Err(error) => {
                let first_seq = chunk.first_seq;
                tracing::error!(%trace_id, first_seq, %error, "a damaged checkpoint: the events from here on are lost");
                break;
            }
        }
    }
    events
}

/// The events of a stored JSON array with seq > `after`, each as its own JSON text.
pub(super) fn events_of_array(json: &str, after: u64) -> Result<Vec<(u64, Arc<str>)>> {
    let values: Vec<serde_json::Value> = serde_json::from_str(json)
        .map_err(|error| Error::Internal(format!("stored events: {error}")))?;
    Ok(after_seq(values, after).collect())
}

/// Events (JSON values) with seq > `after`, each as its own JSON text. JSONB keeps keys in its
/// own order, so each goes through [`Event`] again: the bytes a reader gets are the same on every
/// instance (the `type` tag right after `seq`, `run_id` and `ts`).
pub(super) fn after_seq(
    values: Vec<serde_json::Value>,
    after: u64,
) -> impl Iterator<Item = (u64, Arc<str>)> {
    values.into_iter().filter_map(move |value| {
        let seq = value.get("seq")?.as_u64()?;
        if seq <= after {
            return None;
        }
        let json = match serde_json::from_value::<Event>(value) {
            Ok(event) => serde_json::to_string(&event).ok()?,
            Err(error) => {
                tracing::warn!(seq, %error, "a stored event that is not an event; skipped");
                return None;
            }
        };
        Some((seq, Arc::from(json)))
    })
}
