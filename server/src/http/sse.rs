//! Event streams: a run's log from a seq onwards, live or from the stored trace.

use std::{collections::VecDeque, convert::Infallible, sync::Arc, time::Duration};

use axum::{
    http::header,
    response::{
        sse::{Event as SseEvent, KeepAlive, Sse},
        IntoResponse, Response,
    },
};
use futures::{stream, Stream, StreamExt};

use crate::runs::Run;

/// Heartbeat comments keep proxies and browsers from timing the stream out.
pub const HEARTBEAT: Duration = Duration::from_secs(15);
/// Events read from the log per lock.
const BATCH: usize = 256;

/// Streams `run`'s events with seq > `after`, then live ones, and ends after the terminal event.
/// A subscriber holds only a cursor into the log: a slow reader delays nobody.
pub fn live(run: Arc<Run>, after: u64) -> impl Stream<Item = (u64, Arc<str>)> + Send {
    let published = run.subscribe();
    stream::unfold(
        (run, published, after, VecDeque::new()),
        |(run, mut published, cursor, mut pending)| async move {
            loop {
                if let Some((seq, json)) = pending.pop_front() {
                    return Some(((seq, json), (run, published, seq, pending)));
                }
                let state = *published.borrow_and_update();
                if state.last_seq > cursor {
                    pending.extend(run.events_between(cursor, state.last_seq, BATCH));
                    continue;
                }
                if state.finished || published.changed().await.is_err() {
                    return None;
                }
            }
        },
    )
}

/// The SSE response: `id: <seq>` and `data: <json>` per event, uncompressed, never cached.
pub fn response(events: impl Stream<Item = (u64, Arc<str>)> + Send + 'static) -> Response {
    let frames = events.map(|(seq, json)| {
        Ok::<_, Infallible>(SseEvent::default().id(seq.to_string()).data(json.as_ref()))
    });
    let sse = Sse::new(frames).keep_alive(KeepAlive::new().interval(HEARTBEAT).text("heartbeat"));
    (
        [
            (header::CACHE_CONTROL, "no-cache"),
            (header::HeaderName::from_static("x-accel-buffering"), "no"),
        ],
        sse,
    )
        .into_response()
}
