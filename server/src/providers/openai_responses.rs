//! The OpenAI Responses API, streamed. Reasoning summary parts arrive with their `summary_index`
//! (`response.reasoning_summary_text.delta`), answer text as `response.output_text.delta`,
//! function calls as output items whose arguments stream in `response.function_call_arguments.*`,
//! and usage with `response.completed`. Full reasoning text (`response.reasoning_text.delta`, as
//! open-weight servers send it) is reasoning too. With reasoning on, the request asks for the
//! encrypted reasoning (`include`, `store: false`); each `reasoning` output item is kept as it came
//! and sent back before the function calls that followed it.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{
    provider::{TurnBuilder, WireError, WireFormat},
    ChatMessage, ProviderError, ProviderKind, RequestedCall, TurnRequest, TurnSink,
};

pub struct OpenAiResponses;

#[derive(Serialize, Deserialize)]
pub struct Request {
    model: String,
    input: Vec<Item>,
    #[serde(default)]
    tools: Vec<Tool>,
    #[serde(default)]
    stream: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    reasoning: Option<ReasoningOptions>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    include: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    store: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    max_output_tokens: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
}

#[derive(Serialize, Deserialize)]
struct ReasoningOptions {
    summary: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    effort: Option<String>,
}

/// An input item: a message, a call the model made, or a call's output.
#[derive(Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Item {
    Message {
        role: String,
        content: String,
    },
    FunctionCall {
        call_id: String,
        name: String,
        arguments: String,
    },
    FunctionCallOutput {
        call_id: String,
        output: String,
    },
    /// A reasoning item as the model sent it (id, summary, encrypted content), sent back as it is.
    Reasoning {
        #[serde(flatten)]
        item: serde_json::Map<String, Value>,
    },
}

#[derive(Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Tool {
    Function {
        name: String,
        description: String,
        parameters: Value,
    },
}

/// One streamed event, by its `type`.
#[derive(Deserialize)]
#[serde(tag = "type")]
pub enum Event {
    #[serde(rename = "response.reasoning_summary_text.delta")]
    ReasoningDelta {
        #[serde(default)]
        summary_index: u32,
        delta: String,
    },
    #[serde(rename = "response.reasoning_text.delta")]
    ReasoningTextDelta {
        #[serde(default)]
        content_index: u32,
        delta: String,
    },
    #[serde(rename = "response.output_text.delta")]
    TextDelta { delta: String },
    #[serde(rename = "response.output_item.done")]
    ItemDone { item: Value },
    #[serde(rename = "response.output_item.added")]
    ItemAdded {
        #[serde(default)]
        output_index: Option<u64>,
        item: OutputItem,
    },
    #[serde(rename = "response.function_call_arguments.delta")]
    ArgumentsDelta {
        #[serde(default)]
        item_id: Option<String>,
        #[serde(default)]
        output_index: Option<u64>,
        delta: String,
    },
    #[serde(rename = "response.function_call_arguments.done")]
    ArgumentsDone {
        #[serde(default)]
        item_id: Option<String>,
        #[serde(default)]
        output_index: Option<u64>,
        arguments: String,
    },
    #[serde(rename = "response.completed", alias = "response.incomplete")]
    Completed { response: Outcome },
    #[serde(rename = "response.failed")]
    Failed { response: FailedResponse },
    #[serde(rename = "error")]
    Error {
        #[serde(default)]
        error: Option<WireError>,
        #[serde(default)]
        message: Option<String>,
        #[serde(default)]
        code: Option<Value>,
    },
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum OutputItem {
    FunctionCall {
        #[serde(default)]
        id: String,
        #[serde(default)]
        call_id: String,
        #[serde(default)]
        name: String,
        #[serde(default)]
        arguments: String,
    },
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
pub struct Outcome {
    #[serde(default)]
    status: Option<String>,
    #[serde(default)]
    usage: Option<Usage>,
}

#[derive(Deserialize)]
pub struct FailedResponse {
    #[serde(default)]
    error: Option<WireError>,
}

#[derive(Deserialize)]
pub struct Usage {
    #[serde(default, deserialize_with = "super::lenient_count")]
    input_tokens: Option<u64>,
    #[serde(default, deserialize_with = "super::lenient_count")]
    output_tokens: Option<u64>,
    #[serde(default)]
    input_tokens_details: Option<InputDetails>,
    #[serde(default)]
    output_tokens_details: Option<UsageDetails>,
}

#[derive(Deserialize)]
pub struct InputDetails {
    #[serde(default, deserialize_with = "super::lenient_count")]
    cached_tokens: Option<u64>,
}

#[derive(Deserialize)]
pub struct UsageDetails {
    #[serde(default, deserialize_with = "super::lenient_count")]
    reasoning_tokens: Option<u64>,
}

/// Output positions of function calls by their item id.
#[derive(Default)]
pub struct Items(BTreeMap<String, u64>);

impl WireFormat for OpenAiResponses {
    const KIND: ProviderKind = ProviderKind::OpenaiResponses;
    const PATH: &'static str = "/responses";
    type Request = Request;
    type Event = Event;
    type State = Items;

    fn request(turn: &TurnRequest) -> Request {
        let options = &turn.options;
        let reasoning = options
            .reasoning
            .unwrap_or(options.reasoning_effort.is_some() || reasons_by_name(&turn.model));
        Request {
            model: turn.model.clone(),
            input: turn.messages.iter().flat_map(items).collect(),
            tools: turn
                .tools
                .iter()
                .map(|tool| Tool::Function {
                    name: tool.name.clone(),
                    description: tool.description.clone(),
                    parameters: tool.parameters.clone(),
                })
                .collect(),
            stream: true,
            reasoning: reasoning.then(|| ReasoningOptions {
                summary: "auto".into(),
                effort: options.reasoning_effort.clone(),
            }),
            include: reasoning
                .then(|| "reasoning.encrypted_content".to_owned())
                .into_iter()
                .collect(),
            store: reasoning.then_some(false),
            max_output_tokens: options.max_output_tokens,
            temperature: options.temperature,
        }
    }

    fn conversation(request: Request) -> Vec<ChatMessage> {
        let mut messages: Vec<ChatMessage> = Vec::new();
        for item in request.input {
            match item {
                Item::Message { role, content } => messages.push(ChatMessage::text(&role, content)),
                Item::FunctionCall {
                    call_id,
                    name,
                    arguments,
                } => {
                    let call = RequestedCall {
                        id: call_id,
                        name,
                        arguments,
                    };
                    match messages.last_mut() {
                        Some(last) if last.role == "assistant" => last.tool_calls.push(call),
                        _ => messages.push(ChatMessage {
                            content: None,
                            tool_calls: vec![call],
                            ..ChatMessage::text("assistant", "")
                        }),
                    }
                }
                Item::FunctionCallOutput { call_id, output } => messages.push(ChatMessage {
                    tool_call_id: Some(call_id),
                    ..ChatMessage::text("tool", output)
                }),
                Item::Reasoning { .. } => {}
            }
        }
        messages
    }

    fn apply(
        items: &mut Items,
        event: Event,
        turn: &mut TurnBuilder,
        sink: &mut dyn TurnSink,
    ) -> Result<bool, ProviderError> {
        match event {
            Event::Completed { response } => {
                completed(turn, response);
                Ok(true)
            }
            Event::Failed { response } => Err(WireError::into_error(response.error)),
            Event::Error {
                error,
                message,
                code,
            } => Err(stream_error(error, message, code)),
            output => {
                items.output(output, turn, sink);
                Ok(false)
            }
        }
    }
}

impl Items {
    /// An event of the turn's output (text, reasoning, a call and its arguments) into the turn.
    fn output(&mut self, event: Event, turn: &mut TurnBuilder, sink: &mut dyn TurnSink) {
        match event {
            Event::ReasoningDelta {
                summary_index,
                delta,
            } => turn.reasoning(summary_index, &delta, sink),
            Event::ReasoningTextDelta {
                content_index,
                delta,
            } => turn.reasoning(content_index, &delta, sink),
            Event::TextDelta { delta } => turn.text(&delta, sink),
            Event::ItemDone { item } => {
                if item["type"] == "reasoning" {
                    turn.reasoning_block(ProviderKind::OpenaiResponses, item);
                }
            }
            Event::ItemAdded {
                output_index,
                item:
                    OutputItem::FunctionCall {
                        id,
                        call_id,
                        name,
                        arguments,
                    },
            } => {
                let position = output_index.unwrap_or(turn.call_count());
                self.0.insert(id, position);
                *turn.call(position) = super::provider::PendingCall {
                    id: call_id,
                    name,
                    arguments,
                };
            }
            Event::ArgumentsDelta {
                item_id,
                output_index,
                delta,
            } => {
                if let Some(call) = self.call(item_id, output_index, turn) {
                    call.arguments.push_str(&delta);
                }
            }
            Event::ArgumentsDone {
                item_id,
                output_index,
                arguments,
            } => {
                if let Some(call) = self.call(item_id, output_index, turn) {
                    call.arguments = arguments;
                }
            }
            // The turn's end is `apply`'s.
            Event::Completed { .. } | Event::Failed { .. } | Event::Error { .. } => {}
            Event::ItemAdded { .. } | Event::Other => {}
        }
    }

    /// The call an arguments event belongs to: by `item_id`, else by `output_index`.
    fn call<'a>(
        &self,
        item_id: Option<String>,
        output_index: Option<u64>,
        turn: &'a mut TurnBuilder,
    ) -> Option<&'a mut super::provider::PendingCall> {
        let position = item_id
            .and_then(|id| self.0.get(&id).copied())
            .or(output_index)?;
        turn.existing_call(position)
    }
}

/// Whether a model reasons, by its name, when the options do not say: OpenAI's o-series, GPT-5
/// and Codex models, and the open-weight gpt-oss.
fn reasons_by_name(model: &str) -> bool {
    let name = model.rsplit('/').next().unwrap_or(model);
    ["o1", "o3", "o4", "gpt-5", "codex"]
        .iter()
        .any(|prefix| name.starts_with(prefix))
        || name.contains("gpt-oss")
}

/// A chat-format message as input items: its kept reasoning items, its text, then its calls; a
/// tool result as a call output.
fn items(message: &ChatMessage) -> Vec<Item> {
    if message.role == "tool" {
        return vec![Item::FunctionCallOutput {
            call_id: message.tool_call_id.clone().unwrap_or_default(),
            output: message.content.clone().unwrap_or_default(),
        }];
    }
    let kept = message
        .reasoning_of(ProviderKind::OpenaiResponses)
        .filter_map(|block| {
            let mut item = block.as_object()?.clone();
            // The tag is the enum's own.
            (item.remove("type")? == "reasoning").then_some(Item::Reasoning { item })
        });
    let text = message.content.iter().filter(|c| !c.is_empty());
    kept.chain(text.map(|content| Item::Message {
        role: message.role.clone(),
        content: content.clone(),
    }))
    .chain(message.tool_calls.iter().map(|call| Item::FunctionCall {
        call_id: call.id.clone(),
        name: call.name.clone(),
        arguments: call.arguments.clone(),
    }))
    .collect()
}

/// The turn's end: its status and token counts.
fn completed(turn: &mut TurnBuilder, response: Outcome) {
    turn.completed = true;
    if let Some(status) = response.status {
        turn.finish_reason(status);
    }
    if let Some(usage) = response.usage {
        *turn.usage() = app::protocol::Usage {
            input_tokens: usage.input_tokens.unwrap_or(0),
            output_tokens: usage.output_tokens.unwrap_or(0),
            reasoning_tokens: usage
                .output_tokens_details
                .and_then(|details| details.reasoning_tokens),
            cache_read_tokens: usage
                .input_tokens_details
                .and_then(|details| details.cached_tokens),
            ..app::protocol::Usage::default()
        };
    }
}

/// An `error` event: its error object, or the message and code beside the type.
fn stream_error(
    error: Option<WireError>,
    message: Option<String>,
    code: Option<Value>,
) -> ProviderError {
    let flat = WireError::Object {
        message,
        code,
        kind: None,
    };
    WireError::into_error(error.or(Some(flat)))
}
