use leptos::prelude::*;
use leptos_router::hooks::use_params_map;

use crate::api::{get_conversation, list_conversations, list_models};
use crate::components::live::LiveRun;
use crate::components::manage::{HeaderTitle, ListContext};
use crate::components::{ChatState, Composer, MessageList, Sidebar};
use crate::json;
use crate::models::{Conversation, ModelList};

/// The chat shell: conversations on the left, the open conversation and the composer on the right.
#[component]
pub fn ChatPage() -> impl IntoView {
    let params = use_params_map();
    let conversation_id = Memo::new(move |_| params.read().get("id"));
    let conversations_changed = RwSignal::new(0u32);
    let conversations = json::resource(
        move || conversations_changed.get(),
        |_| list_conversations(),
    );
    provide_context(ListContext {
        changed: conversations_changed,
        active: conversation_id,
        renamed: RwSignal::new(None),
    });
    let conversation = json::resource(
        move || conversation_id.get(),
        |id| async move {
            let models = list_models().await?;
            let conversation = match id {
                Some(id) => get_conversation(id, None).await?,
                None => None,
            };
            Ok::<_, ServerFnError>((conversation, models))
        },
    );

    // Below 800 px the sidebar is a drawer behind the menu button (style/glassbox.css).
    let drawer = RwSignal::new(false);
    Effect::new(move |_| {
        conversation_id.track();
        drawer.set(false);
    });
    crate::components::escape::close_on_escape(drawer);
    view! {
        <div class="app" class:drawer-open=move || drawer.get()>
            <div class="drawer-backdrop" aria-hidden="true" on:click=move |_| drawer.set(false)></div>
            <Sidebar conversations />
            <main class="chat" aria-label="Conversation">
                <button
                    type="button"
                    class="menu-button"
                    aria-label="Conversations and settings"
                    aria-controls="sidebar"
                    aria-expanded=move || drawer.get().to_string()
                    on:click=move |_| drawer.update(|open| *open = !*open)
                >
                    <span aria-hidden="true">"☰"</span>
                </button>
                <Transition fallback=|| ()>
                    {move || Suspend::new(async move {
                        match conversation.await {
                            Ok((found, models)) => {
                                let missing = found.is_none() && conversation_id.get_untracked().is_some();
                                if missing {
                                    super::not_found::status_not_found();
                                    view! { <p class="error notice">"This conversation does not exist."</p> }.into_any()
                                } else {
                                    view! { <ConversationView conversation=found models conversations_changed /> }.into_any()
                                }
                            }
                            Err(error) => view! { <p class="error notice">{error.to_string()}</p> }.into_any(),
                        }
                    })}
                </Transition>
            </main>
        </div>
    }
}

/// One conversation's live state. A page opened while a run goes attaches to it.
#[component]
fn ConversationView(
    conversation: Option<Conversation>,
    models: ModelList,
    conversations_changed: RwSignal<u32>,
) -> impl IntoView {
    let feedback = crate::components::feedback::FeedbackStore::new(
        conversation
            .as_ref()
            .map(|c| c.feedback.clone())
            .unwrap_or_default(),
    );
    // The answers' footers and step blocks read and change the reader's feedback here.
    provide_context(feedback);
    let title = conversation
        .as_ref()
        .map(|c| c.summary.title.clone())
        .unwrap_or_default();
    let state = conversation_state(conversation, models, conversations_changed);
    // Tool blocks answer approvals for the run this view follows.
    provide_context(state);
    view! {
        <ConversationHeader state title />
        <MessageList state />
        <Composer state />
    }
    .into_any()
}

/// The view's state, following the conversation's running run if it has one. The server renders
/// the running answer as it is stored while it runs (empty, status `streaming`), with Stop; the
/// browser then follows its stream from the first event into the same entry.
fn conversation_state(
    conversation: Option<Conversation>,
    models: ModelList,
    conversations_changed: RwSignal<u32>,
) -> ChatState {
    let model = conversation
        .as_ref()
        .map_or(models.default.clone(), |c| c.summary.model.clone());
    let live_run = conversation
        .as_ref()
        .and_then(|c| c.active_run.clone())
        .map(|run| LiveRun {
            run_id: run.run_id,
            message_id: run.message_id,
        });
    let (id, messages, earlier) = match conversation {
        Some(conversation) => (
            Some(conversation.summary.id),
            conversation.messages,
            conversation.earlier,
        ),
        None => (None, Vec::new(), 0),
    };
    let state = ChatState::new(
        id,
        &messages,
        earlier,
        live_run.clone(),
        conversations_changed,
        model,
        models.models,
    );
    if let Some(run) = live_run {
        // Only in the browser: effects do not run on the server.
        Effect::new(move |_| {
            #[cfg(feature = "hydrate")]
            crate::components::live::browser::follow_run(state, run.clone());
            #[cfg(not(feature = "hydrate"))]
            let _ = &run;
        });
    }
    #[cfg(feature = "hydrate")]
    on_cleanup(move || crate::components::live::browser::stop_following(state));
    state
}

/// The open conversation's title (renamed in place) and its export menu.
#[component]
fn ConversationHeader(state: ChatState, title: String) -> impl IntoView {
    let title = StoredValue::new(title);
    move || {
        state.conversation_id.get().map(|id| {
            view! {
                <header class="conversation-header">
                    <HeaderTitle id=id.clone() title=title.get_value() />
                    <details class="menu export-menu">
                        <summary>"Export conversation"</summary>
                        <div class="menu-items" role="menu">
                            <a role="menuitem" href=crate::client::thoughtflow(&id, "json") target="_blank" rel="external noopener">"ThoughtFlow JSON"</a>
                            <a role="menuitem" href=crate::client::thoughtflow(&id, "d2") target="_blank" rel="external noopener">"ThoughtFlow D2"</a>
                        </div>
                    </details>
                </header>
            }
        })
    }
}
