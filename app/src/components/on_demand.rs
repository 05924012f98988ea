//! Parts of the chat page that only an interaction shows (the settings' controls, search results,
//! a rename field, a comment box ...), drawn from wasm chunks of their own: each is the view of a
//! `#[lazy]` function, which `cargo leptos build --split` moves with the code only it reaches out
//! of the main bundle (docs/benchmarks.md, "Bundle size"). The first interaction fetches the
//! chunk; later ones find it loaded.
//!
//! Nothing of such a part is in the server's HTML: the server renders the page before any
//! interaction, and hydration finds the same empty place.

use std::future::Future;

use leptos::prelude::*;

/// The view `load` gives, from the first time `wanted` is true on; nothing before (on the server
/// and while hydrating, `wanted` is false). It stays once drawn, so what it holds (a field's
/// text, a scroll position) survives being hidden.
pub fn once_wanted<Fut>(
    wanted: impl Fn() -> bool + Send + Sync + 'static,
    load: impl Fn() -> Fut + Send + Sync + 'static,
) -> impl IntoView
where
    Fut: Future<Output = AnyView> + Send + 'static,
{
    let drawn = Memo::new(move |before: Option<&bool>| before == Some(&true) || wanted());
    move || drawn.get().then(|| Suspend::new(load()))
}

/// The view `load` gives while `wanted` is true; nothing otherwise (on the server and while
/// hydrating, `wanted` is false). Drawn again each time it is wanted again.
pub fn while_wanted<Fut>(
    wanted: impl Fn() -> bool + Send + Sync + 'static,
    load: impl Fn() -> Fut + Send + Sync + 'static,
) -> impl IntoView
where
    Fut: Future<Output = AnyView> + Send + 'static,
{
    let shown = Memo::new(move |_| wanted());
    move || shown.get().then(|| Suspend::new(load()))
}
