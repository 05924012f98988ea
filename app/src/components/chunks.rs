//! A long list that the browser builds a chunk per task: the compare page's 500 rows and 1,000
//! bars, reached from another page. Building all of them at once (about 20,000 nodes) was one
//! task of 72-139 ms (`cd end2end && node bench/render.bench.mjs compare`, "from the trace
//! page"). The server renders every row, and so does a page being hydrated, so the HTML and the
//! hydrated DOM are the same; a list built in the browser adds a chunk in each task after the
//! one that builds the page around it (a zero timeout, so the browser paints and handles input
//! between).
//!
//! Written here rather than taken from a crate: it is Leptos's `<For>` over a count that grows.

use std::sync::{Arc, Mutex};

use leptos::prelude::*;

/// Rows built per task: about 1,200 nodes, 5-10 ms.
const CHUNK: usize = 40;

/// `views` as one list; in the browser, when built rather than hydrated, a chunk per task. For
/// views the browser builds or hydrates with the page (an `inert` part): one made later, in a
/// `Deferred` view's task, would find hydration over and start with no chunk, unlike the
/// server's HTML.
pub fn in_chunks(views: Vec<AnyView>) -> AnyView {
    let mut chunks = Vec::new();
    let mut views = views.into_iter().peekable();
    while views.peek().is_some() {
        chunks.push(Some(views.by_ref().take(CHUNK).collect::<Vec<_>>()));
    }
    let total = chunks.len();
    let shown = RwSignal::new(first_shown(total));
    #[cfg(feature = "hydrate")]
    if shown.get_untracked() < total {
        let from = shown.get_untracked() + 1;
        leptos::task::spawn_local(async move {
            for count in from..=total {
                super::deferred::next_task().await;
                // Given back when the list is gone (the reader left the page).
                if shown.try_set(count).is_some() {
                    return;
                }
            }
        });
    }
    // Each chunk's views are taken once, when it is first shown; the count only grows.
    let chunks = Arc::new(Mutex::new(chunks));
    view! {
        <For
            each=move || 0..shown.get()
            key=|index| *index
            children=move |index| {
                chunks
                    .lock()
                    .ok()
                    .and_then(|mut chunks| chunks.get_mut(index)?.take())
                    .unwrap_or_default()
            }
        />
    }
    .into_any()
}

/// Every chunk on the server and while the page hydrates (the server's HTML has them all); none
/// yet when the browser builds the list.
fn first_shown(total: usize) -> usize {
    #[cfg(feature = "hydrate")]
    if !Owner::current_shared_context().is_some_and(|context| context.during_hydration()) {
        return 0;
    }
    total
}
