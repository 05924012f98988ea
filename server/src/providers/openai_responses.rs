//! The OpenAI Responses API, streamed. Reasoning summary parts arrive with their `summary_index`
//! (`response.reasoning_summary_text.delta`), answer text as `response.output_text.delta`,
//! function calls as output items whose arguments stream in `response.function_call_arguments.*`,
//! and usage with `response.completed`.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use super::{
    http, ChatMessage, ChatProvider, ProviderError, RequestedCall, TurnOutput, TurnRequest,
    TurnSink,
};
use crate::agents::BoxFuture;

pub struct OpenAiResponses {
    client: reqwest::Client,
    url: String,
    api_key: Option<String>,
}

impl OpenAiResponses {
    pub fn new(client: reqwest::Client, base_url: &str, api_key: Option<String>) -> Self {
        OpenAiResponses {
            client,
            url: format!("{}/responses", base_url.trim_end_matches('/')),
            api_key,
        }
    }

    /// Chat-format messages as Responses input items.
    fn input(messages: &[ChatMessage]) -> Vec<Value> {
        let mut items = Vec::new();
        for message in messages {
            match message.role.as_str() {
                "tool" => items.push(json!({
                    "type": "function_call_output",
                    "call_id": message.tool_call_id,
                    "output": message.content.clone().unwrap_or_default(),
                })),
                role => {
                    if let Some(content) = message.content.as_ref().filter(|c| !c.is_empty()) {
                        items.push(json!({"role": role, "content": content}));
                    }
                    for call in &message.tool_calls {
                        items.push(json!({"type": "function_call", "call_id": call.id, "name": call.name, "arguments": call.arguments}));
                    }
                }
            }
        }
        items
    }

    fn body(request: &TurnRequest) -> Value {
        let tools: Vec<Value> = request
            .tools
            .iter()
            .map(|tool| json!({"type": "function", "name": tool.name, "description": tool.description, "parameters": tool.parameters}))
            .collect();
        json!({
            "model": request.model,
            "input": Self::input(&request.messages),
            "tools": tools,
            "stream": true,
            "reasoning": {"summary": "auto"},
        })
    }
}

impl ChatProvider for OpenAiResponses {
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
            http::read_stream(response, ResponsesState::default(), sink).await
        })
    }
}

#[derive(Default)]
struct ResponsesState {
    output: TurnOutput,
    /// Function calls by output item id: (call_id, name, arguments).
    calls: BTreeMap<u64, (String, String, String)>,
    item_index: BTreeMap<String, u64>,
    completed: bool,
}

impl http::StreamParser for ResponsesState {
    fn apply(&mut self, data: &str, sink: &mut dyn TurnSink) -> Result<bool, ProviderError> {
        if data.trim() == "[DONE]" {
            return Ok(true);
        }
        let event = http::parse_chunk(data)?;
        let text = |field: &str| {
            event
                .get(field)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        match event
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or_default()
        {
            "response.reasoning_summary_text.delta" => {
                let index = event
                    .get("summary_index")
                    .and_then(Value::as_u64)
                    .unwrap_or(0) as u32;
                let delta = text("delta");
                if index > 0
                    && !self.output.reasoning.is_empty()
                    && !self.output.reasoning.ends_with("\n\n")
                {
                    self.output.reasoning.push_str("\n\n");
                }
                self.output.reasoning.push_str(&delta);
                sink.reasoning(index, &delta);
            }
            "response.output_text.delta" => {
                let delta = text("delta");
                self.output.text.push_str(&delta);
                sink.text(&delta);
            }
            "response.output_item.added" => {
                let item = event.get("item").cloned().unwrap_or_default();
                if item.get("type").and_then(Value::as_str) == Some("function_call") {
                    let position = event
                        .get("output_index")
                        .and_then(Value::as_u64)
                        .unwrap_or(self.calls.len() as u64);
                    let field = |name: &str| {
                        item.get(name)
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                            .to_owned()
                    };
                    self.item_index.insert(field("id"), position);
                    self.calls.insert(
                        position,
                        (field("call_id"), field("name"), field("arguments")),
                    );
                }
            }
            "response.function_call_arguments.delta" => {
                if let Some(call) = self.call_for(&event) {
                    call.2.push_str(
                        event
                            .get("delta")
                            .and_then(Value::as_str)
                            .unwrap_or_default(),
                    );
                }
            }
            "response.function_call_arguments.done" => {
                let arguments = text("arguments");
                if let Some(call) = self.call_for(&event) {
                    call.2 = arguments;
                }
            }
            "response.completed" | "response.incomplete" => {
                self.completed = true;
                let response = event.get("response").cloned().unwrap_or_default();
                self.output.finish_reason = response
                    .get("status")
                    .and_then(Value::as_str)
                    .map(str::to_owned);
                if let Some(usage) = response.get("usage").filter(|u| !u.is_null()) {
                    self.output.usage = Some(app::protocol::Usage {
                        input_tokens: usage
                            .get("input_tokens")
                            .and_then(Value::as_u64)
                            .unwrap_or(0),
                        output_tokens: usage
                            .get("output_tokens")
                            .and_then(Value::as_u64)
                            .unwrap_or(0),
                        reasoning_tokens: usage
                            .pointer("/output_tokens_details/reasoning_tokens")
                            .and_then(Value::as_u64),
                    });
                }
                return Ok(true);
            }
            "response.failed" | "error" => {
                let message = event
                    .pointer("/response/error/message")
                    .or_else(|| event.pointer("/error/message"))
                    .or_else(|| event.get("message"))
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
        self.completed
    }

    fn finish(mut self, _sink: &mut dyn TurnSink) -> Result<TurnOutput, ProviderError> {
        for (position, (call_id, name, arguments)) in std::mem::take(&mut self.calls) {
            if name.is_empty() {
                return Err(ProviderError::new(
                    "malformed_stream",
                    "The provider sent a function call without a name.",
                ));
            }
            let id = if call_id.is_empty() {
                format!("call_{position}")
            } else {
                call_id
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

impl ResponsesState {
    /// The call an arguments event belongs to: by `item_id`, else by `output_index`.
    fn call_for(&mut self, event: &Value) -> Option<&mut (String, String, String)> {
        let position = event
            .get("item_id")
            .and_then(Value::as_str)
            .and_then(|id| self.item_index.get(id).copied())
            .or_else(|| event.get("output_index").and_then(Value::as_u64))?;
        self.calls.get_mut(&position)
    }
}
