//! OpenAI-compatible Chat Completions, streamed (`stream: true`), in the shapes servers really
//! send (docs/providers.md, Compatibility). Text arrives in `delta.content`, a string or typed
//! parts (text, thinking); reasoning in `delta.reasoning_content`, `delta.reasoning` or
//! `delta.reasoning_details`, or inline as `<think>…</think>` (which never leaks into the
//! answer); tool calls arrive whole or in fragments, joined by `index` or by id; usage comes with
//! the last chunk (`stream_options.include_usage`), in every chunk, or not at all.

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
    /// Groq puts the usage of the last chunk here.
    #[serde(default)]
    x_groq: Option<GroqExtra>,
    /// Empty in a usage-only last chunk, and in Azure's first chunk (its prompt filter results).
    #[serde(default)]
    choices: Option<Vec<Choice>>,
}

#[derive(Deserialize)]
struct GroqExtra {
    #[serde(default)]
    usage: Option<Usage>,
}

#[derive(Deserialize)]
struct Usage {
    #[serde(default, deserialize_with = "super::lenient_count")]
    prompt_tokens: Option<u64>,
    #[serde(default, deserialize_with = "super::lenient_count")]
    completion_tokens: Option<u64>,
    #[serde(default)]
    prompt_tokens_details: Option<PromptDetails>,
    /// DeepSeek's name for the cached part of the prompt.
    #[serde(default, deserialize_with = "super::lenient_count")]
    prompt_cache_hit_tokens: Option<u64>,
    #[serde(default)]
    completion_tokens_details: Option<UsageDetails>,
}

#[derive(Deserialize)]
struct PromptDetails {
    #[serde(default, deserialize_with = "super::lenient_count")]
    cached_tokens: Option<u64>,
    /// OpenRouter's count of prompt tokens written to a cache.
    #[serde(default, deserialize_with = "super::lenient_count")]
    cache_write_tokens: Option<u64>,
}

#[derive(Deserialize)]
struct UsageDetails {
    #[serde(default, deserialize_with = "super::lenient_count")]
    reasoning_tokens: Option<u64>,
}

impl Usage {
    /// The counts as billed: cached and reasoning tokens are parts of the totals.
    fn billed(self) -> app::protocol::Usage {
        let details = self.prompt_tokens_details;
        app::protocol::Usage {
            input_tokens: self.prompt_tokens.unwrap_or(0),
            output_tokens: self.completion_tokens.unwrap_or(0),
            reasoning_tokens: self
                .completion_tokens_details
                .and_then(|details| details.reasoning_tokens),
            cache_read_tokens: details
                .as_ref()
                .and_then(|details| details.cached_tokens)
                .or(self.prompt_cache_hit_tokens),
            cache_write_tokens: details.and_then(|details| details.cache_write_tokens),
        }
    }
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
    /// OpenRouter's structured reasoning (sent beside `reasoning`, which carries the same text).
    #[serde(default)]
    reasoning_details: Option<Vec<ReasoningDetail>>,
    #[serde(default)]
    content: Option<Content>,
    /// OpenAI's refusal message: the model's answer when it declines.
    #[serde(default)]
    refusal: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<CallFragment>>,
}

/// `delta.content`: a string, or an array of typed parts (Mistral's Magistral models).
#[derive(Deserialize)]
#[serde(untagged)]
enum Content {
    Text(String),
    Parts(Vec<ContentPart>),
}

/// One typed part of `delta.content`; kinds other than text and thinking (images, references)
/// are counted and left out.
#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum ContentPart {
    Text {
        #[serde(default)]
        text: String,
    },
    Thinking {
        #[serde(default)]
        thinking: Thinking,
    },
    #[serde(other)]
    Other,
}

/// A thinking part's content: text parts, or a plain string.
#[derive(Default, Deserialize)]
#[serde(untagged)]
enum Thinking {
    #[default]
    Empty,
    Text(String),
    Parts(Vec<ContentPart>),
}

/// One entry of `reasoning_details`: readable text or a summary; encrypted entries carry nothing
/// to show.
#[derive(Deserialize)]
struct ReasoningDetail {
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    summary: Option<String>,
}

#[derive(Deserialize)]
struct CallFragment {
    /// Absent on some servers (Gemini's): the call is then found by its id, or is the last one.
    #[serde(default)]
    index: Option<u64>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<FunctionFragment>,
}

#[derive(Default, Deserialize)]
struct FunctionFragment {
    #[serde(default)]
    name: Option<String>,
    /// A JSON text as the API says; a server that sends an object gets it written out.
    #[serde(default)]
    arguments: Option<Value>,
}

/// What the stream remembers: the `<think>` splitter, which position each call id has, and the
/// content parts left out.
#[derive(Default)]
pub struct ChatState {
    think: ThinkSplitter,
    call_ids: std::collections::BTreeMap<String, u64>,
    last_call: Option<u64>,
    ignored_parts: u64,
}

impl WireFormat for OpenAiChat {
    const KIND: ProviderKind = ProviderKind::OpenaiChat;
    const PATH: &'static str = "/chat/completions";
    type Request = Request;
    type Event = Chunk;
    type State = ChatState;

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
        state: &mut ChatState,
        chunk: Chunk,
        turn: &mut TurnBuilder,
        sink: &mut dyn TurnSink,
    ) -> Result<bool, ProviderError> {
        if chunk.error.is_some() {
            return Err(WireError::into_error(chunk.error));
        }
        // Some servers repeat the usage so far in every chunk: the last one counts.
        if let Some(usage) = chunk.usage.or(chunk.x_groq.and_then(|extra| extra.usage)) {
            *turn.usage() = usage.billed();
        }
        let Some(choice) = chunk.choices.and_then(|c| c.into_iter().next()) else {
            return Ok(false);
        };
        if let Some(delta) = choice.delta {
            apply_delta(state, delta, turn, sink);
        }
        if let Some(reason) = choice.finish_reason {
            if reason == "content_filter" {
                return Err(ProviderError::new(
                    app::protocol::ErrorCode::ContentFilter,
                    "The provider's content filter stopped the answer.",
                ));
            }
            turn.finish_reason(reason);
            turn.completed = true;
        }
        Ok(false)
    }

    fn flush(state: &mut ChatState, turn: &mut TurnBuilder, sink: &mut dyn TurnSink) {
        for piece in state.think.flush() {
            piece.emit(turn, sink);
        }
        if state.ignored_parts > 0 {
            tracing::info!(
                parts = state.ignored_parts,
                "content parts that are neither text nor thinking (images, references) were left out"
            );
        }
    }
}

fn apply_delta(
    state: &mut ChatState,
    delta: Delta,
    turn: &mut TurnBuilder,
    sink: &mut dyn TurnSink,
) {
    // One field per chunk: servers that send two (`reasoning` beside `reasoning_details` or
    // `reasoning_content`) send the same text twice.
    let reasoning = [delta.reasoning_content, delta.reasoning]
        .into_iter()
        .flatten()
        .find(|text| !text.is_empty())
        .or_else(|| {
            let details = delta.reasoning_details?.into_iter();
            let text: String = details.filter_map(|d| d.text.or(d.summary)).collect();
            (!text.is_empty()).then_some(text)
        });
    if let Some(text) = reasoning {
        turn.reasoning(0, &text, sink);
    }
    match delta.content {
        Some(Content::Text(content)) => {
            for piece in state.think.push(&content) {
                piece.emit(turn, sink);
            }
        }
        Some(Content::Parts(parts)) => content_parts(state, parts, turn, sink),
        None => {}
    }
    if let Some(refusal) = delta.refusal.filter(|text| !text.is_empty()) {
        turn.text(&refusal, sink);
    }
    for fragment in delta.tool_calls.into_iter().flatten() {
        call_fragment(state, fragment, turn);
    }
}

/// Typed content parts: text is text (through the `<think>` splitter), thinking is reasoning.
fn content_parts(
    state: &mut ChatState,
    parts: Vec<ContentPart>,
    turn: &mut TurnBuilder,
    sink: &mut dyn TurnSink,
) {
    for part in parts {
        match part {
            ContentPart::Text { text } => {
                for piece in state.think.push(&text) {
                    piece.emit(turn, sink);
                }
            }
            ContentPart::Thinking { thinking } => {
                let text = thinking_text(thinking);
                if !text.is_empty() {
                    turn.reasoning(0, &text, sink);
                }
            }
            ContentPart::Other => state.ignored_parts += 1,
        }
    }
}

fn thinking_text(thinking: Thinking) -> String {
    match thinking {
        Thinking::Empty => String::new(),
        Thinking::Text(text) => text,
        Thinking::Parts(parts) => parts
            .into_iter()
            .filter_map(|part| match part {
                ContentPart::Text { text } => Some(text),
                _ => None,
            })
            .collect(),
    }
}

/// Joins a tool call fragment to its call: by `index`, else by its id, else the last call (or a
/// new one when the fragment carries a new id).
fn call_fragment(state: &mut ChatState, fragment: CallFragment, turn: &mut TurnBuilder) {
    let id = fragment.id.filter(|id| !id.is_empty());
    let known = id.as_ref().and_then(|id| state.call_ids.get(id).copied());
    let position = match (fragment.index, known) {
        (Some(index), _) => index,
        (None, Some(position)) => position,
        (None, None) if id.is_some() || state.last_call.is_none() => turn.next_call_position(),
        (None, None) => state.last_call.unwrap_or_default(),
    };
    state.last_call = Some(position);
    let call = turn.call(position);
    if let Some(id) = id {
        state.call_ids.insert(id.clone(), position);
        call.id = id;
    }
    let function = fragment.function.unwrap_or_default();
    if let Some(name) = function.name.filter(|name| !name.is_empty()) {
        // Some servers repeat the whole name in every fragment.
        if call.name != name {
            call.name.push_str(&name);
        }
    }
    match function.arguments {
        Some(Value::String(text)) => call.arguments.push_str(&text),
        Some(Value::Null) | None => {}
        Some(object) => call.arguments = object.to_string(),
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

/// Splits content into reasoning (inside `<think>…</think>`, or Gemini's `<thought>…</thought>`)
/// and answer text, even when a tag is cut across chunks.
#[derive(Default)]
pub struct ThinkSplitter {
    /// The closing tag awaited while inside a reasoning block.
    closing: Option<&'static str>,
    pending: String,
}

/// Opening tags and their closing ones.
const TAGS: [(&str, &str); 2] = [("<think>", "</think>"), ("<thought>", "</thought>")];

impl ThinkSplitter {
    fn push(&mut self, content: &str) -> Vec<Piece> {
        self.pending.push_str(content);
        let mut pieces = Vec::new();
        loop {
            let found = match self.closing {
                Some(close) => self.pending.find(close).map(|at| (at, close.len(), None)),
                None => TAGS
                    .iter()
                    .filter_map(|(open, close)| {
                        self.pending
                            .find(open)
                            .map(|at| (at, open.len(), Some(*close)))
                    })
                    .min_by_key(|(at, _, _)| *at),
            };
            if let Some((at, length, next)) = found {
                let before: String = self.pending[..at].to_owned();
                self.pending.drain(..at + length);
                self.piece(before, &mut pieces);
                self.closing = next;
                continue;
            }
            // Keep a tail that could be the start of a tag; release the rest.
            let keep = self.possible_tag_start();
            let cut = self.pending.len() - keep;
            let release: String = self.pending[..cut].to_owned();
            self.pending.drain(..cut);
            self.piece(release, &mut pieces);
            return pieces;
        }
    }

    /// The length of the longest tail of `pending` that begins an awaited tag.
    fn possible_tag_start(&self) -> usize {
        let tags: Vec<&str> = match self.closing {
            Some(close) => vec![close],
            None => TAGS.iter().map(|(open, _)| *open).collect(),
        };
        tags.iter()
            .filter_map(|tag| {
                (1..tag.len())
                    .rev()
                    .find(|n| self.pending.ends_with(&tag[..*n]))
            })
            .max()
            .unwrap_or(0)
    }

    fn flush(&mut self) -> Vec<Piece> {
        let mut pieces = Vec::new();
        let rest = std::mem::take(&mut self.pending);
        self.piece(rest, &mut pieces);
        pieces
    }

    fn piece(&self, text: String, pieces: &mut Vec<Piece>) {
        if !text.is_empty() {
            pieces.push(if self.closing.is_some() {
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
        let (reasoning, text) = split_all(&["<thou", "ght>Gemini's</thought", ">Answer <b>"]);
        assert_eq!(
            (reasoning.as_str(), text.as_str()),
            ("Gemini's", "Answer <b>")
        );
    }
}
