//! Each stored message of a conversation hydrates in a task of its own, after the rest of the
//! page: the browser can paint and answer input between them, and no one task grows with the
//! page (issue 38: a conversation's opening was one task of 50-120 ms on the benchmark's machine,
//! about half of it V8 compiling the wasm functions that a message's hydration runs for the
//! first time).
//!
//! [`Deferred`] wraps a view made by a closure whose HTML is one element (a message's `<article>`).
//! What it may hold is narrow:
//! - nothing that takes a hydration id (a resource, `<Suspense>`, `<Transition>`, an error
//!   boundary): made after the page's hydration has ended, it would take its id out of the
//!   server's order and ask the server again (the sidebar was tried: its account resources did);
//! - nothing whose signals change before its task runs: hydration writes no attribute or text
//!   the server sent, so the server's HTML must still be what the view would draw (the answer
//!   being written is not deferred, nor the composer, whose field the reader may type into);
//! - a view that takes input (the composer) would also lose what was typed before its task.
//!
//! On the server, and in the browser's own renders (a page loaded, a message added), it is that
//! view, made and drawn at once. While the page hydrates, it takes the server's element as it is,
//! moves the hydration cursor past it, and in a later task makes the view (the component's body
//! runs there, under the message's own reactive owner) and hydrates that element in place. Until
//! then the element is there and readable, its buttons not yet live, as the whole page is before
//! the wasm starts. Nothing is drawn twice. (`components::inert` is its sibling: there the
//! server's element stays for good, here the view takes it over a task later.)
//!
//! Written here rather than taken from a crate: Leptos has no deferred hydration short of
//! islands (a second kind of component across the app), and its async hydration walk stops at
//! the `<Transition>` the conversation is in (Suspense boundaries hydrate synchronously).

use std::{
    cell::RefCell,
    rc::Rc,
    sync::atomic::{AtomicUsize, Ordering},
};

use leptos::{
    attr::{any_attribute::AnyAttribute, Attribute},
    prelude::{AddAnyAttr, AnyView, IntoAny, Owner, Render, RenderHtml},
    tachys::{
        hydration::Cursor,
        renderer::types::{Element, Node},
        ssr::StreamBuilder,
        view::{any_view::AnyViewState, Mountable, Position, PositionState},
    },
};

use super::inert::ServerElement;

/// `hidden="until-found"` for the `index`th part of a long list from the `at_once`th on, in the
/// server's page: the page lays them out as the reader nears them (`components::when_visible::Reveal`, in the browser).
/// None in the browser, which either keeps the server's attribute while hydrating (a hydrated
/// `None` leaves the element as it is) or builds these lists after a client-side navigation,
/// a chunk per task (`components::chunks`) or a block per task ([`Deferred`]),
/// laying out each as it comes.
pub fn waits_from(index: usize, at_once: usize) -> Option<&'static str> {
    (cfg!(not(feature = "hydrate")) && index >= at_once).then_some("until-found")
}

/// A view made when it is first needed, and hydrated in a task of its own.
pub struct Deferred {
    inner: Inner,
    /// The server sends the view's element `hidden="until-found"` ([`waits_from`]). Only the
    /// server writes it: hydration keeps the server's element as it is.
    #[cfg(not(feature = "hydrate"))]
    waits: bool,
}

enum Inner {
    Make(Box<dyn FnOnce() -> AnyView + Send>),
    Made(AnyView),
}

impl Deferred {
    pub fn new(make: impl FnOnce() -> AnyView + Send + 'static) -> Self {
        Self {
            inner: Inner::Make(Box::new(make)),
            #[cfg(not(feature = "hydrate"))]
            waits: false,
        }
    }

    /// Sent to wait until the reader nears it when `waits` ([`waits_from`]) says so.
    pub fn waiting(self, waits: Option<&'static str>) -> Self {
        #[cfg(not(feature = "hydrate"))]
        return Self {
            waits: waits.is_some(),
            ..self
        };
        #[cfg(feature = "hydrate")]
        {
            let _ = waits;
            self
        }
    }

    /// The attributes the server writes on the view's element, with `hidden` when it waits.
    #[cfg(not(feature = "hydrate"))]
    fn server_attrs(&self, mut extra_attrs: Vec<AnyAttribute>) -> Vec<AnyAttribute> {
        use leptos::tachys::html::attribute::any_attribute::IntoAnyAttribute;
        if self.waits {
            extra_attrs.push(leptos::attr::hidden("until-found").into_any_attr());
        }
        extra_attrs
    }

    fn view(self) -> AnyView {
        match self.inner {
            Inner::Make(make) => make(),
            Inner::Made(view) => view,
        }
    }
}

/// A [`Deferred`] view's nodes: the server's element until the view is hydrated, then the view's.
pub struct DeferredState(Rc<RefCell<Slot>>);

enum Slot {
    /// Hydration is waiting for its task; the server's element stands in.
    Waiting(ServerElement),
    Ready(AnyViewState),
    /// Dropped before its task came.
    Gone,
}

impl Render for Deferred {
    type State = DeferredState;

    fn build(self) -> Self::State {
        DeferredState(Rc::new(RefCell::new(Slot::Ready(self.view().build()))))
    }

    fn rebuild(self, state: &mut Self::State) {
        let mut slot = state.0.borrow_mut();
        match &mut *slot {
            Slot::Ready(inner) => self.view().rebuild(inner),
            Slot::Waiting(element) => {
                // Drawn afresh where the server's element stood; the waiting task finds it gone.
                let mut built = self.view().build();
                element.give_way_to(&mut built);
                *slot = Slot::Ready(built);
            }
            Slot::Gone => *slot = Slot::Ready(self.view().build()),
        }
    }
}

/// A state dropped before its task came (the list went, another conversation opened) leaves
/// nothing for the task to hydrate.
impl Drop for DeferredState {
    fn drop(&mut self) {
        if let Ok(mut slot) = self.0.try_borrow_mut() {
            if matches!(*slot, Slot::Waiting(_)) {
                *slot = Slot::Gone;
            }
        }
    }
}

impl Mountable for DeferredState {
    fn unmount(&mut self) {
        match &mut *self.0.borrow_mut() {
            Slot::Ready(inner) => inner.unmount(),
            // Taken out but still waiting: `mount` puts it back, and its task hydrates it where
            // it is (only a dropped state is gone).
            Slot::Waiting(element) => element.unmount(),
            Slot::Gone => {}
        }
    }

    fn mount(&mut self, parent: &Element, marker: Option<&Node>) {
        match &mut *self.0.borrow_mut() {
            Slot::Ready(inner) => inner.mount(parent, marker),
            Slot::Waiting(element) => element.mount(parent, marker),
            Slot::Gone => {}
        }
    }

    fn insert_before_this(&self, child: &mut dyn Mountable) -> bool {
        match &*self.0.borrow() {
            Slot::Ready(inner) => inner.insert_before_this(child),
            Slot::Waiting(element) => element.insert_before_this(child),
            Slot::Gone => false,
        }
    }

    fn elements(&self) -> Vec<Element> {
        match &*self.0.borrow() {
            Slot::Ready(inner) => inner.elements(),
            Slot::Waiting(element) => element.elements(),
            Slot::Gone => Vec::new(),
        }
    }
}

impl AddAnyAttr for Deferred {
    type Output<SomeNewAttr: Attribute> = Deferred;

    fn add_any_attr<NewAttr: Attribute>(self, _attr: NewAttr) -> Self::Output<NewAttr> {
        self
    }
}

impl RenderHtml for Deferred {
    type AsyncOutput = Deferred;
    type Owned = Deferred;
    const MIN_LENGTH: usize = 0;

    fn dry_resolve(&mut self) {
        let made = match std::mem::replace(&mut self.inner, Inner::Made(().into_any())) {
            Inner::Make(make) => make(),
            Inner::Made(view) => view,
        };
        self.inner = Inner::Made(made);
        if let Inner::Made(view) = &mut self.inner {
            view.dry_resolve();
        }
    }

    async fn resolve(self) -> Self::AsyncOutput {
        #[cfg(not(feature = "hydrate"))]
        let waits = self.waits;
        let view = self.view().resolve().await;
        // Still a `Deferred`, so that a page rendered after resolving sends the attribute too.
        Deferred {
            inner: Inner::Made(view),
            #[cfg(not(feature = "hydrate"))]
            waits,
        }
    }

    fn to_html_with_buf(
        self,
        buf: &mut String,
        position: &mut Position,
        escape: bool,
        mark_branches: bool,
        extra_attrs: Vec<AnyAttribute>,
    ) {
        #[cfg(not(feature = "hydrate"))]
        let extra_attrs = self.server_attrs(extra_attrs);
        self.view()
            .to_html_with_buf(buf, position, escape, mark_branches, extra_attrs);
    }

    fn to_html_async_with_buf<const OUT_OF_ORDER: bool>(
        self,
        buf: &mut StreamBuilder,
        position: &mut Position,
        escape: bool,
        mark_branches: bool,
        extra_attrs: Vec<AnyAttribute>,
    ) {
        #[cfg(not(feature = "hydrate"))]
        let extra_attrs = self.server_attrs(extra_attrs);
        self.view().to_html_async_with_buf::<OUT_OF_ORDER>(
            buf,
            position,
            escape,
            mark_branches,
            extra_attrs,
        );
    }

    fn hydrate<const FROM_SERVER: bool>(
        self,
        cursor: &Cursor,
        position: &PositionState,
    ) -> Self::State {
        let Some(element) = ServerElement::take(cursor, position) else {
            let inner = self.view().hydrate::<FROM_SERVER>(cursor, position);
            return DeferredState(Rc::new(RefCell::new(Slot::Ready(inner))));
        };
        let slot = Rc::new(RefCell::new(Slot::Waiting(element)));
        hydrate_deferred::<FROM_SERVER>(self, Rc::clone(&slot));
        DeferredState(slot)
    }

    // Never reached in the browser: nothing hydrates asynchronously (clippy.toml forbids the
    // entry points; the renderer's `AnyView::hydrate_async` panics, vendor/README.md). Kept
    // because the trait asks for it, and right should the walk come back.
    async fn hydrate_async(self, cursor: &Cursor, position: &PositionState) -> Self::State {
        let inner = self.view().hydrate_async(cursor, position).await;
        DeferredState(Rc::new(RefCell::new(Slot::Ready(inner))))
    }

    fn into_owned(self) -> Self::Owned {
        self
    }
}

/// Deferred views whose task has not come yet (the browser has one thread).
static WAITING: AtomicUsize = AtomicUsize::new(0);

/// In a task of its own, under the reactive owner the view would have had: makes the view and
/// hydrates the waiting element, unless it went meanwhile.
fn hydrate_deferred<const FROM_SERVER: bool>(deferred: Deferred, slot: Rc<RefCell<Slot>>) {
    let owner = Owner::current();
    let hydrate = move || {
        let element = match &*slot.borrow() {
            Slot::Waiting(ServerElement(element)) => element.clone(),
            _ => return,
        };
        let cursor = Cursor::new(element);
        let inner = deferred
            .view()
            .hydrate::<FROM_SERVER>(&cursor, &PositionState::new(Position::Current));
        *slot.borrow_mut() = Slot::Ready(inner);
    };
    WAITING.fetch_add(1, Ordering::Relaxed);
    leptos::task::spawn_local(async move {
        #[cfg(feature = "hydrate")]
        next_task().await;
        match owner {
            Some(owner) => owner.with(hydrate),
            None => hydrate(),
        }
        WAITING.fetch_sub(1, Ordering::Relaxed);
    });
}

/// Resolves once every deferred view of the page has hydrated (the page is then fully live).
/// Code that looks for a message's element or clicks it (a search hit's step) waits for it.
#[cfg(feature = "hydrate")]
pub async fn settled() {
    while WAITING.load(Ordering::Relaxed) > 0 {
        next_task().await;
    }
}

/// Resolves in a new task (a zero timeout), so the browser may paint and handle input first. A
/// promise rather than a `Closure`: the wasm's size budget (end2end/tests/bundle.test.mjs) had
/// no room for the closure's glue. Not `scheduler.yield()`: its continuation would go ahead of
/// the input and painting this is for, and the timeouts, all set from one task, are not clamped.
#[cfg(feature = "hydrate")]
pub async fn next_task() {
    after(0).await;
}

/// Resolves after `ms` milliseconds, in a task of its own.
#[cfg(feature = "hydrate")]
pub async fn after(ms: i32) {
    settled_by(|window, resolve| {
        window.set_timeout_with_callback_and_timeout_and_arguments_0(resolve, ms)
    })
    .await;
}

/// Resolves at the browser's next animation frame, before its style and layout.
#[cfg(feature = "hydrate")]
pub async fn next_frame() {
    settled_by(|window, resolve| window.request_animation_frame(resolve)).await;
}

/// Resolves when the callback that `schedule` hands to the window is called (at once when the
/// window refuses it): a promise's resolve function as the callback, no `Closure`.
#[cfg(feature = "hydrate")]
async fn settled_by(
    schedule: impl Fn(
        &web_sys::Window,
        &web_sys::js_sys::Function,
    ) -> Result<i32, wasm_bindgen::JsValue>,
) {
    let promise = web_sys::js_sys::Promise::new(&mut |resolve, _| {
        let set = web_sys::window().map(|window| schedule(&window, &resolve));
        if !matches!(set, Some(Ok(_))) {
            let _ = resolve.call0(&wasm_bindgen::JsValue::NULL);
        }
    });
    let _ = wasm_bindgen_futures::JsFuture::from(promise).await;
}
