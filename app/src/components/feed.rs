//! One event feed for the live chat and the trace replay.
//!
//! A [`Feed`] owns a [`Reducer`], takes events from a source, applies them at most once per
//! animation frame and publishes the result into a [`MessageModel`]: the message as signals, one
//! per block, keyed by the block's id. A block whose content did not change is not touched, so its
//! DOM (and whatever the user opened in it) stays; a block that changed updates in place.
//!
//! Two sources feed it: the run's SSE stream ([`SseSource`], in the browser) and a cursor over
//! stored events ([`ReplayCursor`]). Going backwards refolds from the first event; everything else
//! is incremental. A feed belongs to the component that made it and stops when that component goes.

use std::{cell::RefCell, rc::Rc};

use leptos::prelude::*;

use crate::protocol::{Event, Message, MessageStatus, Reducer, Segment, ToolCallStatus};

/// One block of a message. Its kind never changes for an id; its content is a signal.
#[derive(Clone)]
pub struct Block {
    pub id: String,
    pub segment: ArcRwSignal<Segment>,
}

impl Block {
    fn new(segment: Segment) -> Self {
        Block {
            id: segment_id(&segment).to_owned(),
            segment: ArcRwSignal::new(segment),
        }
    }
}

pub fn segment_id(segment: &Segment) -> &str {
    match segment {
        Segment::Reasoning(reasoning) => &reasoning.id,
        Segment::ToolCall(call) => &call.call_id,
        Segment::Text(text) => &text.id,
    }
}

/// An assistant message as signals: what the view of one answer reads, live or stored.
#[derive(Clone, Copy)]
pub struct MessageModel {
    pub status: RwSignal<MessageStatus>,
    pub blocks: RwSignal<Vec<Block>>,
    pub ended_reason: RwSignal<Option<String>>,
    pub trace_id: RwSignal<Option<String>>,
    /// What the footer shows: the model, how long the run took, the tokens it used.
    pub facts: RwSignal<MessageFacts>,
    /// The run waits to send the model's request again.
    pub retrying: RwSignal<Option<crate::protocol::Retrying>>,
}

/// An answer's figures, as its footer shows them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MessageFacts {
    pub model: String,
    pub duration_ms: Option<u64>,
    pub usage: Option<crate::protocol::Usage>,
}

impl MessageModel {
    /// A stored message's model, or an empty streaming one.
    pub fn new(message: Option<&Message>) -> Self {
        let model = MessageModel {
            status: RwSignal::new(MessageStatus::Streaming),
            blocks: RwSignal::new(Vec::new()),
            ended_reason: RwSignal::new(None),
            trace_id: RwSignal::new(None),
            facts: RwSignal::new(MessageFacts::default()),
            retrying: RwSignal::new(None),
        };
        model.sync(message);
        model
    }

    /// Makes the signals show `message`, touching only what differs. Blocks are matched by id.
    pub fn sync(&self, message: Option<&Message>) {
        let Some(message) = message else {
            self.reset();
            return;
        };
        set_if_changed(self.status, message.status);
        set_if_changed(self.ended_reason, message.ended_reason.clone());
        set_if_changed(self.trace_id, message.trace_id.clone());
        set_if_changed(self.retrying, message.retrying.clone());
        // Compared in place: this runs every frame while a run streams, and the facts rarely change.
        let facts_changed = self.facts.try_with_untracked(|facts| {
            facts.model != message.model
                || facts.duration_ms != message.duration_ms
                || facts.usage != message.usage
        });
        if facts_changed == Some(true) {
            self.facts.set(MessageFacts {
                model: message.model.clone(),
                duration_ms: message.duration_ms,
                usage: message.usage,
            });
        }
        // A terminal message may differ anywhere (it is the server's final word): compare fully.
        let thorough = message.status != MessageStatus::Streaming;
        let mut ids_changed = false;
        let blocks = self.blocks.try_with_untracked(|old| {
            ids_changed = old.len() != message.segments.len();
            message
                .segments
                .iter()
                .enumerate()
                .map(|(index, segment)| {
                    let id = segment_id(segment);
                    let existing = old
                        .get(index)
                        .filter(|block| block.id == id)
                        .or_else(|| old.iter().find(|block| block.id == id));
                    match existing {
                        Some(block) => {
                            ids_changed |= old.get(index).is_none_or(|b| b.id != id);
                            let stale = block.segment.with_untracked(|current| {
                                if thorough {
                                    current != segment
                                } else {
                                    differs(current, segment)
                                }
                            });
                            if stale {
                                block.segment.set(segment.clone());
                            }
                            block.clone()
                        }
                        None => {
                            ids_changed = true;
                            Block::new(segment.clone())
                        }
                    }
                })
                .collect::<Vec<_>>()
        });
        if let Some(blocks) = blocks.filter(|_| ids_changed) {
            self.blocks.set(blocks);
        }
    }

    fn reset(&self) {
        set_if_changed(self.status, MessageStatus::Streaming);
        set_if_changed(self.ended_reason, None);
        set_if_changed(self.retrying, None);
        if self.blocks.with_untracked(|blocks| !blocks.is_empty()) {
            self.blocks.set(Vec::new());
        }
    }

    /// The answer's text: its text blocks, in order.
    pub fn text(&self) -> String {
        self.blocks.with_untracked(|blocks| {
            blocks
                .iter()
                .filter_map(|block| {
                    block.segment.with_untracked(|segment| match segment {
                        Segment::Text(text) => Some(text.text.clone()),
                        _ => None,
                    })
                })
                .collect::<Vec<_>>()
                .join("\n\n")
        })
    }

    pub fn is_streaming(&self) -> bool {
        self.status.get() == MessageStatus::Streaming
    }

    /// How many tool calls, and how many of them run.
    pub fn tool_counts(&self) -> (usize, usize) {
        self.blocks.with(|blocks| {
            blocks.iter().fold((0, 0), |(all, running), block| {
                block.segment.with(|segment| match segment {
                    Segment::ToolCall(call) => (
                        all + 1,
                        running + usize::from(call.status == ToolCallStatus::Running),
                    ),
                    _ => (all, running),
                })
            })
        })
    }
}

fn set_if_changed<T: PartialEq + Send + Sync + 'static>(signal: RwSignal<T>, value: T) {
    if signal.try_with_untracked(|current| *current != value) == Some(true) {
        signal.set(value);
    }
}

/// Whether an event can have changed `current` into `next`, judged without comparing whole texts:
/// while a run streams, texts only grow, so a length tells.
fn differs(current: &Segment, next: &Segment) -> bool {
    match (current, next) {
        (Segment::Text(a), Segment::Text(b)) => a.text.len() != b.text.len(),
        (Segment::ToolCall(a), Segment::ToolCall(b)) => {
            a.status != b.status
                || a.output.len() != b.output.len()
                || a.truncated != b.truncated
                || a.full_length != b.full_length
                || a.duration_ms != b.duration_ms
                || a.display != b.display
                || a.error != b.error
                || a.progress != b.progress
                || a.args != b.args
                || a.args_text.len() != b.args_text.len()
        }
        (Segment::Reasoning(a), Segment::Reasoning(b)) => {
            a.completed_at != b.completed_at
                || a.duration_ms != b.duration_ms
                || a.parts.len() != b.parts.len()
                || a.parts
                    .iter()
                    .zip(&b.parts)
                    .any(|(x, y)| x.text.len() != y.text.len() || x.is_complete != y.is_complete)
        }
        _ => true,
    }
}

struct Inner {
    reducer: Reducer,
    pending: Vec<Event>,
    frame_requested: bool,
    closed: bool,
    model: MessageModel,
    on_end: Option<Box<dyn FnOnce()>>,
}

/// The feed: a reducer, the events waiting for the next frame, and the model it publishes to.
#[derive(Clone)]
pub struct Feed(Rc<RefCell<Inner>>);

impl Feed {
    pub fn new(model: MessageModel) -> Self {
        Feed(Rc::new(RefCell::new(Inner {
            reducer: Reducer::default(),
            pending: Vec::new(),
            frame_requested: false,
            closed: false,
            model,
            on_end: None,
        })))
    }

    /// Runs `on_end` once, after the frame that applied a terminal event.
    pub fn on_end(self, on_end: impl FnOnce() + 'static) -> Self {
        self.0.borrow_mut().on_end = Some(Box::new(on_end));
        self
    }

    /// Queues events; they are applied with the next animation frame.
    pub fn push(&self, events: impl IntoIterator<Item = Event>) {
        let request = {
            let mut inner = self.0.borrow_mut();
            if inner.closed {
                return;
            }
            inner.pending.extend(events);
            !std::mem::replace(&mut inner.frame_requested, true)
        };
        if request {
            let feed = self.clone();
            next_frame(move || feed.flush());
        }
    }

    /// Applies every queued event and publishes the message once.
    pub fn flush(&self) {
        let ended = {
            let mut inner = self.0.borrow_mut();
            inner.frame_requested = false;
            let pending = std::mem::take(&mut inner.pending);
            if inner.closed || pending.is_empty() {
                return;
            }
            for event in &pending {
                inner.reducer.apply(event);
            }
            let finished = inner.reducer.is_finished();
            finished.then(|| inner.on_end.take()).flatten()
        };
        self.publish();
        if let Some(ended) = ended {
            ended();
        }
    }

    /// Starts again from `events` (scrubbing backwards): a fresh reducer folds them now.
    pub fn rewind(&self, events: &[Event]) {
        {
            let mut inner = self.0.borrow_mut();
            inner.pending.clear();
            inner.reducer = Reducer::default();
            for event in events {
                inner.reducer.apply(event);
            }
        }
        self.publish();
    }

    /// Syncs the model from the reducer's message, borrowed, not copied: setting signals only
    /// schedules effects, so nothing re-enters the feed meanwhile.
    fn publish(&self) {
        let inner = self.0.borrow();
        inner.model.sync(inner.reducer.message());
    }

    /// Stops taking events; a frame already requested does nothing.
    pub fn close(&self) {
        let mut inner = self.0.borrow_mut();
        inner.closed = true;
        inner.pending.clear();
        inner.on_end = None;
    }
}

#[cfg(feature = "hydrate")]
fn next_frame(then: impl FnOnce() + 'static) {
    request_animation_frame(then);
}

#[cfg(not(feature = "hydrate"))]
fn next_frame(then: impl FnOnce() + 'static) {
    then();
}

/// The replay source: a cursor over a run's stored events, moved by Play (with the original gaps
/// between events, divided by the speed), by the scrubber, or all at once (Instant).
pub struct ReplayCursor {
    feed: Feed,
    events: Rc<Vec<Event>>,
    at: usize,
    /// The pending step of a play; dropped (cleared) on pause, seek or when the page goes.
    #[cfg(feature = "hydrate")]
    timer: Option<leptos::leptos_dom::helpers::TimeoutHandle>,
}

impl ReplayCursor {
    pub fn new(feed: Feed, events: Vec<Event>, at: usize) -> Self {
        ReplayCursor {
            feed,
            at: at.min(events.len()),
            events: Rc::new(events),
            #[cfg(feature = "hydrate")]
            timer: None,
        }
    }

    pub fn len(&self) -> usize {
        self.events.len()
    }

    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }

    pub fn position(&self) -> usize {
        self.at
    }

    /// Moves to `to` events applied: forwards by queueing the events in between, backwards by
    /// refolding from the start.
    pub fn seek(&mut self, to: usize) {
        self.pause();
        let to = to.min(self.events.len());
        if to < self.at {
            self.feed.rewind(&self.events[..to]);
        } else {
            self.feed.push(self.events[self.at..to].iter().cloned());
        }
        self.at = to;
    }

    /// Moves one event forward; returns the new position.
    pub fn step(&mut self) -> usize {
        if let Some(event) = self.events.get(self.at) {
            self.feed.push([event.clone()]);
            self.at += 1;
        }
        self.at
    }

    pub fn pause(&mut self) {
        #[cfg(feature = "hydrate")]
        if let Some(timer) = self.timer.take() {
            timer.clear();
        }
    }

    /// How long the original run waited between event `at - 1` and event `at`.
    pub fn gap_before(&self, at: usize) -> i64 {
        use crate::protocol::parse_rfc3339_millis;
        match (self.events.get(at.saturating_sub(1)), self.events.get(at)) {
            (Some(previous), Some(next)) => parse_rfc3339_millis(&next.ts)
                .zip(parse_rfc3339_millis(&previous.ts))
                .map_or(0, |(b, a)| (b - a).max(0)),
            _ => 0,
        }
    }
}

/// Plays `cursor` from where it is: one event after each original gap divided by `speed`;
/// `position` follows the cursor and `playing` turns false at the end.
#[cfg(feature = "hydrate")]
pub fn play(
    cursor: Rc<RefCell<ReplayCursor>>,
    speed: RwSignal<f64>,
    position: RwSignal<usize>,
    playing: RwSignal<bool>,
) {
    let (at, len, gap) = {
        let cursor = cursor.borrow();
        let at = cursor.position();
        (at, cursor.len(), cursor.gap_before(at))
    };
    if at >= len {
        playing.set(false);
        return;
    }
    let factor = speed.get_untracked().max(0.25);
    let delay = std::time::Duration::from_millis((gap as f64 / factor) as u64);
    let next = cursor.clone();
    let handle = set_timeout_with_handle(
        move || {
            let at = {
                let mut cursor = next.borrow_mut();
                cursor.timer = None;
                cursor.step()
            };
            position.set(at);
            play(next, speed, position, playing);
        },
        delay,
    );
    cursor.borrow_mut().timer = handle.ok();
}

/// The live source: a run's SSE stream. The browser's `EventSource` reconnects by itself with
/// `Last-Event-ID`, and the reducer ignores any seq it has applied, so there is no gap and no
/// duplicate. Dropping it closes the stream.
#[cfg(feature = "hydrate")]
pub struct SseSource {
    source: web_sys::EventSource,
    _on_message: wasm_bindgen::closure::Closure<dyn FnMut(web_sys::MessageEvent)>,
    _on_error: wasm_bindgen::closure::Closure<dyn FnMut(web_sys::Event)>,
}

#[cfg(feature = "hydrate")]
impl SseSource {
    /// Opens `url` into `feed`; `on_lost` runs when the browser gives up reconnecting.
    pub fn open(url: &str, feed: Feed, on_lost: impl Fn() + 'static) -> Option<Self> {
        use wasm_bindgen::{closure::Closure, JsCast};
        use web_sys::{EventSource, MessageEvent};

        let source = EventSource::new(url).ok()?;
        let on_message = Closure::<dyn FnMut(MessageEvent)>::new(move |message: MessageEvent| {
            let Some(text) = message.data().as_string() else {
                return;
            };
            match crate::json::parse::<Event>(&text) {
                Ok(event) => feed.push([event]),
                Err(_) => leptos::logging::warn!("ignoring an event that does not parse"),
            }
        });
        let on_error = {
            let source = source.clone();
            Closure::<dyn FnMut(web_sys::Event)>::new(move |_: web_sys::Event| {
                // CONNECTING: the browser retries by itself. CLOSED: it gave up.
                if source.ready_state() == EventSource::CLOSED {
                    on_lost();
                }
            })
        };
        source.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
        source.set_onerror(Some(on_error.as_ref().unchecked_ref()));
        Some(SseSource {
            source,
            _on_message: on_message,
            _on_error: on_error,
        })
    }
}

/// A followed run: its feed and the stream feeding it. Dropping it closes both.
#[cfg(feature = "hydrate")]
pub struct Following {
    feed: Feed,
    _source: SseSource,
}

#[cfg(feature = "hydrate")]
impl Following {
    pub fn new(feed: Feed, source: SseSource) -> Self {
        Following {
            feed,
            _source: source,
        }
    }
}

#[cfg(feature = "hydrate")]
impl Drop for Following {
    fn drop(&mut self) {
        self.feed.close();
    }
}

#[cfg(feature = "hydrate")]
impl Drop for SseSource {
    fn drop(&mut self) {
        self.source.set_onmessage(None);
        self.source.set_onerror(None);
        self.source.close();
    }
}
