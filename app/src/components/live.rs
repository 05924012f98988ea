//! The conversation view's state, and following a run from the browser. A run's events come
//! through the one event feed (`feed.rs`) from its SSE stream into the model of the message it
//! writes, an entry of the conversation like any other: when the run ends, the entry is already
//! the stored message, and nothing is swapped.

use leptos::prelude::*;

use super::feed::MessageModel;
use crate::protocol::{Message, Role, Siblings};

/// One message of the conversation, keyed by its id, with its place among its versions.
#[derive(Clone)]
pub enum Entry {
    User {
        id: String,
        text: String,
        siblings: Option<Siblings>,
    },
    Assistant {
        id: String,
        model: MessageModel,
        siblings: Option<Siblings>,
    },
}

impl Entry {
    pub fn new(message: &Message) -> Self {
        match message.role {
            Role::User => Entry::User {
                id: message.id.clone(),
                text: message.text(),
                siblings: message.siblings.clone(),
            },
            Role::Assistant => Entry::Assistant {
                id: message.id.clone(),
                model: MessageModel::new(Some(message)),
                siblings: message.siblings.clone(),
            },
        }
    }

    pub fn id(&self) -> &str {
        match self {
            Entry::User { id, .. } | Entry::Assistant { id, .. } => id,
        }
    }

    /// The list's key: the id, and how many versions the message has (a new version draws the
    /// message again, with its `< n / m >`).
    pub fn key(&self) -> String {
        let siblings = match self {
            Entry::User { siblings, .. } | Entry::Assistant { siblings, .. } => siblings,
        };
        match siblings {
            Some(siblings) => format!("{}:{}", self.id(), siblings.count),
            None => self.id().to_owned(),
        }
    }
}

/// The run being followed and the message it writes.
#[derive(Clone, Debug, PartialEq)]
pub struct LiveRun {
    pub run_id: String,
    pub message_id: String,
}

/// A page of the conversation's entries as they came: the first page opened, each older page
/// loaded since, and the new messages after the last. The list draws each page in a list of its
/// own, so that a page loaded or a message added touches that page only: with one keyed list
/// over every entry, each change cloned, keyed and diffed all of them, and a page put in front
/// moved up to a page's worth of the messages already shown in the DOM (tachys 0.2's keyed diff),
/// which made each older page cost more the more were shown (issue 38).
#[derive(Clone, Copy)]
pub struct Page {
    pub key: u64,
    pub entries: RwSignal<Vec<Entry>>,
}

/// The conversation view's state.
#[derive(Clone, Copy)]
pub struct ChatState {
    pub conversation_id: RwSignal<Option<String>>,
    /// The conversation's entries, oldest first, in pages (see `Page`).
    pub pages: RwSignal<Vec<Page>>,
    /// The key of the next page made.
    next_page: StoredValue<u64>,
    /// How many older messages are not loaded yet.
    pub earlier: RwSignal<usize>,
    /// Bumped to load the next older page where the reader is not (a search hit in it).
    pub earlier_wanted: RwSignal<u32>,
    /// The run being followed.
    pub live_run: RwSignal<Option<LiveRun>>,
    /// A problem with the connection, shown with a retry.
    pub connection_error: RwSignal<Option<String>>,
    /// Bumped when the conversation list should be read again.
    pub conversations_changed: RwSignal<u32>,
    /// The model the next message goes to (the conversation's, or the chosen one).
    pub model: RwSignal<String>,
    /// Every model the server offers.
    pub models: RwSignal<Vec<String>>,
    /// The followed run is a rerun (a new version): when it ends, the conversation is read
    /// again, for the versions' `< n / m >`.
    pub reread_on_end: RwSignal<bool>,
    /// The view's owner: models made later (a new answer) belong to it, not to an event handler.
    owner: StoredValue<Option<Owner>>,
    /// The feed and stream of the run being followed; dropped (closed) with the view.
    #[cfg(feature = "hydrate")]
    following: StoredValue<Option<super::feed::Following>, LocalStorage>,
}

impl ChatState {
    pub fn new(
        conversation_id: Option<String>,
        messages: &[Message],
        earlier: usize,
        live_run: Option<LiveRun>,
        conversations_changed: RwSignal<u32>,
        model: String,
        models: Vec<String>,
    ) -> Self {
        ChatState {
            model: RwSignal::new(model),
            models: RwSignal::new(models),
            conversation_id: RwSignal::new(conversation_id),
            pages: RwSignal::new(vec![Page {
                key: 0,
                entries: RwSignal::new(messages.iter().map(Entry::new).collect()),
            }]),
            next_page: StoredValue::new(1),
            earlier: RwSignal::new(earlier),
            earlier_wanted: RwSignal::new(0),
            live_run: RwSignal::new(live_run),
            connection_error: RwSignal::new(None),
            reread_on_end: RwSignal::new(false),
            conversations_changed,
            owner: StoredValue::new(Owner::current()),
            #[cfg(feature = "hydrate")]
            following: StoredValue::new_local(None),
        }
    }

    /// The model of assistant message `message_id`, added at the end when it is not there yet.
    pub fn assistant_model(&self, message_id: &str) -> MessageModel {
        let found = untrack(|| self.find_map(|entry| assistant(entry, message_id)));
        found.unwrap_or_else(|| {
            let model = self.owned(|| MessageModel::new(None));
            self.push(Entry::Assistant {
                id: message_id.to_owned(),
                model,
                siblings: None,
            });
            model
        })
    }

    /// The first `Some` that `found` gives for an entry, oldest first (tracked: every page looked
    /// at).
    pub fn find_map<R>(&self, mut found: impl FnMut(&Entry) -> Option<R>) -> Option<R> {
        self.pages.with(|pages| {
            pages.iter().find_map(|page| {
                page.entries
                    .with(|entries| entries.iter().find_map(&mut found))
            })
        })
    }

    /// What `read` makes of the last entry, if there is one (tracked).
    pub fn last_entry<R>(&self, read: impl Fn(&Entry) -> R) -> Option<R> {
        self.pages.with(|pages| {
            pages
                .iter()
                .rev()
                .find_map(|page| page.entries.with(|entries| entries.last().map(&read)))
        })
    }

    /// Whether no message is shown (tracked).
    pub fn is_empty(&self) -> bool {
        self.last_entry(|_| ()).is_none()
    }

    /// Whether message `id` is shown (untracked).
    pub fn shows(&self, id: &str) -> bool {
        untrack(|| self.find_map(|entry| (entry.id() == id).then_some(()))).is_some()
    }

    /// Subscribes to every change of the entries.
    pub fn track_entries(&self) {
        self.pages
            .with(|pages| pages.iter().for_each(|page| page.entries.track()));
    }

    /// A new page of `entries` (under the view's owner).
    fn page(&self, entries: Vec<Entry>) -> Page {
        let key = self.next_page.get_value();
        self.next_page.set_value(key + 1);
        let entries = self.owned(|| RwSignal::new(entries));
        Page { key, entries }
    }

    /// Adds `entry` at the end of the last page.
    fn push(&self, entry: Entry) {
        match self.pages.with_untracked(|pages| pages.last().copied()) {
            Some(page) => page.entries.update(|entries| entries.push(entry)),
            None => {
                let page = self.page(vec![entry]);
                self.pages.update(|pages| pages.push(page));
            }
        }
    }

    /// The model of the message the followed run writes.
    pub fn live_model(&self) -> Option<MessageModel> {
        let message_id = self
            .live_run
            .with(|run| run.as_ref().map(|run| run.message_id.clone()))?;
        self.find_map(|entry| assistant(entry, &message_id))
    }

    /// Makes signals under the view's owner, whoever calls (an event handler has none).
    fn owned<T>(&self, make: impl FnOnce() -> T) -> T {
        match self.owner.get_value() {
            Some(owner) => owner.with(make),
            None => make(),
        }
    }

    /// Puts older messages (a page loaded later) before the ones shown, as a page of their own.
    pub fn prepend(&self, messages: &[Message], earlier: usize) {
        let mut older = self.owned(|| messages.iter().map(Entry::new).collect::<Vec<_>>());
        older.retain(|entry| !self.shows(entry.id()));
        if !older.is_empty() {
            let page = self.page(older);
            self.pages.update(|pages| pages.insert(0, page));
        }
        self.earlier.set(earlier);
    }

    pub fn push_user(&self, id: String, text: String) {
        self.push(Entry::User {
            id,
            text,
            siblings: None,
        });
    }

    /// Takes message `message_id` and every one after it off the list (a rerun replaces them).
    pub fn truncate_from(&self, message_id: &str) {
        let pages = self.pages.get_untracked();
        let found = pages.iter().enumerate().find_map(|(number, page)| {
            let index = page.entries.with_untracked(|entries| {
                entries.iter().position(|entry| entry.id() == message_id)
            })?;
            Some((number, index))
        });
        if let Some((number, index)) = found {
            pages[number]
                .entries
                .update(|entries| entries.truncate(index));
            if number + 1 < pages.len() {
                self.pages.update(|pages| pages.truncate(number + 1));
            }
        }
    }

    /// Reads the conversation again and shows it (after a rerun: the versions' `< n / m >`).
    #[cfg(feature = "hydrate")]
    pub fn reread(&self) {
        let state = *self;
        let Some(id) = state.conversation_id.get_untracked() else {
            return;
        };
        leptos::task::spawn_local(async move {
            match crate::api::get_conversation(id, None).await {
                Ok(Some(conversation)) => state.show(conversation),
                Ok(None) => {}
                Err(error) => state.connection_error.set(Some(error.to_string())),
            }
        });
    }

    /// Shows `page` (a page of the conversation, as read again): the pages shown that it begins
    /// with as they are stay untouched, the first that differs takes the rest (its messages that
    /// stay keep their view), and the pages after it go.
    pub fn show(&self, page: crate::models::Conversation) {
        let mut entries = self.owned(|| page.messages.iter().map(Entry::new).collect::<Vec<_>>());
        let pages = self.pages.get_untracked();
        let mut start = 0;
        let kept = pages
            .iter()
            .take_while(|page| {
                let same = page
                    .entries
                    .with_untracked(|shown| begins_with(&entries[start..], shown));
                if same {
                    start += page.entries.with_untracked(Vec::len);
                }
                same
            })
            .count();
        let rest = entries.split_off(start);
        match pages.get(kept).or(pages.last()) {
            Some(page) if kept < pages.len() => {
                page.entries
                    .update(|shown| *shown = keep_views(std::mem::take(shown), rest));
                self.pages.update(|pages| pages.truncate(kept + 1));
            }
            Some(page) => page.entries.update(|shown| shown.extend(rest)),
            None => {
                let page = self.page(rest);
                self.pages.set(vec![page]);
            }
        }
        self.earlier.set(page.earlier);
    }

    /// The question that led to answer `message_id`.
    pub fn question_before(&self, message_id: &str) -> Option<String> {
        let mut question = None;
        untrack(|| {
            self.find_map(|entry| match entry {
                Entry::User { text, .. } => {
                    question = Some(text.clone());
                    None
                }
                Entry::Assistant { id, .. } => (id == message_id).then_some(()),
            })
        })?;
        question
    }

    /// The followed run `run_id` has ended: its message is complete where it stands. Nothing
    /// happens when another run is followed by now.
    #[cfg(feature = "hydrate")]
    fn run_ended(&self, run_id: &str) {
        // The conversation list outlives the view: it shows the run's end in every case.
        self.conversations_changed.try_update(|n| *n += 1);
        let followed = self
            .live_run
            .try_with_untracked(|run| run.as_ref().is_some_and(|run| run.run_id == run_id));
        if followed != Some(true) {
            return;
        }
        self.live_run.set(None);
        self.connection_error.set(None);
        #[cfg(feature = "hydrate")]
        self.following.set_value(None);
        if self.reread_on_end.get_untracked() {
            self.reread_on_end.set(false);
            self.reread();
        }
    }
}

fn assistant(entry: &Entry, message_id: &str) -> Option<MessageModel> {
    match entry {
        Entry::Assistant { id, model, .. } if id == message_id => Some(*model),
        _ => None,
    }
}

/// Whether `entries` begin with the messages of `shown`, as they are (same keys).
fn begins_with(entries: &[Entry], shown: &[Entry]) -> bool {
    shown.len() <= entries.len()
        && shown
            .iter()
            .zip(entries)
            .all(|(shown, entry)| shown.key() == entry.key())
}

/// `entries`, with those that `shown` has as they are (same key) taken from `shown`: their
/// views, which are drawn from the entry's model, stay, and the model found for a message is
/// the one on the screen.
fn keep_views(mut shown: Vec<Entry>, entries: Vec<Entry>) -> Vec<Entry> {
    entries
        .into_iter()
        .map(
            |entry| match shown.iter().position(|old| old.key() == entry.key()) {
                Some(index) => shown.swap_remove(index),
                None => entry,
            },
        )
        .collect()
}

/// Following a run, in the browser.
#[cfg(feature = "hydrate")]
pub mod browser {
    use leptos::prelude::*;

    use super::{ChatState, LiveRun};
    use crate::components::feed::{Feed, Following, SseSource};

    /// Follows `run` until its terminal event, replacing any run followed before.
    pub fn follow_run(state: ChatState, run: LiveRun) {
        stop_following(state);
        let model = state.assistant_model(&run.message_id);
        let run_id = run.run_id.clone();
        // The run's end (its controls back on every message, the list read again) waits for a
        // task after the frame that drew the complete message: the two in one frame were a
        // task of 43-51 ms with 400 messages shown.
        let feed = Feed::new(model).on_end(move || {
            leptos::task::spawn_local(async move {
                crate::components::deferred::next_task().await;
                state.run_ended(&run_id);
            })
        });
        let url = crate::client::run_events(&run.run_id);
        let lost = move || {
            state
                .connection_error
                .set(Some("The connection to the run was lost.".into()))
        };
        state.live_run.set(Some(run));
        state.connection_error.set(None);
        match SseSource::open(&url, feed.clone(), lost) {
            Some(source) => state
                .following
                .set_value(Some(Following::new(feed, source))),
            None => state
                .connection_error
                .set(Some("Could not connect to the run's event stream.".into())),
        }
    }

    /// Follows the run a send or a rerun has just started, once its question is on the list.
    pub fn follow_started(state: ChatState, started: crate::client::Started) {
        state.conversations_changed.update(|n| *n += 1);
        follow_run(
            state,
            LiveRun {
                run_id: started.run_id,
                message_id: started.message_id,
            },
        );
    }

    /// Closes the stream of the run `state` follows, if any.
    pub fn stop_following(state: ChatState) {
        // `try_`: the view may already be gone.
        let _ = state
            .following
            .try_update_value(|following| following.take());
    }
}

#[cfg(test)]
mod tests {
    use super::{begins_with, keep_views, Entry};

    fn user(id: &str, text: &str) -> Entry {
        Entry::User {
            id: id.into(),
            text: text.into(),
            siblings: None,
        }
    }

    fn texts(entries: &[Entry]) -> Vec<String> {
        entries
            .iter()
            .map(|entry| match entry {
                Entry::User { text, .. } => text.clone(),
                Entry::Assistant { id, .. } => id.clone(),
            })
            .collect()
    }

    #[test]
    fn a_page_is_kept_only_when_the_new_list_begins_with_it() {
        let new = [user("a", ""), user("b", ""), user("c", "")];
        assert!(begins_with(&new, &new[..2]));
        assert!(begins_with(&new, &[]));
        assert!(!begins_with(&new[..1], &new[..2]));
        assert!(!begins_with(&new, &[user("b", "")]));
    }

    #[test]
    fn messages_that_stay_keep_the_entry_shown() {
        let shown = vec![user("a", "shown a"), user("b", "shown b")];
        let new = vec![user("b", "new b"), user("c", "new c"), user("a", "new a")];
        let kept = keep_views(shown, new);
        assert_eq!(texts(&kept), ["shown b", "new c", "shown a"]);
    }
}
