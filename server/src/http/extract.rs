//! Extractors: JSON bodies whose rejections become our error shape, and the requesting user.

use axum::{
    extract::{
        rejection::JsonRejection, FromRequest, FromRequestParts, OptionalFromRequest, Request,
    },
    http::{header, request::Parts, StatusCode},
};
use serde::de::DeserializeOwned;

use crate::{
    auth::{Reader, User},
    error::Error,
};

/// `Json<T>` with 400 / 413 / 415 / 422 answered as `{code, message}`.
pub struct ApiJson<T>(pub T);

impl<S, T> FromRequest<S> for ApiJson<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = Error;

    async fn from_request(request: Request, state: &S) -> Result<Self, Self::Rejection> {
        match <axum::Json<T> as FromRequest<S>>::from_request(request, state).await {
            Ok(axum::Json(value)) => Ok(ApiJson(value)),
            Err(rejection) => Err(match &rejection {
                JsonRejection::JsonDataError(_) => Error::InvalidField(rejection.body_text()),
                JsonRejection::JsonSyntaxError(_) => Error::MalformedBody(rejection.body_text()),
                JsonRejection::MissingJsonContentType(_) => Error::UnsupportedMediaType,
                _ if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE => {
                    Error::PayloadTooLarge(super::MAX_BODY_BYTES)
                }
                _ => Error::MalformedBody(rejection.body_text()),
            }),
        }
    }
}

/// An optional body: none when the request declares no `Content-Type`, else as [`ApiJson`].
impl<S, T> OptionalFromRequest<S> for ApiJson<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = Error;

    async fn from_request(request: Request, state: &S) -> Result<Option<Self>, Self::Rejection> {
        if !request.headers().contains_key(header::CONTENT_TYPE) {
            return Ok(None);
        }
        <Self as FromRequest<S>>::from_request(request, state)
            .await
            .map(Some)
    }
}

/// Who is asking, as `http::session::authenticate` found them for this request. Every handler that
/// reads or writes a user's data takes it; a request that reached a handler without one (a public
/// path) gets 401.
#[derive(Clone, Debug)]
pub struct CurrentUser(pub User);

impl CurrentUser {
    /// The owner id every store read and every run checks.
    pub fn id(&self) -> &str {
        &self.0.id
    }
}

impl<S: Send + Sync> FromRequestParts<S> for CurrentUser {
    type Rejection = Error;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        parts
            .extensions
            .get::<CurrentUser>()
            .cloned()
            .ok_or_else(|| Error::Unauthenticated("sign in first".into()))
    }
}

/// Who reads a trace (see [`Reader`]): the `share` query parameter's link when there is one, else
/// the signed-in user.
impl FromRequestParts<super::AppState> for Reader {
    type Rejection = Error;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &super::AppState,
    ) -> Result<Self, Self::Rejection> {
        let user = parts
            .extensions
            .get::<CurrentUser>()
            .map(|user| user.0.clone());
        let share = share_token(parts.uri.query());
        Reader::resolve(&state.store, user, share.as_deref()).await
    }
}

/// The `share` parameter of a query string.
pub fn share_token(query: Option<&str>) -> Option<String> {
    form_urlencoded::parse(query?.as_bytes())
        .find(|(name, _)| name == "share")
        .map(|(_, value)| value.into_owned())
}
