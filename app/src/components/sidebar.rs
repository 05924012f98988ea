use leptos::prelude::*;

use crate::models::ConversationSummary;

/// The conversation list, newest first, with a way to start a new chat.
#[component]
pub fn Sidebar(
    conversations: crate::json::Resource<Result<Vec<ConversationSummary>, ServerFnError>>,
    active: Memo<Option<String>>,
) -> impl IntoView {
    view! {
        <nav id="sidebar" class="sidebar" aria-label="Conversations">
            <div class="brand">"Glassbox"</div>
            <a class="new-chat" href="/">"+ New chat"</a>
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
                                    .map(|conversation| {
                                        let href = format!("/c/{}", conversation.id);
                                        let id = conversation.id.clone();
                                        let current = move || active.get().as_deref() == Some(id.as_str());
                                        view! {
                                            <li>
                                                <a
                                                    href=href
                                                    class:active=current.clone()
                                                    aria-current=move || current().then_some("page")
                                                >
                                                    {conversation.title}
                                                </a>
                                            </li>
                                        }
                                    })
                                    .collect_view()}
                            </ul>
                        }
                            .into_any(),
                        Err(error) => view! { <p class="error">{error.to_string()}</p> }.into_any(),
                    }
                })}
            </Transition>
            <Account />
        </nav>
    }
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
