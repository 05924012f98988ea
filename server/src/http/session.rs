//! Signing in and out, and the layer that makes every request a user's (see [`crate::auth`]).
//!
//! The layer asks [`Auth::user_of`] once per request and stores the answer as [`CurrentUser`] in
//! the request; REST handlers extract it and the pages' server functions read it through the
//! context `http::router` provides, so no read or write can skip it. A request without a user
//! gets 401 (JSON) from the API, and a browser asking for a page is sent to `/login`.

use std::{net::SocketAddr, sync::Arc};

use axum::{
    extract::{ConnectInfo, Query, Request, State},
    http::{header, HeaderMap, StatusCode},
    middleware::Next,
    response::{Html, IntoResponse, Redirect, Response},
    routing::{get, post},
    Extension, Form, Router,
};
use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
use serde::Deserialize;

use super::{AppState, CurrentUser};
use crate::{auth::Auth, error::Error};

/// Paths anyone may reach: signing in, the health check, the site's static files.
fn is_public(path: &str) -> bool {
    matches!(
        path,
        "/login" | "/auth/login" | "/auth/logout" | "/healthz" | "/favicon.svg"
    ) || path.starts_with("/pkg/")
}

/// What a share link's holder may ask for without a user: the trace page and the trace's REST
/// reads and stream with `?share=`, and the server functions that read a trace (their `share`
/// argument). Each of them checks the token through `auth::Reader`; nothing else passes.
fn reads_shared(request: &Request) -> bool {
    let path = request.uri().path();
    let trace_read = path.starts_with("/t/")
        || path.starts_with("/api/traces/")
        || (path.starts_with("/api/runs/") && path.ends_with("/events"));
    (trace_read && super::extract::share_token(request.uri().query()).is_some())
        || matches!(
            path,
            "/api/fn/trace"
                | "/api/fn/trace-overview"
                | "/api/fn/inspector"
                | "/api/fn/model_turns"
        )
}

/// The sign-in page, signing in and signing out.
pub(super) fn router() -> Router<AppState> {
    Router::new()
        .route("/login", get(login_page))
        .route("/auth/login", post(login))
        .route("/auth/logout", post(logout))
}

pub async fn authenticate(
    State(auth): State<Arc<Auth>>,
    mut request: Request,
    next: Next,
) -> Response {
    let peer = peer_of(&request);
    match auth.user_of(request.headers(), peer).await {
        Ok(Some(user)) => {
            request.extensions_mut().insert(CurrentUser(user));
        }
        Ok(None) if is_public(request.uri().path()) || reads_shared(&request) => {}
        Ok(None) => return unauthenticated(&request),
        Err(error) => return error.into_response(),
    }
    next.run(request).await
}

fn peer_of(request: &Request) -> Option<std::net::IpAddr> {
    request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|ConnectInfo(address)| address.ip())
}

/// 401 for the API and other clients; a browser asking for a page goes to the sign-in page and
/// comes back after.
fn unauthenticated(request: &Request) -> Response {
    let path = request.uri().path();
    if super::guard::accepts_html(request.headers()) && !path.starts_with("/api/") {
        let next = request
            .uri()
            .path_and_query()
            .map_or("/", |target| target.as_str());
        return Redirect::to(&format!("/login?next={}", encode(next))).into_response();
    }
    Error::Unauthenticated("sign in first".into()).into_response()
}

#[derive(Debug, Deserialize)]
pub struct LoginQuery {
    next: Option<String>,
}

/// `GET /login`: the sign-in form.
pub async fn login_page(
    State(state): State<AppState>,
    Query(query): Query<LoginQuery>,
) -> Response {
    login_form(&state, query.next.as_deref(), None, StatusCode::OK)
}

#[derive(Debug, Deserialize)]
pub struct LoginForm {
    name: String,
    password: String,
    next: Option<String>,
}

/// `POST /auth/login` (a form): a session cookie and back to where the person was going, or the
/// form again with why not (401 wrong name or password, 429 too many failures).
pub async fn login(
    State(state): State<AppState>,
    connect: Option<Extension<ConnectInfo<SocketAddr>>>,
    headers: HeaderMap,
    Form(form): Form<LoginForm>,
) -> Response {
    let peer = connect.map(|Extension(ConnectInfo(address))| address.ip());
    let client = state.auth.client_address(&headers, peer);
    match state
        .auth
        .sign_in(form.name.trim(), &form.password, client)
        .await
    {
        Ok(cookie) => {
            let mut response = Redirect::to(safe_next(form.next.as_deref())).into_response();
            if let Ok(value) = cookie.parse() {
                response.headers_mut().insert(header::SET_COOKIE, value);
            }
            response
        }
        // A client that did not ask for a page gets the error as JSON, `Retry-After` included.
        Err(error) if !super::guard::accepts_html(&headers) => error.into_response(),
        Err(error) => {
            let status = error.status();
            let mut response = login_form(
                &state,
                form.next.as_deref(),
                Some(&error.public_message()),
                status,
            );
            if let Error::Throttled {
                retry_after_secs, ..
            } = error
            {
                if let Ok(value) = retry_after_secs.to_string().parse() {
                    response.headers_mut().insert(header::RETRY_AFTER, value);
                }
            }
            response
        }
    }
}

/// `POST /auth/logout`: ends the session and clears the cookie.
pub async fn logout(State(state): State<AppState>, headers: HeaderMap) -> Response {
    match state.auth.sign_out(&headers).await {
        Ok(cookie) => {
            let mut response = Redirect::to("/login").into_response();
            if let Ok(value) = cookie.parse() {
                response.headers_mut().insert(header::SET_COOKIE, value);
            }
            response
        }
        Err(error) => error.into_response(),
    }
}

/// Only a path on this site: no open redirect. Browsers drop tabs and newlines from a URL and read
/// `\\` as `/`, so `/\t/host` or `/\\host` would leave the site; dot segments can turn into `//`
/// once resolved. So: a `/` not followed by another `/`, printable ASCII without spaces or
/// backslashes (a real path is percent-encoded), and no `.` or `..` segment.
fn safe_next(next: Option<&str>) -> &str {
    let Some(next) = next else {
        return "/";
    };
    let path = next.split(['?', '#']).next().unwrap_or_default();
    let dot_segment = path.split('/').any(|segment| matches!(segment, "." | ".."));
    let printable = next
        .bytes()
        .all(|byte| byte.is_ascii_graphic() && byte != b'\\');
    if next.starts_with('/') && !next.starts_with("//") && printable && !dot_segment {
        next
    } else {
        "/"
    }
}

fn login_form(
    state: &AppState,
    next: Option<&str>,
    error: Option<&str>,
    status: StatusCode,
) -> Response {
    let next = escape(safe_next(next));
    let error = error
        .map(|message| {
            format!(
                r#"<p class="login-error" role="alert">{}</p>"#,
                escape(message)
            )
        })
        .unwrap_or_default();
    let page = format!(
        r#"<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Sign in · Glassbox</title><link rel="icon" href="/favicon.svg" type="image/svg+xml">
<link rel="stylesheet" href="{css}"></head>
<body class="login-page"><main class="login-card">
<h1>Glassbox</h1>
<form method="post" action="/auth/login">
<input type="hidden" name="next" value="{next}">
<label for="login-name">Name</label>
<input id="login-name" name="name" autocomplete="username" required autofocus>
<label for="login-password">Password</label>
<input id="login-password" name="password" type="password" autocomplete="current-password" required>
{error}<button type="submit">Sign in</button>
</form></main></body></html>"#,
        css = escape(&state.stylesheet),
    );
    (status, Html(page)).into_response()
}

fn escape(text: &str) -> String {
    html_escape::encode_quoted_attribute(text).into_owned()
}

/// What stays as it is in the `next` query parameter: letters, digits and `-_.~/`.
const NEXT_KEEPS: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~')
    .remove(b'/');

/// Percent-encodes a path for the `next` query parameter.
fn encode(text: &str) -> String {
    utf8_percent_encode(text, NEXT_KEEPS).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn next_is_only_ever_a_local_path() {
        assert_eq!(safe_next(Some("/c/abc?x=1")), "/c/abc?x=1");
        for bad in [
            "//evil.example/x",
            "https://evil.example",
            "/\\evil.example",
            "javascript:x",
            "/\t/evil.example",
            "/ /evil.example",
            "/.//evil.example",
            "/../evil.example",
            "/x/../..//evil.example",
            "/c/x\nSet-Cookie: a=b",
            "/c/\u{e9}",
        ] {
            assert_eq!(safe_next(Some(bad)), "/", "{bad}");
        }
    }
}
