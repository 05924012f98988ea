//! What every request passes before a handler sees it, and what every response carries.
//!
//! - **Host allowlist.** A page on another site whose name is rebound to 127.0.0.1 (DNS
//!   rebinding) reaches us with its own name in `Host`. Only loopback names, the address we listen
//!   on, and the names given by `--public-url` / `--allowed-hosts` are served; anything else is 421.
//! - **Same origin for writes.** A request that is not GET, HEAD or OPTIONS must come from our own
//!   pages: `Sec-Fetch-Site` `same-origin` (or `none`, typed by the person), or else an `Origin`
//!   naming the host it was sent to. Clients that send neither (curl, scripts) are not browsers and
//!   cannot be driven by another site. Under `/api/` (server functions aside) a write's body, if it
//!   says what it is, must say JSON: a browser sends a cross-site form or `text/plain` body without
//!   asking first, never a JSON one.
//! - **Headers.** A Content-Security-Policy that allows only our own scripts (the inline hydration
//!   script through a nonce made here per request, the wasm through `'wasm-unsafe-eval'`), no
//!   framing, no plugins, no `<base>`; `nosniff`; no referrer. On every response, errors included.
//!
//! Written here rather than taken from tower-http: its header layers set fixed values, and the CSP
//! needs the per-request nonce that the page's scripts carry.

use std::{net::SocketAddr, sync::Arc};

use axum::{
    extract::{Request, State},
    http::{header, HeaderMap, HeaderValue, Method, StatusCode},
    middleware::Next,
    response::{IntoResponse, Response},
    Json,
};
use serde_json::json;

use crate::{config::Config, error::Error};

/// The names this server answers to, lower case, without port.
#[derive(Clone, Debug)]
pub struct HostPolicy {
    allowed: Vec<String>,
}

/// The CSP nonce of this request; the page's inline scripts carry it (see `http::router`).
#[derive(Clone, Debug)]
pub struct CspNonce(pub Arc<str>);

impl HostPolicy {
    /// The names `config` serves: its address, `--public-url`'s host and `--allowed-hosts`.
    pub fn from_config(config: &Config) -> Self {
        let names: Vec<String> = config
            .public_url
            .iter()
            .chain(&config.allowed_hosts)
            .cloned()
            .collect();
        Self::new(config.addr, &names)
    }

    /// Loopback names, the IP we listen on (when it is a specific one) and `extra` (host names,
    /// or URLs whose host is taken).
    pub fn new(listen: SocketAddr, extra: &[String]) -> Self {
        let mut allowed: Vec<String> = ["localhost", "127.0.0.1", "::1"]
            .into_iter()
            .map(str::to_owned)
            .collect();
        if !listen.ip().is_unspecified() {
            allowed.push(listen.ip().to_string());
        }
        allowed.extend(extra.iter().filter_map(|entry| host_of(entry)));
        Self { allowed }
    }

    fn allows(&self, host: &str) -> bool {
        host.ends_with(".localhost") || self.allowed.iter().any(|allowed| allowed == host)
    }

    fn check(&self, request: &Request) -> Result<(), Error> {
        let host = request_host(request).ok_or(Error::UnknownHost)?;
        if !self.allows(&host) {
            return Err(Error::UnknownHost);
        }
        if is_write(request.method()) {
            same_origin(request.headers())?;
            json_body(request)?;
        }
        Ok(())
    }
}

/// The middleware: checks the request, then puts the security headers on whatever answers it.
pub async fn guard(
    State(policy): State<Arc<HostPolicy>>,
    mut request: Request,
    next: Next,
) -> Response {
    let nonce: Arc<str> = uuid::Uuid::new_v4().simple().to_string().into();
    let mut response = match policy.check(&request) {
        Ok(()) => {
            let wants_page = accepts_html(request.headers());
            request.extensions_mut().insert(CspNonce(nonce.clone()));
            json_error_shape(next.run(request).await, wants_page)
        }
        Err(error) => error.into_response(),
    };
    security_headers(response.headers_mut(), &nonce);
    response
}

/// An error that is not already `{code, message}` JSON (a missing file, axum's bare 405) gets that
/// shape; a browser asking for a page keeps an HTML answer (the 404 page with its way back, the
/// sign-in form saying why not).
fn json_error_shape(response: Response, wants_page: bool) -> Response {
    let status = response.status();
    let content_type = |prefix: &[u8]| {
        response
            .headers()
            .get(header::CONTENT_TYPE)
            .is_some_and(|v| v.as_bytes().starts_with(prefix))
    };
    let keep = content_type(b"application/json") || (wants_page && content_type(b"text/html"));
    if !(status.is_client_error() || status.is_server_error()) || keep {
        return response;
    }
    match status {
        StatusCode::NOT_FOUND if wants_page => response,
        StatusCode::NOT_FOUND => Error::NotFound("resource").into_response(),
        StatusCode::METHOD_NOT_ALLOWED => {
            let allow = response.headers().get(header::ALLOW).cloned();
            let mut answer = Error::MethodNotAllowed.into_response();
            if let Some(allow) = allow {
                answer.headers_mut().insert(header::ALLOW, allow);
            }
            answer
        }
        _ => {
            let reason = status.canonical_reason().unwrap_or("error");
            let code = reason.to_ascii_lowercase().replace([' ', '-'], "_");
            (status, Json(json!({ "code": code, "message": reason }))).into_response()
        }
    }
}

/// Whether the client asks for a page (`Accept: text/html`), as a browser navigating does.
pub(super) fn accepts_html(headers: &HeaderMap) -> bool {
    headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|accept| accept.contains("text/html"))
}

fn security_headers(headers: &mut HeaderMap, nonce: &str) {
    let policy = format!(
        "default-src 'self'; script-src 'self' 'nonce-{nonce}' 'wasm-unsafe-eval'; \
         style-src 'self'; style-src-attr 'unsafe-inline'; img-src 'self' data:; \
         connect-src 'self'; frame-ancestors 'none'; object-src 'none'; base-uri 'none'; \
         form-action 'self'"
    );
    if let Ok(value) = HeaderValue::from_str(&policy) {
        headers.insert(header::CONTENT_SECURITY_POLICY, value);
    }
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
}

fn is_write(method: &Method) -> bool {
    !matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS)
}

fn same_origin(headers: &HeaderMap) -> Result<(), Error> {
    let value = |name: header::HeaderName| headers.get(name).and_then(|v| v.to_str().ok());
    if let Some(site) = value(header::HeaderName::from_static("sec-fetch-site")) {
        return match site {
            "same-origin" | "none" => Ok(()),
            _ => Err(Error::CrossOrigin),
        };
    }
    let Some(origin) = value(header::ORIGIN) else {
        return Ok(());
    };
    // `Origin: http://name:port` against `Host: name:port`.
    let origin = origin
        .split_once("://")
        .map_or("", |(_, authority)| authority);
    let host = value(header::HOST).unwrap_or_default();
    if !origin.is_empty() && origin.eq_ignore_ascii_case(host) {
        Ok(())
    } else {
        Err(Error::CrossOrigin)
    }
}

fn json_body(request: &Request) -> Result<(), Error> {
    let path = request.uri().path();
    if !path.starts_with("/api/") || path.starts_with("/api/fn/") {
        return Ok(());
    }
    match request.headers().get(header::CONTENT_TYPE) {
        None => Ok(()),
        Some(value) => {
            let essence = value
                .to_str()
                .unwrap_or_default()
                .split(';')
                .next()
                .unwrap_or_default();
            if essence.trim().eq_ignore_ascii_case("application/json") {
                Ok(())
            } else {
                Err(Error::UnsupportedMediaType)
            }
        }
    }
}

/// The host the request was sent to, lower case, without port: `Host`, or the URI's authority
/// (HTTP/2).
fn request_host(request: &Request) -> Option<String> {
    let raw = match request.headers().get(header::HOST) {
        Some(value) => value.to_str().ok()?,
        None => request.uri().authority()?.as_str(),
    };
    host_of(raw)
}

/// The host of `name`, `name:port`, `[v6]:port` or a URL, lower case, without port or brackets.
fn host_of(value: &str) -> Option<String> {
    let rest = value.split_once("://").map_or(value, |(_, rest)| rest);
    let authority = rest.split(['/', '?', '#']).next()?.rsplit('@').next()?;
    let host = if let Some(v6) = authority.strip_prefix('[') {
        v6.split(']').next()?
    } else {
        authority.split(':').next()?
    };
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    (!host.is_empty()).then_some(host)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_are_compared_without_port_brackets_or_case() {
        assert_eq!(host_of("LocalHost:3000").as_deref(), Some("localhost"));
        assert_eq!(host_of("[::1]:80").as_deref(), Some("::1"));
        assert_eq!(
            host_of("https://chat.example.com/base").as_deref(),
            Some("chat.example.com")
        );
        assert_eq!(
            host_of("http://user@evil.test:1/").as_deref(),
            Some("evil.test")
        );
        assert_eq!(host_of(":80"), None);
        let policy = HostPolicy::new(
            "0.0.0.0:3000".parse().unwrap(),
            &["https://chat.example.com".into()],
        );
        assert!(
            policy.allows("localhost")
                && policy.allows("app.localhost")
                && policy.allows("chat.example.com")
        );
        assert!(
            !policy.allows("0.0.0.0")
                && !policy.allows("evil.test")
                && !policy.allows("localhost.evil.test")
        );
    }
}
