//! One MCP tool as a Glassbox [`Tool`]: a `tools/call` request whose progress notifications
//! become `tool_call_update` events, and which is cancelled (`notifications/cancelled`) when the
//! run stops or the call times out. The run never waits for the server to agree.

use app::protocol::ToolErrorKind;
use std::{sync::Arc, time::Duration};

use futures::StreamExt;
use rmcp::{
    model::{
        CallToolRequestParams, CancelledNotificationParam, ClientRequest,
        ProgressNotificationParam, Request, RequestId, ServerResult,
    },
    service::{PeerRequestOptions, RequestHandle},
    Peer, RoleClient,
};
use serde_json::{json, Value};

use super::{content, McpServer, NAME_SEPARATOR};
use crate::tools::{tool_error, Tool, ToolContext, ToolFuture};
use app::protocol::ToolError;

pub struct McpTool {
    server: Arc<McpServer>,
    /// `<server>__<tool>`, as the model sees it.
    full_name: String,
    tool: String,
    description: String,
    parameters: Value,
}

impl McpTool {
    pub(super) fn new(server: Arc<McpServer>, tool: rmcp::model::Tool) -> Self {
        let description = tool
            .description
            .as_deref()
            .or(tool.title.as_deref())
            .unwrap_or_default()
            .to_owned();
        McpTool {
            full_name: model_name(&server.name, &tool.name),
            server,
            tool: tool.name.into_owned(),
            description,
            parameters: Value::Object((*tool.input_schema).clone()),
        }
    }

    pub fn full_name(&self) -> &str {
        &self.full_name
    }
}

/// The name the model sees: `<server>__<tool>`, with anything model APIs refuse (they take
/// `[A-Za-z0-9_-]{1,64}`) replaced by `_` and cut at 64 characters. Calls go out under the
/// tool's own name.
fn model_name(server: &str, tool: &str) -> String {
    format!("{server}{NAME_SEPARATOR}{tool}")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect()
}

impl Tool for McpTool {
    fn name(&self) -> &str {
        &self.full_name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn parameters(&self) -> Value {
        self.parameters.clone()
    }

    fn call(&self, args: Value, context: ToolContext) -> ToolFuture {
        let (server, tool) = (self.server.clone(), self.tool.clone());
        Box::pin(async move { call(&server, tool, args, context).await })
    }
}

async fn call(
    server: &McpServer,
    tool: String,
    args: Value,
    context: ToolContext,
) -> Result<String, ToolError> {
    let unavailable = |why: String| {
        tool_error(
            ToolErrorKind::McpUnavailable,
            format!("The MCP server `{}` is not available: {why}", server.name),
        )
    };
    let peer = server
        .peer()
        .ok_or_else(|| unavailable("it is not running".into()))?;
    let mut params = CallToolRequestParams::new(tool);
    params.arguments = match args {
        Value::Object(map) => Some(map),
        Value::Null => None,
        _ => {
            return Err(tool_error(
                ToolErrorKind::InvalidArguments,
                "The arguments must be a JSON object.",
            ))
        }
    };
    let handle = peer
        .send_cancellable_request(
            ClientRequest::CallToolRequest(Request::new(params)),
            PeerRequestOptions::no_options(),
        )
        .await
        .map_err(|error| {
            let error = server.loggable(&error);
            tracing::warn!(server = %server.name, %error, "an MCP request could not be sent");
            unavailable("it did not take the request".into())
        })?;
    let mut progress = server
        .handler
        .progress
        .subscribe(handle.progress_token.clone())
        .await;
    let RequestHandle { mut rx, id, .. } = handle;
    // Dropped before the answer (Stop, timeout): the server is told to stop.
    let mut guard = CancelOnDrop {
        peer: Some(peer),
        id,
    };
    let answer = loop {
        tokio::select! {
            answer = &mut rx => break answer,
            Some(report) = progress.next() => report_progress(&context, report),
            _ = context.cancel.cancelled() => {
                return Err(tool_error(ToolErrorKind::Cancelled, "The call was cancelled."));
            }
        }
    };
    guard.peer = None;
    drain_late_progress(&context, &mut progress).await;
    match answer {
        Ok(answer) => to_result(server, answer),
        Err(_) => Err(unavailable("it stopped during the call".into())),
    }
}

/// The server's answer as the call's result.
fn to_result(
    server: &McpServer,
    answer: Result<ServerResult, rmcp::ServiceError>,
) -> Result<String, ToolError> {
    match answer {
        Ok(ServerResult::CallToolResult(result)) => content::to_output(result),
        Ok(ServerResult::EmptyResult(_)) => Ok(String::new()),
        Ok(_) => Err(tool_error(
            ToolErrorKind::McpError,
            "The MCP server answered with something other than a tool result.",
        )),
        // The server's own message; anything else is the library's, for the log only.
        Err(rmcp::ServiceError::McpError(error)) => Err(tool_error(
            ToolErrorKind::McpError,
            error.message.into_owned(),
        )),
        Err(error) => {
            let error = server.loggable(&error);
            tracing::warn!(server = %server.name, %error, "an MCP call failed");
            Err(tool_error(
                ToolErrorKind::McpError,
                "The MCP server did not answer the call properly.",
            ))
        }
    }
}

/// How long the reports a server sent just before its result may take to reach us after it: the
/// MCP library hands each notification to a task of its own, so the result can overtake them (the
/// last report of most calls was lost). Reading stops when none came for the first figure, and
/// after the second in any case.
const LATE_PROGRESS_QUIET: Duration = Duration::from_millis(10);
const LATE_PROGRESS_MAX: Duration = Duration::from_millis(100);

/// Reports the progress notifications that arrived with or after the result.
async fn drain_late_progress(
    context: &ToolContext,
    progress: &mut (impl futures::Stream<Item = ProgressNotificationParam> + Unpin),
) {
    let deadline = tokio::time::Instant::now() + LATE_PROGRESS_MAX;
    loop {
        let wait = LATE_PROGRESS_QUIET
            .min(deadline.saturating_duration_since(tokio::time::Instant::now()));
        match tokio::time::timeout(wait, progress.next()).await {
            Ok(Some(report)) => report_progress(context, report),
            Ok(None) | Err(_) => return,
        }
    }
}

/// A progress notification as a `tool_call_update`: the numbers as `progress`, the message (if
/// any) as a line of output.
fn report_progress(context: &ToolContext, report: ProgressNotificationParam) {
    let mut progress = json!({ "progress": report.progress });
    if let Some(total) = report.total {
        progress["total"] = json!(total);
    }
    if let Some(message) = &report.message {
        progress["message"] = json!(message);
    }
    context.output.progress(progress);
    if let Some(message) = report.message {
        context.output.write(&format!("{message}\n"));
    }
}

/// Sends `notifications/cancelled` for a request nobody waits for any more. Best effort, in the
/// background, bounded: a server that stopped reading cannot hold anything.
struct CancelOnDrop {
    peer: Option<Peer<RoleClient>>,
    id: RequestId,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        let Some(peer) = self.peer.take() else {
            return;
        };
        let param = CancelledNotificationParam::new(
            Some(self.id.clone()),
            Some("The run was stopped.".to_owned()),
        );
        tokio::spawn(async move {
            let sent = tokio::time::timeout(Duration::from_secs(2), peer.notify_cancelled(param));
            if !matches!(sent.await, Ok(Ok(()))) {
                tracing::debug!("could not tell an MCP server that a call was cancelled");
            }
        });
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn names_the_model_apis_refuse_are_made_acceptable() {
        assert_eq!(
            super::model_name("docs", "search.v2/all"),
            "docs__search_v2_all"
        );
        assert_eq!(super::model_name("s", &"x".repeat(100)).len(), 64);
    }
}
