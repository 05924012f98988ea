use leptos::prelude::*;

use super::live::ChatState;

/// The message box. Enter sends, Shift+Enter adds a line; Send is enabled once there is text and
/// no run is going.
#[component]
pub fn Composer(state: ChatState) -> impl IntoView {
    let (draft, set_draft) = signal(String::new());
    let busy = move || state.live_run.with(Option::is_some);
    let can_send = move || !busy() && !draft.read().trim().is_empty();
    let send = move || {
        if can_send() {
            send_message(state, draft.get_untracked());
            set_draft.set(String::new());
        }
    };
    view! {
        <form
            class="composer"
            on:submit=move |event| {
                event.prevent_default();
                send();
            }
        >
            <textarea
                name="content"
                aria-label="Message"
                placeholder="Ask the agent… (Enter sends, Shift+Enter adds a line)"
                rows="2"
                prop:value=move || draft.get()
                on:input=move |event| set_draft.set(event_target_value(&event))
                on:keydown=move |event| {
                    if event.key() == "Enter" && !event.shift_key() && !event.is_composing() {
                        event.prevent_default();
                        send();
                    }
                }
            ></textarea>
            <div class="composer-actions">
                <select
                    class="model-picker"
                    aria-label="Model"
                    prop:value=move || state.model.get()
                    on:change=move |event| state.model.set(event_target_value(&event))
                >
                    {move || {
                        state
                            .models
                            .get()
                            .into_iter()
                            .map(|id| {
                                let label = if id == "demo" { "demo (built-in, no model)".to_owned() } else { id.clone() };
                                let selected = state.model.get_untracked() == id;
                                view! { <option value=id selected=selected>{label}</option> }
                            })
                            .collect_view()
                    }}
                </select>
            </div>
            <button type="submit" class="send" disabled=move || !can_send()>
                "Send"
            </button>
            <p class="error" role="alert">
                {move || state.connection_error.get().filter(|_| state.live_run.with(Option::is_none))}
            </p>
        </form>
    }
    .into_any()
}

/// Starts a run with `content`. In a new chat it opens the new conversation (which attaches to the
/// run); in an open one it shows the question and follows the run in place.
pub fn send_message(state: ChatState, content: String) {
    #[cfg(feature = "hydrate")]
    leptos::task::spawn_local(async move {
        state.connection_error.set(None);
        let conversation = state.conversation_id.get_untracked();
        let model = state.model.get_untracked();
        match crate::client::start_chat(conversation.clone(), content.clone(), model).await {
            Ok(started) if conversation.is_none() => {
                state.conversations_changed.update(|n| *n += 1);
                let navigate = leptos_router::hooks::use_navigate();
                navigate(
                    &format!("/c/{}", started.conversation_id),
                    Default::default(),
                );
            }
            Ok(started) => {
                state.push_user(started.user_message_id.clone(), content);
                super::live::browser::follow_started(state, started);
            }
            Err(error) => state.connection_error.set(Some(error.to_string())),
        }
    });
    #[cfg(not(feature = "hydrate"))]
    let _ = (state, content);
}
