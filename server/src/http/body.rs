//! Request bodies: an announced length over the limit is refused, and a body must arrive whole
//! within a deadline from its head (`--body-read-timeout-secs`).
//!
//! A refusal must reach the client. Most clients (reqwest, curl without `Expect: 100-continue`,
//! fetch) write the whole body before they read, and a server that answers and closes while
//! bytes are still coming resets the connection under them: a broken pipe, no 413 at all. So a
//! body announced over the limit but at most [`DRAIN_LIMIT`] is read to its end and thrown away,
//! within the same deadline, before the 413; past that, or when the client waits for
//! `100 Continue`, the 413 goes at once and the connection is closed.
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
use futures::StreamExt;
use http_body::{Frame, SizeHint};

use super::MAX_BODY_BYTES;
use crate::error::Error;

/// The largest refused body that is still read (and discarded) so its client gets the 413.
pub const DRAIN_LIMIT: u64 = 8 * MAX_BODY_BYTES as u64;

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
    if let Some(length) = announced.filter(|length| *length > MAX_BODY_BYTES as u64) {
        let waits_for_continue = headers
            .get(header::EXPECT)
            .is_some_and(|value| value.as_bytes().eq_ignore_ascii_case(b"100-continue"));
        if waits_for_continue || length > DRAIN_LIMIT {
            return close(Error::PayloadTooLarge(MAX_BODY_BYTES).into_response());
        }
        return refuse_after_reading(request.into_body(), deadline).await;
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

/// Reads a refused body to its end within `deadline` and answers 413; the connection is kept
/// when the body was read whole, closed when it was not.
async fn refuse_after_reading(body: Body, deadline: Duration) -> Response {
    let refusal = Error::PayloadTooLarge(MAX_BODY_BYTES).into_response();
    let mut body = body.into_data_stream();
    let read = tokio::time::timeout(deadline, async {
        while let Some(chunk) = body.next().await {
            chunk?;
        }
        Ok::<_, axum::Error>(())
    })
    .await;
    match read {
        Ok(Ok(())) => refusal,
        _ => close(refusal),
    }
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
