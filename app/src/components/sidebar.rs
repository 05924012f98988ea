use leptos::prelude::*;

use super::manage::{ConversationItem, ListContext};
use crate::models::ConversationSummary;

/// The conversation list, newest first, with a way to start a new chat; each item has its
/// actions (rename, archive, delete); the archived ones are listed apart.
#[component]
pub fn Sidebar(
    conversations: crate::json::Resource<Result<Vec<ConversationSummary>, ServerFnError>>,
) -> impl IntoView {
    view! {
        <nav id="sidebar" class="sidebar" aria-label="Conversations">
            <div class="brand">"Glassbox"</div>
            <a class="new-chat" href="/">"+ New chat"</a>
            <super::search::SearchBox />
            <super::settings_panel::SettingsPanel />
            <Transition fallback=|| view! { <p class="muted">"Loading…"</p> }>
                {move || Suspend::new(async move {
                    match conversations.await {
                        Ok(list) if list.is_empty() => {
                            view! { <p class="muted">"No conversations yet."</p> }.into_any()
                        }
                        Ok(list) => view! {
                            <ul class="conversation-list">
                                {list
                                    .into_iter()
                                    .map(|conversation| view! { <ConversationItem conversation /> })
                                    .collect_view()}
                            </ul>
                        }
                            .into_any(),
                        Err(error) => view! { <p class="error">{error.to_string()}</p> }.into_any(),
                    }
                })}
            </Transition>
            <ArchivedList />
            <Account />
        </nav>
    }
}

/// The archived conversations, read in the browser when opened (and again when the list
/// changes while open); the server renders it closed and empty.
#[component]
fn ArchivedList() -> impl IntoView {
    let list = expect_context::<ListContext>();
    let open = RwSignal::new(false);
    let archived = RwSignal::new(Vec::<ConversationSummary>::new());
    let error = RwSignal::new(None::<String>);
    Effect::new(move |_| {
        list.changed.track();
        if open.get() {
            load_archived(archived, error);
        }
    });
    view! {
        <details class="menu archived-list" on:toggle=move |event| open.set(toggled_open(&event))>
            <summary>"Archived"</summary>
            {move || error.get().map(|message| view! { <p class="error" role="alert">{message}</p> })}
            {move || {
                let items = archived.get();
                match items.is_empty() {
                    true => view! { <p class="muted">"No archived conversations."</p> }.into_any(),
                    false => view! {
                        <ul class="conversation-list">
                            {items.into_iter().map(|conversation| view! { <ConversationItem conversation /> }).collect_view()}
                        </ul>
                    }
                        .into_any(),
                }
            }}
        </details>
    }
}

/// Whether a `toggle` event's `<details>` is open now.
fn toggled_open(event: &leptos::ev::Event) -> bool {
    #[cfg(feature = "hydrate")]
    {
        use wasm_bindgen::JsCast;
        event
            .target()
            .and_then(|target| target.dyn_into::<web_sys::HtmlDetailsElement>().ok())
            .is_some_and(|details| details.open())
    }
    #[cfg(not(feature = "hydrate"))]
    {
        let _ = event;
        false
    }
}

fn load_archived(archived: RwSignal<Vec<ConversationSummary>>, error: RwSignal<Option<String>>) {
    #[cfg(feature = "hydrate")]
    leptos::task::spawn_local(async move {
        match crate::client::archived_conversations().await {
            Ok(list) => {
                error.set(None);
                archived.set(list);
            }
            Err(problem) => error.set(Some(format!(
                "Could not read the archived conversations: {problem}"
            ))),
        }
    });
    #[cfg(not(feature = "hydrate"))]
    let _ = (archived, error);
}

/// Who is signed in, and Sign out (only with accounts: `--auth password` or `proxy`).
#[component]
fn Account() -> impl IntoView {
    let user = crate::json::OnceResource::new_with_options(crate::api::current_user(), false);
    view! {
        <Suspense fallback=|| ()>
            {move || Suspend::new(async move {
                user.await
                    .ok()
                    .flatten()
                    .map(|name| {
                        view! {
                            <form class="account" method="post" action="/auth/logout">
                                <span class="account-name" title="Signed in">{name}</span>
                                <button type="submit">"Sign out"</button>
                            </form>
                        }
                    })
            })}
        </Suspense>
    }
}
