//! OpenAI-compatible Chat Completions, streamed (`stream: true`). Text arrives in `delta.content`;
//! reasoning in `delta.reasoning_content` or `delta.reasoning`, or inline as `<think>…</think>`
//! (which never leaks into the answer); tool calls arrive in fragments joined by `index`; usage
//! comes with the last chunk (`stream_options.include_usage`).

use serde_json::{json, Value};

use super::{http, ChatProvider, ProviderError, RequestedCall, TurnOutput, TurnRequest, TurnSink};
use crate::agents::BoxFuture;

pub struct OpenAiChat {
    client: reqwest::Client,
    url: String,
    api_key: Option<String>,
}

impl OpenAiChat {
    pub fn new(client: reqwest::Client, base_url: &str, api_key: Option<String>) -> Self {
        OpenAiChat {
            client,
            url: format!("{}/chat/completions", base_url.trim_end_matches('/')),
            api_key,
        }
    }

    fn body(request: &TurnRequest) -> Value {
        let tools: Vec<Value> = request
            .tools
            .iter()
            .map(|tool| json!({"type": "function", "function": {"name": tool.name, "description": tool.description, "parameters": tool.parameters}}))
            .collect();
        let messages: Vec<Value> = request
            .messages
            .iter()
            .map(|message| {
                let mut out = json!({"role": message.role, "content": message.content});
                if !message.tool_calls.is_empty() {
                    out["tool_calls"] = message
                        .tool_calls
                        .iter()
                        .map(|call| json!({"id": call.id, "type": "function", "function": {"name": call.name, "arguments": call.arguments}}))
                        .collect();
                }
                if let Some(id) = &message.tool_call_id {
                    out["tool_call_id"] = json!(id);
                }
                out
            })
            .collect();
        let mut body = json!({
            "model": request.model,
            "messages": messages,
            "stream": true,
            "stream_options": {"include_usage": true},
        });
        if !tools.is_empty() {
            body["tools"] = json!(tools);
        }
        body
    }
}

impl ChatProvider for OpenAiChat {
    fn stream_turn<'a>(
        &'a self,
        request: &'a TurnRequest,
        sink: &'a mut dyn TurnSink,
    ) -> BoxFuture<'a, Result<TurnOutput, ProviderError>> {
        Box::pin(async move {
            let headers: Vec<(&str, String)> = self
                .api_key
                .iter()
                .map(|key| ("authorization", format!("Bearer {key}")))
                .collect();
            let response =
                http::send(&self.client, &self.url, &headers, &Self::body(request)).await?;
            http::read_stream(response, TurnState::default(), sink).await
        })
    }
}

/// Folds chunks into a turn.
#[derive(Default)]
struct TurnState {
    output: TurnOutput,
    think: ThinkSplitter,
    /// Tool-call fragments by `index`: (id, name, arguments).
    calls: std::collections::BTreeMap<u64, (String, String, String)>,
}

impl http::StreamParser for TurnState {
    /// Applies one `data` payload; true at `[DONE]`.
    fn apply(&mut self, data: &str, sink: &mut dyn TurnSink) -> Result<bool, ProviderError> {
        if data.trim() == "[DONE]" {
            return Ok(true);
        }
        let chunk = http::parse_chunk(data)?;
        if let Some(error) = chunk.get("error") {
            let message = error
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("unknown error");
            return Err(ProviderError::new(
                "provider_error",
                format!("The provider reported an error mid-stream: {message}"),
            ));
        }
        if let Some(usage) = chunk.get("usage").filter(|u| !u.is_null()) {
            self.output.usage = Some(app::protocol::Usage {
                input_tokens: usage
                    .get("prompt_tokens")
                    .and_then(Value::as_u64)
                    .unwrap_or(0),
                output_tokens: usage
                    .get("completion_tokens")
                    .and_then(Value::as_u64)
                    .unwrap_or(0),
                reasoning_tokens: usage
                    .pointer("/completion_tokens_details/reasoning_tokens")
                    .and_then(Value::as_u64),
            });
        }
        let Some(choice) = chunk.get("choices").and_then(|c| c.get(0)) else {
            return Ok(false);
        };
        if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
            self.output.finish_reason = Some(reason.to_owned());
        }
        let Some(delta) = choice.get("delta") else {
            return Ok(false);
        };
        for field in ["reasoning_content", "reasoning"] {
            if let Some(text) = delta.get(field).and_then(Value::as_str) {
                self.output.reasoning.push_str(text);
                sink.reasoning(0, text);
            }
        }
        if let Some(content) = delta.get("content").and_then(Value::as_str) {
            for piece in self.think.push(content) {
                self.emit(piece, sink);
            }
        }
        if let Some(calls) = delta.get("tool_calls").and_then(Value::as_array) {
            for call in calls {
                let index = call.get("index").and_then(Value::as_u64).unwrap_or(0);
                let entry = self.calls.entry(index).or_default();
                if let Some(id) = call.get("id").and_then(Value::as_str) {
                    entry.0 = id.to_owned();
                }
                if let Some(name) = call.pointer("/function/name").and_then(Value::as_str) {
                    entry.1.push_str(name);
                }
                if let Some(arguments) = call.pointer("/function/arguments").and_then(Value::as_str)
                {
                    entry.2.push_str(arguments);
                }
            }
        }
        Ok(false)
    }

    fn completed(&self) -> bool {
        self.output.finish_reason.is_some()
    }

    fn finish(mut self, sink: &mut dyn TurnSink) -> Result<TurnOutput, ProviderError> {
        for piece in self.think.flush() {
            self.emit(piece, sink);
        }
        for (index, (id, name, arguments)) in std::mem::take(&mut self.calls) {
            if name.is_empty() {
                return Err(ProviderError::new(
                    "malformed_stream",
                    "The provider sent a tool call without a name.",
                ));
            }
            let id = if id.is_empty() {
                format!("call_{index}")
            } else {
                id
            };
            self.output.tool_calls.push(RequestedCall {
                id,
                name,
                arguments,
            });
        }
        Ok(self.output)
    }
}

impl TurnState {
    fn emit(&mut self, piece: Piece, sink: &mut dyn TurnSink) {
        match piece {
            Piece::Reasoning(text) => {
                self.output.reasoning.push_str(&text);
                sink.reasoning(0, &text);
            }
            Piece::Text(text) => {
                self.output.text.push_str(&text);
                sink.text(&text);
            }
        }
    }
}

#[derive(Debug, PartialEq, Eq)]
enum Piece {
    Reasoning(String),
    Text(String),
}

/// Splits content into reasoning (inside `<think>…</think>`) and answer text, even when a tag is
/// cut across chunks.
#[derive(Default)]
struct ThinkSplitter {
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
