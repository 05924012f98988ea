//! A terminal event that fits in what is left of a run's memory caps. It carries the whole
//! message, which repeats what the deltas before it carried (reasoning twice: each part and the
//! parts combined); charged past the caps, a run capped at 32 MiB streamed and stored 66-99 MB
//! (issue 30). When it does not fit, the message's texts are cut, the longest first, down to what
//! is left; the event log keeps every delta, so the trace still holds everything.

use app::protocol::{Event, EventKind, Message, Segment};

/// The room a terminal event always gets, even with nothing left under the caps: a message with
/// its texts cut away. The caps may be passed by this much per run, no more.
pub const MIN_TERMINAL_BYTES: usize = 4 * 1024;

/// What `ended_reason` says of a message cut to fit.
const CUT_NOTE: &str =
    "The message was cut to fit in the memory left for this run; its trace keeps every event.";

/// Cuts the message of the terminal `event` until its JSON takes at most `room` bytes (but never
/// below [`MIN_TERMINAL_BYTES`]). Answers whether it was cut.
pub fn fit(event: &mut Event, room: usize) -> bool {
    let room = room.max(MIN_TERMINAL_BYTES);
    if size(event) <= room || message_mut(&mut event.kind).is_none() {
        return false;
    }
    if let Some(message) = message_mut(&mut event.kind) {
        message.ended_reason = Some(match message.ended_reason.take() {
            Some(reason) => format!("{reason} {CUT_NOTE}"),
            None => CUT_NOTE.to_owned(),
        });
    }
    // What the rest of the event takes: measured with the texts taken out, then put back.
    let mut texts = Vec::new();
    if let Some(message) = message_mut(&mut event.kind) {
        each_text(message, |text| {
            texts.push(std::mem::take(text));
            false
        });
    }
    let rest = size(event);
    let lengths: Vec<usize> = texts.iter().map(String::len).collect();
    let mut texts = texts.into_iter();
    if let Some(message) = message_mut(&mut event.kind) {
        each_text(message, |text| {
            *text = texts.next().unwrap_or_default();
            false
        });
    }
    let mut available = room.saturating_sub(rest);
    for _ in 0..8 {
        let level = water_level(&lengths, available);
        if let Some(message) = message_mut(&mut event.kind) {
            each_text(message, |text| cut(text, level));
        }
        let now = size(event);
        if now <= room {
            return true;
        }
        // Escapes took more than their characters: aim lower.
        available = available.saturating_sub(now - room + available / 4);
    }
    // The bare bones do not fit either (thousands of tool calls): the segments go.
    if let Some(message) = message_mut(&mut event.kind) {
        message.segments.clear();
    }
    true
}

fn size(event: &Event) -> usize {
    serde_json::to_string(event).map_or(usize::MAX, |json| json.len())
}

fn message_mut(kind: &mut EventKind) -> Option<&mut Message> {
    match kind {
        EventKind::MessageFinal { message, .. }
        | EventKind::MessageCancelled { message, .. }
        | EventKind::MessageError { message, .. } => Some(message),
        _ => None,
    }
}

/// Calls `change` on every text of the message; a tool output it shortens is marked truncated.
fn each_text(message: &mut Message, mut change: impl FnMut(&mut String) -> bool) {
    for segment in &mut message.segments {
        match segment {
            Segment::Reasoning(reasoning) => {
                change(&mut reasoning.combined_text);
                for part in &mut reasoning.parts {
                    change(&mut part.text);
                }
            }
            Segment::ToolCall(call) => {
                let chars = call.output.chars().count() as u64;
                if change(&mut call.output) {
                    call.truncated = true;
                    call.full_length = Some(call.full_length.unwrap_or(0).max(chars));
                }
            }
            Segment::Text(text) => {
                change(&mut text.text);
            }
        }
    }
}

/// The largest length `level` such that texts cut to it take at most `available` bytes.
fn water_level(lengths: &[usize], available: usize) -> usize {
    let mut sorted = lengths.to_vec();
    sorted.sort_unstable();
    let mut left = available;
    for (index, &length) in sorted.iter().enumerate() {
        let count = sorted.len() - index;
        if length.saturating_mul(count) > left {
            return left / count;
        }
        left -= length;
    }
    usize::MAX
}

/// Cuts `text` to at most `level` bytes, on a character boundary; answers whether it did.
fn cut(text: &mut String, level: usize) -> bool {
    if text.len() <= level {
        return false;
    }
    let mut at = level;
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    text.truncate(at);
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use app::protocol::{MessageStatus, ReasoningPart, ReasoningSegment, TextSegment};

    fn terminal(text: String, reasoning: String) -> Event {
        let mut message = Message::assistant("m".into(), "demo".into(), "t".into());
        message.status = MessageStatus::Error;
        let part = |text: &str| ReasoningPart {
            summary_index: 0,
            text: text.to_owned(),
            is_complete: true,
            started_at: "t".into(),
            completed_at: None,
        };
        message.segments = vec![
            Segment::Reasoning(ReasoningSegment {
                id: "r".into(),
                parts: vec![part(&reasoning), part("short")],
                combined_text: format!("{reasoning}\n\nshort"),
                ..Default::default()
            }),
            Segment::Text(TextSegment {
                id: "x".into(),
                sequence_number: 1,
                text,
            }),
        ];
        Event {
            seq: 9,
            run_id: "run".into(),
            ts: "t".into(),
            kind: EventKind::MessageError {
                code: app::protocol::ErrorCode::RunTooLarge,
                error: "too large".into(),
                message,
            },
        }
    }

    #[test]
    fn a_terminal_event_is_cut_to_the_room_left_and_small_ones_are_untouched() {
        let mut event = terminal("é\"\n".repeat(100_000), "thought ".repeat(50_000));
        assert!(size(&event) > 1_000_000);
        for room in [0, 5_000, 50_000, 300_000] {
            let mut cut = event.clone();
            assert!(fit(&mut cut, room));
            assert!(
                size(&cut) <= room.max(MIN_TERMINAL_BYTES),
                "{room}: {}",
                size(&cut)
            );
            let text = serde_json::to_string(&cut).expect("JSON");
            assert!(text.contains(CUT_NOTE), "{room}");
            if room >= 50_000 {
                assert!(text.contains("short"), "short texts stay whole: {room}");
            }
        }
        let small = terminal("fine".into(), "thought".into());
        let before = small.clone();
        let mut after = small;
        assert!(!fit(&mut after, 100_000));
        assert_eq!(after, before);
        assert!(fit(&mut event, 0));
    }

    #[test]
    fn the_water_level_shares_what_is_left() {
        assert_eq!(water_level(&[10, 100, 1_000], 2_000), usize::MAX);
        assert_eq!(water_level(&[10, 100, 1_000], 210), 100);
        assert_eq!(water_level(&[10, 100, 1_000], 10), 3);
        assert_eq!(water_level(&[], 10), usize::MAX);
    }
}
