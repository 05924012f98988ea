//! Managing conversations in the UI (issue 35): a sidebar item with its menu (rename inline,
//! archive or unarchive, delete after a confirmation), and the open conversation's title in its
//! header, renamed in place. Every write goes through `client.rs` in the browser; the server
//! renders each item and title closed, as the browser first shows them.

use leptos::html;
use leptos::prelude::*;

use crate::models::ConversationSummary;

/// What the sidebar and the header share (provided by the chat page): the list to read again,
/// the open conversation, and the last rename (so the header shows a rename made in the sidebar).
#[derive(Clone, Copy)]
pub struct ListContext {
    pub changed: RwSignal<u32>,
    pub active: Memo<Option<String>>,
    pub renamed: RwSignal<Option<(String, String)>>,
}

impl ListContext {
    #[cfg(feature = "hydrate")]
    fn refresh(self) {
        self.changed.update(|n| *n += 1);
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Shown,
    Renaming,
    ConfirmingDelete,
}

/// One conversation of the list (or of the archived list) with its actions.
#[component]
pub fn ConversationItem(conversation: ConversationSummary) -> impl IntoView {
    let list = expect_context::<ListContext>();
    let id = StoredValue::new(conversation.id.clone());
    let title = RwSignal::new(conversation.title);
    let archived = conversation.archived;
    let mode = RwSignal::new(Mode::Shown);
    let error = RwSignal::new(None::<String>);
    let href = format!("/c/{}", conversation.id);
    let current = move || list.active.get().as_deref() == Some(id.get_value().as_str());
    let stop_renaming = Callback::new(move |()| mode.set(Mode::Shown));
    view! {
        <li class="conversation-item" class:archived=archived>
            {move || match mode.get() {
                Mode::Renaming => {
                    Suspend::new(rename_field(id.get_value(), title, error, stop_renaming)).into_any()
                }
                _ => view! {
                    <a
                        href=href.clone()
                        class:active=current
                        aria-current=move || current().then_some("page")
                    >
                        {move || title.get()}
                    </a>
                }
                    .into_any(),
            }}
            <ItemMenu id title archived mode error />
            {move || (mode.get() == Mode::ConfirmingDelete).then(|| Suspend::new(confirm_delete(id, title, mode, error)))}
            {move || error.get().map(|message| view! { <p class="error item-error" role="alert">{message}</p> })}
        </li>
    }
    .into_any()
}

/// The item's menu: Rename, Archive (or Unarchive), Delete.
#[component]
fn ItemMenu(
    id: StoredValue<String>,
    title: RwSignal<String>,
    archived: bool,
    mode: RwSignal<Mode>,
    error: RwSignal<Option<String>>,
) -> impl IntoView {
    let list = expect_context::<ListContext>();
    let menu = NodeRef::<html::Details>::new();
    let close = move || {
        if let Some(menu) = menu.get_untracked() {
            menu.set_open(false);
        }
    };
    let rename = move |_| {
        close();
        mode.set(Mode::Renaming);
    };
    let archive = move |_| {
        close();
        set_archived(list, id.get_value(), !archived, error);
    };
    let delete = move |_| {
        close();
        mode.set(Mode::ConfirmingDelete);
    };
    view! {
        <details class="menu item-menu" node_ref=menu>
            <summary aria-label=move || format!("Actions for {}", title.get()) title="Actions">"⋯"</summary>
            <div class="menu-items" role="menu">
                <button type="button" role="menuitem" class="item-rename" on:click=rename>"Rename"</button>
                <button type="button" role="menuitem" class="item-archive" on:click=archive>
                    {if archived { "Unarchive" } else { "Archive" }}
                </button>
                <button type="button" role="menuitem" class="item-delete" on:click=delete>"Delete"</button>
            </div>
        </details>
    }
}

/// [`ConfirmDelete`], from a chunk of its own (`on_demand`): only a click shows it.
#[leptos::lazy]
fn confirm_delete(
    id: StoredValue<String>,
    title: RwSignal<String>,
    mode: RwSignal<Mode>,
    error: RwSignal<Option<String>>,
) -> AnyView {
    view! { <ConfirmDelete id title mode error /> }.into_any()
}

/// [`RenameField`], from a chunk of its own (`on_demand`): only a click shows it.
#[leptos::lazy]
fn rename_field(
    id: String,
    title: RwSignal<String>,
    error: RwSignal<Option<String>>,
    on_done: Callback<()>,
) -> AnyView {
    view! { <RenameField id title error on_done /> }.into_any()
}

/// "Delete this conversation?" with Delete and Cancel.
#[component]
fn ConfirmDelete(
    id: StoredValue<String>,
    title: RwSignal<String>,
    mode: RwSignal<Mode>,
    error: RwSignal<Option<String>>,
) -> impl IntoView {
    let list = expect_context::<ListContext>();
    let navigate = leptos_router::hooks::use_navigate();
    let confirm = move |_| {
        let navigate = navigate.clone();
        let id = id.get_value();
        let was_open = list.active.get_untracked().as_deref() == Some(id.as_str());
        delete(list, id, error, mode, move || {
            if was_open {
                navigate("/", Default::default());
            }
        });
    };
    view! {
        <div class="confirm-delete" role="alertdialog" aria-label="Delete this conversation?">
            <p>"Delete “" {move || title.get()} "” with all its messages, traces and share links? This cannot be undone."</p>
            <button type="button" class="confirm-delete-yes danger" on:click=confirm>"Delete"</button>
            <button type="button" class="confirm-delete-no" on:click=move |_| mode.set(Mode::Shown)>"Cancel"</button>
        </div>
    }
}

/// A title being edited: Enter (or leaving the field) saves, Escape cancels.
#[component]
fn RenameField(
    id: String,
    title: RwSignal<String>,
    error: RwSignal<Option<String>>,
    on_done: Callback<()>,
) -> impl IntoView {
    let list = expect_context::<ListContext>();
    let input = NodeRef::<html::Input>::new();
    Effect::new(move |_| {
        if let Some(input) = input.get() {
            let _ = input.focus();
            input.select();
        }
    });
    let id = StoredValue::new(id);
    let saved = StoredValue::new(false);
    // Removing the field (after Enter, Escape or a save) blurs it once more, when its values may
    // already be gone: a field already done, or gone, saves nothing.
    let save = move || {
        if saved.try_get_value().unwrap_or(true) {
            return;
        }
        saved.set_value(true);
        let typed = input
            .get_untracked()
            .map(|input| input.value())
            .unwrap_or_default();
        if typed.trim().is_empty() || typed.trim() == title.get_untracked() {
            on_done.run(());
            return;
        }
        rename(list, id.get_value(), typed, title, error, on_done);
    };
    let keydown = move |event: leptos::ev::KeyboardEvent| match event.key().as_str() {
        "Enter" => {
            event.prevent_default();
            save();
        }
        "Escape" => {
            event.prevent_default();
            event.stop_propagation();
            saved.set_value(true);
            on_done.run(());
        }
        _ => {}
    };
    view! {
        <input
            class="rename-input"
            type="text"
            maxlength="200"
            aria-label="Conversation title"
            node_ref=input
            prop:value=title.get_untracked()
            on:keydown=keydown
            on:blur=move |_| save()
        />
    }
}

/// The open conversation's title in its header, with Rename.
#[component]
pub fn HeaderTitle(id: String, title: String) -> impl IntoView {
    let list = expect_context::<ListContext>();
    let own = RwSignal::new(title);
    let editing = RwSignal::new(false);
    let error = RwSignal::new(None::<String>);
    let id = StoredValue::new(id);
    // A rename in the sidebar shows here too.
    Effect::new(move |_| {
        if let Some((renamed, title)) = list.renamed.get() {
            if renamed == id.get_value() {
                own.set(title);
            }
        }
    });
    let done = Callback::new(move |()| editing.set(false));
    view! {
        <div class="conversation-title">
            {move || match editing.get() {
                true => Suspend::new(rename_field(id.get_value(), own, error, done)).into_any(),
                false => view! {
                    <h1 class="conversation-title-text" title=move || own.get()>{move || own.get()}</h1>
                    <button type="button" class="title-rename" on:click=move |_| editing.set(true)>"Rename"</button>
                }
                    .into_any(),
            }}
            {move || error.get().map(|message| view! { <p class="error" role="alert">{message}</p> })}
        </div>
    }
}

/// "Delete all conversations", after a confirmation (in the settings). Done: the page starts over.
#[component]
pub fn DeleteAll() -> impl IntoView {
    let confirming = RwSignal::new(false);
    let error = RwSignal::new(None::<String>);
    view! {
        <div class="delete-all">
            {move || match confirming.get() {
                false => view! {
                    <button type="button" class="delete-all-start danger" on:click=move |_| confirming.set(true)>
                        "Delete all conversations…"
                    </button>
                }
                    .into_any(),
                true => view! {
                    <div class="confirm-delete" role="alertdialog" aria-label="Delete all conversations?">
                        <p>"Delete every conversation, archived ones included, with all their messages, traces and share links? This cannot be undone."</p>
                        <button type="button" class="delete-all-yes danger" on:click=move |_| delete_all(error)>"Delete all"</button>
                        <button type="button" class="delete-all-no" on:click=move |_| confirming.set(false)>"Cancel"</button>
                    </div>
                }
                    .into_any(),
            }}
            {move || error.get().map(|message| view! { <p class="error" role="alert">{message}</p> })}
        </div>
    }
}

fn delete_all(error: RwSignal<Option<String>>) {
    #[cfg(feature = "hydrate")]
    leptos::task::spawn_local(async move {
        match crate::client::delete_all_conversations().await {
            Ok(_) => {
                let _ = window().location().set_href("/");
            }
            Err(problem) => error.set(Some(format!("Could not delete: {problem}"))),
        }
    });
    #[cfg(not(feature = "hydrate"))]
    let _ = error;
}

/// Saves a new title; the list and the header show it.
fn rename(
    list: ListContext,
    id: String,
    typed: String,
    title: RwSignal<String>,
    error: RwSignal<Option<String>>,
    on_done: Callback<()>,
) {
    #[cfg(feature = "hydrate")]
    leptos::task::spawn_local(async move {
        match crate::client::change_conversation(&id, Some(typed), None).await {
            Ok(summary) => {
                error.set(None);
                title.set(summary.title.clone());
                list.renamed.set(Some((id, summary.title)));
                list.refresh();
            }
            Err(problem) => error.set(Some(format!("Could not rename: {problem}"))),
        }
        on_done.run(());
    });
    #[cfg(not(feature = "hydrate"))]
    let _ = (list, id, typed, title, error, on_done);
}

/// Archives or unarchives; the lists are read again.
fn set_archived(list: ListContext, id: String, archived: bool, error: RwSignal<Option<String>>) {
    #[cfg(feature = "hydrate")]
    leptos::task::spawn_local(async move {
        match crate::client::change_conversation(&id, None, Some(archived)).await {
            Ok(_) => list.refresh(),
            Err(problem) => error.set(Some(format!("Could not archive: {problem}"))),
        }
    });
    #[cfg(not(feature = "hydrate"))]
    let _ = (list, id, archived, error);
}

/// Deletes; then `after` (leaving the page when it showed this conversation) and the list is read
/// again. Refused (a run going): says why.
fn delete(
    list: ListContext,
    id: String,
    error: RwSignal<Option<String>>,
    mode: RwSignal<Mode>,
    after: impl FnOnce() + 'static,
) {
    #[cfg(feature = "hydrate")]
    leptos::task::spawn_local(async move {
        match crate::client::delete_conversation(&id).await {
            Ok(()) => {
                after();
                list.refresh();
            }
            Err(problem) => {
                mode.set(Mode::Shown);
                error.set(Some(format!("Could not delete: {problem}")));
            }
        }
    });
    #[cfg(not(feature = "hydrate"))]
    let _ = (list, id, error, mode, after);
}
