//! Sending a request: retries (429 and 5xx, only before anything has streamed) and HTTP failures
//! mapped to readable errors.

use app::protocol::ErrorCode;
use serde_json::Value;

use super::{ProviderError, RETRY_DELAYS};

/// POSTs `body` to `url`, retrying 429 and 5xx (and refused connections) with backoff.
pub async fn send(
    client: &reqwest::Client,
    url: &str,
    headers: &[(&str, String)],
    body: bytes::Bytes,
) -> Result<reqwest::Response, ProviderError> {
    let mut attempt = 0;
    loop {
        let mut builder = client
            .post(url)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body.clone());
        for (name, value) in headers {
            builder = builder.header(*name, value);
        }
        let outcome = builder.send().await;
        let retryable = match &outcome {
            Ok(response) => {
                response.status().as_u16() == 429 || response.status().is_server_error()
            }
            Err(error) => error.is_connect(),
        };
        if retryable && attempt < RETRY_DELAYS.len() {
            tokio::time::sleep(RETRY_DELAYS[attempt]).await;
            attempt += 1;
            continue;
        }
        let response = outcome.map_err(|error| {
            ProviderError::new(
                ErrorCode::ConnectionFailed,
                format!(
                    "Could not reach the model provider: {}",
                    without_url(&error)
                ),
            )
        })?;
        if response.status().is_success() {
            return Ok(response);
        }
        return Err(refused(response).await);
    }
}

/// The error of a response that is not a success: its status, and the provider's own message.
async fn refused(response: reqwest::Response) -> ProviderError {
    let status = response.status();
    let detail = response
        .text()
        .await
        .ok()
        .and_then(|text| error_message(&text))
        .unwrap_or_default();
    let detail = if detail.is_empty() {
        String::new()
    } else {
        format!(": {detail}")
    };
    match status.as_u16() {
        401 | 403 => ProviderError::new(
            ErrorCode::ProviderAuth,
            format!("The provider rejected the API key ({status}){detail}"),
        ),
        404 => ProviderError::new(
            ErrorCode::UnknownModel,
            format!("The provider does not know this model ({status}){detail}"),
        ),
        429 => ProviderError::new(
            ErrorCode::RateLimited,
            format!("The provider is rate-limiting requests ({status}){detail}"),
        ),
        529 => ProviderError::new(
            ErrorCode::Overloaded,
            format!("The provider is overloaded ({status}){detail}"),
        ),
        500..=599 => ProviderError::new(
            ErrorCode::ProviderUnavailable,
            format!("The provider failed ({status}){detail}"),
        ),
        _ => ProviderError::new(
            ErrorCode::ProviderError,
            format!("The provider refused the request ({status}){detail}"),
        ),
    }
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

/// reqwest's error text without the URL (which may carry credentials in its query).
pub fn without_url(error: &reqwest::Error) -> String {
    let mut text = error.to_string();
    if let Some(url) = error.url() {
        text = text.replace(url.as_str(), "the provider");
    }
    text
}
