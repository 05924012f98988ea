//! A part of a page that never changes once drawn (the compare page's 500 rows and two timelines
//! of 500 bars): the server renders it like any view, and the browser's hydration takes the
//! element the server sent as it is, without building the view or walking its nodes.
//!
//! Hydration walks every node of a view to pair it with the view's state (two to four calls
//! into the DOM per node). For a view with no handlers and nothing reactive that state is never
//! used again, and on the compare page the walk was most of a 55–90 ms task (docs/benchmarks.md,
//! "The compare page"). The element's children stay those the server rendered, so the HTML and
//! the hydrated DOM are the same by construction; a view made in the browser (a client-side
//! navigation) builds the whole view as usual. [`ServerElement`], the server's element standing
//! for a view, is also what a `deferred` view holds until its task.

use leptos::prelude::View;
use leptos::tachys::{
    html::{
        attribute::{any_attribute::AnyAttribute, Attribute},
        element::{ElementType, HtmlElement},
    },
    hydration::Cursor,
    renderer::{types::Element, types::Node, CastFrom, Rndr},
    ssr::StreamBuilder,
    view::{add_attr::AddAnyAttr, Mountable, Position, PositionState, Render, RenderHtml},
};

/// A view made only when it has to be rendered or built, never for hydration.
pub struct Inert<V>(Box<dyn FnOnce() -> V + Send>);

/// `view` (one element, with no handler and nothing reactive inside) as an [`Inert`] part.
pub fn inert<E, At, Ch>(
    view: impl FnOnce() -> View<HtmlElement<E, At, Ch>> + Send + 'static,
) -> Inert<View<HtmlElement<E, At, Ch>>>
where
    E: ElementType,
{
    Inert(Box::new(view))
}

/// The view's state once built, or the server's element once hydrated.
pub enum InertState<S> {
    Built(S),
    Hydrated(ServerElement),
}

impl<S: Mountable> Mountable for InertState<S> {
    fn unmount(&mut self) {
        match self {
            InertState::Built(state) => state.unmount(),
            InertState::Hydrated(el) => el.unmount(),
        }
    }

    fn mount(&mut self, parent: &Element, marker: Option<&Node>) {
        match self {
            InertState::Built(state) => state.mount(parent, marker),
            InertState::Hydrated(el) => el.mount(parent, marker),
        }
    }

    fn insert_before_this(&self, child: &mut dyn Mountable) -> bool {
        match self {
            InertState::Built(state) => state.insert_before_this(child),
            InertState::Hydrated(el) => el.insert_before_this(child),
        }
    }

    fn elements(&self) -> Vec<Element> {
        match self {
            InertState::Built(state) => state.elements(),
            InertState::Hydrated(el) => el.elements(),
        }
    }
}

/// An element the server rendered, standing for a view that has not built it: for good in an
/// [`Inert`] part, until its task in a [`Deferred`](super::deferred::Deferred) one.
pub struct ServerElement(pub Element);

impl ServerElement {
    /// The element a view would hydrate next, where it is one, and the cursor moved past it as
    /// that element's own hydration would have left it. `None`, the cursor left alone, when the
    /// next node is not an element.
    pub fn take(cursor: &Cursor, position: &PositionState) -> Option<Self> {
        let current = cursor.current();
        let next = match position.get() {
            Position::FirstChild => Rndr::first_child(&current),
            Position::Current => Some(current),
            _ => Rndr::next_sibling(&current),
        };
        let element = next.and_then(Element::cast_from)?;
        cursor.set(element.clone().into());
        position.set(Position::NextChild);
        Some(ServerElement(element))
    }

    /// Puts `view` (built) where the element stands, and takes the element out.
    pub fn give_way_to(&mut self, view: &mut dyn Mountable) {
        self.insert_before_this(view);
        self.unmount();
    }
}

impl Mountable for ServerElement {
    fn unmount(&mut self) {
        Rndr::remove(&self.0);
    }

    fn mount(&mut self, parent: &Element, marker: Option<&Node>) {
        Rndr::insert_node(parent, &self.0, marker);
    }

    fn insert_before_this(&self, child: &mut dyn Mountable) -> bool {
        match Rndr::get_parent(&self.0).and_then(Element::cast_from) {
            Some(parent) => {
                child.mount(&parent, Some(self.0.as_ref()));
                true
            }
            None => false,
        }
    }

    fn elements(&self) -> Vec<Element> {
        vec![self.0.clone()]
    }
}

impl<V: Render> Render for Inert<V> {
    type State = InertState<V::State>;

    fn build(self) -> Self::State {
        InertState::Built((self.0)().build())
    }

    fn rebuild(self, state: &mut Self::State) {
        match state {
            InertState::Built(built) => (self.0)().rebuild(built),
            InertState::Hydrated(element) => {
                // The server's element gives way to the new view, in its place.
                let mut built = (self.0)().build();
                element.give_way_to(&mut built);
                *state = InertState::Built(built);
            }
        }
    }
}

impl<V: AddAnyAttr> AddAnyAttr for Inert<V> {
    type Output<SomeNewAttr: Attribute> = V::Output<SomeNewAttr>;

    fn add_any_attr<NewAttr: Attribute>(self, attr: NewAttr) -> Self::Output<NewAttr>
    where
        Self::Output<NewAttr>: RenderHtml,
    {
        (self.0)().add_any_attr(attr)
    }
}

impl<V> RenderHtml for Inert<V>
where
    V: RenderHtml + 'static,
    V::AsyncOutput: 'static,
{
    type AsyncOutput = Inert<V::AsyncOutput>;
    type Owned = Inert<V::Owned>;

    const MIN_LENGTH: usize = V::MIN_LENGTH;

    /// Nothing to start early: an inert view reads no resource.
    fn dry_resolve(&mut self) {}

    async fn resolve(self) -> Self::AsyncOutput {
        let resolved = (self.0)().resolve().await;
        Inert(Box::new(move || resolved))
    }

    fn to_html_with_buf(
        self,
        buf: &mut String,
        position: &mut Position,
        escape: bool,
        mark_branches: bool,
        extra_attrs: Vec<AnyAttribute>,
    ) {
        (self.0)().to_html_with_buf(buf, position, escape, mark_branches, extra_attrs);
    }

    fn to_html_async_with_buf<const OUT_OF_ORDER: bool>(
        self,
        buf: &mut StreamBuilder,
        position: &mut Position,
        escape: bool,
        mark_branches: bool,
        extra_attrs: Vec<AnyAttribute>,
    ) {
        (self.0)().to_html_async_with_buf::<OUT_OF_ORDER>(
            buf,
            position,
            escape,
            mark_branches,
            extra_attrs,
        );
    }

    /// Takes the server's element where the view's element would be (as an element's own
    /// hydration moves the cursor), and leaves its children alone.
    fn hydrate<const FROM_SERVER: bool>(
        self,
        cursor: &Cursor,
        position: &PositionState,
    ) -> Self::State {
        if !FROM_SERVER {
            return InertState::Built((self.0)().hydrate::<FROM_SERVER>(cursor, position));
        }
        let Some(element) = ServerElement::take(cursor, position) else {
            // The DOM is not the page the server rendered: tachys's own elements stop here too
            // (without a message of their own, which would be in the main bundle's data).
            unreachable!()
        };
        InertState::Hydrated(element)
    }

    fn into_owned(self) -> Self::Owned {
        Inert(Box::new(move || (self.0)().into_owned()))
    }
}

// Rendering to HTML needs the `ssr` feature, which `cargo test -p app -p server` (scripts/test.sh)
// turns on, as for the markdown tests.
#[cfg(all(test, feature = "ssr"))]
mod tests {
    use leptos::prelude::*;

    use super::inert;

    fn section(rows: Vec<String>) -> impl IntoView {
        view! {
            <section aria-label="Steps">
                <ol>{rows.into_iter().map(|row| view! { <li class="row">{row}</li> }).collect_view()}</ol>
                {None::<String>.map(|note| view! { <p>{note}</p> })}
            </section>
        }
    }

    /// The server sends the same HTML with or without `inert`: hydration keeps that element.
    #[test]
    fn an_inert_view_renders_the_html_of_its_view() {
        let rows = || vec!["<b>not markup</b>".to_owned(), "two".to_owned()];
        let plain = Owner::new().with(|| section(rows()).to_html());
        let kept = Owner::new().with(|| {
            let rows = rows();
            inert(move || {
                view! {
                    <section aria-label="Steps">
                        <ol>{rows.into_iter().map(|row| view! { <li class="row">{row}</li> }).collect_view()}</ol>
                        {None::<String>.map(|note| view! { <p>{note}</p> })}
                    </section>
                }
            })
            .to_html()
        });
        assert_eq!(kept, plain);
        assert!(kept.contains("&lt;b&gt;not markup&lt;/b&gt;"), "{kept}");
    }
}
