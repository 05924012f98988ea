//! Keeps a scrolling list at its end while it grows, as long as the person is there: a chat
//! follows the answer being written, and stops following once the person scrolls up to read.
//! A conversation also opens at its end, on the newest messages.
//!
//! Written here rather than taken from a crate: it is a MutationObserver and a scroll listener,
//! and the Leptos crates that offer "stick to bottom" bring a whole utility library with them.

use std::{cell::Cell, rc::Rc};

use wasm_bindgen::{closure::Closure, JsCast};
use web_sys::{Element, MutationObserver, MutationObserverInit};

/// Within this many pixels of the end counts as "at the end".
const SLACK: i32 = 80;

/// Follows `element` until dropped.
pub struct FollowBottom {
    element: Element,
    observer: MutationObserver,
    _on_change: Closure<dyn FnMut()>,
    on_scroll: Closure<dyn FnMut()>,
}

impl FollowBottom {
    pub fn start(element: Element) -> Option<Self> {
        let at_end = Rc::new(Cell::new(true));
        let on_scroll = {
            let (element, at_end) = (element.clone(), at_end.clone());
            Closure::<dyn FnMut()>::new(move || {
                let gap = element.scroll_height() - element.scroll_top() - element.client_height();
                at_end.set(gap <= SLACK);
            })
        };
        let on_change = {
            let element = element.clone();
            Closure::<dyn FnMut()>::new(move || {
                if at_end.get() {
                    element.set_scroll_top(element.scroll_height());
                }
            })
        };
        let observer = MutationObserver::new(on_change.as_ref().unchecked_ref()).ok()?;
        let options = MutationObserverInit::new();
        options.set_child_list(true);
        options.set_subtree(true);
        options.set_character_data(true);
        observer.observe_with_options(&element, &options).ok()?;
        element
            .add_event_listener_with_callback("scroll", on_scroll.as_ref().unchecked_ref())
            .ok()?;
        element.set_scroll_top(element.scroll_height());
        Some(FollowBottom {
            element,
            observer,
            _on_change: on_change,
            on_scroll,
        })
    }
}

impl Drop for FollowBottom {
    fn drop(&mut self) {
        self.observer.disconnect();
        let _ = self
            .element
            .remove_event_listener_with_callback("scroll", self.on_scroll.as_ref().unchecked_ref());
    }
}
