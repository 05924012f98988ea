//! Feedback (issue 36): thumbs up or down and a comment under a finished answer, and a note on
//! each of its steps (a reasoning block, a tool call), on the chat page and the trace page. The
//! owner's feedback arrives with the page's read (so the server renders it and hydration finds
//! the same), lives in one [`FeedbackStore`] per page, and each change is a `PUT` or `DELETE` of
//! `client.rs` whose answer replaces the stored item. Comments are plain text, shown escaped.

use leptos::prelude::*;

use crate::models::{Feedback, Rating};

/// The most characters of a comment (the server's limit: `store::feedback::MAX_COMMENT_CHARS`).
pub const MAX_COMMENT_CHARS: u32 = 4_000;

/// The page's feedback: the reader's, on the answers shown and their steps.
#[derive(Clone, Copy)]
pub struct FeedbackStore(pub RwSignal<Vec<Feedback>>);

impl FeedbackStore {
    pub fn new(feedback: Vec<Feedback>) -> Self {
        FeedbackStore(RwSignal::new(feedback))
    }

    /// The feedback on `message_id` (its answer's when `step_id` is none).
    fn find(&self, message_id: &str, step_id: Option<&str>) -> Option<Feedback> {
        self.0.with(|all| {
            all.iter()
                .find(|item| item.message_id == message_id && item.step_id.as_deref() == step_id)
                .cloned()
        })
    }

    /// Stores what the server answered, in place of what was there.
    #[cfg_attr(not(feature = "hydrate"), allow(dead_code))]
    fn put(&self, feedback: Feedback) {
        self.0.update(|all| {
            all.retain(|item| {
                item.message_id != feedback.message_id || item.step_id != feedback.step_id
            });
            all.push(feedback);
        });
    }

    #[cfg_attr(not(feature = "hydrate"), allow(dead_code))]
    fn remove(&self, message_id: &str, step_id: Option<&str>) {
        self.0.update(|all| {
            all.retain(|item| item.message_id != message_id || item.step_id.as_deref() != step_id)
        });
    }
}

/// Where step notes go: the message whose blocks are drawn, and the page's store. Given to
/// `MessageBlocks` for a finished answer of the reader's; none on a share link.
#[derive(Clone)]
pub struct NoteTarget {
    pub message_id: String,
    pub store: FeedbackStore,
}

/// Sends a change (`Some`: set the rating and comment; `None`: remove) and stores the answer;
/// a refusal is shown in `error`.
fn send_change(
    store: FeedbackStore,
    message_id: String,
    step_id: Option<String>,
    change: Option<(Option<Rating>, String)>,
    busy: RwSignal<bool>,
    error: RwSignal<Option<String>>,
) {
    busy.set(true);
    error.set(None);
    #[cfg(feature = "hydrate")]
    leptos::task::spawn_local(async move {
        let step = step_id.as_deref();
        let done = match change {
            Some((rating, comment)) => {
                crate::client::put_feedback(&message_id, step, rating, comment)
                    .await
                    .map(|stored| store.put(stored))
            }
            None => crate::client::delete_feedback(&message_id, step)
                .await
                .map(|()| store.remove(&message_id, step)),
        };
        if let Err(refused) = done {
            error.set(Some(refused.to_string()));
        }
        busy.set(false);
    });
    #[cfg(not(feature = "hydrate"))]
    let _ = (store, message_id, step_id, change);
}

/// What a rating and a comment become: a `PUT`, or a `DELETE` when both are empty.
fn change_of(rating: Option<Rating>, comment: String) -> Option<(Option<Rating>, String)> {
    (rating.is_some() || !comment.trim().is_empty()).then_some((rating, comment))
}

/// One feedback item as its control shows and edits it: the answer's (no step) or a step's
/// note, with its editor's state and that of the change being sent. [`AnswerFeedback`] and
/// [`StepNote`] differ in what they draw around it only.
#[derive(Clone, Copy)]
struct FeedbackItem {
    store: FeedbackStore,
    ids: StoredValue<(String, Option<String>)>,
    current: Memo<Option<Feedback>>,
    busy: RwSignal<bool>,
    error: RwSignal<Option<String>>,
    editing: RwSignal<bool>,
}

impl FeedbackItem {
    fn new(store: FeedbackStore, message_id: String, step_id: Option<String>) -> Self {
        let ids = StoredValue::new((message_id, step_id));
        let current = Memo::new(move |_| ids.with_value(|(m, s)| store.find(m, s.as_deref())));
        FeedbackItem {
            store,
            ids,
            current,
            busy: RwSignal::new(false),
            error: RwSignal::new(None),
            editing: RwSignal::new(false),
        }
    }

    fn rating(self) -> Option<Rating> {
        self.current.with(|f| f.as_ref().and_then(|f| f.rating))
    }

    /// The stored comment or note (`""` when there is none).
    fn comment(self) -> String {
        self.current
            .with(|f| f.as_ref().map(|f| f.comment.clone()).unwrap_or_default())
    }

    /// Sends a change of this item (see [`send_change`]).
    fn send(self, change: Option<(Option<Rating>, String)>) {
        let (message_id, step_id) = self.ids.get_value();
        send_change(
            self.store, message_id, step_id, change, self.busy, self.error,
        );
    }

    /// What the editor's Save does: closes it and sends `comment` with `rating`.
    fn save(self, rating: Option<Rating>, comment: String) {
        self.editing.set(false);
        self.send(change_of(rating, comment));
    }
}

/// The item's comment box (labelled `label`) while it is being edited, then the error of a
/// refused change: the end of both feedback controls.
fn editor_and_error(
    item: FeedbackItem,
    label: &'static str,
    on_save: Callback<String>,
) -> impl IntoView {
    let editing = item.editing;
    let cancel = Callback::new(move |()| editing.set(false));
    view! {
        {super::on_demand::while_wanted(move || editing.get(), move || note_editor(item.comment(), label, on_save, cancel))}
        {move || item.error.get().map(|error| view! { <p class="error" role="alert">{error}</p> })}
    }
}

/// [`NoteEditor`], from a chunk of its own (`on_demand`): only a click opens it.
#[leptos::lazy]
fn note_editor(
    initial: String,
    label: &'static str,
    on_save: Callback<String>,
    on_cancel: Callback<()>,
) -> AnyView {
    view! { <NoteEditor initial label on_save on_cancel /> }.into_any()
}

/// Thumbs up, thumbs down and a comment under a finished answer.
#[component]
pub fn AnswerFeedback(message_id: String, store: FeedbackStore) -> impl IntoView {
    let item = FeedbackItem::new(store, message_id.clone(), None);
    let (busy, editing) = (item.busy, item.editing);
    let thumb = move |chosen: Rating| {
        let next = (item.rating() != Some(chosen)).then_some(chosen);
        item.send(change_of(next, item.comment()));
    };
    let save = Callback::new(move |text: String| item.save(item.rating(), text));
    let thumb_button = move |chosen: Rating, icon: &'static str, label: &'static str| {
        view! {
            <button
                type="button"
                class=format!("footer-action thumb thumb-{}", chosen.as_str())
                aria-pressed=move || (item.rating() == Some(chosen)).to_string()
                aria-label=label
                title=label
                disabled=move || busy.get()
                on:click=move |_| thumb(chosen)
            >
                {icon}
            </button>
        }
    };
    let saved = move || {
        let text = item.comment();
        (!text.is_empty() && !editing.get()).then(|| {
            view! {
                <p class="feedback-comment">
                    <span class="feedback-text">{text}</span>
                    " "
                    <button type="button" class="link-button remove-comment" disabled=move || busy.get()
                        on:click=move |_| item.send(change_of(item.rating(), String::new()))>"Remove comment"</button>
                </p>
            }
        })
    };
    view! {
        <div class="answer-feedback" data-feedback-for=message_id>
            <div class="feedback-actions">
                {thumb_button(Rating::Up, "👍", "Good answer")}
                {thumb_button(Rating::Down, "👎", "Bad answer")}
                <button type="button" class="footer-action feedback-comment-toggle" aria-expanded=move || editing.get().to_string()
                    on:click=move |_| editing.update(|open| *open = !*open)>
                    {move || if item.comment().is_empty() { "Comment" } else { "Edit comment" }}
                </button>
            </div>
            {saved}
            {editor_and_error(item, "Comment on this answer", save)}
        </div>
    }
    .into_any()
}

/// A step's note: "Add note", or the saved note with Edit and Remove.
#[component]
pub fn StepNote(target: NoteTarget, step_id: String) -> impl IntoView {
    let NoteTarget { message_id, store } = target;
    let item = FeedbackItem::new(store, message_id, Some(step_id.clone()));
    let (busy, editing) = (item.busy, item.editing);
    let save = Callback::new(move |comment: String| item.save(None, comment));
    let shown = move || {
        if editing.get() {
            return None;
        }
        let saved = item.comment();
        Some(match saved.is_empty() {
            true => view! {
                <button type="button" class="link-button note-add" on:click=move |_| editing.set(true)>"Add note"</button>
            }
            .into_any(),
            false => view! {
                <p class="note-saved">
                    <span class="note-label">"Note: "</span>
                    <span class="note-text">{saved}</span>
                    " "
                    <button type="button" class="link-button note-edit" on:click=move |_| editing.set(true)>"Edit"</button>
                    " "
                    <button type="button" class="link-button note-remove" disabled=move || busy.get()
                        on:click=move |_| item.send(None)>"Remove"</button>
                </p>
            }
            .into_any(),
        })
    };
    view! {
        <div class="step-note" data-note-for=step_id>
            {shown}
            {editor_and_error(item, "Note on this step", save)}
        </div>
    }
    .into_any()
}

/// A comment box: Save, Cancel, Esc cancels. Opened by a click only (never in the server's HTML).
#[component]
fn NoteEditor(
    initial: String,
    label: &'static str,
    on_save: Callback<String>,
    on_cancel: Callback<()>,
) -> impl IntoView {
    let input = NodeRef::<leptos::html::Textarea>::new();
    #[cfg(feature = "hydrate")]
    Effect::new(move |_| {
        if let Some(input) = input.get() {
            let _ = input.focus();
        }
    });
    let value = move || {
        input
            .get_untracked()
            .map(|input| input.value())
            .unwrap_or_default()
    };
    let on_keydown = move |event: leptos::ev::KeyboardEvent| {
        if event.key() == "Escape" {
            // Esc closes the box; it does not also stop a run or close the drawer.
            event.prevent_default();
            event.stop_propagation();
            on_cancel.run(());
        }
    };
    view! {
        <div class="note-editor">
            <textarea node_ref=input aria-label=label maxlength=MAX_COMMENT_CHARS rows="3"
                prop:value=initial on:keydown=on_keydown></textarea>
            <div class="note-editor-actions">
                <button type="button" class="save-note" on:click=move |_| on_save.run(value())>"Save"</button>
                <button type="button" class="cancel-note" on:click=move |_| on_cancel.run(())>"Cancel"</button>
            </div>
        </div>
    }
}
