//! Branches in the conversation view (issue 36): a question's Edit, an answer's Regenerate (with
//! the conversation's model or another), and `< 2 / 3 >` between the versions of a message. Each
//! action is a server call; the list then shows the conversation's active path. All of them are
//! hidden while a run is going in the conversation.

use leptos::either::Either;
use leptos::prelude::*;

use super::live::ChatState;
use crate::client::Rerun;
use crate::protocol::Siblings;

/// A question: its text, `< n / m >` between its versions, and Edit (a textarea with Send and
/// Cancel; Esc cancels, Enter sends, Shift+Enter adds a line).
#[component]
pub fn UserMessage(
    id: String,
    text: String,
    siblings: Option<Siblings>,
    state: ChatState,
) -> impl IntoView {
    let editing = RwSignal::new(false);
    let draft = RwSignal::new(text.clone());
    let question_id = StoredValue::new(id.clone());
    let original = StoredValue::new(text.clone());
    let send = move || {
        let content = draft.get_untracked();
        if content.trim().is_empty() {
            return;
        }
        editing.set(false);
        rerun(state, Rerun::Edit(question_id.get_value(), content));
    };
    let cancel = move || {
        editing.set(false);
        draft.set(original.get_value());
    };
    let (send, cancel) = (
        Callback::new(move |()| send()),
        Callback::new(move |()| cancel()),
    );
    let shown = Memo::new(move |_| editing.get());
    view! {
        <article class="message user" data-status="complete" data-message-id=id>
            // The form comes from a chunk of its own (`on_demand`): only Edit opens it.
            {move || match shown.get() {
                true => Either::Left(Suspend::new(edit_form(draft, send, cancel))),
                false => Either::Right(view! { <div class="message-text">{original.get_value()}</div> }),
            }}
            <div class="message-branches">
                <SiblingNav siblings=siblings.clone() state />
                // Hidden while a run goes by the list's `running` class (style/glassbox.css), not
                // here: one class for the list rather than a closure per message to re-run.
                <Show when=move || !editing.get()>
                    <button type="button" class="footer-action edit-action" on:click=move |_| editing.set(true)>"Edit"</button>
                </Show>
            </div>
        </article>
    }
}

/// The question's Edit form: Send, Cancel, Esc cancels, Enter sends, Shift+Enter adds a line.
#[leptos::lazy]
fn edit_form(draft: RwSignal<String>, send: Callback<()>, cancel: Callback<()>) -> AnyView {
    view! {
        <form class="edit-question" on:submit=move |event| { event.prevent_default(); send.run(()); }>
            <textarea
                aria-label="Edit the question"
                rows="3"
                prop:value=move || draft.get()
                on:input=move |event| draft.set(event_target_value(&event))
                on:keydown=move |event| match event.key().as_str() {
                    "Escape" => { event.prevent_default(); cancel.run(()); }
                    "Enter" if !event.shift_key() && !event.is_composing() => { event.prevent_default(); send.run(()); }
                    _ => {}
                }
            ></textarea>
            <div class="edit-actions">
                <button type="submit" class="edit-send">"Send"</button>
                <button type="button" class="edit-cancel" on:click=move |_| cancel.run(())>"Cancel"</button>
            </div>
        </form>
    }
    .into_any()
}

/// `< 2 / 3 >` between a message's versions, when it has more than one; the buttons switch the
/// conversation to the neighbouring version (disabled at either end and while a run is going).
#[component]
pub fn SiblingNav(siblings: Option<Siblings>, state: ChatState) -> impl IntoView {
    let siblings = siblings.filter(|siblings| siblings.count > 1)?;
    let busy = move || state.live_run.with(Option::is_some);
    let previous = StoredValue::new(siblings.previous_id.clone());
    let next = StoredValue::new(siblings.next_id.clone());
    let go = move |to: Option<String>| {
        if let Some(message_id) = to {
            switch(state, message_id);
        }
    };
    Some(view! {
        <span class="sibling-nav">
            <button
                type="button"
                class="sibling-previous"
                aria-label="Previous version"
                disabled=move || busy() || previous.with_value(Option::is_none)
                on:click=move |_| go(previous.get_value())
            >
                "<"
            </button>
            <span class="sibling-count">{format!("{} / {}", siblings.index, siblings.count)}</span>
            <button
                type="button"
                class="sibling-next"
                aria-label="Next version"
                disabled=move || busy() || next.with_value(Option::is_none)
                on:click=move |_| go(next.get_value())
            >
                ">"
            </button>
        </span>
    })
}

/// An answer's Regenerate (with the conversation's model) and a menu to regenerate it with
/// another model (the composer's list).
#[component]
pub fn RegenerateActions(id: String, state: ChatState, menu_open: RwSignal<u8>) -> impl IntoView {
    let answer_id = StoredValue::new(id);
    let regenerate = move |model: String| {
        state.model.set(model);
        rerun(state, Rerun::Regenerate(answer_id.get_value()));
    };
    // Hidden while a run goes by the list's `run-going` class, as Edit is.
    view! {
        <button
            type="button"
            class="footer-action regenerate"
            on:click=move |_| regenerate(state.model.get_untracked())
        >
            "Regenerate"
        </button>
        <super::menu::FooterMenu
            class="regenerate-menu"
            label="Regenerate with…"
            menu_open
            items=move || regenerate_choices(state, answer_id.get_value())
        />
    }
}

/// The models to regenerate answer `id` with (the composer's list), from a chunk of its own
/// (`on_demand`): only a click on "Regenerate with…" shows them.
#[leptos::lazy]
fn regenerate_choices(state: ChatState, id: String) -> AnyView {
    let choices = move || {
        state
            .models
            .get()
            .into_iter()
            .map(|model| {
                let (label, id) = (model.clone(), id.clone());
                let regenerate = move |_| {
                    state.model.set(model.clone());
                    rerun(state, Rerun::Regenerate(id.clone()));
                };
                view! { <button type="button" role="menuitem" class="regenerate-with" on:click=regenerate>{label}</button> }
            })
            .collect_view()
    };
    choices.into_any()
}

/// Starts a rerun: the message it replaces and what followed leave the list, the new version
/// goes in and its run is followed as a send's is; when it ends, the conversation is read again
/// (for the `< n / m >`).
fn rerun(state: ChatState, rerun: Rerun) {
    #[cfg(feature = "hydrate")]
    leptos::task::spawn_local(async move {
        let Some(conversation) = state.conversation_id.get_untracked() else {
            return;
        };
        state.connection_error.set(None);
        let model = state.model.get_untracked();
        match crate::client::rerun(conversation, rerun.clone(), model).await {
            Ok(started) => {
                match rerun {
                    Rerun::Regenerate(id) => state.truncate_from(&id),
                    Rerun::Edit(id, content) => {
                        state.truncate_from(&id);
                        state.push_user(started.user_message_id.clone(), content);
                    }
                }
                state.reread_on_end.set(true);
                super::live::browser::follow_started(state, started);
            }
            Err(error) => state.connection_error.set(Some(error.to_string())),
        }
    });
    #[cfg(not(feature = "hydrate"))]
    let _ = (state, rerun);
}

/// Switches the conversation to version `message_id` of one of its messages and shows it (also
/// what opening a search hit on another branch does).
pub(super) fn switch(state: ChatState, message_id: String) {
    #[cfg(feature = "hydrate")]
    leptos::task::spawn_local(async move {
        let Some(conversation) = state.conversation_id.get_untracked() else {
            return;
        };
        match crate::client::switch_branch(&conversation, &message_id).await {
            Ok(conversation) => {
                state.connection_error.set(None);
                state.show(conversation);
            }
            Err(error) => state.connection_error.set(Some(error.to_string())),
        }
    });
    #[cfg(not(feature = "hydrate"))]
    let _ = (state, message_id);
}
