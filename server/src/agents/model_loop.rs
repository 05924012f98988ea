//! The agent loop for a real model: send the conversation (earlier messages with their tool calls
//! and results) and the tool schemas, run the tool calls the model asks for, send the results
//! back, and repeat until the model answers without calling a tool, or the step limit is reached.

use std::sync::Arc;

use serde_json::Value;

use futures::future::BoxFuture;

use super::{Agent, AgentOutcome, ReasoningWriter, RunContext};
use crate::{
    providers::{
        ChatMessage, ChatProvider, ProviderError, RequestedCall, ToolSchema, TurnOutput,
        TurnRequest, TurnSink,
    },
    sanitize::sanitize_value,
    store::ModelTurn,
    tools::ToolCallRequest,
};
use app::protocol::{Message, Role, Segment, ToolCallStatus};

pub struct ModelAgent {
    pub provider: Arc<dyn ChatProvider>,
    /// The id people pick (`anth/claude-sonnet-4-5`): what a message names as its model.
    pub model_id: String,
    /// The model's name at its provider.
    pub model: String,
    pub system_prompt: Option<String>,
    pub options: Arc<crate::providers::options::ModelOptions>,
    pub max_steps: u32,
}

/// Streams a turn into the run: reasoning as a reasoning part, text as answer text.
struct TurnWriter<'a> {
    context: &'a RunContext,
    reasoning: Option<ReasoningWriter<'a>>,
}

impl TurnSink for TurnWriter<'_> {
    fn reasoning(&mut self, summary_index: u32, delta: &str) {
        self.reasoning
            .get_or_insert_with(|| self.context.begin_reasoning())
            .delta(summary_index, delta);
    }

    fn retrying(
        &mut self,
        attempt: u32,
        delay: std::time::Duration,
        reason: &app::protocol::ErrorCode,
    ) {
        self.context.emit_retrying(attempt, delay, reason.clone());
    }

    fn text(&mut self, delta: &str) {
        // Thinking ends where the answer begins.
        if let Some(reasoning) = self.reasoning.take() {
            reasoning.finish();
        }
        self.context.emit_text(delta);
    }
}

impl Agent for ModelAgent {
    fn run<'a>(&'a self, context: &'a RunContext) -> BoxFuture<'a, AgentOutcome> {
        Box::pin(async move {
            let tools = tool_schemas(context);
            let mut messages = self.first_messages(context);
            for _ in 0..self.max_steps {
                let first_segment = context.peek_sequence_number();
                let turn = match self.turn(context, &messages, &tools).await {
                    Ok(turn) => turn,
                    Err(error) => {
                        return AgentOutcome::Failed {
                            code: error.code,
                            message: error.message,
                        }
                    }
                };
                if let Some(usage) = turn.usage {
                    context.emit_usage(usage);
                }
                super::model_state::keep(
                    context,
                    &self.model_id,
                    first_segment,
                    &turn.reasoning_blocks,
                );
                if turn.tool_calls.is_empty() {
                    return AgentOutcome::Completed;
                }
                run_calls(context, turn, &mut messages).await;
            }
            AgentOutcome::Failed {
                code: app::protocol::ErrorCode::StepLimit,
                message: format!(
                    "The agent used its {} model turns without reaching a final answer.",
                    self.max_steps
                ),
            }
        })
    }
}

impl ModelAgent {
    /// The system prompt, the earlier messages and the user's new one.
    fn first_messages(&self, context: &RunContext) -> Vec<ChatMessage> {
        let mut messages = Vec::new();
        if let Some(system) = &self.system_prompt {
            messages.push(ChatMessage::text("system", system.clone()));
        }
        messages.extend(
            context
                .history
                .iter()
                .flat_map(|message| to_chat_messages(message, &self.model_id)),
        );
        messages.push(ChatMessage::text("user", context.user_message.text()));
        messages
    }

    /// One model turn, streamed into the run and recorded (request and response) for the trace.
    async fn turn(
        &self,
        context: &RunContext,
        messages: &[ChatMessage],
        tools: &[ToolSchema],
    ) -> Result<TurnOutput, ProviderError> {
        let request = TurnRequest {
            model: self.model.clone(),
            messages: messages.to_vec(),
            tools: tools.to_vec(),
            options: self.options.clone(),
        };
        let started_at = crate::stamps::now_rfc3339();
        let after_seq = context.run.event_count();
        let mut writer = TurnWriter {
            context,
            reasoning: None,
        };
        let exchange = self.provider.stream_turn(&request, &mut writer).await;
        drop(writer);
        context.record_model_turn(ModelTurn {
            model: self.model.clone(),
            format: exchange.format,
            after_seq,
            request: request_record(exchange.sent),
            response: response_record(&self.model, &exchange.result),
            started_at,
            completed_at: crate::stamps::now_rfc3339(),
        });
        exchange.result
    }
}

/// What the model may call.
fn tool_schemas(context: &RunContext) -> Vec<ToolSchema> {
    context
        .tools
        .all()
        .iter()
        .map(|tool| ToolSchema {
            name: tool.name().to_owned(),
            description: tool.description().to_owned(),
            parameters: tool.parameters(),
        })
        .collect()
}

/// Runs the calls of a turn and adds the turn and every call's result to the conversation.
async fn run_calls(context: &RunContext, turn: TurnOutput, messages: &mut Vec<ChatMessage>) {
    let requests = turn
        .tool_calls
        .iter()
        .map(|call| ToolCallRequest {
            model_call_id: Some(call.id.clone()),
            name: call.name.clone(),
            args: parse_arguments(&call.arguments),
        })
        .collect();
    messages.push(ChatMessage {
        role: "assistant".into(),
        content: (!turn.text.is_empty()).then_some(turn.text),
        tool_calls: turn.tool_calls,
        tool_call_id: None,
        reasoning: turn.reasoning_blocks,
    });
    // One outcome per call, each paired with its call by the model's id.
    for outcome in context.run_tools(requests).await {
        let content = match outcome.result {
            Ok(output) => output,
            Err(error) => format!("Error ({}): {}", error.kind, error.message),
        };
        messages.push(ChatMessage {
            tool_call_id: outcome.model_call_id,
            ..ChatMessage::text("tool", content)
        });
    }
}

/// The request body exactly as it went out, redacted like every event (tool-call arguments are
/// JSON inside a string in the OpenAI formats: redacted inside too).
pub(super) fn request_record(mut sent: Value) -> Value {
    redact_argument_strings(&mut sent);
    sanitize_value(&mut sent);
    sent
}

fn redact_argument_strings(value: &mut Value) {
    match value {
        Value::Object(map) => {
            for (key, inner) in map.iter_mut() {
                match inner {
                    Value::String(text) if key == "arguments" => *text = redact_arguments(text),
                    _ => redact_argument_strings(inner),
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(redact_argument_strings),
        _ => {}
    }
}

/// The response as received, as an OpenAI chat completion (or the error that ended the turn).
fn response_record(model: &str, turn: &Result<TurnOutput, ProviderError>) -> Value {
    let mut record = match turn {
        Ok(turn) => {
            let tool_calls: Vec<Value> = turn
                .tool_calls
                .iter()
                .map(|call| serde_json::json!({"id": call.id, "type": "function", "function": {"name": call.name, "arguments": redact_arguments(&call.arguments)}}))
                .collect();
            let mut message = serde_json::json!({"role": "assistant", "content": (!turn.text.is_empty()).then(|| turn.text.clone())});
            if !turn.reasoning.is_empty() {
                message["reasoning_content"] = Value::String(turn.reasoning.clone());
            }
            if !tool_calls.is_empty() {
                message["tool_calls"] = Value::Array(tool_calls);
            }
            let mut response = serde_json::json!({
                "object": "chat.completion",
                "model": model,
                "choices": [{"index": 0, "message": message, "finish_reason": turn.finish_reason}],
            });
            if let Some(usage) = turn.usage {
                response["usage"] = usage_record(&usage);
            }
            response
        }
        Err(error) => {
            serde_json::json!({"model": model, "error": {"code": error.code, "message": error.message}})
        }
    };
    sanitize_value(&mut record);
    record
}

/// Tool-call arguments are JSON inside a string: redact secret-looking keys inside it too (and in
/// text that does not parse, secret-looking members and credential shapes).
/// Text with nothing to redact is kept as the model wrote it.
fn redact_arguments(arguments: &str) -> String {
    match serde_json::from_str::<Value>(arguments) {
        Ok(value) => {
            let mut redacted = value.clone();
            sanitize_value(&mut redacted);
            if redacted == value {
                arguments.to_owned()
            } else {
                redacted.to_string()
            }
        }
        Err(_) => crate::redact::redact_raw_json(arguments),
    }
}

/// The model's argument text as JSON; text that does not parse is passed on as `{"_raw": text}` so
/// the tool can answer with a clear argument error.
fn parse_arguments(arguments: &str) -> Value {
    if arguments.trim().is_empty() {
        return Value::Object(Default::default());
    }
    serde_json::from_str(arguments)
        .unwrap_or_else(|_| serde_json::json!({ crate::sanitize::RAW_ARGUMENTS_KEY: arguments }))
}

/// An earlier message in OpenAI chat format: user text; assistant text, tool calls and results,
/// and before each model turn the reasoning blocks `model_id` kept for it.
fn to_chat_messages(message: &Message, model_id: &str) -> Vec<ChatMessage> {
    if message.role == Role::User {
        return vec![ChatMessage::text("user", message.text())];
    }
    let mut turns = super::model_state::kept(message, model_id)
        .into_iter()
        .peekable();
    let mut history = History::default();
    for segment in &message.segments {
        // A new turn: the calls of the one before go first, its blocks go with what comes next.
        while turns
            .peek()
            .is_some_and(|(turn, _)| *turn <= segment.sequence_number())
        {
            history.flush();
            if let Some((_, blocks)) = turns.next() {
                history.blocks.extend(blocks);
            }
        }
        match segment {
            Segment::ToolCall(call) => history.call(call),
            Segment::Text(text) => {
                history.flush();
                let mut message = ChatMessage::text("assistant", text.text.clone());
                message.reasoning = std::mem::take(&mut history.blocks);
                history.out.push(message);
            }
            Segment::Reasoning(_) => {}
        }
    }
    history.flush();
    history.out
}

/// An answer being turned back into chat messages: calls wait for their turn's end.
#[derive(Default)]
struct History {
    out: Vec<ChatMessage>,
    calls: Vec<RequestedCall>,
    results: Vec<ChatMessage>,
    /// Reasoning blocks for the next assistant message.
    blocks: Vec<crate::providers::ReasoningBlock>,
}

impl History {
    fn call(&mut self, call: &app::protocol::ToolCallSegment) {
        self.calls.push(RequestedCall {
            id: call.call_id.clone(),
            name: call.name.clone(),
            arguments: call.args.to_string(),
        });
        let content = match (&call.status, &call.error) {
            (ToolCallStatus::Success, _) => call.output.clone(),
            (_, Some(error)) => format!("Error ({}): {}", error.kind, error.message),
            _ => "The tool did not finish.".to_owned(),
        };
        self.results.push(ChatMessage {
            tool_call_id: Some(call.call_id.clone()),
            ..ChatMessage::text("tool", content)
        });
    }

    /// The calls waiting as one assistant message, then their results.
    fn flush(&mut self) {
        if self.calls.is_empty() {
            return;
        }
        self.out.push(ChatMessage {
            role: "assistant".into(),
            content: None,
            tool_calls: std::mem::take(&mut self.calls),
            tool_call_id: None,
            reasoning: std::mem::take(&mut self.blocks),
        });
        self.out.append(&mut self.results);
    }
}

/// A turn's usage in OpenAI's format: cached (read, and written as OpenRouter names it) and
/// reasoning tokens as the details of the totals they are part of.
fn usage_record(usage: &app::protocol::Usage) -> Value {
    let mut record = serde_json::json!({"prompt_tokens": usage.input_tokens, "completion_tokens": usage.output_tokens,
                                        "total_tokens": usage.input_tokens.saturating_add(usage.output_tokens)});
    if let Some(cached) = usage.cache_read_tokens {
        record["prompt_tokens_details"]["cached_tokens"] = cached.into();
    }
    if let Some(written) = usage.cache_write_tokens {
        record["prompt_tokens_details"]["cache_write_tokens"] = written.into();
    }
    if let Some(reasoning) = usage.reasoning_tokens {
        record["completion_tokens_details"]["reasoning_tokens"] = reasoning.into();
    }
    record
}
