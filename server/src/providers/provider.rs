//! The one provider: a turn is written in a wire format, sent with retries, and its stream folded
//! into a [`TurnOutput`]. What differs between APIs (the request's shape, the stream's events, the
//! headers) is a [`WireFormat`]; everything else (the HTTP client, retries, error mapping, the
//! pending tool calls, usage, reasoning parts, completeness) is here once.

use app::protocol::ErrorCode;
use std::{collections::BTreeMap, marker::PhantomData};

use futures::StreamExt;
use serde::{de::DeserializeOwned, Deserialize, Serialize};
use serde_json::Value;

use super::{
    http, options::ModelOptions, sse::SseDecoder, ChatMessage, ChatProvider, Exchange,
    ProviderError, ProviderKind, RequestedCall, TurnOutput, TurnRequest, TurnSink,
};
use futures::future::BoxFuture;

/// One API's wire format: serde types for its request and its stream's events, and how a turn maps
/// onto them.
pub trait WireFormat: Send + Sync + 'static {
    const KIND: ProviderKind;
    /// Appended to the configured base URL.
    const PATH: &'static str;
    type Request: Serialize + DeserializeOwned;
    /// One `data:` payload of the stream.
    type Event: DeserializeOwned;
    /// What the format remembers between events (open blocks, item ids).
    type State: Default + Send;

    /// The request's headers besides the content type: `Authorization: Bearer <key>` (the
    /// OpenAI APIs') unless the format says otherwise.
    fn headers(api_key: Option<&str>, _options: &ModelOptions) -> Vec<(&'static str, String)> {
        api_key
            .map(|key| ("authorization", format!("Bearer {key}")))
            .into_iter()
            .collect()
    }
    fn request(turn: &TurnRequest) -> Self::Request;
    /// A sent request back in OpenAI chat format, for the inspector export.
    fn conversation(request: Self::Request) -> Vec<ChatMessage>;
    /// Applies one event; true when it ends the stream.
    fn apply(
        state: &mut Self::State,
        event: Self::Event,
        turn: &mut TurnBuilder,
        sink: &mut dyn TurnSink,
    ) -> Result<bool, ProviderError>;
    /// Releases anything held back when the stream ends.
    fn flush(_state: &mut Self::State, _turn: &mut TurnBuilder, _sink: &mut dyn TurnSink) {}
}

/// What a model's name may not carry unescaped into a URL path segment: all but RFC 3986's
/// unreserved characters.
const PATH_SEGMENT: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~');

/// Where and how a provider is reached: its base URL (`{model}` in it is replaced by the model's
/// name, for Azure's deployment URLs), query parameters (`api-version`), its key and the header
/// that carries it when not the format's own.
#[derive(Clone, Debug, Default)]
pub struct Endpoint {
    pub base_url: String,
    pub api_key: Option<String>,
    /// Sends the bare key in this header instead of the format's (Azure's `api-key`).
    pub api_key_header: Option<String>,
    pub query: Vec<(String, String)>,
}

impl Endpoint {
    /// `base_url` + `path` for `model`, with the query.
    pub fn url(&self, path: &str, model: &str) -> String {
        let base = self.base_url.trim_end_matches('/');
        // `.` and `..` alone would be dot segments, which URL parsing resolves away.
        let model: String = match model {
            "." | ".." => model.replace('.', "%2E"),
            _ => percent_encoding::utf8_percent_encode(model, PATH_SEGMENT).collect(),
        };
        let mut url = format!("{}{path}", base.replace("{model}", &model));
        if !self.query.is_empty() {
            let query = form_urlencoded::Serializer::new(String::new())
                .extend_pairs(&self.query)
                .finish();
            url.push(if url.contains('?') { '&' } else { '?' });
            url.push_str(&query);
        }
        url
    }

    /// The request's headers: the format's, with the key in `api_key_header` when one is set,
    /// then the model's configured ones (a configured header replaces one of the same name).
    pub fn headers<F: WireFormat>(&self, options: &ModelOptions) -> Vec<(String, String)> {
        let key = self.api_key.as_deref();
        let own_key = if self.api_key_header.is_some() {
            None
        } else {
            key
        };
        let mut headers: Vec<(String, String)> = F::headers(own_key, options)
            .into_iter()
            .map(|(name, value)| (name.to_owned(), value))
            .collect();
        if let (Some(name), Some(key)) = (&self.api_key_header, key) {
            headers.push((name.clone(), key.to_owned()));
        }
        let configured = options.expanded_headers();
        headers.retain(|(name, _)| {
            !configured
                .iter()
                .any(|(own, _)| own.eq_ignore_ascii_case(name))
        });
        headers.extend(configured);
        headers
    }
}

pub struct Provider<F> {
    clients: http::Clients,
    endpoint: Endpoint,
    format: PhantomData<F>,
}

impl<F: WireFormat> Provider<F> {
    pub fn new(clients: http::Clients, endpoint: Endpoint) -> Self {
        Provider {
            clients,
            endpoint,
            format: PhantomData,
        }
    }

    async fn exchange(
        &self,
        request: &TurnRequest,
        body: bytes::Bytes,
        sink: &mut dyn TurnSink,
    ) -> Result<TurnOutput, ProviderError> {
        let url = self.endpoint.url(F::PATH, &request.model);
        let headers = self.endpoint.headers::<F>(&request.options);
        let outgoing = http::Outgoing {
            url: &url,
            headers: &headers,
            body,
        };
        let response = http::send(&self.clients, outgoing, &mut |retry| {
            sink.retrying(retry.attempt, retry.delay, &retry.reason)
        })
        .await?;
        read_stream::<F>(response, sink).await
    }
}

impl<F: WireFormat> ChatProvider for Provider<F> {
    fn stream_turn<'a>(
        &'a self,
        request: &'a TurnRequest,
        sink: &'a mut dyn TurnSink,
    ) -> BoxFuture<'a, Exchange> {
        Box::pin(async move {
            let mut sent = serde_json::to_value(F::request(request)).unwrap_or(Value::Null);
            // `extra_body` goes in as it is, over the format's own members.
            if let (Value::Object(body), Some(extra)) = (&mut sent, &request.options.extra_body) {
                body.extend(extra.clone());
            }
            // Serialized once: these bytes go out, and the same value is what gets recorded.
            let body = serde_json::to_vec(&sent).unwrap_or_default();
            let result = self.exchange(request, body.into(), sink).await;
            Exchange {
                format: F::KIND,
                sent,
                result,
            }
        })
    }
}

/// A recorded request of `format` back in OpenAI chat format; None when it does not read as one.
pub fn conversation<F: WireFormat>(sent: &Value) -> Option<Vec<ChatMessage>> {
    F::Request::deserialize(sent).ok().map(F::conversation)
}

/// Reads the SSE body to its end, event by event.
async fn read_stream<F: WireFormat>(
    response: reqwest::Response,
    sink: &mut dyn TurnSink,
) -> Result<TurnOutput, ProviderError> {
    let mut body = response.bytes_stream();
    let mut decoder = SseDecoder::default();
    let (mut state, mut turn) = (F::State::default(), TurnBuilder::default());
    let mut ended = false;
    while let Some(chunk) = body.next().await {
        let bytes = chunk.map_err(|error| {
            ProviderError::new(
                ErrorCode::StreamInterrupted,
                format!(
                    "The connection to the provider broke mid-answer: {}",
                    http::without_url(&error)
                ),
            )
        })?;
        for data in decoder.push(&bytes) {
            ended |= apply::<F>(&data, &mut state, &mut turn, sink)?;
        }
    }
    if let Some(data) = decoder.finish() {
        ended |= apply::<F>(&data, &mut state, &mut turn, sink)?;
    }
    if !ended && !turn.completed {
        return Err(ProviderError::new(
            ErrorCode::StreamInterrupted,
            "The provider's stream ended before the answer was complete.",
        ));
    }
    F::flush(&mut state, &mut turn, sink);
    turn.finish()
}

fn apply<F: WireFormat>(
    data: &str,
    state: &mut F::State,
    turn: &mut TurnBuilder,
    sink: &mut dyn TurnSink,
) -> Result<bool, ProviderError> {
    if data.trim() == "[DONE]" {
        return Ok(true);
    }
    let event = serde_json::from_str(data).map_err(|error| {
        ProviderError::new(
            ErrorCode::MalformedStream,
            if error.is_syntax() || error.is_eof() {
                "The provider sent a chunk that is not valid JSON.".to_owned()
            } else {
                format!("The provider sent a chunk of an unexpected shape: {error}")
            },
        )
    })?;
    F::apply(state, event, turn, sink)
}

/// The turn as it streams: text and reasoning as they arrive, tool calls by position until the
/// stream ends.
#[derive(Default)]
pub struct TurnBuilder {
    output: TurnOutput,
    calls: BTreeMap<u64, PendingCall>,
    /// The stream said it was complete (a finish reason, a stop event).
    pub completed: bool,
}

/// A tool call whose parts (id, name, argument fragments) are still arriving.
#[derive(Default)]
pub struct PendingCall {
    pub id: String,
    pub name: String,
    pub arguments: String,
}

impl TurnBuilder {
    pub fn text(&mut self, text: &str, sink: &mut dyn TurnSink) {
        self.output.text.push_str(text);
        sink.text(text);
    }

    /// Reasoning of part `part`; parts after the first are kept apart by a blank line.
    pub fn reasoning(&mut self, part: u32, text: &str, sink: &mut dyn TurnSink) {
        let reasoning = &mut self.output.reasoning;
        if part > 0 && !reasoning.is_empty() && !reasoning.ends_with("\n\n") {
            reasoning.push_str("\n\n");
        }
        reasoning.push_str(text);
        sink.reasoning(part, text);
    }

    pub fn call(&mut self, position: u64) -> &mut PendingCall {
        self.calls.entry(position).or_default()
    }

    pub fn existing_call(&mut self, position: u64) -> Option<&mut PendingCall> {
        self.calls.get_mut(&position)
    }

    /// The position after every call so far.
    pub fn next_call_position(&self) -> u64 {
        self.calls.keys().next_back().map_or(0, |last| last + 1)
    }

    pub fn call_count(&self) -> u64 {
        self.calls.len() as u64
    }

    /// Keeps a provider's own record of the turn's reasoning, to be sent back as it came.
    pub fn reasoning_block(&mut self, format: ProviderKind, block: Value) {
        self.output
            .reasoning_blocks
            .push(super::ReasoningBlock { format, block });
    }

    pub fn finish_reason(&mut self, reason: String) {
        self.output.finish_reason = Some(reason);
    }

    pub fn usage(&mut self) -> &mut app::protocol::Usage {
        self.output.usage.get_or_insert_with(Default::default)
    }

    /// The turn, its calls in stream order (a call without an id gets `call_<position>`).
    fn finish(mut self) -> Result<TurnOutput, ProviderError> {
        for (position, call) in std::mem::take(&mut self.calls) {
            if call.name.is_empty() {
                return Err(ProviderError::new(
                    ErrorCode::MalformedStream,
                    "The provider sent a tool call without a name.",
                ));
            }
            self.output.tool_calls.push(RequestedCall {
                id: if call.id.is_empty() {
                    format!("call_{position}")
                } else {
                    call.id
                },
                name: call.name,
                arguments: if call.arguments.trim().is_empty() {
                    "{}".to_owned()
                } else {
                    call.arguments
                },
            });
        }
        Ok(self.output)
    }
}

/// An error object as providers send it mid-stream (`{"message", "code"?, "type"?}`: OpenAI's,
/// OpenRouter's numeric `code`, Anthropic's `type`), or a bare string.
#[derive(Deserialize)]
#[serde(untagged)]
pub enum WireError {
    Object {
        #[serde(default)]
        message: Option<String>,
        #[serde(default)]
        code: Option<Value>,
        #[serde(default, rename = "type")]
        kind: Option<String>,
    },
    Text(String),
}

impl WireError {
    /// The error that ends the turn: the provider's own message, and a code from its own code or
    /// type (`overloaded`, `rate_limited`, `context_length`, `content_filter`, ...).
    pub fn into_error(error: Option<WireError>) -> ProviderError {
        let (message, code, kind) = match error {
            Some(WireError::Object {
                message,
                code,
                kind,
            }) => (message, code, kind),
            Some(WireError::Text(message)) => (Some(message), None, None),
            None => (None, None, None),
        };
        let code = code.map(|code| match code {
            Value::String(text) => text,
            other => other.to_string(),
        });
        let named = [code.as_deref(), kind.as_deref()];
        let label = named
            .iter()
            .flatten()
            .next()
            .map(|name| format!(" ({name})"));
        let message = message.unwrap_or_else(|| "unknown error".to_owned());
        let message = crate::sanitize::shorten(&message, 300)
            .map(|cut| format!("{cut}…"))
            .unwrap_or(message);
        ProviderError::new(
            http::classify(&named),
            format!(
                "The provider reported an error mid-stream{}: {message}",
                label.unwrap_or_default()
            ),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_endpoint_puts_the_model_in_its_path_escaped_and_the_query_after() {
        let endpoint = Endpoint {
            base_url: "https://r.openai.azure.com/openai/deployments/{model}/".into(),
            query: vec![("api-version".into(), "2024-10-21".into())],
            ..Endpoint::default()
        };
        assert_eq!(
            endpoint.url("/chat/completions", "gpt-4o.mini_1"),
            "https://r.openai.azure.com/openai/deployments/gpt-4o.mini_1/chat/completions?api-version=2024-10-21"
        );
        assert_eq!(
            endpoint.url("/chat/completions", "../x?y"),
            "https://r.openai.azure.com/openai/deployments/..%2Fx%3Fy/chat/completions?api-version=2024-10-21"
        );
        assert!(endpoint.url("", "..").contains("/deployments/%2E%2E?"));
    }
}
