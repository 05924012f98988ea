//! Anthropic Messages, streamed. Thinking blocks become reasoning parts (one part per block), text
//! blocks answer text, `tool_use` blocks tool calls whose input JSON streams in
//! `input_json_delta` fragments; usage comes in `message_start` and `message_delta`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{
    provider::{TurnBuilder, WireError, WireFormat},
    ChatMessage, ProviderError, ProviderKind, RequestedCall, TurnRequest, TurnSink,
};

const API_VERSION: &str = "2023-06-01";
const MAX_TOKENS: u32 = 8192;

pub struct Anthropic;

#[derive(Serialize, Deserialize)]
pub struct Request {
    model: String,
    #[serde(default)]
    max_tokens: u32,
    messages: Vec<Message>,
    #[serde(default)]
    stream: bool,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    tools: Vec<Tool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    system: Option<String>,
}

#[derive(Serialize, Deserialize)]
struct Message {
    role: String,
    content: Vec<Content>,
}

#[derive(Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Content {
    Text {
        text: String,
    },
    ToolUse {
        id: String,
        name: String,
        input: Value,
    },
    ToolResult {
        tool_use_id: String,
        content: String,
    },
}

#[derive(Serialize, Deserialize)]
struct Tool {
    name: String,
    description: String,
    input_schema: Value,
}

/// One streamed event, by its `type`.
#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    MessageStart {
        message: Started,
    },
    ContentBlockStart {
        index: u64,
        content_block: BlockStart,
    },
    ContentBlockDelta {
        index: u64,
        delta: BlockDelta,
    },
    MessageDelta {
        #[serde(default)]
        delta: Option<MessageDelta>,
        #[serde(default)]
        usage: Option<Usage>,
    },
    MessageStop,
    Error {
        #[serde(default)]
        error: Option<WireError>,
    },
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
pub struct Started {
    #[serde(default)]
    usage: Option<Usage>,
}

#[derive(Default, Deserialize)]
pub struct Usage {
    #[serde(default, deserialize_with = "super::lenient_count")]
    input_tokens: Option<u64>,
    #[serde(default, deserialize_with = "super::lenient_count")]
    output_tokens: Option<u64>,
}

#[derive(Deserialize)]
pub struct MessageDelta {
    #[serde(default)]
    stop_reason: Option<String>,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum BlockStart {
    Text,
    Thinking,
    ToolUse {
        id: String,
        name: String,
    },
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum BlockDelta {
    TextDelta {
        text: String,
    },
    ThinkingDelta {
        thinking: String,
    },
    InputJsonDelta {
        partial_json: String,
    },
    // Signatures and deltas of unknown blocks carry nothing to show.
    #[serde(other)]
    Other,
}

/// The open content blocks by index, and how many thinking blocks (reasoning parts) came so far.
#[derive(Default)]
pub struct Blocks {
    kinds: BTreeMap<u64, Block>,
    thinking_parts: u32,
}

enum Block {
    Text,
    Thinking(u32),
    ToolUse,
    Other,
}

impl WireFormat for Anthropic {
    const KIND: ProviderKind = ProviderKind::Anthropic;
    const PATH: &'static str = "/messages";
    type Request = Request;
    type Event = Event;
    type State = Blocks;

    fn headers(api_key: Option<&str>) -> Vec<(&'static str, String)> {
        let mut headers = vec![("anthropic-version", API_VERSION.to_owned())];
        headers.extend(api_key.map(|key| ("x-api-key", key.to_owned())));
        headers
    }

    fn request(turn: &TurnRequest) -> Request {
        let system = turn
            .messages
            .iter()
            .rev()
            .find(|m| m.role == "system")
            .and_then(|m| m.content.clone());
        Request {
            model: turn.model.clone(),
            max_tokens: MAX_TOKENS,
            messages: messages(&turn.messages),
            stream: true,
            tools: turn
                .tools
                .iter()
                .map(|tool| Tool {
                    name: tool.name.clone(),
                    description: tool.description.clone(),
                    input_schema: tool.parameters.clone(),
                })
                .collect(),
            system,
        }
    }

    fn conversation(request: Request) -> Vec<ChatMessage> {
        let system = request.system.map(|s| ChatMessage::text("system", s));
        system
            .into_iter()
            .chain(request.messages.into_iter().flat_map(chat_messages))
            .collect()
    }

    fn apply(
        blocks: &mut Blocks,
        event: Event,
        turn: &mut TurnBuilder,
        sink: &mut dyn TurnSink,
    ) -> Result<bool, ProviderError> {
        match event {
            Event::MessageStart { message } => {
                let usage = message.usage.unwrap_or_default();
                let total = turn.usage();
                total.input_tokens = usage.input_tokens.unwrap_or(0);
                total.output_tokens = usage.output_tokens.unwrap_or(0);
            }
            Event::ContentBlockStart {
                index,
                content_block,
            } => blocks.start(index, content_block, turn),
            Event::ContentBlockDelta { index, delta } => blocks.delta(index, delta, turn, sink),
            Event::MessageDelta { delta, usage } => {
                if let Some(reason) = delta.and_then(|d| d.stop_reason) {
                    turn.finish_reason(reason);
                }
                if let Some(tokens) = usage.and_then(|u| u.output_tokens) {
                    turn.usage().output_tokens = tokens;
                }
            }
            Event::MessageStop => {
                turn.completed = true;
                return Ok(true);
            }
            Event::Error { error } => return Err(WireError::into_error(error)),
            Event::Other => {}
        }
        Ok(false)
    }
}

impl Blocks {
    fn start(&mut self, index: u64, block: BlockStart, turn: &mut TurnBuilder) {
        let kind = match block {
            BlockStart::Text => Block::Text,
            BlockStart::Thinking => {
                self.thinking_parts += 1;
                Block::Thinking(self.thinking_parts - 1)
            }
            BlockStart::ToolUse { id, name } => {
                let call = turn.call(index);
                (call.id, call.name) = (id, name);
                Block::ToolUse
            }
            BlockStart::Other => Block::Other,
        };
        self.kinds.insert(index, kind);
    }

    fn delta(
        &self,
        index: u64,
        delta: BlockDelta,
        turn: &mut TurnBuilder,
        sink: &mut dyn TurnSink,
    ) {
        match (self.kinds.get(&index), delta) {
            (Some(Block::Text), BlockDelta::TextDelta { text }) => turn.text(&text, sink),
            (Some(Block::Thinking(part)), BlockDelta::ThinkingDelta { thinking }) => {
                turn.reasoning(*part, &thinking, sink)
            }
            (Some(Block::ToolUse), BlockDelta::InputJsonDelta { partial_json }) => {
                turn.call(index).arguments.push_str(&partial_json)
            }
            _ => {}
        }
    }
}

/// Chat-format messages as Anthropic messages (the system prompt goes apart): tool calls as
/// `tool_use` blocks; tool results as `tool_result` blocks, those of one turn in one user message.
fn messages(messages: &[ChatMessage]) -> Vec<Message> {
    let mut out: Vec<Message> = Vec::new();
    for message in messages {
        match message.role.as_str() {
            "system" => {}
            "tool" => {
                let block = Content::ToolResult {
                    tool_use_id: message.tool_call_id.clone().unwrap_or_default(),
                    content: message.content.clone().unwrap_or_default(),
                };
                match out.last_mut() {
                    Some(last) if last.role == "user" && last.only_results() => {
                        last.content.push(block)
                    }
                    _ => out.push(Message {
                        role: "user".into(),
                        content: vec![block],
                    }),
                }
            }
            role => {
                let text = message.content.iter().filter(|c| !c.is_empty());
                let content: Vec<Content> = text
                    .map(|text| Content::Text { text: text.clone() })
                    .chain(message.tool_calls.iter().map(|call| {
                        Content::ToolUse {
                            id: call.id.clone(),
                            name: call.name.clone(),
                            input: serde_json::from_str(&call.arguments)
                                .unwrap_or_else(|_| Value::Object(Default::default())),
                        }
                    }))
                    .collect();
                if !content.is_empty() {
                    let role = if role == "assistant" { role } else { "user" };
                    out.push(Message {
                        role: role.into(),
                        content,
                    });
                }
            }
        }
    }
    out
}

impl Message {
    fn only_results(&self) -> bool {
        self.content
            .iter()
            .all(|block| matches!(block, Content::ToolResult { .. }))
    }
}

/// An Anthropic message back in chat format: tool results become tool messages.
fn chat_messages(message: Message) -> Vec<ChatMessage> {
    let mut out = Vec::new();
    let mut own = ChatMessage {
        content: None,
        ..ChatMessage::text(&message.role, "")
    };
    for block in message.content {
        match block {
            Content::Text { text } => own.content.get_or_insert_with(String::new).push_str(&text),
            Content::ToolUse { id, name, input } => own.tool_calls.push(RequestedCall {
                id,
                name,
                arguments: input.to_string(),
            }),
            Content::ToolResult {
                tool_use_id,
                content,
            } => out.push(ChatMessage {
                tool_call_id: Some(tool_use_id),
                ..ChatMessage::text("tool", content)
            }),
        }
    }
    if own.content.is_some() || !own.tool_calls.is_empty() {
        out.insert(0, own);
    }
    out
}
