//! The server's one error type and its mapping to HTTP. Every handler returns it; the client sees
//! `{"code": ..., "message": ...}` with the status below. Internal details are logged, never sent.

use axum::{
    http::{header, StatusCode},
    response::{IntoResponse, Response},
    Json,
};
use serde_json::json;

/// What a client is told to wait before trying again when the server is at a limit.
pub const RETRY_AFTER_SECS: u64 = 5;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// 400: the body is not well-formed JSON (or not JSON at all).
    #[error("{0}")]
    MalformedBody(String),
    /// 400 `same_trace`: a comparison of a trace with itself (`GET /api/compare/{a}/{a}`).
    #[error("a run cannot be compared with itself: pick another run")]
    SameTrace,
    /// 422: well-formed, but a field is missing or invalid.
    #[error("{0}")]
    InvalidField(String),
    /// 404: unknown, or owned by someone else (the two are indistinguishable on purpose).
    #[error("{0} not found")]
    NotFound(&'static str),
    /// 409: the request conflicts with the resource's state, e.g. cancelling a finished run.
    #[error("{0}")]
    Conflict(String),
    /// 409 `run_in_progress`: deleting a conversation while one of its runs is going.
    #[error("{0}")]
    RunInProgress(String),
    /// 401: no signed-in user (`--auth password` or `proxy`), or a wrong name or password.
    #[error("{0}")]
    Unauthenticated(String),
    /// 429 with `Retry-After`: too many failed sign-ins, or this user's run limits.
    #[error("{message}")]
    Throttled {
        code: &'static str,
        message: String,
        retry_after_secs: u64,
    },
    /// 403: a write from a page of another origin.
    #[error("this request must come from Glassbox's own pages")]
    CrossOrigin,
    /// 405: the path exists, the method does not.
    #[error("this method is not allowed here")]
    MethodNotAllowed,
    /// 421: the `Host` is not one this server answers to (see `http::guard`).
    #[error("this server does not answer to that host name; see --allowed-hosts")]
    UnknownHost,
    /// 413: the body is larger than the limit.
    #[error("the request body is larger than {0} bytes")]
    PayloadTooLarge(usize),
    /// 413: one field is longer than its limit (e.g. a feedback comment), said in the message.
    #[error("{0}")]
    FieldTooLarge(String),
    /// 408: the request's body did not arrive whole in time (`--body-read-timeout-secs`).
    #[error("the request body did not arrive in time")]
    BodyTimeout,
    /// 415: the body is not declared as JSON.
    #[error("expected Content-Type: application/json")]
    UnsupportedMediaType,
    /// 429: the server is at its limit of running runs or of memory for them; `Retry-After`.
    #[error("{0}")]
    TooBusy(String),
    /// 503: the database cannot take writes now (a full disk, an I/O error); details are logged.
    #[error("storage unavailable: {0}")]
    Unavailable(String),
    /// 500: a database failure; details are logged.
    #[error("database error: {0}")]
    Database(#[from] sqlx::Error),
    /// 500: a failure of the SQLite writer's own connection (rusqlite); details are logged.
    #[error("database error: {0}")]
    Sqlite(#[from] rusqlite::Error),
    /// 500: anything else that should not happen; details are logged.
    #[error("internal error: {0}")]
    Internal(String),
}

impl Error {
    /// Whether a background write yielded to a write queued behind it (SQLite's
    /// `SQLITE_INTERRUPT`, `store::writer`): no failure of the store; its work is tried again.
    pub fn is_interrupted(&self) -> bool {
        matches!(
            self,
            Error::Sqlite(rusqlite::Error::SqliteFailure(error, _))
                if error.code == rusqlite::ErrorCode::OperationInterrupted
        )
    }

    /// What a job of a background write that yielded answers ([`Error::is_interrupted`]).
    pub fn interrupted() -> Self {
        let code = rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_INTERRUPT);
        Error::Sqlite(rusqlite::Error::SqliteFailure(code, None))
    }

    pub fn status(&self) -> StatusCode {
        match self {
            Error::MalformedBody(_) | Error::SameTrace => StatusCode::BAD_REQUEST,
            Error::InvalidField(_) => StatusCode::UNPROCESSABLE_ENTITY,
            Error::NotFound(_) => StatusCode::NOT_FOUND,
            Error::Unauthenticated(_) => StatusCode::UNAUTHORIZED,
            Error::Throttled { .. } => StatusCode::TOO_MANY_REQUESTS,
            Error::CrossOrigin => StatusCode::FORBIDDEN,
            Error::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            Error::UnknownHost => StatusCode::MISDIRECTED_REQUEST,
            Error::Conflict(_) | Error::RunInProgress(_) => StatusCode::CONFLICT,
            Error::PayloadTooLarge(_) | Error::FieldTooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            Error::BodyTimeout => StatusCode::REQUEST_TIMEOUT,
            Error::UnsupportedMediaType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            Error::TooBusy(_) => StatusCode::TOO_MANY_REQUESTS,
            Error::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
            Error::Database(_) | Error::Sqlite(_) | Error::Internal(_) => {
                StatusCode::INTERNAL_SERVER_ERROR
            }
        }
    }

    pub fn code(&self) -> &'static str {
        match self {
            Error::MalformedBody(_) => "malformed_body",
            Error::SameTrace => "same_trace",
            Error::InvalidField(_) => "invalid_field",
            Error::NotFound(_) => "not_found",
            Error::Unauthenticated(_) => "unauthenticated",
            Error::Throttled { code, .. } => code,
            Error::CrossOrigin => "cross_origin",
            Error::MethodNotAllowed => "method_not_allowed",
            Error::UnknownHost => "unknown_host",
            Error::Conflict(_) => "conflict",
            Error::RunInProgress(_) => "run_in_progress",
            Error::PayloadTooLarge(_) | Error::FieldTooLarge(_) => "payload_too_large",
            Error::BodyTimeout => "request_timeout",
            Error::UnsupportedMediaType => "unsupported_media_type",
            Error::TooBusy(_) => "too_many_runs",
            Error::Unavailable(_) => "storage_unavailable",
            Error::Database(_) | Error::Sqlite(_) | Error::Internal(_) => "internal",
        }
    }

    /// What the client may read.
    pub fn public_message(&self) -> String {
        match self {
            Error::Database(_) | Error::Sqlite(_) | Error::Internal(_) => {
                "Something went wrong on the server.".to_owned()
            }
            Error::Unavailable(_) => {
                "The server cannot store anything right now; try again shortly.".to_owned()
            }
            other => other.to_string(),
        }
    }
}

impl IntoResponse for Error {
    fn into_response(self) -> Response {
        let status = self.status();
        if status.is_server_error() {
            tracing::error!(error = %self, "request failed");
        }
        let body = Json(json!({ "code": self.code(), "message": self.public_message() }));
        match self {
            Error::Throttled {
                retry_after_secs, ..
            } => (
                status,
                [(header::RETRY_AFTER, retry_after_secs.max(1).to_string())],
                body,
            )
                .into_response(),
            Error::TooBusy(_) | Error::Unavailable(_) => (
                status,
                [(header::RETRY_AFTER, RETRY_AFTER_SECS.to_string())],
                body,
            )
                .into_response(),
            _ => (status, body).into_response(),
        }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
