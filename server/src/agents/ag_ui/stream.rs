//! One AG-UI request on the wire: POST the input, check the answer is an event stream, read it
//! event by event with the agent's idle timeout, and hand each event to the mapper. A broken
//! stream (bad JSON, an event that does not match the spec, one out of order, no end) ends the
//! run with a clear error; what arrived before it is already emitted, nothing after it is.

use std::time::Duration;

use app::protocol::{ErrorCode, EventKind};
use futures::StreamExt;
use serde::Deserialize;
use serde_json::Value;

use super::mapper::{type_of, Mapper, StreamEnd};
use super::RunContext;
use crate::ag_ui::wire::{Event, RunAgentInput};
use crate::providers::{sse::SseDecoder, AgentConfig};

/// The longest event the agent may send (a `MESSAGES_SNAPSHOT` of a long conversation, say).
pub const MAX_EVENT_BYTES: usize = 4 * 1024 * 1024;

/// Why a request failed before the agent ended it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failure {
    pub code: ErrorCode,
    pub message: String,
}

fn failure(code: &str, message: impl Into<String>) -> Failure {
    Failure {
        code: ErrorCode::from(code),
        message: message.into(),
    }
}

/// Sends `input` and streams the answer into the run until the agent ends its run.
pub async fn request(
    client: &reqwest::Client,
    config: &AgentConfig,
    input: &RunAgentInput,
    mapper: &mut Mapper,
    context: &RunContext,
) -> Result<StreamEnd, Failure> {
    let idle = Duration::from_secs(config.idle_timeout_secs);
    let response = send(client, config, input, idle).await?;
    let mut body = response.bytes_stream();
    let mut decoder = SseDecoder::default();
    loop {
        let chunk = match tokio::time::timeout(idle, body.next()).await {
            Err(_) => return Err(silent(config)),
            Ok(None) => break,
            Ok(Some(Err(error))) => {
                return Err(failure(
                    "stream_interrupted",
                    format!(
                        "The agent's stream broke off: {}",
                        crate::providers::without_url(&error)
                    ),
                ))
            }
            Ok(Some(Ok(chunk))) => chunk,
        };
        for data in decoder.push(&chunk) {
            if let Some(end) = apply(&data, mapper, context)? {
                return Ok(end);
            }
        }
        if decoder.pending_len() > MAX_EVENT_BYTES {
            return Err(failure(
                "agent_protocol",
                format!("The agent sent an event longer than {MAX_EVENT_BYTES} bytes."),
            ));
        }
    }
    if let Some(data) = decoder.finish() {
        if let Some(end) = apply(&data, mapper, context)? {
            return Ok(end);
        }
    }
    Err(failure(
        "stream_interrupted",
        "The agent's stream ended without RUN_FINISHED or RUN_ERROR.",
    ))
}

/// A status that is not a success: `agent_refused`, with the agent's message (redacted).
async fn refused(response: reqwest::Response, idle: Duration) -> Failure {
    let status = response.status();
    let body = error_body(response, idle).await;
    let detail = crate::providers::error_message(&body)
        .or_else(|| crate::sanitize::shorten(body.trim(), 200).map(|cut| format!("{cut}…")))
        .unwrap_or_else(|| body.trim().to_owned());
    let detail = crate::redact::redact_text(&detail);
    let detail = if detail.is_empty() {
        String::new()
    } else {
        format!(": {detail}")
    };
    failure(
        "agent_refused",
        format!("The agent answered {status}{detail}"),
    )
}

/// The answer must be an event stream.
fn check_event_stream(response: &reqwest::Response) -> Result<(), Failure> {
    let content_type = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .unwrap_or("");
    if content_type.starts_with("text/event-stream") {
        return Ok(());
    }
    Err(failure(
        "agent_protocol",
        format!(
            "The agent answered with content type '{}', not text/event-stream.",
            crate::sanitize::shorten(content_type, 80).unwrap_or(content_type)
        ),
    ))
}

/// The start of a refusal's body (at most 4 KiB, within the idle timeout): enough for its message.
async fn error_body(response: reqwest::Response, idle: Duration) -> String {
    let mut body = response.bytes_stream();
    let mut bytes = Vec::new();
    let read = async {
        while let Some(Ok(chunk)) = body.next().await {
            bytes.extend_from_slice(&chunk);
            if bytes.len() >= 4096 {
                break;
            }
        }
    };
    let _ = tokio::time::timeout(idle.min(Duration::from_secs(10)), read).await;
    bytes.truncate(4096);
    String::from_utf8_lossy(&bytes).into_owned()
}

fn silent(config: &AgentConfig) -> Failure {
    failure(
        "agent_timeout",
        format!(
            "The agent sent nothing for {} s (its idle_timeout_secs).",
            config.idle_timeout_secs
        ),
    )
}

/// POSTs the input; the answer must be a 2xx event stream, and come within the idle timeout.
async fn send(
    client: &reqwest::Client,
    config: &AgentConfig,
    input: &RunAgentInput,
    idle: Duration,
) -> Result<reqwest::Response, Failure> {
    let mut request = client
        .post(&config.url)
        .header(reqwest::header::ACCEPT, "text/event-stream")
        .json(input);
    for (name, value) in &config.headers {
        request = request.header(name.as_str(), crate::tools::mcp::expand_env(value));
    }
    let response = match tokio::time::timeout(idle, request.send()).await {
        Err(_) => return Err(silent(config)),
        Ok(Err(error)) if error.is_timeout() || error.is_connect() => {
            return Err(failure(
                if error.is_timeout() {
                    "agent_timeout"
                } else {
                    "connection_failed"
                },
                format!(
                    "Could not reach the agent: {}",
                    crate::providers::without_url(&error)
                ),
            ))
        }
        Ok(Err(error)) => {
            return Err(failure(
                "connection_failed",
                format!(
                    "The request to the agent failed: {}",
                    crate::providers::without_url(&error)
                ),
            ))
        }
        Ok(Ok(response)) => response,
    };
    if !response.status().is_success() {
        return Err(refused(response, idle).await);
    }
    check_event_stream(&response)?;
    Ok(response)
}

/// One `data:` payload: an event to map, an unknown one to count, or a broken one that ends the
/// run.
fn apply(
    data: &str,
    mapper: &mut Mapper,
    context: &RunContext,
) -> Result<Option<StreamEnd>, Failure> {
    let raw: Value = serde_json::from_str(data).map_err(|error| {
        failure(
            "agent_protocol",
            format!("The agent sent an event that is not JSON ({error})."),
        )
    })?;
    let event = Event::deserialize(&raw).map_err(|error| {
        failure(
            "agent_protocol",
            format!(
                "The agent sent a {} event that does not match AG-UI 1.0 ({error}).",
                type_of(&raw)
            ),
        )
    })?;
    if event == Event::Unknown {
        tracing::info!(event_type = %type_of(&raw), "an AG-UI agent sent an unknown event type; dropped");
    }
    let at_ms = raw
        .get("timestamp")
        .and_then(Value::as_u64)
        .unwrap_or_else(|| u64::try_from(crate::stamps::now_unix_ms()).unwrap_or(0));
    let mut out: Vec<EventKind> = Vec::new();
    let end = mapper.apply(event, &raw, at_ms, &mut out);
    for kind in out {
        context.run.emit(kind);
    }
    end.map_err(|error| failure("agent_protocol", error.0))
}
