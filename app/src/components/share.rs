//! The trace owner's share links: create one, copy it, revoke it. A link opens the trace page
//! read-only for whoever holds it (`/t/{trace_id}?share={token}`) and reaches nothing else.
//! The links are the owner's business only, so they are fetched in the browser, after hydration,
//! from the REST API (`/api/traces/{id}/shares`); the server renders the empty panel.

use leptos::prelude::*;

use crate::client::ShareLink;

#[component]
pub fn SharePanel(trace_id: String) -> impl IntoView {
    let links = RwSignal::new(Vec::<ShareLink>::new());
    let error = RwSignal::new(None::<String>);
    let loaded = RwSignal::new(false);
    let trace_id = StoredValue::new(trace_id);
    // The list is read the first time the panel opens.
    let on_toggle = move |_| {
        if !loaded.get_untracked() {
            loaded.set(true);
            browser::load(trace_id.get_value(), links, error);
        }
    };
    // Off by default: a link shows its own turn, not the questions and answers before it.
    let include_history = RwSignal::new(false);
    let create = move |_| {
        browser::create(
            trace_id.get_value(),
            include_history.get_untracked(),
            links,
            error,
        )
    };
    view! {
        <details class="share-panel" on:toggle=on_toggle>
            <summary>"Share"</summary>
            <div class="share-body">
                <p class="muted">
                    "Anyone with a link can read this trace (its replay, timeline, inspector and export), live while it runs, and nothing else. Revoke a link to close it."
                </p>
                <label class="share-history">
                    <input
                        type="checkbox"
                        prop:checked=move || include_history.get()
                        on:change=move |event| include_history.set(event_target_checked(&event))
                    />
                    " Include the conversation before it"
                </label>
                <button type="button" class="share-create" on:click=create>"Create a link"</button>
                {move || error.get().map(|message| view! { <p class="error" role="alert">{message}</p> })}
                <ul class="share-links">
                    <For each=move || links.get() key=|link| link.token.clone() let(link)>
                        <ShareRow link trace_id=trace_id.get_value() links error />
                    </For>
                </ul>
            </div>
        </details>
    }
    .into_any()
}

#[component]
fn ShareRow(
    link: ShareLink,
    trace_id: String,
    links: RwSignal<Vec<ShareLink>>,
    error: RwSignal<Option<String>>,
) -> impl IntoView {
    let url = browser::absolute(&link.path);
    let copy_url = url.clone();
    let token = link.token.clone();
    let copied = RwSignal::new(false);
    let copy = move |_| {
        browser::copy(&copy_url);
        copied.set(true);
    };
    let revoke = move |_| browser::revoke(trace_id.clone(), token.clone(), links, error);
    view! {
        <li class="share-link">
            <input class="share-url" readonly aria-label="Share link" value=url />
            <button type="button" on:click=copy>{move || if copied.get() { "Copied" } else { "Copy" }}</button>
            <button type="button" class="share-revoke" on:click=revoke>"Revoke"</button>
            <span class="muted share-created">
                {format!("created {}", link.created_at.get(..16).unwrap_or(&link.created_at).replace('T', " "))}
                {link.include_history.then_some(" · with the conversation before it")}
            </span>
        </li>
    }
    .into_any()
}

#[cfg(feature = "hydrate")]
mod browser {
    use leptos::prelude::*;

    use crate::client::{self, ShareLink};

    pub fn absolute(path: &str) -> String {
        let origin = window().location().origin().unwrap_or_default();
        format!("{origin}{path}")
    }

    pub fn copy(text: &str) {
        let _ = window().navigator().clipboard().write_text(text);
    }

    pub fn load(
        trace_id: String,
        links: RwSignal<Vec<ShareLink>>,
        error: RwSignal<Option<String>>,
    ) {
        leptos::task::spawn_local(async move {
            match client::share_links(&trace_id).await {
                Ok(list) => links.set(list),
                Err(problem) => error.set(Some(format!("Could not read the links: {problem}"))),
            }
        });
    }

    pub fn create(
        trace_id: String,
        include_history: bool,
        links: RwSignal<Vec<ShareLink>>,
        error: RwSignal<Option<String>>,
    ) {
        leptos::task::spawn_local(async move {
            match client::create_share(&trace_id, include_history).await {
                Ok(link) => {
                    error.set(None);
                    links.update(|links| links.push(link));
                }
                Err(problem) => error.set(Some(format!("Could not make a link: {problem}"))),
            }
        });
    }

    pub fn revoke(
        trace_id: String,
        token: String,
        links: RwSignal<Vec<ShareLink>>,
        error: RwSignal<Option<String>>,
    ) {
        leptos::task::spawn_local(async move {
            match client::revoke_share(&trace_id, &token).await {
                Ok(()) => {
                    error.set(None);
                    links.update(|links| links.retain(|link| link.token != token));
                }
                Err(problem) => error.set(Some(format!("Could not revoke the link: {problem}"))),
            }
        });
    }
}

/// The server renders the panel closed and empty; nothing here runs there.
#[cfg(not(feature = "hydrate"))]
mod browser {
    use leptos::prelude::*;

    use crate::client::ShareLink;

    pub fn absolute(path: &str) -> String {
        path.to_owned()
    }

    pub fn copy(_: &str) {}

    pub fn load(_: String, _: RwSignal<Vec<ShareLink>>, _: RwSignal<Option<String>>) {}

    pub fn create(_: String, _: bool, _: RwSignal<Vec<ShareLink>>, _: RwSignal<Option<String>>) {}

    pub fn revoke(_: String, _: String, _: RwSignal<Vec<ShareLink>>, _: RwSignal<Option<String>>) {}
}
