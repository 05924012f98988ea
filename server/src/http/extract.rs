//! Extractors: JSON bodies whose rejections become our error shape, and the requesting user.

use axum::{
    extract::{rejection::JsonRejection, FromRequest, FromRequestParts, Request},
    http::{request::Parts, StatusCode},
};
use serde::de::DeserializeOwned;

use crate::{error::Error, store::LOCAL_OWNER};

/// `Json<T>` with 400 / 413 / 415 / 422 answered as `{code, message}`.
pub struct ApiJson<T>(pub T);

impl<S, T> FromRequest<S> for ApiJson<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = Error;

    async fn from_request(request: Request, state: &S) -> Result<Self, Self::Rejection> {
        match axum::Json::<T>::from_request(request, state).await {
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

/// Who is asking. There is one local user until accounts exist; every store read and every cancel
/// takes the owner from here.
pub struct CurrentUser(pub String);

impl CurrentUser {
    pub fn local() -> Self {
        CurrentUser(LOCAL_OWNER.to_owned())
    }
}

impl<S: Send + Sync> FromRequestParts<S> for CurrentUser {
    type Rejection = Error;

    async fn from_request_parts(_parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        Ok(CurrentUser::local())
    }
}
