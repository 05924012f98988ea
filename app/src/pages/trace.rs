//! A stored run: its steps with a replay, a timeline of where the time went, and the Agent
//! Inspector view. Replay plays the stored events through the live view's components with their
//! original timing; it never runs a tool or calls a model.

use leptos::prelude::*;
use leptos_router::{
    hooks::{use_params_map, use_query_map},
    lazy_route, LazyRoute,
};

use crate::api::{get_inspector, get_model_turns, get_trace_overview};
use crate::json;
use std::{cell::RefCell, rc::Rc};

use crate::components::feed::{MessageModel, ReplayCursor};
use crate::components::segments::{format_duration, MessageBlocks};
use crate::components::share::SharePanel;
use crate::models::{Trace, TraceOverview};
use crate::protocol::{
    parse_rfc3339_millis, CancelledBy, ErrorCode, Message, MessageStatus, Segment, TraceStatus,
};

/// The trace page's code is not in the bundle a chat loads: `cargo leptos build --split` moves
/// `view` (and what only it uses: replay, timeline, inspector) into a chunk of its own, fetched
/// when the page is opened. `data` starts the page's request at the same time, so the two load
/// side by side instead of one after the other.
pub struct TracePage {
    trace: json::Resource<Result<Option<TraceOverview>, ServerFnError>>,
    /// The token of the share link the page was opened with (`?share=`): read-only, for anyone.
    share: Option<String>,
}

#[lazy_route]
impl LazyRoute for TracePage {
    fn data() -> Self {
        let params = use_params_map();
        let trace_id = Memo::new(move |_| params.read().get("id").unwrap_or_default());
        let share = use_query_map().read_untracked().get("share");
        let token = share.clone();
        Self {
            trace: json::resource(
                move || trace_id.get(),
                move |trace_id| get_trace_overview(trace_id, token.clone()),
            ),
            share,
        }
    }

    fn view(this: Self) -> AnyView {
        let trace = this.trace;
        let share = this.share;
        // A live run's page reads the trace again once the run has ended.
        let refresh = Callback::new(move |()| trace.refetch());
        view! {
            <main class="trace-page">
                <Transition fallback=|| view! { <p class="muted">"Loading the trace…"</p> }>
                    {move || {
                        let share = share.clone();
                        Suspend::new(async move {
                        match trace.await {
                            Ok(Some(overview)) => view! { <TraceView overview share=share.clone() refresh /> }.into_any(),
                            Ok(None) if share.is_some() => {
                                super::not_found::status_not_found();
                                view! {
                                <p class="error notice">"This link does not exist or was revoked."</p>
                            }
                                .into_any()
                            }
                            Ok(None) => {
                                super::not_found::status_not_found();
                                view! {
                                <p class="error notice">"This trace does not exist."</p>
                                <a href="/">"Back to the chat"</a>
                            }
                                .into_any()
                            }
                            Err(error) => view! { <p class="error notice">{error.to_string()}</p> }.into_any(),
                        }
                    })}}
                </Transition>
            </main>
        }
        .into_any()
    }
}

/// How the run ended, in words.
fn ending(trace: &Trace) -> String {
    let took = trace
        .total_duration_ms
        .map(|ms| format_duration(ms.max(0) as u64))
        .unwrap_or_default();
    let reason = trace.cancellation_reason.clone().unwrap_or_default();
    match trace.status {
        TraceStatus::Completed => format!("Completed in {took}"),
        TraceStatus::Cancelled => format!(
            "Stopped ({}) after {took}: {reason}",
            trace.cancelled_by.map_or("", CancelledBy::as_str)
        ),
        TraceStatus::Error => format!(
            "Failed ({}) after {took}: {reason}",
            trace.error_code.as_ref().map_or("", ErrorCode::as_str)
        ),
        TraceStatus::Interrupted => "Interrupted: the server stopped during this run.".to_owned(),
        TraceStatus::Running => "Still running".to_owned(),
    }
}

/// `?share=TOKEN` for the requests of a page opened with a share link, else nothing.
fn share_query(share: &Option<String>) -> String {
    share
        .as_ref()
        .map(|token| format!("?share={token}"))
        .unwrap_or_default()
}

#[component]
fn TraceView(
    overview: TraceOverview,
    share: Option<String>,
    refresh: Callback<()>,
) -> impl IntoView {
    let trace = overview.trace.clone();
    let tab = RwSignal::new("steps");
    let tab_button = move |name: &'static str, label: &'static str| {
        view! {
            <button
                type="button"
                role="tab"
                class="tab"
                aria-selected=move || (tab.get() == name).to_string()
                on:click=move |_| tab.set(name)
            >
                {label}
            </button>
        }
    };
    let tokens = match (trace.input_tokens, trace.output_tokens) {
        (Some(input), Some(output)) => format!(" · {input} tokens in, {output} out"),
        _ => String::new(),
    };
    let trace_id = trace.trace_id.clone();
    let replay_trace_id = trace.trace_id.clone();
    let event_count = overview.event_count;
    let final_message = overview.message.clone();
    let live_run = (trace.status == TraceStatus::Running).then(|| trace.run_id.clone());
    let export = format!(
        "/api/traces/{}/inspector.json{}",
        trace.trace_id,
        share_query(&share)
    );
    let top = match share.is_some() {
        true => view! { <p class="shared-note muted">"Shared with you, read only"</p> }.into_any(),
        false => view! {
            <a href=format!("/c/{}", trace.conversation_id)>"← Back to the conversation"</a>
        }
        .into_any(),
    };
    let owner_tools = share
        .is_none()
        .then(|| view! { <SharePanel trace_id=trace.trace_id.clone() /> }.into_any());
    let replay_share = share.clone();
    // While the run goes, only the checkpointed events are counted, and the totals are not in.
    let counts = match live_run.is_some() {
        true => format!("{} · {} events stored so far", trace.model, event_count),
        false => format!(
            "{} · {} events · {} tool calls{tokens}",
            trace.model, event_count, trace.total_tool_calls
        ),
    };
    view! {
        <header class="trace-header">
            {top}
            <h1>"Trace"</h1>
            <p class=format!("trace-status {}", trace.status)>{ending(&trace)}</p>
            <p class="muted">{counts}</p>
            <p class="trace-exports">
                <a href=export target="_blank" rel="external noopener">"Export: Agent Inspector JSON"</a>
            </p>
            {owner_tools}
        </header>
        <div class="tabs" role="tablist">
            {tab_button("steps", "Steps & replay")}
            {tab_button("timeline", "Timeline")}
            {tab_button("inspector", "Inspector")}
        </div>
        <section class="tab-panel" hidden=move || tab.get() != "steps">
            <Replay trace_id=replay_trace_id total=event_count final_message share=replay_share live_run refresh />
        </section>
        <section class="tab-panel" hidden=move || tab.get() != "timeline">
            <Timeline overview share=share.clone() />
        </section>
        <section class="tab-panel" hidden=move || tab.get() != "inspector">
            <Show when=move || tab.get() == "inspector">
                <InspectorView trace_id=trace_id.clone() share=share.clone() />
            </Show>
        </section>
    }
    .into_any()
}

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

/// Replays the stored events through the chat's own components and event feed: play/pause, 1×,
/// 4× or instant, and a scrubber. It opens on the final message; the events are fetched the first
/// time the replay is played or scrubbed. While the run still goes (`live_run`), the same feed
/// follows its SSE stream instead, and `refresh` reads the finished trace once it has ended.
#[component]
fn Replay(
    trace_id: String,
    total: usize,
    final_message: Option<Message>,
    share: Option<String>,
    live_run: Option<String>,
    refresh: Callback<()>,
) -> impl IntoView {
    let model = MessageModel::new(final_message.as_ref());
    let local = ReplayLocal::new(model);
    let live = live_run.is_some();
    let share = StoredValue::new(share);
    let trace_id = StoredValue::new(trace_id);
    let load_error = RwSignal::new(None::<String>);
    #[cfg(feature = "hydrate")]
    if let Some(run_id) = &live_run {
        let url = format!(
            "/api/runs/{run_id}/events{}",
            share_query(&share.get_value())
        );
        let lost = move || load_error.set(Some("The connection to the run was lost.".into()));
        local.follow(&url, move || refresh.run(()), lost);
    }
    #[cfg(not(feature = "hydrate"))]
    let _ = (live_run, refresh);
    // Opens on the final view; Play starts from the first event.
    let position = RwSignal::new(total);
    let playing = RwSignal::new(false);
    let speed = RwSignal::new(4.0_f64);
    // Done once the last event is queued and, when the stored message ended, the feed has drawn
    // that ending: the feed applies queued events on the next animation frame.
    let ends_streaming = final_message
        .as_ref()
        .is_none_or(|message| message.status == MessageStatus::Streaming);
    let finished = move || {
        position.get() >= total
            && (ends_streaming || model.status.get() != MessageStatus::Streaming)
    };

    // Runs `then` with the cursor, fetching the events the first time.
    let with_cursor = move |then: Box<dyn FnOnce(Rc<RefCell<ReplayCursor>>)>| {
        if let Some(cursor) = local.cursor() {
            then(cursor);
            return;
        }
        #[cfg(feature = "hydrate")]
        {
            let feed = local.feed.get_value();
            leptos::task::spawn_local(async move {
                match crate::api::get_trace(trace_id.get_value(), share.get_value()).await {
                    Ok(Some(trace)) => {
                        let loaded = ReplayCursor::new(feed, trace.events, total);
                        let loaded = Rc::new(RefCell::new(loaded));
                        local.cursor.set_value(Some(loaded.clone()));
                        load_error.set(None);
                        then(loaded);
                    }
                    Ok(None) => load_error.set(Some("This trace no longer exists.".into())),
                    Err(error) => {
                        load_error.set(Some(format!("Could not load the events: {error}")))
                    }
                }
            });
        }
        #[cfg(not(feature = "hydrate"))]
        let _ = (then, trace_id, share);
    };
    let seek = move |to: usize| {
        playing.set(false);
        with_cursor(Box::new(move |cursor| {
            cursor.borrow_mut().seek(to);
            position.set(cursor.borrow().position());
        }));
    };
    let play = move |_| {
        if playing.get_untracked() {
            playing.set(false);
            if let Some(cursor) = local.cursor() {
                cursor.borrow_mut().pause();
            }
            return;
        }
        with_cursor(Box::new(move |cursor| {
            let instant = speed.get_untracked() == 0.0;
            let start = if instant { cursor.borrow().len() } else { 1 };
            if instant || position.get_untracked() >= total {
                cursor.borrow_mut().seek(start);
            }
            position.set(cursor.borrow().position());
            if !instant {
                playing.set(true);
                #[cfg(feature = "hydrate")]
                crate::components::feed::play(cursor, speed, position, playing);
            }
        }));
    };
    let set_speed = move |value: f64| {
        speed.set(value);
        if value == 0.0 && playing.get_untracked() {
            seek(total);
        }
    };
    on_cleanup(move || local.close());
    let speed_button = move |value: f64, label: &'static str| {
        view! {
            <button type="button" class="speed" aria-pressed=move || (speed.get() == value).to_string() on:click=move |_| set_speed(value)>
                {label}
            </button>
        }
    };
    view! {
        <p class="live-note" hidden=!live>
            <span class="live-dot" aria-hidden="true"></span>
            "Live: this run is still going; its steps appear as they happen."
        </p>
        <div class="replay-controls" role="group" aria-label="Replay" hidden=live>
            <button type="button" class="play" on:click=play>
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
                    seek(to);
                }
            />
            <span class="muted replay-position">{move || format!("event {} of {total}", position.get())}</span>
        </div>
        {move || load_error.get().map(|error| view! { <p class="error" role="alert">{error}</p> })}
        <article class="message assistant replay" data-replay=move || if finished() { "done" } else { "playing" }>
            <MessageBlocks model />
            <crate::components::activity::ActivityStrip model />
        </article>
    }
    .into_any()
}

struct Bar {
    label: String,
    kind: &'static str,
    start: i64,
    end: i64,
}

/// A waterfall: model turns, reasoning parts, tool calls and the answer on one time axis.
#[component]
fn Timeline(overview: TraceOverview, share: Option<String>) -> impl IntoView {
    let trace = &overview.trace;
    let turns = json::resource(move || (), {
        let trace_id = trace.trace_id.clone();
        move |_| get_model_turns(trace_id.clone(), share.clone())
    });
    let origin = parse_rfc3339_millis(&trace.started_at).unwrap_or(0);
    let last = overview.last_event_ms.unwrap_or(origin);
    let end = trace
        .completed_at
        .as_deref()
        .and_then(parse_rfc3339_millis)
        .unwrap_or(last)
        .max(last)
        .max(origin + 1);
    let mut bars = Vec::new();
    for segment in overview
        .message
        .as_ref()
        .map(|m| m.segments.clone())
        .unwrap_or_default()
    {
        match segment {
            Segment::Reasoning(reasoning) => {
                for part in reasoning.parts {
                    let start = parse_rfc3339_millis(&part.started_at).unwrap_or(origin);
                    let stop = part
                        .completed_at
                        .as_deref()
                        .and_then(parse_rfc3339_millis)
                        .unwrap_or(end);
                    bars.push(Bar {
                        label: format!("Reasoning part {}", part.summary_index + 1),
                        kind: "reasoning",
                        start,
                        end: stop,
                    });
                }
            }
            Segment::ToolCall(call) => {
                let mut start = parse_rfc3339_millis(&call.started_at).unwrap_or(origin);
                // The wait for a person is its own span; the call runs from the answer on.
                if let Some(approval) = &call.approval {
                    let answered = approval
                        .resolved_at
                        .as_deref()
                        .and_then(parse_rfc3339_millis)
                        .unwrap_or(end);
                    bars.push(Bar {
                        label: format!("Waiting for approval: {}", call.name),
                        kind: "approval",
                        start,
                        end: answered,
                    });
                    start = answered;
                }
                let stop = call.duration_ms.map_or(end, |ms| start + ms as i64);
                bars.push(Bar {
                    label: call.display.clone().unwrap_or(call.name.clone()),
                    kind: "tool",
                    start,
                    end: stop,
                });
            }
            Segment::Text(text) => {
                if let Some(span) = overview
                    .text_spans
                    .iter()
                    .find(|span| span.segment_id == text.id)
                {
                    bars.push(Bar {
                        label: "Answer text".to_owned(),
                        kind: "text",
                        start: span.first_ms,
                        end: span.last_ms,
                    });
                }
            }
        }
    }
    let span = (end - origin) as f64;
    let draw = move |bars: Vec<Bar>| {
        bars.into_iter()
            .map(|bar| {
                // `clamp` only with constant bounds: with computed ones it panics when they cross.
                let left = ((bar.start - origin) as f64 / span * 100.0).clamp(0.0, 99.6);
                let width = ((bar.end - bar.start).max(0) as f64 / span * 100.0)
                    .max(0.4)
                    .min(100.0 - left);
                let took = format_duration((bar.end - bar.start).max(0) as u64);
                let title = bar.label.clone();
                view! {
                    <div class="timeline-row">
                        <span class="timeline-label" title=title>{bar.label}</span>
                        <span class="timeline-track">
                            <span
                                class=format!("timeline-bar {}", bar.kind)
                                style=format!("left:{left:.2}%;width:{width:.2}%")
                            ></span>
                        </span>
                        <span class="timeline-duration">{took}</span>
                    </div>
                }
            })
            .collect_view()
    };
    let total = format_duration((end - origin) as u64);
    view! {
        <div class="timeline" aria-label="Timeline">
            <p class="muted">{format!("0 – {total}")}</p>
            <Transition fallback=|| ()>
                {move || Suspend::new(async move {
                    let turns = turns.await.unwrap_or_default();
                    let bars: Vec<Bar> = turns
                        .into_iter()
                        .enumerate()
                        .map(|(index, turn)| Bar {
                            label: format!("Model turn {} ({})", index + 1, turn.model),
                            kind: "model",
                            start: parse_rfc3339_millis(&turn.started_at).unwrap_or(origin),
                            end: parse_rfc3339_millis(&turn.completed_at).unwrap_or(end),
                        })
                        .collect();
                    draw(bars)
                })}
            </Transition>
            {draw(bars)}
        </div>
    }
    .into_any()
}

/// The Agent Inspector: every entry as a drop-down; long strings in multi-line boxes.
#[component]
fn InspectorView(trace_id: String, share: Option<String>) -> impl IntoView {
    let entries = json::resource(
        move || trace_id.clone(),
        move |trace_id| get_inspector(trace_id, share.clone()),
    );
    view! {
        <div class="inspector">
            <Transition fallback=|| view! { <p class="muted">"Loading…"</p> }>
                {move || Suspend::new(async move {
                    match entries.await {
                        Ok(entries) if entries.is_empty() => {
                            view! { <p class="muted">"This run made no model requests and no tool calls."</p> }.into_any()
                        }
                        Ok(entries) => entries
                            .into_iter()
                            .enumerate()
                            .map(|(index, entry)| view! { <InspectorEntry index entry /> })
                            .collect_view()
                            .into_any(),
                        Err(error) => view! { <p class="error">{error.to_string()}</p> }.into_any(),
                    }
                })}
            </Transition>
        </div>
    }
    .into_any()
}

fn as_text(value: &serde_json::Value) -> String {
    match value {
        serde_json::Value::String(text) => text.clone(),
        serde_json::Value::Null => String::new(),
        other => serde_json::to_string_pretty(other).unwrap_or_default(),
    }
}

#[component]
fn Field(label: &'static str, value: String) -> impl IntoView {
    let rows = value.lines().count().clamp(1, 12);
    view! {
        <label class="inspector-field">
            <span class="inspector-label">{label}</span>
            <textarea readonly rows=rows.to_string()>{value}</textarea>
        </label>
    }
}

#[component]
fn InspectorEntry(index: usize, entry: crate::models::InspectorEntry) -> impl IntoView {
    use crate::models::InspectorEntry as Entry;
    let (name, arguments, result, cli_output, status) = match entry {
        Entry::LlmRequest(entry) => return llm_request_entry(index, entry),
        Entry::ToolCall(call) => (
            call.tool_name,
            call.arguments,
            call.result,
            call.cli_output,
            call.status,
        ),
        Entry::Mcp(call) => (
            call.tool,
            call.arguments,
            call.result,
            call.cli_output,
            call.status,
        ),
    };
    let status = as_text(&serde_json::to_value(status).unwrap_or_default());
    view! {
        <details class="inspector-entry tool-call-entry">
            <summary>{format!("{}. Tool call · {name}", index + 1)}</summary>
            <Field label="Tool name" value=name.clone() />
            <Field label="Arguments" value=as_text(&arguments) />
            <Field label="Result" value=result />
            {cli_output.map(|out| view! { <Field label="CLI output" value=out /> })}
            <Field label="Status" value=status />
        </details>
    }
    .into_any()
}

fn llm_request_entry(index: usize, entry: crate::models::LlmRequestEntry) -> AnyView {
    let model = entry.model;
    let message = &entry.response["choices"][0]["message"];
    let output = as_text(&message["content"]);
    let calls = message["tool_calls"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    view! {
        <details class="inspector-entry llm-request">
            <summary>{format!("{}. LLM request · {model}", index + 1)}</summary>
            <Field label="Model" value=model.clone() />
            <div class="inspector-label">"Conversation"</div>
            {entry.conversation
                .into_iter()
                .map(|m| {
                    let rows = m.content.lines().count().clamp(1, 12).to_string();
                    view! {
                        <details class="inspector-message">
                            <summary>{m.role}</summary>
                            <textarea readonly rows=rows>{m.content}</textarea>
                        </details>
                    }
                })
                .collect_view()}
            <Field label="Output" value=output />
            {(!calls.is_empty()).then(|| view! {
                <div class="inspector-label">"Tool calls"</div>
                {calls
                    .into_iter()
                    .map(|call| {
                        let name = as_text(&call["function"]["name"]);
                        let arguments: serde_json::Value = json::parse(call["function"]["arguments"].as_str().unwrap_or("{}")).unwrap_or_default();
                        let pairs: Vec<(String, String)> = arguments.as_object().map(|o| o.iter().map(|(k, v)| (k.clone(), as_text(v))).collect()).unwrap_or_default();
                        view! {
                            <div class="inspector-call">
                                <strong>{name}</strong>
                                <table>
                                    {pairs.into_iter().map(|(key, value)| view! { <tr><th>{key}</th><td><pre>{value}</pre></td></tr> }).collect_view()}
                                </table>
                            </div>
                        }
                    })
                    .collect_view()}
            })}
            {entry.annotation.map(|note| view! { <Field label="Annotation" value=note /> })}
        </details>
    }
    .into_any()
}
