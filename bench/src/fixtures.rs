//! A representative run as its events: a reasoning segment, answer text in word-sized deltas, and
//! tool calls between the text with streamed output. Used to feed the reducer, the sanitizer and
//! the store the shapes a real agent produces.

use app::protocol::{fold, Event, EventKind, ToolResultStatus};
use serde_json::json;

const WORDS: [&str; 8] = [
    "the ",
    "reducer ",
    "folds ",
    "events ",
    "into ",
    "one ",
    "message, ",
    "quickly. ",
];

struct Builder {
    run_id: String,
    events: Vec<Event>,
}

impl Builder {
    fn push(&mut self, kind: EventKind) {
        let seq = self.events.len() as u64 + 1;
        // One event per millisecond from a fixed start keeps the fixture deterministic.
        let ms = seq % 1000;
        let s = (seq / 1000) % 60;
        let m = seq / 60_000;
        self.events.push(Event {
            seq,
            run_id: self.run_id.clone(),
            ts: format!("2026-11-22T10:{m:02}:{s:02}.{ms:03}Z"),
            kind,
        });
    }
}

/// The events of one completed run with `text_tokens` answer deltas and `tool_calls` tool calls,
/// ending with `message_final` (whose message is the fold of the others).
pub fn agent_run(run_id: &str, text_tokens: usize, tool_calls: usize) -> Vec<Event> {
    let mut run = Builder {
        run_id: run_id.to_owned(),
        events: Vec::with_capacity(text_tokens + tool_calls * 6 + 40),
    };
    let trace_id = format!("tr_{run_id}");
    run.push(EventKind::MessageStarted {
        conversation_id: "conv_bench".into(),
        user_message_id: "msg_user".into(),
        message_id: "msg_bench".into(),
        trace_id: trace_id.clone(),
        model: "scenario:bench".into(),
    });
    run.reasoning(0);
    let mut sequence_number = 1u32;
    let chunks = tool_calls + 1;
    let mut words = WORDS.iter().cycle();
    for chunk in 0..chunks {
        let tokens = text_tokens / chunks + usize::from(chunk < text_tokens % chunks);
        let segment_id = format!("txt_{chunk}");
        for token in 0..tokens {
            run.push(EventKind::TextDelta {
                segment_id: segment_id.clone(),
                sequence_number: (token == 0).then_some(sequence_number),
                delta: words.next().map_or("", |w| *w).to_owned(),
            });
        }
        sequence_number += 1;
        if chunk == tool_calls {
            break;
        }
        run.tool_call(chunk, sequence_number);
        sequence_number += 1;
    }
    if let Some(message) = fold(&run.events) {
        run.push(EventKind::MessageFinal { message, trace_id });
    }
    run.events
}

impl Builder {
    /// A reasoning part of 30 words.
    fn reasoning(&mut self, sequence_number: u32) {
        self.push(EventKind::ReasoningPartStarted {
            segment_id: "rs_1".into(),
            summary_index: 0,
            sequence_number,
        });
        let mut thought = String::new();
        for word in WORDS.iter().cycle().take(30) {
            thought.push_str(word);
            self.push(EventKind::ReasoningPartDelta {
                segment_id: "rs_1".into(),
                summary_index: 0,
                text_delta: (*word).to_owned(),
            });
        }
        self.push(EventKind::ReasoningPartCompleted {
            segment_id: "rs_1".into(),
            summary_index: 0,
            final_text: Some(thought),
        });
    }

    /// A successful grep_search call with three lines of streamed output.
    fn tool_call(&mut self, chunk: usize, sequence_number: u32) {
        let call_id = format!("call_{chunk}");
        self.push(EventKind::ToolCallStarted {
            call_id: call_id.clone(),
            name: "grep_search".into(),
            display: Some(format!("Searching for \"term {chunk}\"")),
            args: json!({"query": format!("term {chunk}"), "include": "src/**/*.rs"}),
            sequence_number,
        });
        let mut output = String::new();
        for line in 0..3 {
            let delta = format!("src/module_{chunk}.rs:{line}: let term_{chunk} = {line};\n");
            output.push_str(&delta);
            self.push(EventKind::ToolCallUpdate {
                call_id: call_id.clone(),
                output_delta: Some(delta),
                progress: None,
                args_text: None,
                args: None,
            });
        }
        self.push(EventKind::ToolResult {
            call_id,
            status: ToolResultStatus::Success,
            duration_ms: 12,
            output: Some(output),
            truncated: false,
            full_length: None,
            error: None,
        });
    }
}

/// Each event as the JSON the server stores and sends.
pub fn as_json(events: &[Event]) -> Vec<(u64, std::sync::Arc<str>)> {
    events
        .iter()
        .filter_map(|event| Some((event.seq, serde_json::to_string(event).ok()?.into())))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use app::protocol::{MessageStatus, Segment};

    #[test]
    fn the_fixture_folds_to_a_complete_message_with_every_part() {
        let events = agent_run("run_fixture", 1000, 5);
        let message = fold(&events).expect("a message");
        assert_eq!(message.status, MessageStatus::Complete);
        assert_eq!(message.tool_calls().count(), 5);
        let reasoning = message
            .segments
            .iter()
            .filter(|segment| matches!(segment, Segment::Reasoning(_)))
            .count();
        assert_eq!(reasoning, 1);
        assert_eq!(message.text().split_whitespace().count(), 1000);
    }
}
