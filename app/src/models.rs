//! The shapes the read API and the pages share.

use serde::{Deserialize, Serialize};

mod inspector;

pub use inspector::{
    FunctionTag, InspectorEntry, InspectorFeedback, InspectorFunction, InspectorFunctionCall,
    InspectorMessage, LlmRequestEntry, LlmRequestTag, McpEntry, McpTag, ToolCallEntry, ToolCallTag,
};

use crate::protocol::{
    fold, parse_rfc3339_millis, CancelledBy, ErrorCode, Event, EventKind, Message, TraceStatus,
};

/// One line of the sidebar.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ConversationSummary {
    pub id: String,
    pub title: String,
    pub model: String,
    pub created_at: String,
    pub updated_at: String,
    /// Hidden from the list without being deleted; `GET /api/conversations?archived=true` lists it.
    #[serde(default)]
    pub archived: bool,
}

/// A conversation with its messages, oldest first. Read through [`ConversationWire`]: the derived
/// reading of the flattened summary goes through serde's buffering `Content`, with a second
/// deserializer of every message for that buffer (docs/benchmarks.md, "Bundle size").
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(from = "ConversationWire")]
pub struct Conversation {
    #[serde(flatten)]
    pub summary: ConversationSummary,
    pub messages: Vec<Message>,
    /// The run still going in this conversation, if any: a page opened mid-run attaches to it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active_run: Option<ActiveRun>,
    /// How many older messages the page left out (`messages` is then the newest part).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub earlier: usize,
    /// The reader's feedback on these messages and their steps (issue 36).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub feedback: Vec<Feedback>,
}

/// [`Conversation`] as it is written, the summary's fields beside the others.
#[derive(Deserialize)]
struct ConversationWire {
    id: String,
    title: String,
    model: String,
    created_at: String,
    updated_at: String,
    #[serde(default)]
    archived: bool,
    messages: Vec<Message>,
    #[serde(default)]
    active_run: Option<ActiveRun>,
    #[serde(default)]
    earlier: usize,
    #[serde(default)]
    feedback: Vec<Feedback>,
}

impl From<ConversationWire> for Conversation {
    fn from(wire: ConversationWire) -> Self {
        Conversation {
            summary: ConversationSummary {
                id: wire.id,
                title: wire.title,
                model: wire.model,
                created_at: wire.created_at,
                updated_at: wire.updated_at,
                archived: wire.archived,
            },
            messages: wire.messages,
            active_run: wire.active_run,
            earlier: wire.earlier,
            feedback: wire.feedback,
        }
    }
}

/// A thumbs up or down on an answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Rating {
    Up,
    Down,
}

impl Rating {
    pub fn as_str(self) -> &'static str {
        match self {
            Rating::Up => "up",
            Rating::Down => "down",
        }
    }
}

/// A user's feedback on an answer (`step_id` none: a rating and/or a comment) or a note on one of
/// its steps (`step_id`: a reasoning part's id or a tool call's id; no rating). Its owner's only.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Feedback {
    pub message_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step_id: Option<String>,
    #[serde(default)]
    pub rating: Option<Rating>,
    #[serde(default)]
    pub comment: String,
    pub created_at: String,
    pub updated_at: String,
}

/// The feedback on the answer `message_id` (not on one of its steps), if any.
pub fn answer_feedback<'a>(feedback: &'a [Feedback], message_id: &str) -> Option<&'a Feedback> {
    feedback
        .iter()
        .find(|item| item.message_id == message_id && item.step_id.is_none())
}

/// The note on the step `step_id` of `message_id`, if any.
pub fn step_note<'a>(
    feedback: &'a [Feedback],
    message_id: &str,
    step_id: &str,
) -> Option<&'a Feedback> {
    feedback
        .iter()
        .find(|item| item.message_id == message_id && item.step_id.as_deref() == Some(step_id))
}

fn is_zero(count: &usize) -> bool {
    *count == 0
}

/// How many messages a conversation page shows at first, and loads each time more are asked for.
pub const CONVERSATION_PAGE: usize = 20;

/// A page also stops at this many blocks (a message, a reasoning part, a tool call, an answer
/// each count one), so a page of busy turns is as quick to hydrate as a page of plain ones: one
/// task under 50 ms (`npm run bench -- long`, docs/benchmarks.md). 60 messages of ten tool calls
/// each took 150-300 ms.
pub const CONVERSATION_PAGE_BLOCKS: usize = 64;

impl Conversation {
    /// Keeps the messages before index `before` (the newest when `None`), at most
    /// `CONVERSATION_PAGE` of them and `CONVERSATION_PAGE_BLOCKS` blocks but never fewer than two,
    /// starting on a question where one is near, and says how many are older.
    pub fn page(mut self, before: Option<usize>) -> Self {
        let end = before
            .unwrap_or(self.messages.len())
            .min(self.messages.len());
        let mut start = end;
        let mut blocks = 0;
        while start > 0 && end - start < CONVERSATION_PAGE {
            let weight = 1 + self.messages[start - 1].segments.len();
            if blocks + weight > CONVERSATION_PAGE_BLOCKS && end - start >= 2 {
                break;
            }
            blocks += weight;
            start -= 1;
        }
        if start > 0 && self.messages[start].role != crate::protocol::Role::User {
            start = (start + 1).min(end);
        }
        self.messages.truncate(end);
        self.messages.drain(..start);
        self.earlier = start;
        self
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ActiveRun {
    pub run_id: String,
    pub message_id: String,
}

/// The models a conversation can use (ids only) and the server's default.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelList {
    // In this order, `GET /api/models` writes its keys as it always has (alphabetically).
    pub default: String,
    pub models: Vec<String>,
}

/// A stored trace as `GET /api/traces/{trace_id}` returns it: seed 000's columns and every event.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Trace {
    pub trace_id: String,
    pub run_id: String,
    pub conversation_id: String,
    pub message_id: String,
    pub user_message_id: String,
    pub model: String,
    pub status: TraceStatus,
    pub started_at: String,
    pub completed_at: Option<String>,
    pub total_tool_calls: i64,
    pub input_tokens: Option<i64>,
    pub output_tokens: Option<i64>,
    pub reasoning_tokens: Option<i64>,
    /// Of `input_tokens`, those read from the provider's prompt cache, when it said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_read_tokens: Option<i64>,
    /// Of `input_tokens`, those written to the provider's prompt cache, when it said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write_tokens: Option<i64>,
    pub total_tokens_used: Option<i64>,
    pub total_duration_ms: Option<i64>,
    pub cancelled_by: Option<CancelledBy>,
    pub cancellation_reason: Option<String>,
    pub error_code: Option<ErrorCode>,
    pub events: Vec<Event>,
    /// The reader's feedback on this run's answer and steps (issue 36); a share link's reader
    /// gets none: feedback is private to its author.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub feedback: Vec<Feedback>,
}

/// When a model turn ran, for the timeline (an AG-UI agent's request is a turn).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelTurnTiming {
    pub model: String,
    pub started_at: String,
    pub completed_at: String,
    /// An AG-UI agent's steps (`STEP_STARTED` … `STEP_FINISHED`) in this request.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub steps: Vec<StepTiming>,
}

/// One step an agent reported: its name and when it started and finished (milliseconds since the
/// epoch; the agent's own time stamps, or when Glassbox received the events).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepTiming {
    pub name: String,
    pub started_ms: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_ms: Option<i64>,
}

/// A stored trace as its page opens: everything but the events, which the replay fetches when it
/// is played. With every event inline, a 5,000-event trace was 1.2 MB of HTML and one hydration
/// task of 150 to 240 ms (docs/benchmarks.md).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TraceOverview {
    /// The trace, with `events` left empty.
    pub trace: Trace,
    pub event_count: usize,
    /// What the events fold to: the replay's final view.
    pub message: Option<Message>,
    /// When the last event happened (Unix ms): where the timeline ends.
    pub last_event_ms: Option<i64>,
    /// Each text segment's first and last delta, for the timeline.
    pub text_spans: Vec<TextSpan>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TextSpan {
    pub segment_id: String,
    pub first_ms: i64,
    pub last_ms: i64,
}

impl TraceOverview {
    pub fn of(mut trace: Trace) -> Self {
        let message = fold(&trace.events);
        let last_event_ms = trace
            .events
            .last()
            .and_then(|event| parse_rfc3339_millis(&event.ts));
        let mut text_spans: Vec<TextSpan> = Vec::new();
        for event in &trace.events {
            let EventKind::TextDelta { segment_id, .. } = &event.kind else {
                continue;
            };
            let Some(ms) = parse_rfc3339_millis(&event.ts) else {
                continue;
            };
            match text_spans
                .iter_mut()
                .rev()
                .find(|span| span.segment_id == *segment_id)
            {
                Some(span) => span.last_ms = ms,
                None => text_spans.push(TextSpan {
                    segment_id: segment_id.clone(),
                    first_ms: ms,
                    last_ms: ms,
                }),
            }
        }
        let event_count = trace.events.len();
        trace.events = Vec::new();
        TraceOverview {
            trace,
            event_count,
            message,
            last_event_ms,
            text_spans,
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::disallowed_methods)]

    use serde_json::{json, Value};

    use super::*;
    use crate::protocol::{wire_fixtures, Message};

    fn conversation(count: usize) -> Conversation {
        let messages = (0..count)
            .map(|index| {
                let id = format!("m{index}");
                if index % 2 == 0 {
                    Message::user(id, "q".into(), String::new())
                } else {
                    Message::assistant(id, "demo".into(), String::new())
                }
            })
            .collect();
        Conversation {
            summary: ConversationSummary {
                id: "c".into(),
                title: String::new(),
                model: "demo".into(),
                created_at: String::new(),
                updated_at: String::new(),
                archived: false,
            },
            messages,
            active_run: None,
            earlier: 0,
            feedback: Vec::new(),
        }
    }

    #[test]
    fn a_long_conversation_pages_from_its_newest_message_and_starts_on_a_question() {
        let newest = conversation(CONVERSATION_PAGE + 11).page(None);
        assert_eq!(newest.messages.len(), CONVERSATION_PAGE - 1);
        assert_eq!(newest.messages[0].id, "m12");
        assert_eq!(newest.earlier, 12);
        let older = conversation(CONVERSATION_PAGE + 11).page(Some(12));
        assert_eq!((older.messages.len(), older.earlier), (12, 0));
        let short = conversation(5).page(None);
        assert_eq!((short.messages.len(), short.earlier), (5, 0));
        assert_eq!(conversation(5).page(Some(99)).messages.len(), 5);
    }

    #[test]
    fn a_page_of_busy_turns_stops_at_its_block_budget() {
        use crate::protocol::{Segment, TextSegment};
        let mut busy = conversation(CONVERSATION_PAGE + 11);
        for message in busy.messages.iter_mut().skip(1).step_by(2) {
            message.segments = (0..12)
                .map(|sequence_number| {
                    Segment::Text(TextSegment {
                        id: format!("t{sequence_number}"),
                        sequence_number,
                        text: "a block".into(),
                    })
                })
                .collect();
        }
        // A turn is 1 + 13 blocks: four of them fit in 64 (and the newest question, unanswered).
        let newest = busy.clone().page(None);
        assert_eq!((newest.messages.len(), newest.earlier), (9, 22));
        assert_eq!(newest.messages[0].role, crate::protocol::Role::User);
        let older = busy.page(Some(22));
        assert_eq!((older.messages.len(), older.earlier), (8, 14));
    }

    /// `Conversation` as serde derives it, its summary flattened: the reference.
    #[derive(Deserialize)]
    struct SerdeConversation {
        #[serde(flatten)]
        summary: ConversationSummary,
        messages: Vec<Message>,
        #[serde(default)]
        active_run: Option<ActiveRun>,
        #[serde(default)]
        earlier: usize,
        #[serde(default)]
        feedback: Vec<Feedback>,
    }

    #[test]
    fn a_conversation_reads_as_serde_reads_it_and_writes_back_the_same_bytes() {
        let mut message = serde_json::from_value::<Message>(wire_fixtures::message()).unwrap();
        message.segments = wire_fixtures::segments()
            .into_iter()
            .map(|s| serde_json::from_value(s).unwrap())
            .collect();
        let feedback = json!({"message_id": "m1", "step_id": "c", "rating": null, "comment": "n", "created_at": "a", "updated_at": "b"});
        let whole = json!({"id": "c1", "title": "T", "model": "demo", "created_at": "a", "updated_at": "b", "archived": true,
            "messages": [message], "active_run": {"run_id": "r", "message_id": "m1"}, "earlier": 4, "feedback": [feedback]});
        let least = json!({"messages": [], "updated_at": "b", "created_at": "a", "model": "demo", "title": "T", "id": "c1"});
        for case in [whole, least] {
            let text = case.to_string();
            let ours: Conversation = crate::json::parse(&text).unwrap();
            let theirs: SerdeConversation = crate::json::parse(&text).unwrap();
            assert_eq!(ours.summary, theirs.summary);
            assert_eq!(
                (
                    &ours.messages,
                    &ours.active_run,
                    ours.earlier,
                    &ours.feedback
                ),
                (
                    &theirs.messages,
                    &theirs.active_run,
                    theirs.earlier,
                    &theirs.feedback
                )
            );
            let written = serde_json::to_string(&ours).unwrap();
            let again: Conversation = crate::json::parse(&written).unwrap();
            assert_eq!(serde_json::to_string(&again).unwrap(), written);
            for field in ["id", "messages"] {
                let mut without = case.as_object().unwrap().clone();
                without.remove(field);
                assert!(
                    crate::json::parse::<Conversation>(&Value::Object(without).to_string())
                        .is_err()
                );
            }
        }
    }
}

/// One result of `GET /api/search`: the conversation, the message (none for a title) and the step
/// (a reasoning block's id or a tool call's id) that matched, and a plain-text `snippet` of the
/// matched text with the matches as `marks`: `[start, end)` offsets in characters (Unicode scalar
/// values) of `snippet`. Nothing in it is markup.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SearchHit {
    pub conversation_id: String,
    pub conversation_title: String,
    pub message_id: Option<String>,
    pub step: Option<String>,
    /// `title`, `question`, `answer`, `reasoning` or `tool`.
    pub kind: String,
    pub tool: Option<String>,
    pub status: Option<String>,
    pub model: Option<String>,
    pub created_at: String,
    pub snippet: String,
    pub marks: Vec<[usize; 2]>,
}

/// What `GET /api/search` answers: the hits, newest first.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SearchResults {
    pub results: Vec<SearchHit>,
}
