//! Reasoning: a phase (`REASONING_START` … `REASONING_END`) is one Glassbox reasoning segment and
//! each reasoning message in it one part; the deprecated `THINKING_*` events map the same way.

use app::protocol::EventKind;

use super::{unknown, Mapper, ProtocolError, ReasoningState};
use crate::ag_ui::wire::{self, Event};
use crate::sanitize::MAX_DELTA_CHARS;
use crate::stamps::new_id;

impl Mapper {
    pub(super) fn reasoning(
        &mut self,
        event: Event,
        out: &mut Vec<EventKind>,
    ) -> Result<(), ProtocolError> {
        match event {
            Event::ReasoningStart { .. } | Event::ThinkingStart { .. } => {
                self.close_chunks(out);
                self.end_reasoning(out);
                self.open_segment();
            }
            Event::ReasoningMessageStart { message_id, .. } => {
                self.start_part(Some(message_id), out);
            }
            Event::ThinkingTextMessageStart {} => self.start_part(None, out),
            Event::ReasoningMessageContent { message_id, delta } => {
                if !self.part_is(Some(&message_id)) {
                    return Err(unknown("reasoning message", &message_id));
                }
                self.part_delta(&delta, out);
            }
            Event::ThinkingTextMessageContent { delta } => {
                if !self.part_is(None) {
                    self.start_part(None, out);
                }
                self.part_delta(&delta, out);
            }
            Event::ReasoningMessageEnd { message_id } => {
                if !self.part_is(Some(&message_id)) {
                    return Err(unknown("reasoning message", &message_id));
                }
                self.end_part(out);
            }
            Event::ThinkingTextMessageEnd {} => self.end_part(out),
            Event::ReasoningMessageChunk { message_id, delta } => {
                let continues = message_id.is_none() || self.part_is(message_id.as_ref());
                if !continues || self.open_part().is_none() {
                    self.start_part(message_id, out);
                }
                if let Some(delta) = delta {
                    self.part_delta(&delta, out);
                }
            }
            Event::ReasoningEnd { .. } | Event::ThinkingEnd {} => self.end_reasoning(out),
            _ => {}
        }
        Ok(())
    }

    fn open_segment(&mut self) {
        let sequence_number = self.next_sequence();
        self.reasoning = Some(ReasoningState {
            segment_id: new_id("rs"),
            sequence_number,
            next_index: 0,
            part: None,
        });
    }

    fn open_part(&self) -> Option<&(Option<String>, u32, String)> {
        self.reasoning.as_ref()?.part.as_ref()
    }

    fn part_is(&self, message_id: Option<&String>) -> bool {
        self.open_part()
            .is_some_and(|(id, _, _)| id.as_ref() == message_id)
    }

    fn start_part(&mut self, message_id: Option<String>, out: &mut Vec<EventKind>) {
        self.end_part(out);
        if self.reasoning.is_none() {
            self.close_chunks(out);
            self.open_segment();
        }
        let Some(state) = self.reasoning.as_mut() else {
            return;
        };
        let summary_index = state.next_index;
        state.next_index += 1;
        let key = format!("{}:{summary_index}", state.segment_id);
        state.part = Some((message_id.clone(), summary_index, String::new()));
        out.push(EventKind::ReasoningPartStarted {
            segment_id: state.segment_id.clone(),
            summary_index,
            sequence_number: state.sequence_number,
        });
        if let Some(id) = message_id {
            self.key(&id, key);
        }
    }

    fn part_delta(&mut self, delta: &str, out: &mut Vec<EventKind>) {
        let Some(state) = self.reasoning.as_mut() else {
            return;
        };
        let Some((_, summary_index, text)) = state.part.as_mut() else {
            return;
        };
        text.push_str(delta);
        for piece in crate::agents::chunks(delta, MAX_DELTA_CHARS) {
            out.push(EventKind::ReasoningPartDelta {
                segment_id: state.segment_id.clone(),
                summary_index: *summary_index,
                text_delta: piece.to_owned(),
            });
        }
    }

    fn end_part(&mut self, out: &mut Vec<EventKind>) {
        let Some(state) = self.reasoning.as_mut() else {
            return;
        };
        let Some((message_id, summary_index, text)) = state.part.take() else {
            return;
        };
        out.push(EventKind::ReasoningPartCompleted {
            segment_id: state.segment_id.clone(),
            summary_index,
            final_text: Some(text.clone()),
        });
        self.transcript.push(wire::Message::Reasoning {
            id: message_id.unwrap_or_else(|| new_id("rsn")),
            content: text,
            encrypted_value: None,
        });
    }

    /// Ends the open reasoning segment (its open part first).
    pub(super) fn end_reasoning(&mut self, out: &mut Vec<EventKind>) {
        self.end_part(out);
        self.reasoning = None;
    }
}
