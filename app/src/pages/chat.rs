use leptos::prelude::*;
use leptos_router::hooks::use_params_map;

use crate::api::{get_conversation, list_conversations};
use crate::components::{Composer, MessageList, Sidebar};

/// The chat shell: conversations on the left, the open conversation and the composer on the right.
#[component]
pub fn ChatPage() -> impl IntoView {
    let params = use_params_map();
    let conversation_id = Memo::new(move |_| params.read().get("id"));
    let conversations = Resource::new(|| (), |_| list_conversations());
    let conversation = Resource::new(
        move || conversation_id.get(),
        |id| async move {
            match id {
                Some(id) => get_conversation(id).await,
                None => Ok(None),
            }
        },
    );

    view! {
        <div class="app">
            <Sidebar conversations active=conversation_id />
            <main class="chat" aria-label="Conversation">
                <MessageList conversation />
                <Composer conversation_id />
            </main>
        </div>
    }
}
