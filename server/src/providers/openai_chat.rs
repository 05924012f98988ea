//! OpenAI-compatible Chat Completions, streamed (`stream: true`). Text arrives in `delta.content`;
//! reasoning in `delta.reasoning_content` or `delta.reasoning`, or inline as `<think>…</think>`
//! (which never leaks into the answer); tool calls arrive in fragments joined by `index`; usage
//! comes with the last chunk (`stream_options.include_usage`).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{
    provider::{TurnBuilder, WireError, WireFormat},
    ChatMessage, ProviderError, ProviderKind, RequestedCall, TurnRequest, TurnSink,
};

pub struct OpenAiChat;

#[derive(Serialize, Deserialize)]
pub struct Request {
    model: String,
    messages: Vec<Message>,
    #[serde(default)]
    stream: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    stream_options: Option<StreamOptions>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    tools: Vec<Tool>,
    /// From the model's options (docs/providers.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    reasoning_effort: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    max_completion_tokens: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
}

#[derive(Serialize, Deserialize)]
struct StreamOptions {
    include_usage: bool,
}

#[derive(Serialize, Deserialize)]
struct Message {
    role: String,
    content: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    tool_calls: Vec<ToolCall>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    tool_call_id: Option<String>,
}

#[derive(Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum ToolCall {
    Function { id: String, function: Function },
}

#[derive(Serialize, Deserialize)]
struct Function {
    name: String,
    arguments: String,
}

#[derive(Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Tool {
    Function { function: FunctionSchema },
}

#[derive(Serialize, Deserialize)]
struct FunctionSchema {
    name: String,
    description: String,
    parameters: Value,
}

/// One `chat.completion.chunk`.
#[derive(Deserialize)]
pub struct Chunk {
    #[serde(default)]
    error: Option<WireError>,
    #[serde(default)]
    usage: Option<Usage>,
    #[serde(default)]
    choices: Option<Vec<Choice>>,
}

#[derive(Deserialize)]
struct Usage {
    #[serde(default, deserialize_with = "super::lenient_count")]
    prompt_tokens: Option<u64>,
    #[serde(default, deserialize_with = "super::lenient_count")]
    completion_tokens: Option<u64>,
    #[serde(default)]
    completion_tokens_details: Option<UsageDetails>,
}

#[derive(Deserialize)]
struct UsageDetails {
    #[serde(default, deserialize_with = "super::lenient_count")]
    reasoning_tokens: Option<u64>,
}

#[derive(Deserialize)]
struct Choice {
    #[serde(default)]
    finish_reason: Option<String>,
    #[serde(default)]
    delta: Option<Delta>,
}

#[derive(Deserialize)]
struct Delta {
    #[serde(default)]
    reasoning_content: Option<String>,
    #[serde(default)]
    reasoning: Option<String>,
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<CallFragment>>,
}

#[derive(Deserialize)]
struct CallFragment {
    #[serde(default)]
    index: u64,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<FunctionFragment>,
}

#[derive(Default, Deserialize)]
struct FunctionFragment {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<String>,
}

impl WireFormat for OpenAiChat {
    const KIND: ProviderKind = ProviderKind::OpenaiChat;
    const PATH: &'static str = "/chat/completions";
    type Request = Request;
    type Event = Chunk;
    type State = ThinkSplitter;

    fn request(turn: &TurnRequest) -> Request {
        Request {
            model: turn.model.clone(),
            messages: turn.messages.iter().map(Message::from).collect(),
            stream: true,
            stream_options: Some(StreamOptions {
                include_usage: true,
            }),
            tools: turn
                .tools
                .iter()
                .map(|tool| Tool::Function {
                    function: FunctionSchema {
                        name: tool.name.clone(),
                        description: tool.description.clone(),
                        parameters: tool.parameters.clone(),
                    },
                })
                .collect(),
            reasoning_effort: turn.options.reasoning_effort.clone(),
            max_completion_tokens: turn.options.max_output_tokens,
            temperature: turn.options.temperature,
        }
    }

    fn conversation(request: Request) -> Vec<ChatMessage> {
        request
            .messages
            .into_iter()
            .map(ChatMessage::from)
            .collect()
    }

    fn apply(
        think: &mut ThinkSplitter,
        chunk: Chunk,
        turn: &mut TurnBuilder,
        sink: &mut dyn TurnSink,
    ) -> Result<bool, ProviderError> {
        if chunk.error.is_some() {
            return Err(WireError::into_error(chunk.error));
        }
        if let Some(usage) = chunk.usage {
            *turn.usage() = app::protocol::Usage {
                input_tokens: usage.prompt_tokens.unwrap_or(0),
                output_tokens: usage.completion_tokens.unwrap_or(0),
                reasoning_tokens: usage
                    .completion_tokens_details
                    .and_then(|details| details.reasoning_tokens),
                ..app::protocol::Usage::default()
            };
        }
        let Some(choice) = chunk.choices.and_then(|c| c.into_iter().next()) else {
            return Ok(false);
        };
        if let Some(reason) = choice.finish_reason {
            turn.finish_reason(reason);
            turn.completed = true;
        }
        if let Some(delta) = choice.delta {
            apply_delta(think, delta, turn, sink);
        }
        Ok(false)
    }

    fn flush(think: &mut ThinkSplitter, turn: &mut TurnBuilder, sink: &mut dyn TurnSink) {
        for piece in think.flush() {
            piece.emit(turn, sink);
        }
    }
}

fn apply_delta(
    think: &mut ThinkSplitter,
    delta: Delta,
    turn: &mut TurnBuilder,
    sink: &mut dyn TurnSink,
) {
    for text in [delta.reasoning_content, delta.reasoning]
        .into_iter()
        .flatten()
    {
        turn.reasoning(0, &text, sink);
    }
    if let Some(content) = delta.content {
        for piece in think.push(&content) {
            piece.emit(turn, sink);
        }
    }
    for fragment in delta.tool_calls.into_iter().flatten() {
        let call = turn.call(fragment.index);
        if let Some(id) = fragment.id {
            call.id = id;
        }
        let function = fragment.function.unwrap_or_default();
        call.name
            .push_str(function.name.as_deref().unwrap_or_default());
        call.arguments
            .push_str(function.arguments.as_deref().unwrap_or_default());
    }
}

impl From<&ChatMessage> for Message {
    fn from(message: &ChatMessage) -> Self {
        Message {
            role: message.role.clone(),
            content: message.content.clone(),
            tool_calls: message
                .tool_calls
                .iter()
                .map(|call| ToolCall::Function {
                    id: call.id.clone(),
                    function: Function {
                        name: call.name.clone(),
                        arguments: call.arguments.clone(),
                    },
                })
                .collect(),
            tool_call_id: message.tool_call_id.clone(),
        }
    }
}

impl From<Message> for ChatMessage {
    fn from(message: Message) -> Self {
        ChatMessage {
            role: message.role,
            content: message.content,
            tool_calls: message
                .tool_calls
                .into_iter()
                .map(|ToolCall::Function { id, function }| RequestedCall {
                    id,
                    name: function.name,
                    arguments: function.arguments,
                })
                .collect(),
            tool_call_id: message.tool_call_id,
            reasoning: Vec::new(),
        }
    }
}

#[derive(Debug, PartialEq, Eq)]
enum Piece {
    Reasoning(String),
    Text(String),
}

impl Piece {
    fn emit(self, turn: &mut TurnBuilder, sink: &mut dyn TurnSink) {
        match self {
            Piece::Reasoning(text) => turn.reasoning(0, &text, sink),
            Piece::Text(text) => turn.text(&text, sink),
        }
    }
}

/// Splits content into reasoning (inside `<think>…</think>`) and answer text, even when a tag is
/// cut across chunks.
#[derive(Default)]
pub struct ThinkSplitter {
    thinking: bool,
    pending: String,
}

const OPEN: &str = "<think>";
const CLOSE: &str = "</think>";

impl ThinkSplitter {
    fn push(&mut self, content: &str) -> Vec<Piece> {
        self.pending.push_str(content);
        let mut pieces = Vec::new();
        loop {
            let tag = if self.thinking { CLOSE } else { OPEN };
            if let Some(at) = self.pending.find(tag) {
                let before: String = self.pending[..at].to_owned();
                self.pending.drain(..at + tag.len());
                self.piece(before, &mut pieces);
                self.thinking = !self.thinking;
                continue;
            }
            // Keep a tail that could be the start of the tag; release the rest.
            let keep = (1..tag.len())
                .rev()
                .find(|n| self.pending.ends_with(&tag[..*n]))
                .unwrap_or(0);
            let cut = self.pending.len() - keep;
            let release: String = self.pending[..cut].to_owned();
            self.pending.drain(..cut);
            self.piece(release, &mut pieces);
            return pieces;
        }
    }

    fn flush(&mut self) -> Vec<Piece> {
        let mut pieces = Vec::new();
        let rest = std::mem::take(&mut self.pending);
        self.piece(rest, &mut pieces);
        pieces
    }

    fn piece(&self, text: String, pieces: &mut Vec<Piece>) {
        if !text.is_empty() {
            pieces.push(if self.thinking {
                Piece::Reasoning(text)
            } else {
                Piece::Text(text)
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split_all(chunks: &[&str]) -> (String, String) {
        let mut splitter = ThinkSplitter::default();
        let mut pieces: Vec<Piece> = chunks
            .iter()
            .flat_map(|chunk| splitter.push(chunk))
            .collect();
        pieces.extend(splitter.flush());
        let mut reasoning = String::new();
        let mut text = String::new();
        for piece in pieces {
            match piece {
                Piece::Reasoning(r) => reasoning.push_str(&r),
                Piece::Text(t) => text.push_str(&t),
            }
        }
        (reasoning, text)
    }

    #[test]
    fn think_tags_split_across_chunks_never_leak_into_the_answer() {
        let whole = "<think>Plan: grep, then read.</think>The answer is 42 < 43.";
        for split in 0..whole.len() {
            let (a, b) = whole.split_at(split);
            let (reasoning, text) = split_all(&[a, b]);
            assert_eq!(reasoning, "Plan: grep, then read.", "split at {split}");
            assert_eq!(text, "The answer is 42 < 43.", "split at {split}");
        }
        let (reasoning, text) =
            split_all(&["<", "t", "h", "i", "n", "k", ">x", "</", "think", ">y"]);
        assert_eq!((reasoning.as_str(), text.as_str()), ("x", "y"));
    }
}
