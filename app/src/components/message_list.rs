use leptos::prelude::*;

use super::live::ChatState;
use super::markdown::Markdown;
use super::segments::{PersistedSegments, StreamingReasoningOverlay, StreamingToolsOverlay};
use crate::protocol::{Message, MessageStatus, Role, Segment, ToolCallStatus};

/// The conversation: stored messages, then the live message while a run streams.
#[component]
pub fn MessageList(state: ChatState) -> impl IntoView {
    let empty = move || state.messages.with(Vec::is_empty) && state.live_run.with(Option::is_none);
    view! {
        <section class="messages">
            <Show when=empty>
                <div class="welcome">
                    <h1>"What should the agent look into?"</h1>
                    <p class="muted">"Every reasoning step and tool call shows up here as it happens."</p>
                </div>
            </Show>
            <For each=move || state.messages.get() key=|message| (message.id.clone(), message.status) let:message>
                <MessageView message state />
            </For>
            <Show when=move || state.live_run.with(Option::is_some)>
                <LiveMessage state />
            </Show>
            <RunStatusAnnouncer state />
        </section>
    }
    .into_any()
}

#[component]
fn MessageView(message: Message, state: ChatState) -> impl IntoView {
    let role = match message.role {
        Role::User => "user",
        Role::Assistant => "assistant",
    };
    let ended = match message.status {
        MessageStatus::Complete | MessageStatus::Streaming => None,
        MessageStatus::Cancelled => Some("Stopped. The partial answer is kept."),
        MessageStatus::Error => Some("The run failed."),
        MessageStatus::Interrupted => Some("Interrupted: the server stopped during this run."),
    };
    let failed = message.status == MessageStatus::Error;
    let message_id = message.id.clone();
    let retry = move |_| {
        // Send the question that led to this answer again.
        let question = state.messages.with(|messages| {
            let index = messages.iter().position(|m| m.id == message_id)?;
            messages[..index]
                .iter()
                .rev()
                .find(|m| m.role == Role::User)
                .map(Message::text)
        });
        if let Some(question) = question {
            super::composer::send_message(state, question);
        }
    };
    view! {
        <article class=format!("message {role}") data-status=message.status.as_str()>
            {match message.role {
                Role::User => view! { <div class="message-text">{message.text()}</div> }.into_any(),
Role::Assistant => view! {
                    <PersistedSegments segments=message.segments.clone() />
                    {message.trace_id.clone().map(|trace_id| view! {
                        <a class="view-trace" href=format!("/t/{trace_id}")>"View trace"</a>
                    })}
                }
                .into_any(),
            }}
            {ended
                .map(|ended| {
                    view! {
                        <div class="message-status" role="note">
                            <span>{ended}</span>
                            {message.ended_reason.clone().map(|reason| view! { <span class="muted">" " {reason}</span> })}
                            {failed.then(|| view! { <button class="retry" on:click=retry.clone()>"Retry"</button> })}
                        </div>
                    }
                })}
        </article>
    }
    .into_any()
}

/// Changes whenever a block's visible content changes, so finished blocks keep their DOM.
fn live_key(segment: &Segment) -> (String, u8, usize) {
    match segment {
        Segment::Reasoning(reasoning) => (
            reasoning.id.clone(),
            reasoning
                .parts
                .iter()
                .filter(|part| part.is_complete)
                .count() as u8,
            reasoning.parts.iter().map(|part| part.text.len()).sum(),
        ),
        Segment::ToolCall(call) => (call.call_id.clone(), call.status as u8, call.output.len()),
        Segment::Text(text) => (text.id.clone(), 0, 0),
    }
}

/// The streaming message: reasoning and tool overlays above the answer text, so nothing jumps.
#[component]
fn LiveMessage(state: ChatState) -> impl IntoView {
    let stopping = RwSignal::new(false);
    let stop = move || {
        if stopping.get_untracked() {
            return;
        }
        if let Some(run_id) = state.live_run.get_untracked() {
            stopping.set(true);
            #[cfg(feature = "hydrate")]
            leptos::task::spawn_local(async move {
                if let Err(error) = super::live::stop_run(run_id).await {
                    state.connection_error.set(Some(error));
                }
                stopping.set(false);
            });
            #[cfg(not(feature = "hydrate"))]
            let _ = run_id;
        }
    };
    #[cfg(feature = "hydrate")]
    {
        let handle = window_event_listener(leptos::ev::keydown, move |event| {
            if event.key() == "Escape" {
                stop();
            }
        });
        on_cleanup(move || handle.remove());
    }
    view! {
        <article class="message assistant live" aria-busy="true">
            <StreamingMessage message=state.live.into() />
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
        </article>
    }
    .into_any()
}

fn reattach(state: ChatState) {
    #[cfg(feature = "hydrate")]
    if let Some(run_id) = state.live_run.get_untracked() {
        super::live::follow_run(state, run_id);
    }
    #[cfg(not(feature = "hydrate"))]
    let _ = state;
}

/// A message while it streams (live, or replayed from a stored trace): the reasoning and tool
/// overlays above the answer text. Blocks are keyed on their visible content, so a finished block
/// keeps its DOM while others change.
#[component]
pub fn StreamingMessage(message: Signal<Option<Message>>) -> impl IntoView {
    let blocks = move || {
        message.with(|message| {
            message
                .as_ref()
                .map(|message| {
                    message
                        .segments
                        .iter()
                        .filter(|s| !matches!(s, Segment::Text(_)))
                        .cloned()
                        .collect::<Vec<_>>()
                })
                .unwrap_or_default()
        })
    };
    let text =
        move || message.with(|message| message.as_ref().map(Message::text).unwrap_or_default());
    let working =
        move || message.with(|message| message.as_ref().is_none_or(|m| m.segments.is_empty()));
    view! {
        <Show when=working>
            <p class="muted working">
                <span class="spinner" aria-hidden="true"></span>
                " Working…"
            </p>
        </Show>
        <For each=blocks key=live_key let:segment>
            {match segment {
                Segment::Reasoning(reasoning) => view! { <StreamingReasoningOverlay segment=reasoning /> }.into_any(),
                Segment::ToolCall(call) => {
                    let tool_count = message.with_untracked(|m| m.as_ref().map_or(0, |m| m.tool_calls().count()));
                    view! { <StreamingToolsOverlay call tool_count /> }.into_any()
                }
                Segment::Text(_) => ().into_any(),
            }}
        </For>
        <div class="message-text streaming">{move || view! { <Markdown text=text() /> }}</div>
    }
    .into_any()
}

/// Tells screen readers when a run starts and how it ended.
#[component]
fn RunStatusAnnouncer(state: ChatState) -> impl IntoView {
    let announcement = move || {
        if state.live_run.with(Option::is_some) {
            let running_tools = state.live.with(|message| {
                message.as_ref().map_or(0, |m| {
                    m.tool_calls()
                        .filter(|c| c.status == ToolCallStatus::Running)
                        .count()
                })
            });
            return match running_tools {
                0 => "The agent is working.".to_owned(),
                n => format!("The agent is running {n} tool call(s)."),
            };
        }
        state.messages.with(|messages| match messages.last() {
            Some(last) if last.role == Role::Assistant => match last.status {
                MessageStatus::Complete => "The answer is complete.".to_owned(),
                MessageStatus::Cancelled => "The run was stopped.".to_owned(),
                MessageStatus::Error => "The run failed.".to_owned(),
                _ => String::new(),
            },
            _ => String::new(),
        })
    };
    view! { <p class="visually-hidden" role="status" aria-live="polite">{announcement}</p> }
}
