//! The Steps tab: the run's message drawn by the chat's own components, with a replay of its
//! stored events (play/pause, 1×, 4× or instant, a scrubber), or, while the run still goes, its
//! live stream through the same feed.

use std::{cell::RefCell, rc::Rc};

use leptos::prelude::*;

use crate::components::feed::{MessageModel, ReplayCursor};
use crate::components::segments::MessageBlocks;
use crate::protocol::{Message, MessageStatus};

/// The replay's browser-side state: its feed, and the cursor over the events once fetched. The
/// server renders the final view only and keeps none of it: thread-local values must not exist
/// there, since it renders a lazy route on one worker thread and may drop it on another.
#[derive(Clone, Copy)]
struct ReplayLocal {
    #[cfg(feature = "hydrate")]
    feed: StoredValue<crate::components::feed::Feed, LocalStorage>,
    #[cfg(feature = "hydrate")]
    cursor: StoredValue<Option<Rc<RefCell<ReplayCursor>>>, LocalStorage>,
    /// The run's stream while the page follows a run still going.
    #[cfg(feature = "hydrate")]
    live: StoredValue<Option<crate::components::feed::SseSource>, LocalStorage>,
}

impl ReplayLocal {
    fn new(model: MessageModel) -> Self {
        #[cfg(not(feature = "hydrate"))]
        let _ = model;
        ReplayLocal {
            #[cfg(feature = "hydrate")]
            feed: StoredValue::new_local(crate::components::feed::Feed::new(model)),
            #[cfg(feature = "hydrate")]
            cursor: StoredValue::new_local(None),
            #[cfg(feature = "hydrate")]
            live: StoredValue::new_local(None),
        }
    }

    /// Follows the run `run_id` through the same feed as the replay: its SSE stream from the
    /// first event. `ended` runs after the terminal event is drawn; `lost` if the stream is.
    #[cfg(feature = "hydrate")]
    fn follow(&self, url: &str, ended: impl FnOnce() + 'static, lost: impl Fn() + 'static) {
        let feed = self.feed.get_value().on_end(ended);
        match crate::components::feed::SseSource::open(url, feed, lost) {
            Some(source) => self.live.set_value(Some(source)),
            None => leptos::logging::warn!("could not open the run's event stream"),
        }
    }

    fn cursor(&self) -> Option<Rc<RefCell<ReplayCursor>>> {
        #[cfg(feature = "hydrate")]
        return self.cursor.try_get_value().flatten();
        #[cfg(not(feature = "hydrate"))]
        None
    }

    /// Pauses the replay and closes the feed (with the page).
    fn close(&self) {
        if let Some(cursor) = self.cursor() {
            cursor.borrow_mut().pause();
        }
        #[cfg(feature = "hydrate")]
        let _ = self.live.try_update_value(|live| live.take());
        #[cfg(feature = "hydrate")]
        if let Some(feed) = self.feed.try_get_value() {
            feed.close();
        }
    }
}

/// The replay's controls and where they stand: what Play, the speeds and the scrubber act on.
#[derive(Clone, Copy)]
struct Player {
    local: ReplayLocal,
    trace_id: StoredValue<String>,
    share: StoredValue<Option<String>>,
    /// How many events the trace has; the replay opens on the last.
    total: usize,
    position: RwSignal<usize>,
    playing: RwSignal<bool>,
    /// Events per original second; 0 is instant.
    speed: RwSignal<f64>,
    load_error: RwSignal<Option<String>>,
}

impl Player {
    /// Runs `then` with the cursor, fetching the events the first time.
    fn with_cursor(self, then: Box<dyn FnOnce(Rc<RefCell<ReplayCursor>>)>) {
        if let Some(cursor) = self.local.cursor() {
            then(cursor);
            return;
        }
        #[cfg(feature = "hydrate")]
        {
            let feed = self.local.feed.get_value();
            leptos::task::spawn_local(async move {
                let (trace_id, share) = (self.trace_id.get_value(), self.share.get_value());
                match crate::api::get_trace(trace_id, share).await {
                    Ok(Some(trace)) => {
                        // Decoding a big trace's events (5,000: 30-40 ms) took the whole task;
                        // the seek that follows gets a task of its own.
                        crate::components::deferred::next_task().await;
                        // The final view's blocks hydrate a task each: the replay changes
                        // them only once they have, and until then no seek finds the cursor.
                        crate::components::deferred::settled().await;
                        let loaded = ReplayCursor::new(feed, trace.events, self.total);
                        let loaded = Rc::new(RefCell::new(loaded));
                        self.local.cursor.set_value(Some(loaded.clone()));
                        self.load_error.set(None);
                        then(loaded);
                    }
                    Ok(None) => self.fail("This trace no longer exists.".into()),
                    Err(error) => self.fail(format!("Could not load the events: {error}")),
                }
            });
        }
        #[cfg(not(feature = "hydrate"))]
        let _ = (then, self.trace_id, self.share);
    }

    /// Shows why the replay cannot go on (the browser only: the server renders no replay).
    #[cfg_attr(not(feature = "hydrate"), allow(dead_code))]
    fn fail(self, error: String) {
        self.load_error.set(Some(error));
    }

    fn seek(self, to: usize) {
        self.playing.set(false);
        let position = self.position;
        self.with_cursor(Box::new(move |cursor| {
            cursor.borrow_mut().seek(to);
            position.set(cursor.borrow().position());
        }));
    }

    /// Play, or pause when playing. Instant jumps to the end; at the end, Play starts again.
    fn play_or_pause(self) {
        if self.playing.get_untracked() {
            self.playing.set(false);
            if let Some(cursor) = self.local.cursor() {
                cursor.borrow_mut().pause();
            }
            return;
        }
        self.with_cursor(Box::new(move |cursor| {
            let instant = self.speed.get_untracked() == 0.0;
            let start = if instant { cursor.borrow().len() } else { 1 };
            if instant || self.position.get_untracked() >= self.total {
                cursor.borrow_mut().seek(start);
            }
            self.position.set(cursor.borrow().position());
            if !instant {
                self.playing.set(true);
                #[cfg(feature = "hydrate")]
                crate::components::feed::play(cursor, self.speed, self.position, self.playing);
            }
        }));
    }

    fn set_speed(self, value: f64) {
        self.speed.set(value);
        if value == 0.0 && self.playing.get_untracked() {
            self.seek(self.total);
        }
    }
}

/// Replays the stored events through the chat's own components and event feed. It opens on the
/// final message; the events are fetched the first time the replay is played or scrubbed. While
/// the run still goes (`live_run`), the same feed follows its SSE stream instead, and `refresh`
/// reads the finished trace once it has ended.
#[component]
pub(super) fn Replay(
    trace_id: String,
    total: usize,
    final_message: Option<Message>,
    share: Option<String>,
    live_run: Option<String>,
    refresh: Callback<()>,
    /// Where step notes go: the owner's view of an ended run.
    #[prop(default = None)]
    notes: Option<crate::components::feedback::NoteTarget>,
) -> impl IntoView {
    let model = MessageModel::new(final_message.as_ref());
    let player = Player {
        local: ReplayLocal::new(model),
        trace_id: StoredValue::new(trace_id),
        share: StoredValue::new(share),
        total,
        // Opens on the final view; Play starts from the first event.
        position: RwSignal::new(total),
        playing: RwSignal::new(false),
        speed: RwSignal::new(4.0_f64),
        load_error: RwSignal::new(None::<String>),
    };
    let live = live_run.is_some();
    follow_live(player, live_run, refresh);
    // Done once the last event is queued and, when the stored message ended, the feed has drawn
    // that ending: the feed applies queued events on the next animation frame.
    let ends_streaming = final_message
        .as_ref()
        .is_none_or(|message| message.status == MessageStatus::Streaming);
    let finished = move || {
        player.position.get() >= total
            && (ends_streaming || model.status.get() != MessageStatus::Streaming)
    };
    on_cleanup(move || player.local.close());
    let answer = NodeRef::<leptos::html::Article>::new();
    reveal_waiting_blocks(answer);
    view! {
        <p class="live-note" hidden=!live>
            <span class="live-dot" aria-hidden="true"></span>
            "Live: this run is still going; its steps appear as they happen."
        </p>
        <ReplayControls player hidden=live />
        {move || player.load_error.get().map(|error| view! { <p class="error" role="alert">{error}</p> })}
        <article node_ref=answer class="message assistant replay" data-replay=move || if finished() { "done" } else { "playing" }>
            <MessageBlocks model notes defer=!live && !ends_streaming />
            <crate::components::activity::ActivityStrip model />
        </article>
    }
    .into_any()
}

/// Draws the blocks the server left out of the page's first layout (`MessageBlocks` with `defer`,
/// `deferred::waits_from`) as the reader nears them, and the rest in the background.
fn reveal_waiting_blocks(answer: NodeRef<leptos::html::Article>) {
    #[cfg(feature = "hydrate")]
    crate::components::when_visible::Reveal::while_mounted(move || {
        answer
            .get()
            .and_then(|article| article.closest(".trace-page").ok().flatten())
    });
    #[cfg(not(feature = "hydrate"))]
    let _ = answer;
}

/// While the run still goes, the replay's feed follows its event stream from the first event.
fn follow_live(player: Player, live_run: Option<String>, refresh: Callback<()>) {
    #[cfg(feature = "hydrate")]
    if let Some(run_id) = &live_run {
        let url = format!(
            "{}{}",
            crate::client::run_events(run_id),
            super::share_query(&player.share.get_value())
        );
        let lost = move || player.fail("The connection to the run was lost.".into());
        player.local.follow(&url, move || refresh.run(()), lost);
    }
    #[cfg(not(feature = "hydrate"))]
    let _ = (player, live_run, refresh);
}

/// Play/pause, the speeds and the scrubber.
#[component]
fn ReplayControls(player: Player, hidden: bool) -> impl IntoView {
    let Player {
        total,
        position,
        playing,
        speed,
        ..
    } = player;
    let speed_button = move |value: f64, label: &'static str| {
        view! {
            <button type="button" class="speed" aria-pressed=move || (speed.get() == value).to_string() on:click=move |_| player.set_speed(value)>
                {label}
            </button>
        }
    };
    view! {
        <div class="replay-controls" role="group" aria-label="Replay" hidden=hidden>
            <button type="button" class="play" on:click=move |_| player.play_or_pause()>
                {move || if playing.get() { "❚❚ Pause" } else { "▶ Replay" }}
            </button>
            {speed_button(1.0, "1×")}
            {speed_button(4.0, "4×")}
            {speed_button(0.0, "Instant")}
            <input
                type="range"
                class="scrubber"
                aria-label="Position in the trace"
                min="0"
                max=total.to_string()
                prop:value=move || position.get().to_string()
                on:input=move |event| {
                    let to = event_target_value(&event).parse().unwrap_or(total).min(total);
                    player.seek(to);
                }
            />
            <span class="muted replay-position">{move || format!("event {} of {total}", position.get())}</span>
        </div>
    }
}
