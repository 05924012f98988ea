//! A stored run: its steps with a replay (`replay`), a timeline of where the time went
//! (`timeline`), and the Agent Inspector view (`inspector`). Replay plays the stored events through the live view's components with their
//! original timing; it never runs a tool or calls a model.

use leptos::prelude::*;
use leptos_router::{
    hooks::{use_params_map, use_query_map},
    lazy_route, LazyRoute,
};

mod compare_with;
mod inspector;
mod replay;
pub(super) mod timeline;

use crate::api::get_trace_overview;
use crate::components::feedback::{AnswerFeedback, FeedbackStore, NoteTarget};
use crate::components::segments::format_duration;
use crate::components::share::SharePanel;
use crate::json;
use crate::models::{Trace, TraceOverview};
use crate::protocol::{CancelledBy, ErrorCode, TraceStatus};
use compare_with::CompareWith;
use inspector::InspectorView;
use replay::Replay;
use timeline::Timeline;

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

/// The page's tabs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum TraceTab {
    Steps,
    Timeline,
    Inspector,
}

impl TraceTab {
    const ALL: [TraceTab; 3] = [TraceTab::Steps, TraceTab::Timeline, TraceTab::Inspector];

    fn label(self) -> &'static str {
        match self {
            TraceTab::Steps => "Steps & replay",
            TraceTab::Timeline => "Timeline",
            TraceTab::Inspector => "Inspector",
        }
    }
}

/// The tab buttons; `tab` is the one shown.
fn tab_bar(tab: RwSignal<TraceTab>) -> impl IntoView {
    let button = move |name: TraceTab| {
        view! {
            <button
                type="button"
                role="tab"
                class="tab"
                aria-selected=move || (tab.get() == name).to_string()
                on:click=move |_| tab.set(name)
            >
                {name.label()}
            </button>
        }
    };
    view! { <div class="tabs" role="tablist">{TraceTab::ALL.map(button)}</div> }
}

#[component]
fn TraceView(
    overview: TraceOverview,
    share: Option<String>,
    refresh: Callback<()>,
) -> impl IntoView {
    let trace = overview.trace.clone();
    let tab = RwSignal::new(TraceTab::Steps);
    let shown = move |name: TraceTab| move || tab.get() != name;
    let trace_id = trace.trace_id.clone();
    let live_run = (trace.status == TraceStatus::Running).then(|| trace.run_id.clone());
    let replay_share = share.clone();
    let final_message = overview.message.clone();
    let total = overview.event_count;
    // The owner's feedback on an ended run: the answer's under the header, notes on the steps.
    let store = (share.is_none() && trace.status != TraceStatus::Running)
        .then(|| FeedbackStore::new(trace.feedback.clone()));
    let notes = store.map(|store| NoteTarget {
        message_id: trace.message_id.clone(),
        store,
    });
    let answer_feedback = store.map(|store| {
        view! { <AnswerFeedback message_id=trace.message_id.clone() store /> }
    });
    view! {
        <TraceHeader trace=trace.clone() event_count=total share=share.clone() />
        {answer_feedback}
        {tab_bar(tab)}
        <section class="tab-panel" hidden=shown(TraceTab::Steps)>
            <Replay trace_id=trace.trace_id.clone() total final_message share=replay_share live_run refresh notes />
        </section>
        <section class="tab-panel" hidden=shown(TraceTab::Timeline)>
            <Timeline overview share=share.clone() />
        </section>
        <section class="tab-panel" hidden=shown(TraceTab::Inspector)>
            <Show when=move || tab.get() == TraceTab::Inspector>
                <InspectorView trace_id=trace_id.clone() share=share.clone() />
            </Show>
        </section>
    }
    .into_any()
}

/// How the run ended, its counts, the way back (or a note that it was shared) and the exports.
#[component]
fn TraceHeader(trace: Trace, event_count: usize, share: Option<String>) -> impl IntoView {
    let count = |n: Option<i64>| n.map(|n| u64::try_from(n).unwrap_or(0));
    let tokens = match (count(trace.input_tokens), count(trace.output_tokens)) {
        (Some(input_tokens), Some(output_tokens)) => {
            let usage = app_usage(input_tokens, output_tokens, &trace);
            format!(" · {}", usage.summary())
        }
        _ => String::new(),
    };
    let export = format!(
        "{}{}",
        crate::client::trace_inspector(&trace.trace_id),
        share_query(&share)
    );
    let top = match share.is_some() {
        true => view! { <p class="shared-note muted">"Shared with you, read only"</p> }.into_any(),
        false => view! {
            <a href=format!("/c/{}", trace.conversation_id)>"← Back to the conversation"</a>
        }
        .into_any(),
    };
    let owner_tools = share.is_none().then(|| {
        view! {
            <SharePanel trace_id=trace.trace_id.clone() />
            <CompareWith trace_id=trace.trace_id.clone() conversation_id=trace.conversation_id.clone() />
        }
        .into_any()
    });
    // While the run goes, only the checkpointed events are counted, and the totals are not in.
    let counts = match trace.status == TraceStatus::Running {
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
    }
}

/// A stored trace's totals as a [`crate::protocol::Usage`], for its one way of being read.
fn app_usage(input_tokens: u64, output_tokens: u64, trace: &Trace) -> crate::protocol::Usage {
    let count = |n: Option<i64>| n.map(|n| u64::try_from(n).unwrap_or(0));
    crate::protocol::Usage {
        input_tokens,
        output_tokens,
        reasoning_tokens: count(trace.reasoning_tokens),
        cache_read_tokens: count(trace.cache_read_tokens),
        cache_write_tokens: count(trace.cache_write_tokens),
    }
}
