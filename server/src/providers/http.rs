//! Sending a request: retries (429, 529 and 5xx, only before anything has streamed, honouring
//! `Retry-After`; a request lost on a kept-alive connection the server had closed is sent again
//! once on a fresh one) and HTTP failures mapped to readable errors.

use std::time::{Duration, SystemTime};

use app::protocol::ErrorCode;
use serde_json::Value;

use super::{ProviderError, RETRY_DELAYS};

/// How long a pooled connection may stay idle before it is closed: below the keep-alive of
/// common servers (uvicorn, so vLLM, and Node.js close idle connections after 5 s; llama.cpp's
/// server after 5 s), so that Glassbox closes first and rarely sends on a connection the server
/// is closing.
pub const POOL_IDLE_TIMEOUT: Duration = Duration::from_secs(4);

/// The longest `Retry-After` honoured; a provider asking for more ends the turn at once.
pub const RETRY_AFTER_CAP: Duration = Duration::from_secs(60);

/// The HTTP clients of the providers: one that keeps connections alive, and one that never
/// reuses one, for the single resend of a request lost on a stale connection.
#[derive(Clone)]
pub struct Clients {
    pub pooled: reqwest::Client,
    pub fresh: reqwest::Client,
}

impl Clients {
    pub fn new() -> Result<Self, String> {
        let build = |idle: usize| {
            // No redirects: reqwest keeps headers such as `x-api-key` and `api-key` (it drops
            // only `Authorization`) on a redirect to another host, which would hand the key over.
            reqwest::Client::builder()
                .connect_timeout(Duration::from_secs(10))
                .redirect(reqwest::redirect::Policy::none())
                .pool_idle_timeout(POOL_IDLE_TIMEOUT)
                .pool_max_idle_per_host(idle)
                .build()
                .map_err(|error| format!("cannot build the HTTP client: {error}"))
        };
        Ok(Clients {
            pooled: build(usize::MAX)?,
            fresh: build(0)?,
        })
    }
}

/// A wait before another attempt, as the UI shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Retry {
    /// 1 for the first retry.
    pub attempt: u32,
    pub delay: Duration,
    /// The error code the wait is for: `rate_limited`, `overloaded`, `provider_unavailable`,
    /// `connection_failed`.
    pub reason: ErrorCode,
}

/// One request to send: where, with which headers, and its body.
pub struct Outgoing<'a> {
    pub url: &'a str,
    pub headers: &'a [(String, String)],
    pub body: bytes::Bytes,
}

impl Outgoing<'_> {
    async fn send(&self, client: &reqwest::Client) -> reqwest::Result<reqwest::Response> {
        let mut builder = client
            .post(self.url)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(self.body.clone());
        for (name, value) in self.headers {
            builder = builder.header(name.as_str(), value.as_str());
        }
        builder.send().await
    }
}

/// POSTs the request, retrying 429, 529 and 5xx (and refused connections) with backoff or the
/// provider's `Retry-After`; `on_retry` hears of each wait before it starts.
pub async fn send(
    clients: &Clients,
    request: Outgoing<'_>,
    on_retry: &mut (dyn FnMut(Retry) + Send),
) -> Result<reqwest::Response, ProviderError> {
    let mut attempt = 0;
    loop {
        let response = match first_response(clients, &request).await {
            Ok(response) => response,
            Err(error) if error.is_connect() && attempt < RETRY_DELAYS.len() => {
                let delay = RETRY_DELAYS[attempt];
                attempt += 1;
                wait(attempt, delay, ErrorCode::ConnectionFailed, on_retry).await;
                continue;
            }
            Err(error) => return Err(unreachable(&error)),
        };
        let status = response.status();
        if status.is_success() {
            return Ok(response);
        }
        if (status.as_u16() == 429 || status.is_server_error()) && attempt < RETRY_DELAYS.len() {
            let delay = retry_after(response.headers(), SystemTime::now());
            if delay.is_none_or(|delay| delay <= RETRY_AFTER_CAP) {
                let delay = delay.unwrap_or(RETRY_DELAYS[attempt]);
                attempt += 1;
                wait(attempt, delay, status_code(status.as_u16()), on_retry).await;
                continue;
            }
        }
        return Err(refused(response).await);
    }
}

/// Tells of the wait, then waits.
async fn wait(
    attempt: usize,
    delay: Duration,
    reason: ErrorCode,
    on_retry: &mut (dyn FnMut(Retry) + Send),
) {
    tracing::info!(attempt, delay_ms = delay.as_millis() as u64, reason = %reason, "retrying a model request");
    on_retry(Retry {
        attempt: u32::try_from(attempt).unwrap_or(u32::MAX),
        delay,
        reason,
    });
    tokio::time::sleep(delay).await;
}

/// The response to one attempt. A request that fails before any response byte, not while
/// connecting (so on a kept-alive connection the server closed meanwhile), is sent once more on
/// a fresh connection.
async fn first_response(
    clients: &Clients,
    request: &Outgoing<'_>,
) -> reqwest::Result<reqwest::Response> {
    match request.send(&clients.pooled).await {
        Err(error) if lost_on_stale_connection(&error) => {
            tracing::info!(
                error = %without_url(&error),
                "a model request was lost on a kept-alive connection; sent again on a fresh one"
            );
            request.send(&clients.fresh).await
        }
        outcome => outcome,
    }
}

/// True for a request that went out but found its connection closed before any answer: hyper's
/// "connection closed before message completed", a reset or a broken pipe.
fn lost_on_stale_connection(error: &reqwest::Error) -> bool {
    if error.is_connect() || error.is_timeout() || error.is_builder() || error.is_status() {
        return false;
    }
    let mut source: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(error);
    while let Some(cause) = source {
        if let Some(hyper) = cause.downcast_ref::<hyper::Error>() {
            if hyper.is_incomplete_message() || hyper.is_canceled() || hyper.is_closed() {
                return true;
            }
        }
        if let Some(io) = cause.downcast_ref::<std::io::Error>() {
            use std::io::ErrorKind::*;
            if matches!(
                io.kind(),
                ConnectionReset | ConnectionAborted | BrokenPipe | UnexpectedEof
            ) {
                return true;
            }
        }
        source = cause.source();
    }
    false
}

fn unreachable(error: &reqwest::Error) -> ProviderError {
    ProviderError::new(
        ErrorCode::ConnectionFailed,
        format!("Could not reach the model provider: {}", without_url(error)),
    )
}

/// How long the provider asks to wait: `retry-after-ms` (OpenAI, Azure), else `Retry-After` in
/// seconds or as an HTTP date.
pub fn retry_after(headers: &reqwest::header::HeaderMap, now: SystemTime) -> Option<Duration> {
    let text = |name: &str| headers.get(name).and_then(|value| value.to_str().ok());
    if let Some(ms) = text("retry-after-ms").and_then(|ms| ms.trim().parse::<f64>().ok()) {
        if ms.is_finite() && ms >= 0.0 {
            return Some(Duration::from_millis(ms.min(u64::MAX as f64) as u64));
        }
    }
    let value = text("retry-after")?.trim();
    if let Ok(seconds) = value.parse::<u64>() {
        return Some(Duration::from_secs(seconds));
    }
    let date = httpdate::parse_http_date(value).ok()?;
    Some(date.duration_since(now).unwrap_or(Duration::ZERO))
}

/// The code of an HTTP status that is retried.
fn status_code(status: u16) -> ErrorCode {
    match status {
        429 => ErrorCode::RateLimited,
        529 => ErrorCode::Overloaded,
        _ => ErrorCode::ProviderUnavailable,
    }
}

/// The code of a provider's own error code or type (`context_length_exceeded`,
/// `overloaded_error`, `rate_limit_exceeded`, `content_filter`, OpenRouter's numeric codes);
/// `provider_error` for any other.
pub fn classify(names: &[Option<&str>]) -> ErrorCode {
    for name in names.iter().flatten() {
        let name = name.to_ascii_lowercase();
        let code = match name.as_str() {
            "529" => ErrorCode::Overloaded,
            "429" => ErrorCode::RateLimited,
            "413" => ErrorCode::ContextLength,
            _ if name.contains("overloaded") => ErrorCode::Overloaded,
            _ if name.contains("rate_limit") || name.contains("too_many_requests") => {
                ErrorCode::RateLimited
            }
            _ if name.contains("context_length") || name.contains("context_window") => {
                ErrorCode::ContextLength
            }
            _ if name.contains("content_filter") || name.contains("content_policy") => {
                ErrorCode::ContentFilter
            }
            _ if name == "server_error" || name == "api_error" || name.starts_with('5') => {
                ErrorCode::ProviderUnavailable
            }
            _ => continue,
        };
        return code;
    }
    ErrorCode::ProviderError
}

/// The error of a response that is not a success: its status, and the provider's own message.
async fn refused(response: reqwest::Response) -> ProviderError {
    let status = response.status();
    let body = response.text().await.unwrap_or_default();
    let detail = error_message(&body)
        .map(|detail| format!(": {detail}"))
        .unwrap_or_default();
    let own = error_code(&body);
    let specific = classify(&[own.as_deref()]);
    let (code, what) = match status.as_u16() {
        401 | 403 => (ErrorCode::ProviderAuth, "rejected the API key"),
        404 => (ErrorCode::UnknownModel, "does not know this model"),
        429 => (ErrorCode::RateLimited, "is rate-limiting requests"),
        529 => (ErrorCode::Overloaded, "is overloaded"),
        _ if specific == ErrorCode::ContextLength => {
            (specific, "says the conversation is too long")
        }
        _ if specific == ErrorCode::ContentFilter => (specific, "filtered the request"),
        _ if specific == ErrorCode::Overloaded => (specific, "is overloaded"),
        500..=599 => (ErrorCode::ProviderUnavailable, "failed"),
        _ => (ErrorCode::ProviderError, "refused the request"),
    };
    ProviderError::new(code, format!("The provider {what} ({status}){detail}"))
}

/// The provider's own error message from an error body, shortened.
pub fn error_message(body: &str) -> Option<String> {
    let value: Value = serde_json::from_str(body).ok()?;
    let message = value
        .pointer("/error/message")
        .or_else(|| value.get("message"))
        .and_then(Value::as_str)?;
    Some(
        crate::sanitize::shorten(message, 300)
            .map(|cut| format!("{cut}…"))
            .unwrap_or_else(|| message.to_owned()),
    )
}

/// The provider's own error code or type from an error body (`error.code`, `error.type`).
fn error_code(body: &str) -> Option<String> {
    let value: Value = serde_json::from_str(body).ok()?;
    ["/error/code", "/error/type", "/code", "/type"]
        .iter()
        .filter_map(|pointer| value.pointer(pointer))
        .find_map(|code| match code {
            Value::String(text) if text != "error" => Some(text.clone()),
            Value::Number(number) => Some(number.to_string()),
            _ => None,
        })
}

/// reqwest's error text without the URL (which may carry credentials in its query).
pub fn without_url(error: &reqwest::Error) -> String {
    let mut text = error.to_string();
    if let Some(url) = error.url() {
        text = text.replace(url.as_str(), "the provider");
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_reads_seconds_milliseconds_and_dates() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        let mut headers = reqwest::header::HeaderMap::new();
        assert_eq!(retry_after(&headers, now), None);
        headers.insert("retry-after", "2".parse().expect("header"));
        assert_eq!(retry_after(&headers, now), Some(Duration::from_secs(2)));
        let later = httpdate::fmt_http_date(now + Duration::from_secs(7));
        headers.insert("retry-after", later.parse().expect("header"));
        assert_eq!(retry_after(&headers, now), Some(Duration::from_secs(7)));
        headers.insert("retry-after", "soon".parse().expect("header"));
        assert_eq!(retry_after(&headers, now), None);
        headers.insert("retry-after-ms", "1500".parse().expect("header"));
        assert_eq!(
            retry_after(&headers, now),
            Some(Duration::from_millis(1500))
        );
    }

    #[test]
    fn provider_codes_map_onto_error_codes() {
        for (name, code) in [
            ("context_length_exceeded", ErrorCode::ContextLength),
            ("overloaded_error", ErrorCode::Overloaded),
            ("rate_limit_exceeded", ErrorCode::RateLimited),
            ("content_filter", ErrorCode::ContentFilter),
            ("502", ErrorCode::ProviderUnavailable),
            ("invalid_request_error", ErrorCode::ProviderError),
        ] {
            assert_eq!(classify(&[Some(name)]), code, "{name}");
        }
    }
}
