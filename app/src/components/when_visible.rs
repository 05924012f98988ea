//! Calls back when an element comes within reach of the screen: a long conversation loads its
//! earlier messages as the reader scrolls up to them, as chat products do.
//!
//! Written here rather than taken from a crate: it is one IntersectionObserver, and the Leptos
//! crates that wrap it bring a whole utility library with them (see `follow_bottom`).

use wasm_bindgen::{closure::Closure, JsCast};
use web_sys::{
    js_sys::Array, Element, IntersectionObserver, IntersectionObserverEntry,
    IntersectionObserverInit,
};

/// Watches `element` until dropped.
pub struct WhenVisible {
    element: Element,
    observer: IntersectionObserver,
    _on_change: Closure<dyn FnMut(Array)>,
}

impl WhenVisible {
    /// Calls `on_visible` each time `element` comes within `margin` (CSS, e.g. `"400px"`) of the
    /// screen, and once at the start if it already is.
    pub fn start(element: Element, margin: &str, on_visible: impl Fn() + 'static) -> Option<Self> {
        let on_change = Closure::<dyn FnMut(Array)>::new(move |entries: Array| {
            let visible = entries.iter().any(|entry| {
                entry
                    .dyn_into::<IntersectionObserverEntry>()
                    .is_ok_and(|entry| entry.is_intersecting())
            });
            if visible {
                on_visible();
            }
        });
        let options = IntersectionObserverInit::new();
        options.set_root_margin(margin);
        let observer =
            IntersectionObserver::new_with_options(on_change.as_ref().unchecked_ref(), &options)
                .ok()?;
        observer.observe(&element);
        Some(WhenVisible {
            element,
            observer,
            _on_change: on_change,
        })
    }

    /// Looks again: calls back once more if the element is still within reach (an observer
    /// reports only changes, and after a page of messages loads the button may still be there).
    pub fn look_again(&self) {
        self.observer.unobserve(&self.element);
        self.observer.observe(&self.element);
    }
}

impl Drop for WhenVisible {
    fn drop(&mut self) {
        self.observer.disconnect();
    }
}
