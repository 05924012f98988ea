//! Every SSE response (Glassbox's own stream, the AI SDK's UI message stream, AG-UI): each reader
//! writes its frames (`id: <n>` when numbered, `data: <json>`, a blank line) into one buffer of
//! its own and hands each frame on as `Bytes` split off it, so a frame costs no allocation of its
//! own. axum's `sse::Event` would build each frame in a new buffer from a string made first (the
//! id, or the chunk's JSON). The bytes on the wire are the same as axum's: the same fields in the
//! same order, the same heartbeat. The heartbeat's timer is not moved at every frame (a timer
//! wheel operation per event, as axum's `KeepAlive` does): when it fires after a frame, it is set
//! again from that frame's time.
//!
//! [`Reader`] is what both mapped streams do with a run's log: a delta that continues an open part
//! (nearly every event) becomes its frame at once, written by the [`Mapping`]; any other event
//! becomes the frames the mapping queues, sent before the next event is read.

use std::{
    collections::VecDeque,
    convert::Infallible,
    fmt::Write as _,
    future::Future,
    pin::Pin,
    task::{Context, Poll},
    time::Duration,
};

use axum::{
    body::Body,
    http::{header, HeaderName, HeaderValue},
    response::Response,
};
use bytes::{BufMut, Bytes, BytesMut};
use futures::Stream;
use tokio::time::{Instant, Sleep};

/// Heartbeat comments keep proxies and browsers from timing the stream out.
pub const HEARTBEAT: Duration = Duration::from_secs(15);
/// The headers of every SSE response besides its content type: never cached, and not buffered by
/// a proxy (nginx's `X-Accel-Buffering`).
pub const HEADERS: [(HeaderName, HeaderValue); 2] = [
    (
        header::CACHE_CONTROL,
        HeaderValue::from_static("private, no-store"),
    ),
    (
        HeaderName::from_static("x-accel-buffering"),
        HeaderValue::from_static("no"),
    ),
];
/// The buffer a reader's frames are split off. A frame is about 100 bytes: when the buffer is
/// used up and the frames split off it have all been sent (dropped), the next one reuses it in
/// place; otherwise a new one of this size is allocated.
const BLOCK: usize = 1024;
/// What a frame adds to its data at most: `id: <u64>\n`, `data: ` and the blank line.
const FRAMING: usize = 40;

/// The heartbeat comment, as axum's `KeepAlive::text("heartbeat")` writes it.
const HEARTBEAT_FRAME: &[u8] = b": heartbeat\n\n";

/// One reader's frames.
pub struct Frames {
    buf: BytesMut,
}

impl Default for Frames {
    fn default() -> Self {
        Self::new()
    }
}

impl Frames {
    pub fn new() -> Self {
        Frames {
            buf: BytesMut::with_capacity(BLOCK),
        }
    }

    /// A frame whose data `write` writes straight into the buffer (one line: compact JSON, which
    /// has no line break), after `id: <id>` when numbered. `size` is about as long as the data
    /// will be. `None`, with nothing written, when `write` says it has nothing (`false`).
    pub fn write(
        &mut self,
        id: Option<u64>,
        size: usize,
        write: impl FnOnce(&mut bytes::buf::Writer<&mut BytesMut>) -> bool,
    ) -> Option<Bytes> {
        self.buf.reserve(size + FRAMING);
        self.id(id);
        self.buf.put_slice(b"data: ");
        let data_at = self.buf.len();
        let mut writer = (&mut self.buf).writer();
        if !write(&mut writer) {
            self.buf.clear();
            return None;
        }
        if self.buf.len() == data_at {
            // No data: no `data:` field, as axum writes an empty one.
            self.buf.truncate(data_at - b"data: ".len());
        } else {
            self.buf.put_u8(b'\n');
        }
        self.buf.put_u8(b'\n');
        Some(self.buf.split().freeze())
    }

    /// A frame of a logged event: `id: <seq>` and its JSON, which is compact (serde_json escapes
    /// every line break inside a string), so one `data:` line.
    pub fn event(&mut self, seq: u64, json: &str) -> Bytes {
        debug_assert!(!json.contains(['\n', '\r']), "a logged event is one line");
        let frame = self.write(Some(seq), json.len(), |writer| {
            writer.get_mut().put_slice(json.as_bytes());
            true
        });
        frame.unwrap_or_default()
    }

    /// A frame of any text: one `data:` line per line of it, as axum's `Event::data` writes it.
    pub fn data(&mut self, id: Option<u64>, data: &str) -> Bytes {
        let frame = self.write(id, data.len() + 16, |writer| {
            let buf = writer.get_mut();
            let mut line_at = 0;
            for (at, _) in data.match_indices(['\n', '\r']) {
                buf.put_slice(&data.as_bytes()[line_at..=at]);
                buf.put_slice(b"data: ");
                line_at = at + 1;
            }
            buf.put_slice(&data.as_bytes()[line_at..]);
            true
        });
        frame.unwrap_or_default()
    }

    fn id(&mut self, id: Option<u64>) {
        if let Some(id) = id {
            // Writing into a BytesMut never fails.
            let _ = writeln!(self.buf, "id: {id}");
        }
    }
}

/// The SSE response of a reader's frames: uncompressed, never cached, a heartbeat comment after
/// [`HEARTBEAT`] without a frame (as `sse::response`).
pub fn response(frames: impl Stream<Item = Bytes> + Send + 'static) -> Response {
    let body = Heartbeat {
        frames: Box::pin(frames),
        sleep: Box::pin(tokio::time::sleep(HEARTBEAT)),
        last_frame: None,
    };
    let mut response = Response::new(Body::from_stream(body));
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    headers.extend(HEADERS);
    response
}

/// How a mapped stream turns the run log's events (their JSON) into its frames.
pub trait Mapping: Send + 'static {
    /// The frame of a delta that continues an open part, written straight into `frames`; `None`
    /// (nothing written) for any other event.
    fn delta(&mut self, json: &str, frames: &mut Frames) -> Option<Bytes>;
    /// Queues the frames of an event that is not such a delta (none, one or several).
    fn event(&mut self, json: &str, frames: &mut Frames, out: &mut VecDeque<Bytes>);
    /// Whether the stream ends once the queued frames are sent.
    fn ended(&mut self) -> bool;
    /// Queues the frames that close the stream when the run's log ends first.
    fn log_ended(&mut self, frames: &mut Frames, out: &mut VecDeque<Bytes>);
}

pin_project_lite::pin_project! {
    /// One response's reading of a run's log through a [`Mapping`]: a stream of its frames,
    /// ending when the mapping says so or after the log's closing frames. With a thousand
    /// readers, each event finds its reader's state out of the cache and every cache line it
    /// touches costs: so the log's stream is held in place, not boxed, and what every event
    /// reads comes first, together (`repr(C)` keeps the order; the mapping's own hot fields
    /// lead it too). docs/benchmarks.md, "the AI SDK stream beside Glassbox's SSE".
    #[repr(C)]
    pub struct Reader<S, M> {
        // Frames made and not sent yet: those of an event that means several.
        pending: VecDeque<Bytes>,
        log_ended: bool,
        frames: Frames,
        mapping: M,
        #[pin]
        events: S,
    }
}

impl<S, M> Reader<S, M>
where
    S: Stream<Item = (u64, std::sync::Arc<str>)>,
    M: Mapping,
{
    pub fn new(events: S, mapping: M) -> Self {
        Reader {
            events,
            mapping,
            frames: Frames::new(),
            pending: VecDeque::new(),
            log_ended: false,
        }
    }

    /// Queues frames sent before the log's (a stream's opening event).
    pub fn queue(&mut self, make: impl FnOnce(&mut M, &mut Frames, &mut VecDeque<Bytes>)) {
        make(&mut self.mapping, &mut self.frames, &mut self.pending);
    }
}

impl<S, M> Stream for Reader<S, M>
where
    S: Stream<Item = (u64, std::sync::Arc<str>)>,
    M: Mapping,
{
    type Item = Bytes;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Bytes>> {
        let mut this = self.project();
        loop {
            if let Some(frame) = this.pending.pop_front() {
                return Poll::Ready(Some(frame));
            }
            if *this.log_ended || this.mapping.ended() {
                return Poll::Ready(None);
            }
            match std::task::ready!(this.events.as_mut().poll_next(cx)) {
                Some((_, json)) => {
                    if let Some(frame) = this.mapping.delta(&json, this.frames) {
                        return Poll::Ready(Some(frame));
                    }
                    this.mapping.event(&json, this.frames, this.pending);
                }
                None => {
                    *this.log_ended = true;
                    this.mapping.log_ended(this.frames, this.pending);
                }
            }
        }
    }
}

/// The frames, and a heartbeat when none came for [`HEARTBEAT`] (axum's `KeepAliveStream`).
struct Heartbeat<S> {
    frames: Pin<Box<S>>,
    sleep: Pin<Box<Sleep>>,
    /// When the last frame was sent, if after the sleep was set.
    last_frame: Option<Instant>,
}

impl<S: Stream<Item = Bytes>> Stream for Heartbeat<S> {
    type Item = Result<Bytes, Infallible>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        match self.frames.as_mut().poll_next(cx) {
            Poll::Ready(Some(frame)) => {
                self.last_frame = Some(Instant::now());
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Pending => loop {
                if self.sleep.as_mut().poll(cx).is_pending() {
                    return Poll::Pending;
                }
                // Fired: set again from the last frame if one went since, else quiet long enough.
                let now = Instant::now();
                match self.last_frame.take() {
                    Some(sent) if now < sent + HEARTBEAT => {
                        self.sleep.as_mut().reset(sent + HEARTBEAT)
                    }
                    _ => {
                        self.sleep.as_mut().reset(now + HEARTBEAT);
                        return Poll::Ready(Some(Ok(Bytes::from_static(HEARTBEAT_FRAME))));
                    }
                }
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use axum::response::sse::Event;
    use futures::StreamExt;

    use super::*;

    /// What axum's `Sse` sends for an event.
    fn axum_frame(event: Event) -> Vec<u8> {
        let stream = futures::stream::iter([Ok::<_, Infallible>(event)]);
        let body =
            axum::response::IntoResponse::into_response(axum::response::sse::Sse::new(stream))
                .into_body();
        let bytes = futures::executor::block_on(axum::body::to_bytes(body, usize::MAX));
        bytes.map(|bytes| bytes.to_vec()).unwrap_or_default()
    }

    #[test]
    fn frames_are_axums_bytes() {
        let mut frames = Frames::new();
        for data in [
            r#"{"type":"text-delta","id":"t1","delta":"a \"b\"\n"}"#,
            "[DONE]",
            "two\nlines\r\nand\rmore",
            "",
        ] {
            for id in [None, Some(0), Some(42), Some(u64::MAX)] {
                let expected = match id {
                    Some(id) => axum_frame(Event::default().id(id.to_string()).data(data)),
                    None => axum_frame(Event::default().data(data)),
                };
                assert_eq!(frames.data(id, data).to_vec(), expected, "{data:?} {id:?}");
                let written = frames.write(id, 8, |writer| {
                    std::io::Write::write_all(writer, data.as_bytes()).is_ok()
                });
                if !data.contains(['\n', '\r']) {
                    assert_eq!(written.unwrap_or_default().to_vec(), expected);
                    if let Some(id) = id {
                        assert_eq!(frames.event(id, data).to_vec(), expected);
                    }
                }
            }
        }
        assert_eq!(frames.write(Some(3), 8, |_| false), None);
        assert_eq!(frames.data(None, "x").to_vec(), b"data: x\n\n");
    }

    /// A heartbeat goes after HEARTBEAT without a frame, counted from the last frame: a frame
    /// sent meanwhile puts it off, and a quiet stream gets one every HEARTBEAT.
    #[tokio::test(start_paused = true)]
    async fn the_heartbeat_follows_the_last_frame() {
        let (sender, frames) = futures::channel::mpsc::unbounded::<Bytes>();
        let mut body = Heartbeat {
            frames: Box::pin(frames),
            sleep: Box::pin(tokio::time::sleep(HEARTBEAT)),
            last_frame: None,
        };
        let start = Instant::now();
        tokio::time::sleep(Duration::from_secs(10)).await;
        assert!(sender
            .unbounded_send(Bytes::from_static(b"data: a\n\n"))
            .is_ok());
        assert_eq!(
            body.next().await.and_then(Result::ok).as_deref(),
            Some(&b"data: a\n\n"[..])
        );
        // Quiet from second 10: the heartbeat at 25, not at 15; then every 15 s.
        for at in [25, 40] {
            let frame = body.next().await.and_then(Result::ok);
            assert_eq!(frame.as_deref(), Some(HEARTBEAT_FRAME));
            assert_eq!(start.elapsed().as_secs(), at);
        }
        drop(sender);
        assert!(body.next().await.is_none());
    }

    #[test]
    fn the_heartbeat_is_axums() {
        assert_eq!(
            axum_frame(Event::default().comment("heartbeat")),
            HEARTBEAT_FRAME
        );
    }
}
