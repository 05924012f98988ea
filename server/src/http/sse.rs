//! Event streams: a run's log from a seq onwards, live or from the stored trace.

use std::{collections::VecDeque, sync::Arc, time::Duration};

use axum::response::Response;
use futures::{stream, Stream, StreamExt};

use tokio::sync::watch;

use super::sse_frames::{self, Frames};
use crate::{
    bus::{Bus, Progress},
    runs::Run,
    store::PgStore,
};

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
                    run.extend_with_events(&mut pending, cursor, state.last_seq, BATCH);
                    continue;
                }
                if state.finished || published.changed().await.is_err() {
                    return None;
                }
            }
        },
    )
}

/// Streams the events of a run that another instance runs, from the database: those with seq >
/// `after`, then each newer checkpoint as the bus announces it (or the 1 s poll finds it), until
/// the trace has closed (its stored events end with the terminal one).
pub fn remote(
    store: PgStore,
    bus: Arc<Bus>,
    trace_id: String,
    after: u64,
) -> impl Stream<Item = (u64, Arc<str>)> + Send {
    let progress = bus.follow(&trace_id, Some(after));
    let reader = RemoteReader {
        store,
        bus,
        progress,
        trace_id,
        cursor: after,
        pending: VecDeque::new(),
        done: false,
        from_tables: true,
    };
    stream::unfold(reader, |mut reader| async move {
        let event = reader.next().await?;
        Some((event, reader))
    })
}

/// A reader of another instance's run: where it is, and whether its next read goes to the tables.
struct RemoteReader {
    store: PgStore,
    bus: Arc<Bus>,
    progress: watch::Receiver<Progress>,
    trace_id: String,
    cursor: u64,
    pending: VecDeque<(u64, Arc<str>)>,
    /// The trace has closed and its last events are in `pending`.
    done: bool,
    /// Read the tables next, not the bus's shared window: at first, at the end, and after a
    /// poll without news. It lasts across the events it yields (each poll of the stream), so a
    /// reader that keeps up reads from the window and the tables see one query per notification.
    from_tables: bool,
}

impl RemoteReader {
    async fn read_tables(&self) -> crate::error::Result<Option<(Vec<(u64, Arc<str>)>, bool)>> {
        self.bus.count_table_read();
        self.store.events_after(&self.trace_id, self.cursor).await
    }

    async fn next(&mut self) -> Option<(u64, Arc<str>)> {
        loop {
            if let Some((seq, json)) = self.pending.pop_front() {
                self.cursor = seq;
                return Some((seq, json));
            }
            if self.done {
                return None;
            }
            let state = *self.progress.borrow_and_update();
            // The shared window while the run goes; the tables at first, at the end, after a
            // poll without news, and when the window has moved past this reader.
            let shared = if self.from_tables || state.ended {
                None
            } else {
                self.bus.recent_after(&self.trace_id, self.cursor)
            };
            match shared {
                Some(events) => self.pending.extend(events),
                None => match self.read_tables().await {
                    Ok(Some((events, ended))) => {
                        let cursor = self.cursor;
                        self.pending
                            .extend(events.into_iter().filter(|(seq, _)| *seq > cursor));
                        self.done = ended;
                    }
                    Ok(None) => return None,
                    Err(error) => {
                        tracing::warn!(trace_id = %self.trace_id, %error, "reading another instance's run failed; retrying")
                    }
                },
            }
            self.from_tables = false;
            if self.pending.is_empty() && !self.done {
                self.from_tables = tokio::time::timeout(REMOTE_POLL, self.progress.changed())
                    .await
                    .is_err();
            }
        }
    }
}

/// How often a reader of another instance's run reads the database without being told to.
const REMOTE_POLL: Duration = Duration::from_secs(1);

/// The SSE response: `id: <seq>` and `data: <json>` per event, uncompressed, never cached; the
/// bytes axum's `Sse` would send, written into the reader's one buffer ([`Frames`]) instead of
/// two allocations per event (the id's string and the event's buffer).
pub fn response(events: impl Stream<Item = (u64, Arc<str>)> + Send + 'static) -> Response {
    let mut frames = Frames::new();
    sse_frames::response(events.map(move |(seq, json)| frames.event(seq, &json)))
}
