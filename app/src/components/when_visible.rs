//! Calls back when an element comes within reach of the screen: a long conversation loads its
//! earlier messages as the reader scrolls up to them, as chat products do; a long page draws the
//! parts it left out of its first layout ([`Reveal`]).
//!
//! Written here rather than taken from a crate: it is one IntersectionObserver, and the Leptos
//! crates that wrap it bring a whole utility library with them (see `follow_bottom`).

use std::{cell::Cell, rc::Rc};

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

/// Draws the parts of a long page that the server sent as `hidden="until-found"`: first each
/// one that comes within `margin` of `scroller`'s view, and meanwhile all of them, a batch per
/// frame, so that in the end the whole page is drawn (read by screen readers, printed, found by
/// a find in page that knows nothing of `until-found`). Such a part keeps its box at its
/// estimated size (the style sheet's `contain-intrinsic-block-size`) but none of its contents is
/// styled or laid out, so the page's first frames lay out only what is near the top.
/// `content-visibility: auto` alone does not do that: Chromium lays out every element it has
/// not yet seen off screen, and the server's page arrives in a few pieces (the compare page of
/// two 500-step runs, its HTML without script: 76-193 ms of layout as sent, 28-45 ms with its
/// later rows hidden until found; docs/benchmarks.md).
pub struct Reveal {
    observer: IntersectionObserver,
    _on_change: Closure<dyn FnMut(Array, IntersectionObserver)>,
    /// Set when dropped: the batches stop.
    gone: Rc<Cell<bool>>,
}

/// What waits to be drawn.
const WAITING: &str = r#"[hidden="until-found"]"#;
/// Parts drawn per frame in the background: a few milliseconds of layout. One batch per frame,
/// not per task: zero timeouts run several times between two frames, and a frame that laid out
/// the rows of three or four batches was a long task of its own (50-83 ms).
const BATCH: u32 = 25;

impl Reveal {
    /// Watches every `hidden="until-found"` element inside `scroller` until dropped.
    pub fn start(scroller: &Element, margin: &str) -> Option<Self> {
        let on_change = Closure::<dyn FnMut(Array, IntersectionObserver)>::new(
            |entries: Array, observer: IntersectionObserver| {
                let entries = entries
                    .iter()
                    .filter_map(|entry| entry.dyn_into::<IntersectionObserverEntry>().ok());
                for entry in entries.filter(IntersectionObserverEntry::is_intersecting) {
                    draw(&observer, &entry.target());
                }
            },
        );
        let options = IntersectionObserverInit::new();
        options.set_root(Some(scroller));
        options.set_root_margin(margin);
        let observer =
            IntersectionObserver::new_with_options(on_change.as_ref().unchecked_ref(), &options)
                .ok()?;
        let waiting = scroller.query_selector_all(WAITING).ok()?;
        for index in 0..waiting.length() {
            if let Some(part) = waiting.item(index).and_then(|node| node.dyn_into().ok()) {
                observer.observe(&part);
            }
        }
        let gone = Rc::new(Cell::new(false));
        draw_all(scroller.clone(), observer.clone(), Rc::clone(&gone));
        Some(Reveal {
            observer,
            _on_change: on_change,
            gone,
        })
    }

    /// Starts once `scroller` finds the page's scroller (its element mounted), with a screen's
    /// margin, and keeps the `Reveal` until the calling component goes.
    pub fn while_mounted(scroller: impl Fn() -> Option<Element> + 'static) {
        use leptos::prelude::{Effect, SetValue, StoredValue};
        let reveal = StoredValue::new_local(None::<Reveal>);
        Effect::new(move |_| {
            if let Some(scroller) = scroller() {
                reveal.set_value(Reveal::start(&scroller, "100% 0px"));
            }
        });
    }
}

fn draw(observer: &IntersectionObserver, part: &Element) {
    observer.unobserve(part);
    // Removing an attribute of an element in the page does not fail.
    let _ = part.remove_attribute("hidden");
}

/// Draws the waiting parts a batch per frame, from the top, until none is left or the page goes,
/// once the page has settled ([`SETTLE_MS`]): the reader's view and the page's hydration go first.
fn draw_all(scroller: Element, observer: IntersectionObserver, gone: Rc<Cell<bool>>) {
    leptos::task::spawn_local(async move {
        super::deferred::after(SETTLE_MS).await;
        loop {
            super::deferred::next_frame().await;
            let Ok(waiting) = scroller.query_selector_all(WAITING) else {
                return;
            };
            if gone.get() || waiting.length() == 0 {
                return;
            }
            for index in 0..waiting.length().min(BATCH) {
                if let Some(part) = waiting.item(index).and_then(|node| node.dyn_into().ok()) {
                    draw(&observer, &part);
                }
            }
        }
    });
}

/// How long after the page's hydration the background drawing starts. Drawn at once, its frames
/// fell among the page's own first tasks and made some of them long (`npm run bench -- compare`:
/// a long task in 3 of 6 rounds against 2 of 15).
const SETTLE_MS: i32 = 1_000;

impl Drop for Reveal {
    fn drop(&mut self) {
        self.gone.set(true);
        self.observer.disconnect();
    }
}
