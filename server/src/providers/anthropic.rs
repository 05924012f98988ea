//! Anthropic Messages, streamed. Thinking blocks become reasoning parts (one part per block; a
//! `redacted_thinking` block a part reading "redacted reasoning"), text blocks answer text,
//! `tool_use` blocks tool calls whose input JSON streams in `input_json_delta` fragments. Every
//! thinking block (its text and `signature`) and redacted block (its `data`) is kept as it came and
//! sent back before the turn's `tool_use` blocks. Usage is `message_delta`'s (cumulative) over
//! `message_start`'s, cache reads and writes included.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{
    options::{ModelOptions, ThinkingBudget},
    provider::{TurnBuilder, WireFormat},
    ChatMessage, ProviderError, ProviderKind, RequestedCall, TurnRequest, TurnSink,
};
use app::protocol::ErrorCode;

const API_VERSION: &str = "2023-06-01";
/// `max_tokens` without thinking, and what thinking adds to its budget when not configured.
const MAX_TOKENS: u32 = 8192;
/// Thinking tokens per turn when thinking is on and no budget is configured.
const DEFAULT_THINKING_BUDGET: u32 = 8192;
const INTERLEAVED_BETA: &str = "interleaved-thinking-2025-05-14";
/// What a `redacted_thinking` block shows: never its data.
pub const REDACTED_REASONING: &str = "redacted reasoning";

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
    /// `{"type": "enabled", "budget_tokens"}` or `{"type": "adaptive"}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    thinking: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
    /// `{"effort"}`, from `reasoning_effort`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    output_config: Option<Value>,
}

#[derive(Serialize, Deserialize)]
struct Message {
    role: String,
    content: Vec<Content>,
}

#[derive(Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Content {
    /// Sent back exactly as it came: the signature covers the text.
    Thinking {
        thinking: String,
        signature: String,
    },
    RedactedThinking {
        data: String,
    },
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
        error: Option<StreamError>,
    },
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
pub struct Started {
    #[serde(default)]
    usage: Option<Usage>,
}

/// Token counts as Anthropic reports them: `input_tokens` are the uncached ones only.
#[derive(Clone, Copy, Default, Deserialize)]
pub struct Usage {
    #[serde(default, deserialize_with = "super::lenient_count")]
    input_tokens: Option<u64>,
    #[serde(default, deserialize_with = "super::lenient_count")]
    output_tokens: Option<u64>,
    #[serde(default, deserialize_with = "super::lenient_count")]
    cache_creation_input_tokens: Option<u64>,
    #[serde(default, deserialize_with = "super::lenient_count")]
    cache_read_input_tokens: Option<u64>,
}

impl Usage {
    /// These counts, each replaced by `later`'s where it reports one (`message_delta`'s are
    /// cumulative).
    fn updated(self, later: Usage) -> Usage {
        Usage {
            input_tokens: later.input_tokens.or(self.input_tokens),
            output_tokens: later.output_tokens.or(self.output_tokens),
            cache_creation_input_tokens: later
                .cache_creation_input_tokens
                .or(self.cache_creation_input_tokens),
            cache_read_input_tokens: later
                .cache_read_input_tokens
                .or(self.cache_read_input_tokens),
        }
    }

    /// As billed: every input token, cached ones included, with the cached ones apart.
    fn billed(self) -> app::protocol::Usage {
        let (read, write) = (
            self.cache_read_input_tokens,
            self.cache_creation_input_tokens,
        );
        app::protocol::Usage {
            input_tokens: self
                .input_tokens
                .unwrap_or(0)
                .saturating_add(read.unwrap_or(0))
                .saturating_add(write.unwrap_or(0)),
            output_tokens: self.output_tokens.unwrap_or(0),
            cache_read_tokens: read,
            cache_write_tokens: write,
            ..app::protocol::Usage::default()
        }
    }
}

/// An error event's `error`: `{"type": "overloaded_error", "message": "Overloaded"}`.
#[derive(Deserialize)]
pub struct StreamError {
    #[serde(default, rename = "type")]
    kind: Option<String>,
    #[serde(default)]
    message: Option<String>,
}

impl StreamError {
    /// The error that ends the turn, with a code for Anthropic's error types.
    fn into_error(error: Option<StreamError>) -> ProviderError {
        let (kind, message) = error
            .map(|error| (error.kind.unwrap_or_default(), error.message))
            .unwrap_or_default();
        let code = match kind.as_str() {
            "overloaded_error" => ErrorCode::Overloaded,
            "rate_limit_error" => ErrorCode::RateLimited,
            "api_error" => ErrorCode::ProviderUnavailable,
            "authentication_error" | "permission_error" => ErrorCode::ProviderAuth,
            "not_found_error" => ErrorCode::UnknownModel,
            _ => ErrorCode::ProviderError,
        };
        let message = message.unwrap_or_else(|| "unknown error".to_owned());
        let message = crate::sanitize::shorten(&message, 300)
            .map(|cut| format!("{cut}…"))
            .unwrap_or(message);
        let kind = if kind.is_empty() {
            "error".into()
        } else {
            kind
        };
        ProviderError::new(
            code,
            format!("Anthropic reported an error mid-stream ({kind}): {message}"),
        )
    }
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
    Thinking {
        #[serde(default)]
        thinking: String,
        #[serde(default)]
        signature: String,
    },
    RedactedThinking {
        data: String,
    },
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
    SignatureDelta {
        signature: String,
    },
    // Deltas of unknown blocks carry nothing to show.
    #[serde(other)]
    Other,
}

/// The content blocks by index, how many reasoning parts came so far, and the usage so far.
#[derive(Default)]
pub struct Blocks {
    kinds: BTreeMap<u64, Block>,
    thinking_parts: u32,
    usage: Usage,
}

enum Block {
    Text,
    /// Its part, and the block as it will go back: the whole text and signature.
    Thinking {
        part: u32,
        thinking: String,
        signature: String,
    },
    RedactedThinking {
        data: String,
    },
    ToolUse,
    Other,
}

impl WireFormat for Anthropic {
    const KIND: ProviderKind = ProviderKind::Anthropic;
    const PATH: &'static str = "/messages";
    type Request = Request;
    type Event = Event;
    type State = Blocks;

    fn headers(api_key: Option<&str>, options: &ModelOptions) -> Vec<(&'static str, String)> {
        let mut headers = vec![("anthropic-version", API_VERSION.to_owned())];
        headers.extend(api_key.map(|key| ("x-api-key", key.to_owned())));
        if options.interleaved_thinking == Some(true) {
            headers.push(("anthropic-beta", INTERLEAVED_BETA.to_owned()));
        }
        headers
    }

    fn request(turn: &TurnRequest) -> Request {
        let system = turn
            .messages
            .iter()
            .rev()
            .find(|m| m.role == "system")
            .and_then(|m| m.content.clone());
        let (thinking, max_tokens) = thinking(turn);
        Request {
            model: turn.model.clone(),
            max_tokens,
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
            thinking,
            temperature: turn.options.temperature,
            output_config: turn
                .options
                .reasoning_effort
                .as_ref()
                .map(|effort| serde_json::json!({ "effort": effort })),
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
                blocks.usage = message.usage.unwrap_or_default();
                *turn.usage() = blocks.usage.billed();
            }
            Event::ContentBlockStart {
                index,
                content_block,
            } => blocks.start(index, content_block, turn, sink),
            Event::ContentBlockDelta { index, delta } => blocks.delta(index, delta, turn, sink),
            Event::MessageDelta { delta, usage } => {
                if let Some(reason) = delta.and_then(|d| d.stop_reason) {
                    turn.finish_reason(reason);
                }
                if let Some(usage) = usage {
                    blocks.usage = blocks.usage.updated(usage);
                    *turn.usage() = blocks.usage.billed();
                }
            }
            Event::MessageStop => {
                turn.completed = true;
                return Ok(true);
            }
            Event::Error { error } => return Err(StreamError::into_error(error)),
            Event::Other => {}
        }
        Ok(false)
    }

    /// The turn's thinking and redacted blocks, in their order, to go back with its calls.
    fn flush(blocks: &mut Blocks, turn: &mut TurnBuilder, _sink: &mut dyn TurnSink) {
        for block in std::mem::take(&mut blocks.kinds).into_values() {
            let kept = match block {
                Block::Thinking {
                    thinking,
                    signature,
                    ..
                } => Content::Thinking {
                    thinking,
                    signature,
                },
                Block::RedactedThinking { data } => Content::RedactedThinking { data },
                _ => continue,
            };
            if let Ok(value) = serde_json::to_value(kept) {
                turn.reasoning_block(ProviderKind::Anthropic, value);
            }
        }
    }
}

/// Which thinking a model takes when nothing is configured: Claude 4.6 and later decide for
/// themselves (`adaptive`), Claude 3.7 and 4.x think on a budget, others do not think.
fn default_thinking(model: &str) -> Option<ThinkingBudget> {
    const ADAPTIVE: [&str; 3] = ["opus-4-6", "sonnet-4-6", "opus-4-7"];
    const BUDGET: [&str; 5] = ["claude-3-7", "sonnet-4", "opus-4", "haiku-4", "claude-4"];
    if ADAPTIVE.iter().any(|name| model.contains(name)) {
        Some(ThinkingBudget::Adaptive)
    } else if BUDGET.iter().any(|name| model.contains(name)) {
        Some(ThinkingBudget::Tokens(DEFAULT_THINKING_BUDGET))
    } else {
        None
    }
}

/// The request's `thinking` and `max_tokens`, which must exceed the thinking budget. Thinking is
/// on when configured (`reasoning`, `thinking_budget`), else when the model takes it and no
/// temperature is set (Anthropic refuses a temperature with thinking).
fn thinking(turn: &TurnRequest) -> (Option<Value>, u32) {
    let options = &turn.options;
    let default = default_thinking(&turn.model);
    let on = options.reasoning.unwrap_or(
        options.thinking_budget.is_some() || (default.is_some() && options.temperature.is_none()),
    );
    let budget = options
        .thinking_budget
        .or(default)
        .unwrap_or(ThinkingBudget::Tokens(DEFAULT_THINKING_BUDGET));
    match (on, budget) {
        (false, _) => (None, options.max_output_tokens.unwrap_or(MAX_TOKENS)),
        (true, ThinkingBudget::Adaptive) => (
            Some(serde_json::json!({"type": "adaptive"})),
            options
                .max_output_tokens
                .unwrap_or(DEFAULT_THINKING_BUDGET + MAX_TOKENS),
        ),
        (true, ThinkingBudget::Tokens(budget)) => {
            let max = options.max_output_tokens.unwrap_or(budget + MAX_TOKENS);
            // A configured budget is below max_output_tokens (checked at start); the default one
            // gives way to a smaller max_output_tokens.
            let budget = if budget < max { budget } else { max / 2 };
            if budget < 1024 {
                return (None, max);
            }
            (
                Some(serde_json::json!({"type": "enabled", "budget_tokens": budget})),
                max,
            )
        }
    }
}

impl Blocks {
    fn start(
        &mut self,
        index: u64,
        block: BlockStart,
        turn: &mut TurnBuilder,
        sink: &mut dyn TurnSink,
    ) {
        let kind = match block {
            BlockStart::Text => Block::Text,
            BlockStart::Thinking {
                thinking,
                signature,
            } => {
                let part = self.next_part();
                if !thinking.is_empty() {
                    turn.reasoning(part, &thinking, sink);
                }
                Block::Thinking {
                    part,
                    thinking,
                    signature,
                }
            }
            BlockStart::RedactedThinking { data } => {
                let part = self.next_part();
                turn.reasoning(part, REDACTED_REASONING, sink);
                Block::RedactedThinking { data }
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

    fn next_part(&mut self) -> u32 {
        self.thinking_parts += 1;
        self.thinking_parts - 1
    }

    fn delta(
        &mut self,
        index: u64,
        delta: BlockDelta,
        turn: &mut TurnBuilder,
        sink: &mut dyn TurnSink,
    ) {
        match (self.kinds.get_mut(&index), delta) {
            (Some(Block::Text), BlockDelta::TextDelta { text }) => turn.text(&text, sink),
            (
                Some(Block::Thinking { part, thinking, .. }),
                BlockDelta::ThinkingDelta { thinking: delta },
            ) => {
                thinking.push_str(&delta);
                turn.reasoning(*part, &delta, sink)
            }
            (
                Some(Block::Thinking { signature, .. }),
                BlockDelta::SignatureDelta { signature: delta },
            ) => signature.push_str(&delta),
            (Some(Block::ToolUse), BlockDelta::InputJsonDelta { partial_json }) => {
                turn.call(index).arguments.push_str(&partial_json)
            }
            _ => {}
        }
    }
}

/// Chat-format messages as Anthropic messages (the system prompt goes apart): an assistant turn's
/// thinking blocks first, then its text and `tool_use` blocks; tool results as `tool_result`
/// blocks, those of one turn in one user message. Consecutive assistant messages are one.
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
                let content = content_of(message);
                if content.is_empty() {
                    continue;
                }
                let role = if role == "assistant" { role } else { "user" };
                match out.last_mut() {
                    Some(last) if role == "assistant" && last.role == "assistant" => {
                        last.content.extend(content)
                    }
                    _ => out.push(Message {
                        role: role.into(),
                        content,
                    }),
                }
            }
        }
    }
    out
}

/// A user or assistant message's blocks: kept thinking, text, tool calls.
fn content_of(message: &ChatMessage) -> Vec<Content> {
    let kept = message
        .reasoning_of(ProviderKind::Anthropic)
        .filter_map(|block| Content::deserialize(block).ok())
        .filter(|block| {
            matches!(
                block,
                Content::Thinking { .. } | Content::RedactedThinking { .. }
            )
        });
    let text = message.content.iter().filter(|c| !c.is_empty());
    kept.chain(text.map(|text| Content::Text { text: text.clone() }))
        .chain(message.tool_calls.iter().map(|call| {
            Content::ToolUse {
                id: call.id.clone(),
                name: call.name.clone(),
                input: serde_json::from_str(&call.arguments)
                    .unwrap_or_else(|_| Value::Object(Default::default())),
            }
        }))
        .collect()
}

impl Message {
    fn only_results(&self) -> bool {
        self.content
            .iter()
            .all(|block| matches!(block, Content::ToolResult { .. }))
    }
}

/// An Anthropic message back in chat format: tool results become tool messages; thinking blocks
/// are left out (the inspector shows reasoning from the response).
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
            Content::Thinking { .. } | Content::RedactedThinking { .. } => {}
        }
    }
    if own.content.is_some() || !own.tool_calls.is_empty() {
        out.insert(0, own);
    }
    out
}
