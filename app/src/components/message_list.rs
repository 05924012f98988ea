use leptos::prelude::*;

use super::branches::{RegenerateActions, SiblingNav, UserMessage};
use super::deferred::Deferred;
use super::feed::MessageModel;
use super::feedback::{AnswerFeedback, FeedbackStore, NoteTarget};
use super::live::{ChatState, Entry};
use super::segments::MessageBlocks;
use crate::protocol::MessageStatus;

/// The conversation: every message, the one being written included, keyed by id. Only this list
/// scrolls, never the page; it follows the answer being written while the reader is at its end.
#[component]
pub fn MessageList(state: ChatState) -> impl IntoView {
    let empty = move || state.is_empty();
    let section = NodeRef::<leptos::html::Section>::new();
    let content = NodeRef::<leptos::html::Div>::new();
    // The reader scrolled up, away from the end: "jump to the end" shows.
    let away = RwSignal::new(false);
    #[cfg(feature = "hydrate")]
    let (jump, leave) = follow(state, section, content, away);
    #[cfg(feature = "hydrate")]
    reveal_on_open(state, leave);
    #[cfg(not(feature = "hydrate"))]
    let jump = || {};
    view! {
        // `run-going` while a run goes: the versions' Edit and Regenerate hide (one class, not a
        // closure per message: with 400 messages shown those cost a 330 ms task at each run's
        // start and end). Chromium restyles every element of the list with a class that a rule
        // pairs with this one: not `running`, which `.lane-button.running .lane-bar` pairs with
        // the 2,000 lane bars of 200 answers.
        <section class="messages" class:run-going=move || state.live_run.with(Option::is_some) node_ref=section>
            <div class="message-column" node_ref=content>
                <Show when=empty>
                    <div class="welcome">
                        <h1>"What should the agent look into?"</h1>
                        <p class="muted">"Every reasoning step and tool call shows up here as it happens."</p>
                    </div>
                </Show>
                <Show when=move || { state.earlier.get() > 0 }>
                    <EarlierMessages state />
                </Show>
                // A list per page (see `live::Page`): a page loaded or a message added draws only
                // its own page's entries.
                <For each=move || state.pages.get() key=|page| page.key let:page>
                    <For each=move || page.entries.get() key=Entry::key let:entry>
                        {message_view(entry, state)}
                    </For>
                </For>
            </div>
            <Show when=move || away.get()>
                <button type="button" class="jump-to-end" on:click=move |_| jump()>
                    "↓ Jump to the end"
                </button>
            </Show>
            <RunStatusAnnouncer state />
        </section>
    }
    .into_any()
}

/// A message of the list. Each stored one hydrates in a task of its own (`Deferred`), erased as
/// before so the list's code is the one it shares with every other list of views. Not the
/// answer being written: its stream starts as the page hydrates and changes what it shows, and a
/// deferred view must find the server's HTML as its signals still are.
fn message_view(entry: Entry, state: ChatState) -> AnyView {
    let going = match &entry {
        Entry::User { .. } => false,
        Entry::Assistant { id, model, .. } => {
            model.status.get_untracked() == MessageStatus::Streaming
                || state
                    .live_run
                    .with_untracked(|run| run.as_ref().is_some_and(|run| &run.message_id == id))
        }
    };
    let make = move || match entry {
        Entry::User { id, text, siblings } => {
            view! { <UserMessage id text siblings state /> }.into_any()
        }
        Entry::Assistant {
            id,
            model,
            siblings,
        } => view! { <AssistantMessage id model siblings state /> }.into_any(),
    };
    if going {
        make()
    } else {
        Deferred::new(make).into_any()
    }
}

/// Opened from a search hit (`?m=MESSAGE&step=STEP`): once the message is on the page, opens the
/// step and scrolls it into view, once per target (again after a reload, which keeps the query);
/// when it is in an older page, loads the pages down to it first, and when it is on another
/// branch (issue 36), switches to it. `leave` stops the list following its end, which the reader
/// now is away from.
#[cfg(feature = "hydrate")]
fn reveal_on_open(state: ChatState, leave: impl Fn() + Copy + 'static) {
    let query = leptos_router::hooks::use_query_map();
    let revealed = StoredValue::new(None::<(String, Option<String>)>);
    let switched = StoredValue::new(None::<String>);
    Effect::new(move |_| {
        let target = query.with(|query| query.get("m").map(|m| (m, query.get("step"))));
        state.track_entries();
        let Some(target) = target else {
            return;
        };
        if revealed.with_value(|done| done.as_ref() == Some(&target)) {
            return;
        }
        // After the entries are drawn and hydrated (and the list has gone to its end).
        leptos::task::spawn_local(async move {
            super::deferred::settled().await;
            leptos::leptos_dom::helpers::set_timeout(
                move || seek(state, target, leave, revealed, switched),
                std::time::Duration::from_millis(50),
            );
        });
    });
}

/// One look for a search hit's target: shown when it is on the page; else the next older page
/// is loaded; else, every page loaded, the conversation switches (once) to the branch the message
/// is on. Each changes the entries, and the effect above looks again.
#[cfg(feature = "hydrate")]
fn seek(
    state: ChatState,
    target: (String, Option<String>),
    leave: impl Fn(),
    revealed: StoredValue<Option<(String, Option<String>)>>,
    switched: StoredValue<Option<String>>,
) {
    if revealed.with_value(|done| done.as_ref() == Some(&target)) {
        return;
    }
    if let Some(found) = super::search::find_search_target(&target.0, target.1.as_deref()) {
        leave();
        super::search::reveal_search_target(&found);
        revealed.set_value(Some(target));
        return;
    }
    if state.shows(&target.0) {
        return;
    }
    if state.earlier.get_untracked() > 0 {
        state.earlier_wanted.update(|n| *n += 1);
    } else if switched.with_value(|done| done.as_deref() != Some(target.0.as_str())) {
        switched.set_value(Some(target.0.clone()));
        super::branches::switch(state, target.0);
    }
}

/// Keeps the list at its end while the reader is there (see `follow_bottom`), and goes back to
/// it when they send a question. Returns what "jump to the end" does, and what stops following
/// before the list is moved to a search hit.
#[cfg(feature = "hydrate")]
fn follow(
    state: ChatState,
    section: NodeRef<leptos::html::Section>,
    content: NodeRef<leptos::html::Div>,
    away: RwSignal<bool>,
) -> (impl Fn() + Copy + 'static, impl Fn() + Copy + 'static) {
    use super::follow_bottom::FollowBottom;
    let follower = StoredValue::new_local(None::<FollowBottom>);
    Effect::new(move |_| {
        if let (Some(list), Some(content)) = (section.get(), content.get()) {
            let (list, content): (web_sys::Element, web_sys::Element) =
                (list.into(), content.into());
            let on_away = move |is_away| away.set(is_away);
            follower.set_value(FollowBottom::start(list, &content, on_away));
        }
    });
    let jump = move || follower.with_value(|f| f.as_ref().map(FollowBottom::jump));
    // A question was sent (a new last entry, the reader's): its answer is what they want to see.
    Effect::new(move |previous: Option<Option<String>>| {
        let last_question = state
            .last_entry(|entry| match entry {
                Entry::User { id, .. } => Some(id.clone()),
                Entry::Assistant { .. } => None,
            })
            .flatten();
        if previous.is_some_and(|previous| previous != last_question) && last_question.is_some() {
            jump();
        }
        last_question
    });
    on_cleanup(move || {
        let _ = follower.try_update_value(|follower| follower.take());
    });
    let leave = move || {
        follower.with_value(|f| f.as_ref().map(FollowBottom::leave));
    };
    (
        move || {
            jump();
        },
        leave,
    )
}

/// A long conversation opens on its newest messages; older ones load a page at a time, when the
/// reader scrolls up to them or presses the button.
#[component]
fn EarlierMessages(state: ChatState) -> impl IntoView {
    let loading = RwSignal::new(false);
    let button = NodeRef::<leptos::html::Button>::new();
    // `keep`: the messages on screen stay where they are, as the reader is reading them.
    let load_page = move |keep: bool| {
        let (Some(id), before) = (
            state.conversation_id.get_untracked(),
            state.earlier.get_untracked(),
        ) else {
            return;
        };
        if loading.get_untracked() || before == 0 {
            return;
        }
        loading.set(true);
        #[cfg(feature = "hydrate")]
        leptos::task::spawn_local(async move {
            match crate::api::get_conversation(id, Some(before)).await {
                Ok(Some(page)) => {
                    // The new ones go in above. (Scroll anchoring does not keep the place at the
                    // very top, where this happens.)
                    let held = keep
                        .then(|| KeepPlace::take(button.get_untracked()))
                        .flatten();
                    state.prepend(&page.messages, page.earlier);
                    if let Some(held) = held {
                        held.hold();
                    }
                }
                Ok(None) => state
                    .connection_error
                    .set(Some("This conversation no longer exists.".into())),
                Err(error) => state
                    .connection_error
                    .set(Some(format!("Could not load earlier messages: {error}"))),
            }
            loading.set(false);
        });
        #[cfg(not(feature = "hydrate"))]
        let _ = (id, before, keep);
    };
    let load = move || load_page(true);
    // Asked for elsewhere (a search hit further back): no place to keep.
    Effect::new(move |seen: Option<u32>| {
        let wanted = state.earlier_wanted.get();
        if seen.is_some_and(|seen| seen != wanted) {
            load_page(false);
        }
        wanted
    });
    #[cfg(feature = "hydrate")]
    load_when_visible(button, loading, load);
    view! {
        <div class="earlier-messages">
            <button
                type="button"
                class="load-earlier"
                node_ref=button
                on:click=move |_| load()
                disabled=move || loading.get()
            >
                {move || format!("Show earlier messages ({} more)", state.earlier.get())}
            </button>
        </div>
    }
}

/// Loads the next page when the button comes within 600 px of view, and again after a page
/// while it is still in reach (short messages).
#[cfg(feature = "hydrate")]
fn load_when_visible(
    button: NodeRef<leptos::html::Button>,
    loading: RwSignal<bool>,
    load: impl Fn() + Copy + 'static,
) {
    let watcher = StoredValue::new_local(None::<super::when_visible::WhenVisible>);
    Effect::new(move |_| {
        if let Some(element) = button.get() {
            let start = super::when_visible::WhenVisible::start(element.into(), "600px", load);
            watcher.set_value(start);
        }
    });
    // A page just loaded and the button is still in reach (short messages): load the next.
    Effect::new(move |_| {
        if !loading.get() {
            watcher.with_value(|watcher| {
                if let Some(watcher) = watcher {
                    watcher.look_again();
                }
            });
        }
    });
    on_cleanup(move || {
        let _ = watcher.try_update_value(|watcher| watcher.take());
    });
}

/// Where the reader is: the first message now in the list and how far it is from the list's
/// top, to be kept while earlier messages go in above it, unless the reader scrolls meanwhile.
#[cfg(feature = "hydrate")]
#[derive(Clone)]
struct KeepPlace {
    list: web_sys::Element,
    first: web_sys::Element,
    offset: f64,
    /// `follow_bottom::user_scrolls()` when the place was taken.
    scrolls: u32,
}

#[cfg(feature = "hydrate")]
impl KeepPlace {
    /// Found from the button, not by searching the list: nothing here grows with the messages
    /// already shown. The first message is the one right after the button's block.
    fn take(button: Option<web_sys::HtmlButtonElement>) -> Option<Self> {
        let button = button?;
        let list = button.closest("section.messages").ok()??;
        let first = button.parent_element()?.next_element_sibling()?;
        let offset = first.get_bounding_client_rect().top();
        Some(KeepPlace {
            list,
            first,
            offset,
            scrolls: super::follow_bottom::user_scrolls(),
        })
    }

    /// Puts the first message back over the next three frames: the messages that went in above
    /// start at their placeholder height (`content-visibility`) and take their own once they are
    /// near the screen, which moves everything below them. The first time is just before the
    /// next paint, not in the task that inserted the messages, so the layout that reading the
    /// positions forces is the frame's own and does not lengthen that task.
    fn hold(self) {
        request_animation_frame(move || {
            self.restore();
            request_animation_frame(move || {
                self.restore();
                request_animation_frame(move || self.restore());
            });
        });
    }

    /// Does nothing once the reader has scrolled (wheel, touch, keys) since the place was taken:
    /// where they went is where they stay.
    fn restore(&self) {
        if super::follow_bottom::user_scrolls() != self.scrolls {
            return;
        }
        let moved = self.first.get_bounding_client_rect().top() - self.offset;
        self.list
            .set_scroll_top(self.list.scroll_top() + moved.round() as i32);
    }
}

/// An answer, live or stored: the same article either way. While its run streams it has Stop;
/// once the run ends it has its trace link and, if it ended early, why.
#[component]
fn AssistantMessage(
    id: String,
    model: MessageModel,
    siblings: Option<crate::protocol::Siblings>,
    state: ChatState,
) -> impl IntoView {
    let live = {
        let id = id.clone();
        Memo::new(move |_| {
            state
                .live_run
                .with(|run| run.as_ref().is_some_and(|run| run.message_id == id))
        })
    };
    let streaming = move || model.status.get() == MessageStatus::Streaming;
    // Its export menu is open: the message is drawn in full so the menu can reach past it (a
    // class rather than `:has()`, which would make every page of messages going in cost style
    // work for all the messages already shown).
    let menu_open = RwSignal::new(0u8);
    let message_id = id.clone();
    let answer_id = StoredValue::new(id.clone());
    let siblings = StoredValue::new(siblings);
    let store = use_context::<FeedbackStore>();
    let notes = store.map(|store| NoteTarget {
        message_id: id.clone(),
        store,
    });
    let footer = move || {
        model
            .trace_id
            .get()
            .filter(|_| !streaming())
            .map(|trace_id| {
                let branches = view! {
                    <SiblingNav siblings=siblings.get_value() state />
                    <RegenerateActions id=answer_id.get_value() state menu_open />
                    {siblings.get_value().and_then(|s| s.compare_trace_id).map(|other| view! {
                        <a class="footer-action compare-link" href=format!("/compare/{trace_id}/{other}")>"Compare"</a>
                    })}
                };
                let branches = branches.into_any();
                // The reader's thumbs and comment, on the footer's own line.
                let feedback = store.map(|store| {
                    view! { <AnswerFeedback message_id=answer_id.get_value() store /> }.into_any()
                });
                view! { <MessageFooter model trace_id state menu_open branches feedback /> }
            })
    };
    view! {
        <article
            class="message assistant"
            data-message-id=message_id
            class:live=streaming
            class:menu-open=move || menu_open.get() != 0
            data-status=move || model.status.get().as_str()
            aria-busy=move || streaming().to_string()
        >
            <MessageBlocks model notes />
            <RetryNote model />
            <super::activity::ActivityStrip model />
            {footer}
            // Gone in the frame that draws the message complete, not a task later when the
            // chat ends the run (`ChatState::run_ended`).
            <Show when=move || live.get() && streaming()>
                <RunControls state />
            </Show>
            <EndedNote id model state />
        </article>
    }
    .into_any()
}

/// "Rate limited: retrying in 2 s (attempt 1)" while the run waits to send the model's request
/// again, counting down each second; gone once the model sends something or the run ends.
#[component]
fn RetryNote(model: MessageModel) -> impl IntoView {
    // Seconds left of the wait shown; the timer runs only while there is one.
    let left = RwSignal::new(0u64);
    let timer = StoredValue::new(None::<IntervalHandle>);
    let stop_timer = move || {
        if let Some(handle) = timer.try_update_value(Option::take).flatten() {
            handle.clear();
        }
    };
    Effect::new(move |_| {
        let wait = model.retrying.get();
        stop_timer();
        left.set(wait.as_ref().map_or(0, |wait| wait.delay_ms.div_ceil(1000)));
        if wait.is_some() {
            let tick = move || left.update(|seconds| *seconds = seconds.saturating_sub(1));
            let handle = set_interval_with_handle(tick, std::time::Duration::from_secs(1));
            timer.set_value(handle.ok());
        }
    });
    on_cleanup(stop_timer);
    let note = move || {
        let retrying = model.retrying.get()?;
        if !model.is_streaming() {
            return None;
        }
        let why = match retrying.reason.as_str() {
            "rate_limited" => "Rate limited",
            "overloaded" => "The provider is overloaded",
            "connection_failed" => "Could not reach the provider",
            _ => "The provider failed",
        };
        Some(format!(
            "{why}: retrying in {} s (attempt {})",
            left.get(),
            retrying.attempt
        ))
    };
    move || note().map(|text| view! { <p class="retry-note muted" role="status">{text}</p> })
}

/// An ended answer's figures (model, duration, tool calls, tokens) and what can be done with it:
/// copy it, open its trace, export it.
#[component]
fn MessageFooter(
    model: MessageModel,
    trace_id: String,
    state: ChatState,
    menu_open: RwSignal<u8>,
    /// The answer's versions and rerun actions (`branches.rs`).
    branches: AnyView,
    /// The reader's thumbs and comment (`feedback.rs`).
    feedback: Option<AnyView>,
) -> impl IntoView {
    let facts = move || model.facts.get();
    let duration = move || facts().duration_ms.map(super::segments::format_duration);
    let tools = move || match model.tool_counts().0 {
        0 => None,
        1 => Some("1 tool call".to_owned()),
        n => Some(format!("{n} tool calls")),
    };
    let tokens = move || facts().usage.map(|usage| usage.summary());
    let copied = RwSignal::new(false);
    let copy = move |_| {
        #[cfg(feature = "hydrate")]
        {
            let _ = window().navigator().clipboard().write_text(&model.text());
        }
        copied.set(true);
    };
    let trace = trace_id.clone();
    view! {
        <footer class="message-footer">
            <span class="message-facts">
                <span class="fact footer-model">{move || facts().model}</span>
                {move || duration().map(|d| view! { <span class="fact footer-duration">{d}</span> })}
                {move || tools().map(|t| view! { <span class="fact footer-tools">{t}</span> })}
                {move || tokens().map(|t| view! { <span class="fact footer-tokens">{t}</span> })}
            </span>
            <span class="message-actions">
                <button type="button" class="footer-action copy-answer" on:click=copy>
                    {move || if copied.get() { "Copied" } else { "Copy" }}
                </button>
                <a class="footer-action view-trace" href=format!("/t/{trace_id}")>"View trace"</a>
                <super::menu::FooterMenu class="export-menu" label="Export" menu_open items=move || export_items(trace.clone(), state) />
                {branches}
            </span>
            {feedback}
        </footer>
    }
    .into_any()
}

/// The export menu's items, from a chunk of its own (`on_demand`): only a click shows them.
#[leptos::lazy]
fn export_items(trace_id: String, state: ChatState) -> AnyView {
    let conversation = move || state.conversation_id.get().unwrap_or_default();
    view! {
        <a role="menuitem" href=crate::client::trace_inspector(&trace_id) target="_blank" rel="external noopener">"Agent Inspector JSON (this answer)"</a>
        <a role="menuitem" href=move || crate::client::thoughtflow(&conversation(), "json") target="_blank" rel="external noopener">"ThoughtFlow JSON (conversation)"</a>
        <a role="menuitem" href=move || crate::client::thoughtflow(&conversation(), "d2") target="_blank" rel="external noopener">"ThoughtFlow D2 (conversation)"</a>
    }
    .into_any()
}

/// Why an answer ended early, and Retry for a failed one.
#[component]
fn EndedNote(id: String, model: MessageModel, state: ChatState) -> impl IntoView {
    let retry = move |_| {
        if let Some(question) = state.question_before(&id) {
            super::composer::send_message(state, question);
        }
    };
    move || {
        let status = model.status.get();
        let ended = match status {
            MessageStatus::Complete | MessageStatus::Streaming => return None,
            MessageStatus::Cancelled => "Stopped. The partial answer is kept.",
            MessageStatus::Error => "The run failed.",
            MessageStatus::Interrupted => "Interrupted: the server stopped during this run.",
        };
        let reason = model.ended_reason.get();
        let retry = retry.clone();
        Some(view! {
            <div class="message-status" role="note">
                <span>{ended}</span>
                {reason.map(|reason| view! { <span class="muted">" " {reason}</span> })}
                {(status == MessageStatus::Error).then(|| view! { <button class="retry" on:click=retry>"Retry"</button> })}
            </div>
        })
    }
}

/// Stop (or Esc) for the run being followed, and a way back when its stream was lost.
#[component]
fn RunControls(state: ChatState) -> impl IntoView {
    let stopping = RwSignal::new(false);
    let stop = move || {
        if stopping.get_untracked() {
            return;
        }
        if let Some(run) = state.live_run.get_untracked() {
            stopping.set(true);
            #[cfg(feature = "hydrate")]
            leptos::task::spawn_local(async move {
                if let Err(error) = crate::client::stop_run(&run.run_id).await {
                    state
                        .connection_error
                        .set(Some(format!("Stopping failed: {error}")));
                }
                stopping.set(false);
            });
            #[cfg(not(feature = "hydrate"))]
            let _ = run;
        }
    };
    #[cfg(feature = "hydrate")]
    {
        let handle = window_event_listener(leptos::ev::keydown, move |event| {
            // Unless Escape closed something first (the drawer, the settings).
            if event.key() == "Escape" && !event.default_prevented() {
                stop();
            }
        });
        on_cleanup(move || handle.remove());
    }
    view! {
        <div class="run-controls">
            <button class="stop" on:click=move |_| stop() disabled=move || stopping.get()>
                {move || if stopping.get() { "Stopping…" } else { "■ Stop" }}
            </button>
            <span class="muted hint">"or press Esc"</span>
        </div>
        {move || {
            state
                .connection_error
                .get()
                .map(|error| {
                    view! {
                        <p class="error" role="alert">
                            {error}
                            " "
                            <button class="retry" on:click=move |_| reattach(state)>"Reconnect"</button>
                        </p>
                    }
                })
        }}
    }
    .into_any()
}

fn reattach(state: ChatState) {
    #[cfg(feature = "hydrate")]
    if let Some(run) = state.live_run.get_untracked() {
        super::live::browser::follow_run(state, run);
    }
    #[cfg(not(feature = "hydrate"))]
    let _ = state;
}

/// Tells screen readers when a run starts and how it ended.
#[component]
fn RunStatusAnnouncer(state: ChatState) -> impl IntoView {
    let announcement = move || {
        if let Some(model) = state.live_model() {
            return match model.tool_counts().1 {
                0 => "The agent is working.".to_owned(),
                n => format!("The agent is running {n} tool call(s)."),
            };
        }
        let last = state
            .last_entry(|entry| match entry {
                Entry::Assistant { model, .. } => Some(*model),
                Entry::User { .. } => None,
            })
            .flatten();
        match last.map(|model| model.status.get()) {
            Some(MessageStatus::Complete) => "The answer is complete.".to_owned(),
            Some(MessageStatus::Cancelled) => "The run was stopped.".to_owned(),
            Some(MessageStatus::Error) => "The run failed.".to_owned(),
            _ => String::new(),
        }
    };
    view! { <p class="visually-hidden" role="status" aria-live="polite">{announcement}</p> }
}
