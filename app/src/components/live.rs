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

/// The conversation view's state.
#[derive(Clone, Copy)]
pub struct ChatState {
    pub conversation_id: RwSignal<Option<String>>,
    pub entries: RwSignal<Vec<Entry>>,
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
            entries: RwSignal::new(messages.iter().map(Entry::new).collect()),
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
        let found = self
            .entries
            .with_untracked(|entries| find_assistant(entries, message_id));
        found.unwrap_or_else(|| {
            let model = self.owned(|| MessageModel::new(None));
            self.entries.update(|entries| {
                entries.push(Entry::Assistant {
                    id: message_id.to_owned(),
                    model,
                    siblings: None,
                })
            });
            model
        })
    }

    /// The model of the message the followed run writes.
    pub fn live_model(&self) -> Option<MessageModel> {
        let message_id = self
            .live_run
            .with(|run| run.as_ref().map(|run| run.message_id.clone()))?;
        self.entries
            .with(|entries| find_assistant(entries, &message_id))
    }

    /// Makes signals under the view's owner, whoever calls (an event handler has none).
    fn owned<T>(&self, make: impl FnOnce() -> T) -> T {
        match self.owner.get_value() {
            Some(owner) => owner.with(make),
            None => make(),
        }
    }

    /// Puts older messages (a page loaded later) before the ones shown.
    pub fn prepend(&self, messages: &[Message], earlier: usize) {
        let mut older = self.owned(|| messages.iter().map(Entry::new).collect::<Vec<_>>());
        self.entries.update(|entries| {
            older.retain(|entry| entries.iter().all(|shown| shown.id() != entry.id()));
            entries.splice(0..0, older);
        });
        self.earlier.set(earlier);
    }

    pub fn push_user(&self, id: String, text: String) {
        self.entries.update(|entries| {
            entries.push(Entry::User {
                id,
                text,
                siblings: None,
            })
        });
    }

    /// Takes message `message_id` and every one after it off the list (a rerun replaces them).
    pub fn truncate_from(&self, message_id: &str) {
        self.entries.update(|entries| {
            if let Some(index) = entries.iter().position(|entry| entry.id() == message_id) {
                entries.truncate(index);
            }
        });
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

    /// Shows `page` (a page of the conversation, as read again): messages already shown as they
    /// are keep their view.
    pub fn show(&self, page: crate::models::Conversation) {
        let entries = self.owned(|| page.messages.iter().map(Entry::new).collect::<Vec<_>>());
        self.entries.set(entries);
        self.earlier.set(page.earlier);
    }

    /// The question that led to answer `message_id`.
    pub fn question_before(&self, message_id: &str) -> Option<String> {
        self.entries.with_untracked(|entries| {
            let index = entries.iter().position(|entry| entry.id() == message_id)?;
            entries[..index].iter().rev().find_map(|entry| match entry {
                Entry::User { text, .. } => Some(text.clone()),
                Entry::Assistant { .. } => None,
            })
        })
    }

    /// The followed run has ended: its message is complete where it stands.
    #[cfg(feature = "hydrate")]
    fn run_ended(&self) {
        self.live_run.set(None);
        self.connection_error.set(None);
        self.conversations_changed.update(|n| *n += 1);
        #[cfg(feature = "hydrate")]
        self.following.set_value(None);
        if self.reread_on_end.get_untracked() {
            self.reread_on_end.set(false);
            self.reread();
        }
    }
}

fn find_assistant(entries: &[Entry], message_id: &str) -> Option<MessageModel> {
    entries.iter().find_map(|entry| match entry {
        Entry::Assistant { id, model, .. } if id == message_id => Some(*model),
        _ => None,
    })
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
        let feed = Feed::new(model).on_end(move || state.run_ended());
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

    /// Closes the stream of the run `state` follows, if any.
    pub fn stop_following(state: ChatState) {
        // `try_`: the view may already be gone.
        let _ = state
            .following
            .try_update_value(|following| following.take());
    }
}
