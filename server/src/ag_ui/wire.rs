//! The AG-UI 1.0 wire format (`@ag-ui/core` 1.0.0, PyPI `ag-ui-protocol` 1.0.0): every event and
//! the `RunAgentInput` a client POSTs. Field names are camelCase on the wire; optional fields are
//! omitted, never null, as the spec asks; fields this version does not know are ignored when read.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One AG-UI event. `timestamp` (milliseconds since the epoch) and `rawEvent` may sit on any event;
/// they are read apart ([`Envelope`]) so the variants stay small.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Event {
    #[serde(rename_all = "camelCase")]
    RunStarted {
        thread_id: String,
        run_id: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        parent_run_id: Option<String>,
    },
    #[serde(rename_all = "camelCase")]
    RunFinished {
        thread_id: String,
        run_id: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        result: Option<Value>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        outcome: Option<Outcome>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        usage: Option<Vec<TokenUsage>>,
    },
    #[serde(rename_all = "camelCase")]
    RunError {
        message: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        code: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        usage: Option<Vec<TokenUsage>>,
    },
    #[serde(rename_all = "camelCase")]
    StepStarted {
        step_name: String,
    },
    #[serde(rename_all = "camelCase")]
    StepFinished {
        step_name: String,
    },
    #[serde(rename_all = "camelCase")]
    TextMessageStart {
        message_id: String,
        #[serde(default = "assistant")]
        role: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
    },
    #[serde(rename_all = "camelCase")]
    TextMessageContent {
        message_id: String,
        delta: String,
    },
    #[serde(rename_all = "camelCase")]
    TextMessageEnd {
        message_id: String,
    },
    #[serde(rename_all = "camelCase")]
    TextMessageChunk {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message_id: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        role: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        delta: Option<String>,
    },
    #[serde(rename_all = "camelCase")]
    ToolCallStart {
        tool_call_id: String,
        tool_call_name: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        parent_message_id: Option<String>,
    },
    #[serde(rename_all = "camelCase")]
    ToolCallArgs {
        tool_call_id: String,
        delta: String,
    },
    #[serde(rename_all = "camelCase")]
    ToolCallEnd {
        tool_call_id: String,
    },
    #[serde(rename_all = "camelCase")]
    ToolCallChunk {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tool_call_id: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tool_call_name: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        parent_message_id: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        delta: Option<String>,
    },
    #[serde(rename_all = "camelCase")]
    ToolCallResult {
        message_id: String,
        tool_call_id: String,
        content: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        role: Option<String>,
        /// Free-form data about the result (Glassbox puts the call's status here).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        metadata: Option<Value>,
    },
    #[serde(rename_all = "camelCase")]
    ReasoningStart {
        message_id: String,
    },
    #[serde(rename_all = "camelCase")]
    ReasoningMessageStart {
        message_id: String,
        role: String,
    },
    #[serde(rename_all = "camelCase")]
    ReasoningMessageContent {
        message_id: String,
        delta: String,
    },
    #[serde(rename_all = "camelCase")]
    ReasoningMessageEnd {
        message_id: String,
    },
    #[serde(rename_all = "camelCase")]
    ReasoningMessageChunk {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message_id: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        delta: Option<String>,
    },
    #[serde(rename_all = "camelCase")]
    ReasoningEnd {
        message_id: String,
    },
    #[serde(rename_all = "camelCase")]
    ReasoningEncryptedValue {
        subtype: String,
        entity_id: String,
        encrypted_value: String,
    },
    /// Deprecated (before 1.0's REASONING_*), still read.
    ThinkingStart {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        title: Option<String>,
    },
    ThinkingEnd {},
    ThinkingTextMessageStart {},
    ThinkingTextMessageContent {
        delta: String,
    },
    ThinkingTextMessageEnd {},
    StateSnapshot {
        snapshot: Value,
    },
    StateDelta {
        delta: Vec<Value>,
    },
    MessagesSnapshot {
        messages: Vec<Value>,
    },
    #[serde(rename_all = "camelCase")]
    ActivitySnapshot {
        message_id: String,
        activity_type: String,
        content: Value,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        replace: Option<bool>,
    },
    #[serde(rename_all = "camelCase")]
    ActivityDelta {
        message_id: String,
        activity_type: String,
        patch: Vec<Value>,
    },
    Raw {
        event: Value,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        source: Option<String>,
    },
    Custom {
        name: String,
        value: Value,
    },
    /// A type this version does not know. AG-UI 1.0 asks a client to drop it; Glassbox counts it.
    #[serde(other)]
    Unknown,
}

fn assistant() -> String {
    "assistant".to_owned()
}

/// An event as Glassbox sends it: with its time, in milliseconds since the epoch.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Stamped {
    #[serde(flatten)]
    pub event: Event,
    pub timestamp: u64,
}

/// The fields any event may carry besides its own.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct Envelope {
    #[serde(rename = "type", default)]
    pub kind: String,
    /// Milliseconds since the epoch, when the agent sends it.
    #[serde(default)]
    pub timestamp: Option<Value>,
}

impl Envelope {
    /// The event's own time, when it is a whole number of milliseconds.
    pub fn timestamp_ms(&self) -> Option<u64> {
        self.timestamp.as_ref().and_then(Value::as_u64)
    }
}

/// How a run ended: normally, or paused until the client answers its interrupts.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Outcome {
    Success,
    Interrupt { interrupts: Vec<Interrupt> },
}

/// A pause the client resumes by answering it in the next `RunAgentInput.resume`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Interrupt {
    pub id: String,
    pub reason: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_schema: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Value>,
}

/// Token counts per provider and model (`RUN_FINISHED.usage[]`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TokenUsage {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_input_tokens: Option<u64>,
}

/// What a client POSTs to run an agent.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunAgentInput {
    pub thread_id: String,
    pub run_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_run_id: Option<String>,
    #[serde(default)]
    pub state: Value,
    pub messages: Vec<Message>,
    #[serde(default)]
    pub tools: Vec<Tool>,
    #[serde(default)]
    pub context: Vec<Value>,
    #[serde(default)]
    pub forwarded_props: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resume: Option<Vec<ResumeEntry>>,
}

/// A tool the client offers the agent (Glassbox offers none: the agent brings its own).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Tool {
    pub name: String,
    pub description: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parameters: Option<Value>,
}

/// The client's answer to one interrupt.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResumeEntry {
    pub interrupt_id: String,
    /// `resolved` or `cancelled`.
    pub status: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payload: Option<Value>,
}

/// A message of the conversation, tagged by its role.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum Message {
    #[serde(rename_all = "camelCase")]
    User {
        id: String,
        /// A string, or a list of input content parts.
        content: Value,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
    },
    #[serde(rename_all = "camelCase")]
    Assistant {
        id: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        content: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tool_calls: Option<Vec<ToolCall>>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        encrypted_value: Option<String>,
    },
    #[serde(rename_all = "camelCase")]
    Tool {
        id: String,
        content: String,
        tool_call_id: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        encrypted_value: Option<String>,
    },
    #[serde(rename_all = "camelCase")]
    Reasoning {
        id: String,
        content: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        encrypted_value: Option<String>,
    },
    System {
        id: String,
        content: String,
    },
    Developer {
        id: String,
        content: String,
    },
    #[serde(rename_all = "camelCase")]
    Activity {
        id: String,
        activity_type: String,
        content: Value,
    },
}

/// A call in an assistant message, modelled after OpenAI's.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCall {
    pub id: String,
    #[serde(rename = "type", default = "function")]
    pub kind: String,
    pub function: FunctionCall,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encrypted_value: Option<String>,
}

fn function() -> String {
    "function".to_owned()
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FunctionCall {
    pub name: String,
    /// The arguments as JSON text.
    pub arguments: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_read_as_the_spec_writes_them() {
        let start: Event = serde_json::from_str(
            r#"{"type":"TOOL_CALL_START","toolCallId":"c1","toolCallName":"get_weather","timestamp":1}"#,
        )
        .unwrap();
        assert_eq!(
            start,
            Event::ToolCallStart {
                tool_call_id: "c1".into(),
                tool_call_name: "get_weather".into(),
                parent_message_id: None
            }
        );
        let finished: Event = serde_json::from_str(
            r#"{"type":"RUN_FINISHED","threadId":"t","runId":"r","outcome":{"type":"interrupt","interrupts":[{"id":"i","reason":"tool_call","toolCallId":"c1"}]}}"#,
        )
        .unwrap();
        let Event::RunFinished {
            outcome: Some(Outcome::Interrupt { interrupts }),
            ..
        } = finished
        else {
            panic!("not an interrupt: {finished:?}");
        };
        assert_eq!(interrupts[0].tool_call_id.as_deref(), Some("c1"));
        let unknown: Event = serde_json::from_str(r#"{"type":"SOMETHING_NEW","x":1}"#).unwrap();
        assert_eq!(unknown, Event::Unknown);
        assert!(serde_json::from_str::<Event>(r#"{"type":"TEXT_MESSAGE_CONTENT"}"#).is_err());
    }

    #[test]
    fn optional_fields_are_omitted_not_null() {
        let text = serde_json::to_string(&Event::RunError {
            message: "no".into(),
            code: None,
            usage: None,
        })
        .unwrap();
        assert_eq!(text, r#"{"type":"RUN_ERROR","message":"no"}"#);
        let message = serde_json::to_value(Message::Assistant {
            id: "m".into(),
            content: None,
            tool_calls: Some(vec![ToolCall {
                id: "c".into(),
                kind: "function".into(),
                function: FunctionCall {
                    name: "f".into(),
                    arguments: "{}".into(),
                },
                encrypted_value: None,
            }]),
            encrypted_value: None,
        })
        .unwrap();
        assert_eq!(
            message,
            serde_json::json!({"role":"assistant","id":"m","toolCalls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]})
        );
    }
}
