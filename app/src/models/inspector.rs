//! The Agent Inspector list (seed 003): what `GET /api/traces/{trace_id}/inspector.json` writes and
//! the trace page's Inspector shows. Schema: docs/schemas/inspector.schema.json.
//!
//! Every struct declares its fields in alphabetical order, and the tag `type` sits among them in
//! its place: the export was first written as a `serde_json::Value`, whose objects write their keys
//! sorted, and these types write the same bytes (the server's tests compare them).

use serde::{Deserialize, Serialize, Serializer};
use serde_json::Value;

use crate::protocol::{Approval, ToolCallStatus};

/// One entry: a model turn, a call of a built-in tool, or a call of an MCP server's tool.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum InspectorEntry {
    LlmRequest(LlmRequestEntry),
    ToolCall(ToolCallEntry),
    Mcp(McpEntry),
}

/// A model turn: the conversation as sent, in OpenAI chat format, and the chat-completion
/// response (a failed turn gets an empty answer and says why in `annotation`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LlmRequestEntry {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotation: Option<String>,
    pub conversation: Vec<InspectorMessage>,
    /// The reader's feedback on the run's answer, on the turn that wrote it (the last).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub feedback: Option<InspectorFeedback>,
    pub model: String,
    /// The provider's response as recorded, in chat-completion shape.
    pub response: Value,
    pub r#type: LlmRequestTag,
}

/// One message of a turn's conversation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct InspectorMessage {
    pub content: String,
    pub role: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<InspectorFunctionCall>,
}

/// A call the model asked for, as OpenAI writes one.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct InspectorFunctionCall {
    pub function: InspectorFunction,
    pub id: String,
    pub r#type: FunctionTag,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct InspectorFunction {
    /// The arguments as the model wrote them (a JSON text).
    pub arguments: String,
    pub name: String,
}

/// A call of a built-in tool.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolCallEntry {
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "sorted"
    )]
    pub approval: Option<Approval>,
    /// An object (a call's arguments that were not one are `{"value": ...}`).
    pub arguments: Value,
    /// What the tool printed as it ran, when it printed anything.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cli_output: Option<String>,
    pub duration_ms: Option<u64>,
    /// The reader's note on this call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub feedback: Option<InspectorFeedback>,
    /// The output, `Error (kind): message`, or the status of a call that did not end.
    pub result: String,
    pub status: ToolCallStatus,
    pub tool_name: String,
    pub r#type: ToolCallTag,
}

/// A call of a tool of an MCP server (the model saw it as `<server>__<tool>`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct McpEntry {
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "sorted"
    )]
    pub approval: Option<Approval>,
    pub arguments: Value,
    /// The run was stopped during the call.
    pub cancelled: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cli_output: Option<String>,
    pub duration_ms: Option<u64>,
    /// The reader's note on this call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub feedback: Option<InspectorFeedback>,
    /// The server's progress notifications, in order, each with its `ts`.
    pub progress: Vec<Value>,
    pub result: String,
    pub server: String,
    pub status: ToolCallStatus,
    pub tool: String,
    pub r#type: McpTag,
}

/// Feedback on an entry (issue 36): a rating (on the answer's turn only) and a comment.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct InspectorFeedback {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub comment: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rating: Option<crate::models::Rating>,
    pub updated_at: String,
}

impl From<&crate::models::Feedback> for InspectorFeedback {
    fn from(feedback: &crate::models::Feedback) -> Self {
        InspectorFeedback {
            comment: feedback.comment.clone(),
            rating: feedback.rating,
            updated_at: feedback.updated_at.clone(),
        }
    }
}

/// `"type": "llm_request"`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LlmRequestTag {
    #[default]
    LlmRequest,
}

/// `"type": "tool_call"`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolCallTag {
    #[default]
    ToolCall,
}

/// `"type": "mcp"`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum McpTag {
    #[default]
    Mcp,
}

/// `"type": "function"`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FunctionTag {
    #[default]
    Function,
}

/// Writes `value` with its keys sorted, as a `serde_json::Value` would: the approval's own type
/// declares its fields in the order of the event protocol.
fn sorted<T: Serialize, S: Serializer>(value: &T, serializer: S) -> Result<S::Ok, S::Error> {
    serde_json::to_value(value)
        .map_err(serde::ser::Error::custom)?
        .serialize(serializer)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// The page reads back what the server wrote: each entry parses as its own kind (the enum is
    /// untagged; the one-value tags tell the kinds apart), and its keys are written sorted.
    #[test]
    fn each_kind_reads_back_as_itself_with_its_keys_sorted() {
        let call = ToolCallEntry {
            approval: Some(Approval {
                requested_at: "2026-01-01T00:00:00.000Z".into(),
                by: Some(crate::protocol::ResolvedBy::User("local".into())),
                ..Approval::default()
            }),
            arguments: json!({"path": "."}),
            cli_output: None,
            duration_ms: Some(3),
            feedback: Some(InspectorFeedback {
                comment: "wrong file".into(),
                rating: None,
                updated_at: "2026-01-01T00:00:01.000Z".into(),
            }),
            result: "ok".into(),
            status: ToolCallStatus::Success,
            tool_name: "list_dir".into(),
            r#type: ToolCallTag::ToolCall,
        };
        let mcp = McpEntry {
            approval: None,
            arguments: json!({}),
            cancelled: true,
            cli_output: Some("out".into()),
            duration_ms: None,
            feedback: None,
            progress: vec![json!({"progress": 1})],
            result: "cancelled".into(),
            server: "everything".into(),
            status: ToolCallStatus::Cancelled,
            tool: "echo".into(),
            r#type: McpTag::Mcp,
        };
        let turn = LlmRequestEntry {
            annotation: Some("The turn failed: no".into()),
            conversation: vec![InspectorMessage {
                content: String::new(),
                role: "assistant".into(),
                tool_call_id: None,
                tool_calls: vec![InspectorFunctionCall {
                    function: InspectorFunction {
                        arguments: "{}".into(),
                        name: "list_dir".into(),
                    },
                    id: "call_1".into(),
                    r#type: FunctionTag::Function,
                }],
            }],
            feedback: Some(InspectorFeedback {
                comment: String::new(),
                rating: Some(crate::models::Rating::Down),
                updated_at: "2026-01-01T00:00:01.000Z".into(),
            }),
            model: "m".into(),
            response: json!({"choices": []}),
            r#type: LlmRequestTag::LlmRequest,
        };
        let entries = vec![
            InspectorEntry::ToolCall(call),
            InspectorEntry::Mcp(mcp),
            InspectorEntry::LlmRequest(turn),
        ];
        let text = serde_json::to_string(&entries).expect("JSON");
        let sorted = serde_json::to_string(&crate::json::parse::<Value>(&text).expect("JSON"));
        assert_eq!(sorted.expect("JSON"), text);
        let back: Vec<InspectorEntry> = crate::json::parse(&text).expect("read back");
        assert_eq!(back, entries);
    }
}
