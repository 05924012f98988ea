//! Request bodies: an announced length over the limit is refused before a byte of it is read, and
//! a body must arrive whole within a deadline from its head (`--body-read-timeout-secs`).
//!
//! The connection loop (`http::serve`) bounds how long a request's head may take; nothing bounded
//! its body, so a head announcing 100,000 bytes followed by a byte every 20 s held a connection
//! slot for good. Here a request with a body gets it wrapped in [`DeadlineBody`]: past the deadline
//! the body answers an error to whoever reads it, and the response becomes 408 with
//! `Connection: close`, so the slot comes back. A request without a body is passed as it is.
//!
//! Written here: tower-http's `RequestBodyTimeoutLayer` restarts its timer on every frame, so a
//! byte every few seconds never trips it; this deadline is for the whole body.

use std::{
    future::Future,
    pin::Pin,
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc,
    },
    task::{Context, Poll},
    time::Duration,
};

use axum::{
    body::{Body, Bytes},
    extract::{Request, State},
    http::{header, HeaderValue},
    middleware::Next,
    response::{IntoResponse, Response},
};
use http_body::{Frame, SizeHint};

use super::MAX_BODY_BYTES;
use crate::error::Error;

/// The middleware; its state is the deadline.
pub async fn limit_body(
    State(deadline): State<Duration>,
    request: Request,
    next: Next,
) -> Response {
    let headers = request.headers();
    let announced = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.trim().parse::<u64>().ok());
    if announced.is_some_and(|length| length > MAX_BODY_BYTES as u64) {
        return close(Error::PayloadTooLarge(MAX_BODY_BYTES).into_response());
    }
    let has_body = announced.is_some_and(|length| length > 0)
        || headers.contains_key(header::TRANSFER_ENCODING);
    if !has_body {
        return next.run(request).await;
    }
    let expired = Arc::new(AtomicBool::new(false));
    let request = request.map(|inner| {
        Body::new(DeadlineBody {
            inner,
            deadline: Box::pin(tokio::time::sleep(deadline)),
            expired: expired.clone(),
        })
    });
    let response = next.run(request).await;
    if expired.load(Ordering::Acquire) {
        return close(Error::BodyTimeout.into_response());
    }
    response
}

/// The rest of this connection's bytes are not read: it must not be reused.
fn close(mut response: Response) -> Response {
    response
        .headers_mut()
        .insert(header::CONNECTION, HeaderValue::from_static("close"));
    response
}

/// A body that fails once its deadline has passed.
struct DeadlineBody {
    inner: Body,
    deadline: Pin<Box<tokio::time::Sleep>>,
    expired: Arc<AtomicBool>,
}

impl http_body::Body for DeadlineBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let this = &mut *self;
        if let Poll::Ready(frame) = Pin::new(&mut this.inner).poll_frame(cx) {
            return Poll::Ready(frame);
        }
        if this.deadline.as_mut().poll(cx).is_ready() {
            this.expired.store(true, Ordering::Release);
            return Poll::Ready(Some(Err(axum::Error::new(Error::BodyTimeout))));
        }
        Poll::Pending
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
