//! Keeps a scrolling list at its end while it grows, as long as the reader is there: a chat
//! follows the answer being written, and stops following only when the reader scrolls up
//! themselves (wheel, touch, keys, the scroll bar). A layout shift never counts as the reader's:
//! a message that goes in above, or one whose height settles, leaves a following list following.
//! A conversation opens at its end, and sending a question goes back to it.
//!
//! What grows is watched with a ResizeObserver on the list's content, so any change of height
//! (text streaming in, a block opened, an off-screen message rendered at its own size) is seen
//! after layout and before paint, and the end is kept in the same frame.
//!
//! Written here rather than taken from a crate: it is a ResizeObserver and a few listeners, and
//! the Leptos crates that offer "stick to bottom" bring a whole utility library with them.

use std::{cell::Cell, rc::Rc};

use wasm_bindgen::{closure::Closure, prelude::wasm_bindgen, JsCast};
use web_sys::{js_sys, AddEventListenerOptions, Element};

// The three calls of `ResizeObserver` used here, bound directly: web-sys's binding is behind a
// feature that nothing else in the build enables, and turning it on rebuilds web-sys and every
// crate above it.
#[wasm_bindgen]
extern "C" {
    type ResizeObserver;
    #[wasm_bindgen(constructor, catch)]
    fn new(callback: &js_sys::Function) -> Result<ResizeObserver, wasm_bindgen::JsValue>;
    #[wasm_bindgen(method)]
    fn observe(this: &ResizeObserver, target: &Element);
    #[wasm_bindgen(method)]
    fn disconnect(this: &ResizeObserver);
}

/// Within this many pixels of the end counts as "at the end".
const SLACK: i32 = 80;
/// A scroll this soon (ms) after the reader's wheel, touch, key or pointer is theirs (a wheel
/// or key scrolls smoothly, a flick goes on after the finger leaves).
const INTENT_MS: f64 = 1_000.0;
/// The keys that scroll a list up.
const UP_KEYS: [&str; 3] = ["PageUp", "ArrowUp", "Home"];

thread_local! {
    static USER_SCROLLS: Cell<u32> = const { Cell::new(0) };
}

/// How many times a reader has started to scroll a followed list (wheel, touch, key, pointer)
/// since the page opened. Code that moves a list by itself compares it before and after, to
/// leave alone a reader who moved meanwhile.
pub fn user_scrolls() -> u32 {
    USER_SCROLLS.with(Cell::get)
}

struct Shared {
    list: Element,
    following: Cell<bool>,
    /// When the reader last touched the list (ms, `Date.now()`).
    last_input: Cell<f64>,
    /// A finger is on the list: what it does is the reader's, whichever way it goes.
    touching: Cell<bool>,
    /// `scrollTop` and `scrollHeight` at the last scroll event or pin.
    last_top: Cell<i32>,
    last_height: Cell<i32>,
    on_away: Box<dyn Fn(bool)>,
}

impl Shared {
    fn gap(&self) -> i32 {
        self.list.scroll_height() - self.list.scroll_top() - self.list.client_height()
    }

    fn pin(&self) {
        if self.gap() > 0 {
            self.list.set_scroll_top(self.list.scroll_height());
        }
        self.last_top.set(self.list.scroll_top());
        self.last_height.set(self.list.scroll_height());
    }

    fn set_following(&self, following: bool) {
        if self.following.replace(following) != following {
            (self.on_away)(!following);
        }
    }

    fn input(&self) {
        self.last_input.set(js_sys::Date::now());
        USER_SCROLLS.with(|n| n.set(n.get().wrapping_add(1)));
    }

    fn by_reader(&self) -> bool {
        self.touching.get() || js_sys::Date::now() - self.last_input.get() < INTENT_MS
    }

    /// The reader asked to go up: stop following now, before the first frame of the scroll, so
    /// the answer growing meanwhile does not pull them back.
    fn going_up(&self) {
        self.input();
        if self.list.scroll_height() > self.list.client_height() {
            self.set_following(false);
        }
    }

    /// At the end, the list follows, whoever brought it there. Up, it stops following when the
    /// reader (or a script) moved it; when the content shrank under it, that was layout, and a
    /// following list goes back to the end.
    fn scrolled(&self) {
        let (top, height) = (self.list.scroll_top(), self.list.scroll_height());
        let went_up = top < self.last_top.replace(top);
        let shrank = height < self.last_height.replace(height);
        if self.gap() <= SLACK {
            self.set_following(true);
        } else if went_up && (self.by_reader() || !shrank) {
            self.set_following(false);
        } else if self.following.get() {
            self.pin();
        }
    }

    /// The content changed height (an answer grew, a message took its own size): keep the end,
    /// unless a finger is moving the list.
    fn resized(&self) {
        if self.following.get() && !self.touching.get() {
            self.pin();
        }
    }
}

type Listener = (&'static str, Closure<dyn FnMut(web_sys::Event)>);

/// Follows a list until dropped.
pub struct FollowBottom {
    shared: Rc<Shared>,
    observer: ResizeObserver,
    _on_resize: Closure<dyn FnMut()>,
    listeners: Vec<Listener>,
}

impl FollowBottom {
    /// Follows `list` (the scrolling element) as `content` (what it scrolls) grows; `on_away`
    /// hears `true` when the reader leaves the end and `false` when following starts again.
    pub fn start(
        list: Element,
        content: &Element,
        on_away: impl Fn(bool) + 'static,
    ) -> Option<Self> {
        let shared = Rc::new(Shared {
            list,
            following: Cell::new(true),
            last_input: Cell::new(f64::NEG_INFINITY),
            touching: Cell::new(false),
            last_top: Cell::new(0),
            last_height: Cell::new(0),
            on_away: Box::new(on_away),
        });
        let on_resize = {
            let shared = shared.clone();
            Closure::<dyn FnMut()>::new(move || shared.resized())
        };
        let observer = ResizeObserver::new(on_resize.as_ref().unchecked_ref()).ok()?;
        observer.observe(content);
        let mut follower = FollowBottom {
            shared: shared.clone(),
            observer,
            _on_resize: on_resize,
            listeners: Vec::new(),
        };
        follower.listen("scroll", move |shared, _| shared.scrolled());
        follower.listen("wheel", |shared, event| {
            match event.dyn_ref::<web_sys::WheelEvent>() {
                Some(wheel) if wheel.delta_y() < 0.0 && !inner_takes_it(&shared.list, event) => {
                    shared.going_up()
                }
                _ => shared.input(),
            }
        });
        follower.listen("keydown", |shared, event| {
            match event.dyn_ref::<web_sys::KeyboardEvent>() {
                Some(key) if UP_KEYS.contains(&key.key().as_str()) => shared.going_up(),
                _ => shared.input(),
            }
        });
        follower.listen("touchstart", |shared, _| {
            shared.touching.set(true);
            shared.input();
        });
        follower.listen("touchmove", |shared, _| shared.input());
        for name in ["touchend", "touchcancel"] {
            follower.listen(name, |shared, _| {
                shared.touching.set(false);
                shared.input();
            });
        }
        // On the list itself, not on a message: its scroll bar.
        follower.listen("pointerdown", |shared, event| {
            if event.target().as_ref() == Some(shared.list.as_ref()) {
                shared.input();
            }
        });
        shared.pin();
        Some(follower)
    }

    fn listen(&mut self, name: &'static str, handle: impl Fn(&Shared, &web_sys::Event) + 'static) {
        let shared = self.shared.clone();
        let closure = Closure::<dyn FnMut(web_sys::Event)>::new(move |event: web_sys::Event| {
            handle(&shared, &event)
        });
        let options = AddEventListenerOptions::new();
        options.set_passive(true);
        let added = self
            .shared
            .list
            .add_event_listener_with_callback_and_add_event_listener_options(
                name,
                closure.as_ref().unchecked_ref(),
                &options,
            );
        if added.is_ok() {
            self.listeners.push((name, closure));
        }
    }

    /// Stops following before the list is moved on the reader's behalf (to a search hit): the
    /// heights settling afterwards must not pull it back to the end.
    pub fn leave(&self) {
        if self.shared.list.scroll_height() > self.shared.list.client_height() {
            self.shared.set_following(false);
        }
    }

    /// Goes to the end and follows again: the reader sent a question or asked to jump there.
    pub fn jump(&self) {
        self.shared.set_following(true);
        self.shared.last_input.set(f64::NEG_INFINITY);
        self.shared.pin();
    }
}

/// Whether a wheel over `event`'s target scrolls something inside the list rather than the list
/// (a tool's output that has room to go up).
fn inner_takes_it(list: &Element, event: &web_sys::Event) -> bool {
    let mut node = event.target().and_then(|t| t.dyn_into::<Element>().ok());
    while let Some(element) = node {
        if &element == list {
            return false;
        }
        if element.scroll_top() > 0 && element.scroll_height() > element.client_height() {
            return true;
        }
        node = element.parent_element();
    }
    false
}

impl Drop for FollowBottom {
    fn drop(&mut self) {
        self.observer.disconnect();
        for (name, closure) in &self.listeners {
            let _ = self
                .shared
                .list
                .remove_event_listener_with_callback(name, closure.as_ref().unchecked_ref());
        }
    }
}
