//! A model's own records of its reasoning (Anthropic thinking blocks with their signatures,
//! Responses reasoning items with their encrypted content), kept with the trace so that a later
//! question in the conversation sends them back too. They travel the one path for opaque state:
//! `agent_state` events, folded into the message's `agent_state` (docs/protocol.md), never shown
//! and never redacted (a changed byte breaks a signature).
//!
//! Key `model:<turn>:<block>:<piece>`: `<turn>` is the `sequence_number` the turn's first segment
//! took (its blocks go back before that segment), `<block>` the block's place in the turn. Each
//! block is kept as its JSON text in pieces of at most [`PIECE_BYTES`], so no event outgrows the
//! event cap. A block whose readable text (thinking, a summary) holds something credential-shaped
//! is not kept: the stored trace holds no secret, and the provider does without an earlier turn's
//! reasoning (only the turn being continued needs it, and a run holds that in memory).

use std::collections::BTreeMap;

use app::protocol::{EventKind, Message};
use serde_json::{json, Value};

use crate::{providers::ReasoningBlock, records::ProviderKind};

use super::RunContext;

const PREFIX: &str = "model";
/// JSON text per `agent_state` event.
const PIECE_BYTES: usize = 16 * 1024;
/// A block larger than this is not kept.
const MAX_BLOCK_BYTES: usize = 1024 * 1024;
/// Members that are opaque to people (signatures, encrypted data, ids): never checked for
/// credentials, as a random base64 text may look like one.
const OPAQUE: [&str; 5] = ["signature", "data", "encrypted_content", "id", "type"];

/// Emits the turn's blocks as `agent_state` events, for the message.
pub fn keep(context: &RunContext, model_id: &str, turn: u32, blocks: &[ReasoningBlock]) {
    for (index, block) in blocks.iter().enumerate() {
        let text = block.block.to_string();
        if text.len() > MAX_BLOCK_BYTES || has_credentials(&block.block, None) {
            tracing::debug!(
                "a reasoning block was not kept with the trace (too large or credential-shaped)"
            );
            continue;
        }
        let pieces = pieces(&text, PIECE_BYTES);
        let count = pieces.len();
        for (piece, json_text) in pieces.into_iter().enumerate() {
            context.run.emit(EventKind::AgentState {
                key: format!("{PREFIX}:{turn}:{index}:{piece}"),
                state: json!({ PREFIX: {
                    "format": block.format.as_str(),
                    "model": model_id,
                    "json": json_text,
                    "pieces": count,
                }}),
            });
        }
    }
}

/// The blocks a message keeps from `model_id`, by the turn they go back before, in order.
pub fn kept(message: &Message, model_id: &str) -> BTreeMap<u32, Vec<ReasoningBlock>> {
    // (turn, block) -> (format, pieces expected, pieces by number)
    type Pieces<'a> = (ProviderKind, u64, BTreeMap<u32, &'a str>);
    let mut found: BTreeMap<(u32, u32), Pieces> = BTreeMap::new();
    for (key, state) in &message.agent_state {
        let Some(place) = key.strip_prefix(PREFIX).and_then(|k| k.strip_prefix(':')) else {
            continue;
        };
        let numbers: Vec<u32> = place.split(':').filter_map(|n| n.parse().ok()).collect();
        let (Some(state), [turn, block, piece]) = (state.get(PREFIX), numbers.as_slice()) else {
            continue;
        };
        let (Some(format), Some(text), Some(count)) = (
            state["format"].as_str(),
            state["json"].as_str(),
            state["pieces"].as_u64(),
        ) else {
            continue;
        };
        if state["model"].as_str() != Some(model_id) {
            continue;
        }
        let entry = found
            .entry((*turn, *block))
            .or_insert_with(|| (ProviderKind::parse(format), count, BTreeMap::new()));
        entry.2.insert(*piece, text);
    }
    let mut turns: BTreeMap<u32, Vec<ReasoningBlock>> = BTreeMap::new();
    for ((turn, _), (format, count, pieces)) in found {
        if pieces.len() as u64 != count {
            continue;
        }
        let text: String = pieces.into_values().collect();
        if let Ok(block) = serde_json::from_str::<Value>(&text) {
            turns
                .entry(turn)
                .or_default()
                .push(ReasoningBlock { format, block });
        }
    }
    turns
}

/// `text` in pieces of at most `size` bytes, never inside a character.
fn pieces(text: &str, size: usize) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        let mut cut = rest.len().min(size);
        while !rest.is_char_boundary(cut) {
            cut -= 1;
        }
        out.push(&rest[..cut]);
        rest = &rest[cut..];
    }
    out
}

/// Whether a readable string of the block (not an opaque member) holds a credential's shape.
fn has_credentials(value: &Value, key: Option<&str>) -> bool {
    match value {
        Value::String(text) => {
            !key.is_some_and(|key| OPAQUE.contains(&key))
                && crate::redact::redact_text(text) != text.as_str()
        }
        Value::Array(items) => items.iter().any(|item| has_credentials(item, key)),
        Value::Object(members) => members
            .iter()
            .any(|(name, inner)| has_credentials(inner, Some(name))),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_keep_characters_whole() {
        let text = "é".repeat(10);
        let cut = pieces(&text, 3);
        assert!(cut.iter().all(|piece| piece.len() <= 3));
        assert_eq!(cut.concat(), text);
    }

    #[test]
    fn readable_credentials_are_found_and_opaque_members_are_not_read() {
        let clean = json!({"type": "thinking", "thinking": "Let me look.", "signature": "sk-ant-api03-abcdefghijklmnopqrstuvwxyz012345"});
        assert!(!has_credentials(&clean, None));
        let leaky = json!({"type": "reasoning", "summary": [{"type": "summary_text", "text": "The key is sk-ant-api03-abcdefghijklmnopqrstuvwxyz012345"}]});
        assert!(has_credentials(&leaky, None));
    }
}
