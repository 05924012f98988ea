//! Following a run from the browser. Events arrive over an `EventSource` (which reconnects by
//! itself, sending `Last-Event-ID`, so a dropped connection resumes with no gap) and are folded by
//! the shared reducer, which ignores any seq it has already applied, so there are no duplicates.
//! Events are applied at most once per animation frame.

use leptos::prelude::*;

use crate::protocol::Message;

/// The conversation view's state. The message store (`messages`) changes only when a run ends;
/// the live overlay (`live`) shows the streaming message until then.
#[derive(Clone, Copy)]
pub struct ChatState {
    pub conversation_id: RwSignal<Option<String>>,
    pub messages: RwSignal<Vec<Message>>,
    /// The streaming message, as the reducer has built it so far.
    pub live: RwSignal<Option<Message>>,
    /// The run being followed.
    pub live_run: RwSignal<Option<String>>,
    /// A problem with the connection, shown with a retry.
    pub connection_error: RwSignal<Option<String>>,
    /// Bumped when the conversation list should be read again.
    pub conversations_changed: RwSignal<u32>,
    /// The model the next message goes to (the conversation's, or the chosen one).
    pub model: RwSignal<String>,
    /// Every model the server offers.
    pub models: RwSignal<Vec<String>>,
}

impl ChatState {
    pub fn new(
        conversation_id: Option<String>,
        messages: Vec<Message>,
        conversations_changed: RwSignal<u32>,
        model: String,
        models: Vec<String>,
    ) -> Self {
        ChatState {
            model: RwSignal::new(model),
            models: RwSignal::new(models),
            conversation_id: RwSignal::new(conversation_id),
            messages: RwSignal::new(messages),
            live: RwSignal::new(None),
            live_run: RwSignal::new(None),
            connection_error: RwSignal::new(None),
            conversations_changed,
        }
    }

    /// The run has ended: its message joins the store and the overlay goes away.
    pub fn commit(&self, message: Message) {
        self.messages.update(
            |messages| match messages.iter_mut().find(|m| m.id == message.id) {
                Some(existing) => *existing = message,
                None => messages.push(message),
            },
        );
        self.live.set(None);
        self.live_run.set(None);
        self.conversations_changed.update(|n| *n += 1);
    }
}

#[cfg(feature = "hydrate")]
pub use browser::{follow_run, stop_following_for, stop_run};

#[cfg(feature = "hydrate")]
mod browser {
    use std::{cell::RefCell, rc::Rc};

    use leptos::prelude::*;
    use wasm_bindgen::{closure::Closure, JsCast};
    use web_sys::{EventSource, MessageEvent};

    use super::ChatState;
    use crate::protocol::{Event, Reducer};

    struct Follower {
        source: EventSource,
        reducer: Reducer,
        pending: Vec<Event>,
        frame_requested: bool,
        // Kept alive as long as the source is open.
        _on_message: Option<Closure<dyn FnMut(MessageEvent)>>,
        _on_error: Option<Closure<dyn FnMut(web_sys::Event)>>,
    }

    /// The view following a run, known by its message store.
    type Owner = RwSignal<Vec<crate::protocol::Message>>;

    thread_local! {
        /// The one run being followed, and the view that follows it.
        static CURRENT: RefCell<Option<(Owner, Rc<RefCell<Follower>>)>> = const { RefCell::new(None) };
    }

    /// Follows `run_id` until its terminal event, replacing any run followed before.
    pub fn follow_run(state: ChatState, run_id: String) {
        stop_following();
        let url = format!("/api/runs/{run_id}/events");
        let source = match EventSource::new(&url) {
            Ok(source) => source,
            Err(_) => {
                state
                    .connection_error
                    .set(Some("Could not connect to the run's event stream.".into()));
                return;
            }
        };
        state.live_run.set(Some(run_id));
        state.connection_error.set(None);
        let follower = Rc::new(RefCell::new(Follower {
            source: source.clone(),
            reducer: Reducer::default(),
            pending: Vec::new(),
            frame_requested: false,
            _on_message: None,
            _on_error: None,
        }));

        let on_message = {
            let follower = Rc::downgrade(&follower);
            Closure::<dyn FnMut(MessageEvent)>::new(move |message: MessageEvent| {
                let Some(follower) = follower.upgrade() else {
                    return;
                };
                let Some(text) = message.data().as_string() else {
                    return;
                };
                let Ok(event) = serde_json::from_str::<Event>(&text) else {
                    leptos::logging::warn!("ignoring an event that does not parse");
                    return;
                };
                let request_frame = {
                    let mut inner = follower.borrow_mut();
                    inner.pending.push(event);
                    !std::mem::replace(&mut inner.frame_requested, true)
                };
                if request_frame {
                    let follower = follower.clone();
                    request_animation_frame(move || flush(&follower, state));
                }
            })
        };
        let on_error = {
            let source = source.clone();
            Closure::<dyn FnMut(web_sys::Event)>::new(move |_: web_sys::Event| {
                // CONNECTING: the browser retries by itself with Last-Event-ID. CLOSED: it gave up.
                if source.ready_state() == EventSource::CLOSED {
                    state
                        .connection_error
                        .set(Some("The connection to the run was lost.".into()));
                }
            })
        };
        source.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
        source.set_onerror(Some(on_error.as_ref().unchecked_ref()));
        {
            let mut inner = follower.borrow_mut();
            inner._on_message = Some(on_message);
            inner._on_error = Some(on_error);
        }
        CURRENT.with(|current| *current.borrow_mut() = Some((state.messages, follower)));
    }

    /// Applies the events that arrived since the last frame, and publishes the result once.
    fn flush(follower: &Rc<RefCell<Follower>>, state: ChatState) {
        let (message, finished) = {
            let mut inner = follower.borrow_mut();
            inner.frame_requested = false;
            let pending = std::mem::take(&mut inner.pending);
            for event in &pending {
                inner.reducer.apply(event);
            }
            (
                inner.reducer.message().cloned(),
                inner.reducer.is_finished(),
            )
        };
        if finished {
            stop_following();
            if let Some(message) = message {
                state.commit(message);
            }
        } else if message.is_some() {
            state.live.set(message);
            state.connection_error.set(None);
        }
    }

    fn stop_following() {
        CURRENT.with(|current| {
            if let Some((_, follower)) = current.borrow_mut().take() {
                let inner = follower.borrow();
                inner.source.set_onmessage(None);
                inner.source.set_onerror(None);
                inner.source.close();
            }
        });
    }

    /// Stops following only if `state`'s view is the one following: a view being cleaned up after
    /// the next view has attached must not stop the next view's run.
    pub fn stop_following_for(state: ChatState) {
        let owns = CURRENT.with(|current| {
            current
                .borrow()
                .as_ref()
                .is_some_and(|(owner, _)| *owner == state.messages)
        });
        if owns {
            stop_following();
        }
    }

    /// Asks the server to stop the run; the stream then brings `message_cancelled`.
    pub async fn stop_run(run_id: String) -> Result<(), String> {
        let response = gloo_net::http::Request::post(&format!("/api/runs/{run_id}/cancel"))
            .send()
            .await
            .map_err(|error| format!("Could not reach the server: {error}"))?;
        // 409: it had already ended; the terminal event is on its way.
        if response.ok() || response.status() == 409 {
            Ok(())
        } else {
            Err(format!("Stopping failed ({})", response.status()))
        }
    }
}
