//! Calls back when an element comes within reach of the screen: a long conversation loads its
//! earlier messages as the reader scrolls up to them, as chat products do; a long page draws the
//! parts it left out of its first layout ([`Reveal`]).
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

/// Draws the parts of a long page that the server sent as `hidden="until-found"` as each comes
/// within `margin` of `scroller`'s view. Such a part keeps its box at its estimated size (the
/// style sheet's `contain-intrinsic-block-size`) but none of its contents is styled or laid out,
/// so the page's first frames lay out only what is near the top. `content-visibility: auto`
/// alone does not do that: Chromium lays out every element it has not yet seen off screen, and
/// the server's page arrives in a few pieces (the compare page of two 500-step runs: 90-190 ms
/// of layout and style in its first frames, 25-45 ms with its later rows hidden until found).
/// Find in page still finds them: the browser draws a part whose text matches (`until-found`).
pub struct Reveal {
    observer: IntersectionObserver,
    _on_change: Closure<dyn FnMut(Array, IntersectionObserver)>,
}

impl Reveal {
    /// Watches every `hidden="until-found"` element inside `scroller` until dropped.
    pub fn start(scroller: &Element, margin: &str) -> Option<Self> {
        let on_change = Closure::<dyn FnMut(Array, IntersectionObserver)>::new(
            |entries: Array, observer: IntersectionObserver| {
                let entries = entries
                    .iter()
                    .filter_map(|entry| entry.dyn_into::<IntersectionObserverEntry>().ok());
                for entry in entries.filter(IntersectionObserverEntry::is_intersecting) {
                    let part = entry.target();
                    observer.unobserve(&part);
                    // Removing an attribute of an element in the page does not fail.
                    let _ = part.remove_attribute("hidden");
                }
            },
        );
        let options = IntersectionObserverInit::new();
        options.set_root(Some(scroller));
        options.set_root_margin(margin);
        let observer =
            IntersectionObserver::new_with_options(on_change.as_ref().unchecked_ref(), &options)
                .ok()?;
        let waiting = scroller
            .query_selector_all(r#"[hidden="until-found"]"#)
            .ok()?;
        for index in 0..waiting.length() {
            if let Some(part) = waiting.item(index).and_then(|node| node.dyn_into().ok()) {
                observer.observe(&part);
            }
        }
        Some(Reveal {
            observer,
            _on_change: on_change,
        })
    }
}

impl Drop for Reveal {
    fn drop(&mut self) {
        self.observer.disconnect();
    }
}
