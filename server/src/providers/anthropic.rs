//! Anthropic Messages, streamed. Thinking blocks become reasoning parts (one part per block), text
//! blocks answer text, `tool_use` blocks tool calls whose input JSON streams in
//! `input_json_delta` fragments; usage comes in `message_start` and `message_delta`.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use super::{
    http, ChatMessage, ChatProvider, ProviderError, RequestedCall, TurnOutput, TurnRequest,
    TurnSink,
};
use crate::agents::BoxFuture;

const API_VERSION: &str = "2023-06-01";
const MAX_TOKENS: u32 = 8192;

pub struct Anthropic {
    client: reqwest::Client,
    url: String,
    api_key: Option<String>,
}

impl Anthropic {
    pub fn new(client: reqwest::Client, base_url: &str, api_key: Option<String>) -> Self {
        Anthropic {
            client,
            url: format!("{}/messages", base_url.trim_end_matches('/')),
            api_key,
        }
    }

    /// Chat-format messages as Anthropic messages: the system prompt apart; tool calls as
    /// `tool_use` blocks; tool results as `tool_result` blocks in a user message.
    fn messages(messages: &[ChatMessage]) -> (Option<String>, Vec<Value>) {
        let mut system = None;
        let mut out: Vec<Value> = Vec::new();
        for message in messages {
            match message.role.as_str() {
                "system" => system = message.content.clone(),
                "tool" => {
                    let block = json!({"type": "tool_result", "tool_use_id": message.tool_call_id, "content": message.content.clone().unwrap_or_default()});
                    // Results of one turn go together in one user message.
                    match out.last_mut() {
                        Some(last)
                            if last["role"] == "user"
                                && last["content"].as_array().is_some_and(|c| {
                                    c.iter().all(|b| b["type"] == "tool_result")
                                }) =>
                        {
                            if let Some(content) = last["content"].as_array_mut() {
                                content.push(block);
                            }
                        }
                        _ => out.push(json!({"role": "user", "content": [block]})),
                    }
                }
                role => {
                    let mut blocks = Vec::new();
                    if let Some(text) = message.content.as_ref().filter(|c| !c.is_empty()) {
                        blocks.push(json!({"type": "text", "text": text}));
                    }
                    for call in &message.tool_calls {
                        let input: Value =
                            serde_json::from_str(&call.arguments).unwrap_or_else(|_| json!({}));
                        blocks.push(json!({"type": "tool_use", "id": call.id, "name": call.name, "input": input}));
                    }
                    if !blocks.is_empty() {
                        out.push(json!({"role": if role == "assistant" { "assistant" } else { "user" }, "content": blocks}));
                    }
                }
            }
        }
        (system, out)
    }

    fn body(request: &TurnRequest) -> Value {
        let (system, messages) = Self::messages(&request.messages);
        let tools: Vec<Value> = request
            .tools
            .iter()
            .map(|tool| json!({"name": tool.name, "description": tool.description, "input_schema": tool.parameters}))
            .collect();
        let mut body = json!({"model": request.model, "max_tokens": MAX_TOKENS, "messages": messages, "stream": true});
        if !tools.is_empty() {
            body["tools"] = Value::Array(tools);
        }
        if let Some(system) = system {
            body["system"] = Value::String(system);
        }
        body
    }
}

impl ChatProvider for Anthropic {
    fn stream_turn<'a>(
        &'a self,
        request: &'a TurnRequest,
        sink: &'a mut dyn TurnSink,
    ) -> BoxFuture<'a, Result<TurnOutput, ProviderError>> {
        Box::pin(async move {
            let mut headers = vec![("anthropic-version", API_VERSION.to_owned())];
            if let Some(key) = &self.api_key {
                headers.push(("x-api-key", key.clone()));
            }
            let response =
                http::send(&self.client, &self.url, &headers, &Self::body(request)).await?;
            http::read_stream(response, MessagesState::default(), sink).await
        })
    }
}

#[derive(Default)]
struct MessagesState {
    output: TurnOutput,
    /// Content blocks by index: what kind each is.
    blocks: BTreeMap<u64, Block>,
    /// Thinking blocks seen so far: each is one reasoning part.
    thinking_parts: u32,
    input_tokens: u64,
    output_tokens: u64,
    stopped: bool,
}

enum Block {
    Text,
    Thinking(u32),
    ToolUse {
        id: String,
        name: String,
        input: String,
    },
    Other,
}

impl http::StreamParser for MessagesState {
    fn apply(&mut self, data: &str, sink: &mut dyn TurnSink) -> Result<bool, ProviderError> {
        let event = http::parse_chunk(data)?;
        let index = event.get("index").and_then(Value::as_u64).unwrap_or(0);
        match event
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or_default()
        {
            "message_start" => {
                let usage = event.pointer("/message/usage").cloned().unwrap_or_default();
                self.input_tokens = usage
                    .get("input_tokens")
                    .and_then(Value::as_u64)
                    .unwrap_or(0);
                self.output_tokens = usage
                    .get("output_tokens")
                    .and_then(Value::as_u64)
                    .unwrap_or(0);
            }
            "content_block_start" => {
                let block = event.get("content_block").cloned().unwrap_or_default();
                let field = |name: &str| {
                    block
                        .get(name)
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned()
                };
                let kind = match block
                    .get("type")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                {
                    "text" => Block::Text,
                    "thinking" => {
                        self.thinking_parts += 1;
                        Block::Thinking(self.thinking_parts - 1)
                    }
                    "tool_use" => Block::ToolUse {
                        id: field("id"),
                        name: field("name"),
                        input: String::new(),
                    },
                    _ => Block::Other,
                };
                self.blocks.insert(index, kind);
            }
            "content_block_delta" => {
                let delta = event.get("delta").cloned().unwrap_or_default();
                let field = |name: &str| {
                    delta
                        .get(name)
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned()
                };
                match (
                    self.blocks.get_mut(&index),
                    delta
                        .get("type")
                        .and_then(Value::as_str)
                        .unwrap_or_default(),
                ) {
                    (Some(Block::Text), "text_delta") => {
                        let text = field("text");
                        self.output.text.push_str(&text);
                        sink.text(&text);
                    }
                    (Some(Block::Thinking(part)), "thinking_delta") => {
                        let part = *part;
                        let text = field("thinking");
                        if part > 0
                            && !self.output.reasoning.is_empty()
                            && !self.output.reasoning.ends_with("\n\n")
                        {
                            self.output.reasoning.push_str("\n\n");
                        }
                        self.output.reasoning.push_str(&text);
                        sink.reasoning(part, &text);
                    }
                    (Some(Block::ToolUse { input, .. }), "input_json_delta") => {
                        input.push_str(&field("partial_json"))
                    }
                    // Signatures and deltas of unknown blocks carry nothing to show.
                    _ => {}
                }
            }
            "message_delta" => {
                if let Some(reason) = event.pointer("/delta/stop_reason").and_then(Value::as_str) {
                    self.output.finish_reason = Some(reason.to_owned());
                }
                if let Some(tokens) = event
                    .pointer("/usage/output_tokens")
                    .and_then(Value::as_u64)
                {
                    self.output_tokens = tokens;
                }
            }
            "message_stop" => {
                self.stopped = true;
                return Ok(true);
            }
            "error" => {
                let message = event
                    .pointer("/error/message")
                    .and_then(Value::as_str)
                    .unwrap_or("unknown error");
                return Err(ProviderError::new(
                    "provider_error",
                    format!("The provider reported an error mid-stream: {message}"),
                ));
            }
            _ => {}
        }
        Ok(false)
    }

    fn completed(&self) -> bool {
        self.stopped
    }

    fn finish(mut self, _sink: &mut dyn TurnSink) -> Result<TurnOutput, ProviderError> {
        for block in std::mem::take(&mut self.blocks).into_values() {
            if let Block::ToolUse { id, name, input } = block {
                let arguments = if input.trim().is_empty() {
                    "{}".to_owned()
                } else {
                    input
                };
                self.output.tool_calls.push(RequestedCall {
                    id,
                    name,
                    arguments,
                });
            }
        }
        self.output.usage = Some(app::protocol::Usage {
            input_tokens: self.input_tokens,
            output_tokens: self.output_tokens,
            reasoning_tokens: None,
        });
        Ok(self.output)
    }
}
