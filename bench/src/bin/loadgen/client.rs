//! A run's event stream as a client reads it: real HTTP, real SSE, the receive time of each chunk.

use std::{collections::VecDeque, time::SystemTime};

use bytes::Bytes;
use futures::{stream::BoxStream, StreamExt};
use glassbox::providers::sse::SseDecoder;
use serde_json::json;

/// Which stream of a run the client reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum StreamFormat {
    /// Glassbox's own events (`POST /api/chat`).
    Glassbox,
    /// The AI SDK's UI message stream (`POST /api/ai-sdk/chat`): one `text-delta` chunk per delta.
    AiSdk,
    /// AG-UI (`POST /api/ag-ui`): one `TEXT_MESSAGE_CONTENT` per delta.
    AgUi,
}

pub struct RunStream {
    body: BoxStream<'static, reqwest::Result<Bytes>>,
    decoder: SseDecoder,
    pending: VecDeque<String>,
}

/// Microseconds since the Unix epoch: the clock `clock_text` deltas carry.
pub fn unix_micros() -> u64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_micros() as u64)
}

impl RunStream {
    /// `POST /api/chat`: starts a run with `model` and reads its stream from the first event.
    pub async fn start(client: &reqwest::Client, base: &str, model: &str) -> Result<Self, String> {
        let response = client
            .post(format!("{base}/api/chat"))
            .header("accept", "text/event-stream")
            .json(&json!({ "content": "benchmark", "model": model }))
            .send()
            .await
            .map_err(|error| format!("POST /api/chat: {error}"))?;
        Self::from_response(response).await
    }

    /// Starts a run with `model` and reads the stream of `format` from its start.
    pub async fn start_as(
        client: &reqwest::Client,
        base: &str,
        model: &str,
        format: StreamFormat,
    ) -> Result<Self, String> {
        if format == StreamFormat::Glassbox {
            return Self::start(client, base, model).await;
        }
        static CHATS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let chat = CHATS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let chat_id = format!("bench-{}-{chat}-{}", std::process::id(), unix_micros());
        let (path, body) = if format == StreamFormat::AgUi {
            let message = json!({"id": "m", "role": "user", "content": "benchmark"});
            let input = json!({"threadId": chat_id, "runId": chat_id, "messages": [message],
                               "tools": [], "context": [], "state": {}, "forwardedProps": {"model": model}});
            ("/api/ag-ui", input)
        } else {
            let message = json!({"id": "m", "role": "user", "parts": [{"type": "text", "text": "benchmark"}]});
            let body = json!({ "id": chat_id, "messages": [message], "trigger": "submit-message", "model": model });
            ("/api/ai-sdk/chat", body)
        };
        let response = client
            .post(format!("{base}{path}"))
            .header("accept", "text/event-stream")
            .json(&body)
            .send()
            .await
            .map_err(|error| format!("POST {path}: {error}"))?;
        Self::from_response(response).await
    }

    /// `GET /api/runs/{id}/events` with `Last-Event-ID: after`.
    pub async fn attach(
        client: &reqwest::Client,
        base: &str,
        run_id: &str,
        after: u64,
    ) -> Result<Self, String> {
        let response = client
            .get(format!("{base}/api/runs/{run_id}/events"))
            .header("last-event-id", after.to_string())
            .send()
            .await
            .map_err(|error| format!("GET events: {error}"))?;
        Self::from_response(response).await
    }

    async fn from_response(response: reqwest::Response) -> Result<Self, String> {
        let status = response.status();
        if !status.is_success() {
            let body = response.text().await.unwrap_or_default();
            return Err(format!("HTTP {status}: {body}"));
        }
        Ok(RunStream {
            body: response.bytes_stream().boxed(),
            decoder: SseDecoder::default(),
            pending: VecDeque::new(),
        })
    }

    /// The events of the next chunk off the socket, with the time it was read. `None` at the end.
    pub async fn next_chunk(&mut self) -> Option<(u64, Vec<String>)> {
        loop {
            let chunk = self.body.next().await?.ok()?;
            let received = unix_micros();
            let events = self.decoder.push(&chunk);
            if !events.is_empty() {
                return Some((received, events));
            }
        }
    }

    /// The next event's JSON.
    pub async fn next_event(&mut self) -> Option<String> {
        loop {
            if let Some(event) = self.pending.pop_front() {
                return Some(event);
            }
            let (_, events) = self.next_chunk().await?;
            self.pending.extend(events);
        }
    }

    /// Reads until an event of type `wanted` arrives; returns it.
    pub async fn until_type(&mut self, wanted: &str) -> Option<String> {
        while let Some(event) = self.next_event().await {
            if event_type(&event) == Some(wanted) {
                return Some(event);
            }
        }
        None
    }
}

/// An event's `type` without parsing the JSON: the server writes the tag before the payload, so
/// the first `"type"` is the event's own.
pub fn event_type(json: &str) -> Option<&str> {
    string_field(json, "type")
}

/// The first string field named `name` (no escapes expected: ids and type tags).
pub fn string_field<'a>(json: &'a str, name: &str) -> Option<&'a str> {
    let key = format!("\"{name}\":\"");
    let start = json.find(&key)? + key.len();
    let end = json[start..].find('"')?;
    Some(&json[start..start + end])
}

/// An event's `seq`.
pub fn seq(json: &str) -> Option<u64> {
    let start = json.find("\"seq\":")? + 6;
    let digits: String = json[start..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

/// The emit time a `clock_text` delta carries, in Unix microseconds.
pub fn clock_stamp(json: &str) -> Option<u64> {
    string_field(json, "delta")?.trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_fields_of_a_text_delta() {
        let json = r#"{"seq":42,"run_id":"run_1","ts":"2026-11-22T10:00:00.000Z","type":"text_delta","segment_id":"txt_1","delta":"1795000000000000 "}"#;
        assert_eq!(event_type(json), Some("text_delta"));
        assert_eq!(seq(json), Some(42));
        assert_eq!(string_field(json, "run_id"), Some("run_1"));
        assert_eq!(clock_stamp(json), Some(1_795_000_000_000_000));
    }
}
