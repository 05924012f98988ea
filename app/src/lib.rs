//! Glassbox's shared crate. `protocol` is the wire contract and its reducer (pure, used on both
//! sides); `models` are the shapes the read API returns; `api` holds the server functions the pages
//! call; `components` and `pages` are the UI, rendered on the server and hydrated in the browser.

#![warn(clippy::too_many_lines)]

pub mod api;
pub mod client;
pub mod compare;
pub mod components;
pub mod json;
pub mod models;
pub mod pages;
pub mod protocol;
pub mod settings;

use leptos::prelude::*;
use leptos_meta::{provide_meta_context, HashedStylesheet, MetaTags, Title};
use leptos_router::{
    components::{Route, Router, Routes},
    path, Lazy, SsrMode,
};

/// The HTML document around the app; the server renders it for every page.
pub fn shell(options: LeptosOptions) -> impl IntoView {
    view! {
        <!DOCTYPE html>
        <html lang="en">
            <head>
                <meta charset="utf-8" />
                <meta name="viewport" content="width=device-width, initial-scale=1" />
                <meta name="color-scheme" content="light dark" />
                <link rel="icon" type="image/svg+xml" href="/favicon.svg" />
                // Named after its content when the build hashes file names (see server/src/site.rs).
                <HashedStylesheet id="glassbox" options=options.clone() />
                <AutoReload options=options.clone() />
                <HydrationScripts options />
                <LazyRoutePreloads />
                <MetaTags />
            </head>
            <body>
                <App />
            </body>
        </html>
    }
}

/// A page served by a lazy route (a trace page opened directly) preloads its wasm chunk and the
/// chunk's loader, so they download beside the main bundle instead of after it has started.
///
/// leptos_axum 0.8.10 means to add these links itself, but it looks the split manifest up outside
/// the app's owner and never finds it; `HydrationScripts` (just before this) has put it in
/// context here. The manifest type is public but undocumented; the test that a direct open
/// fetches the chunk once (end2end/tests/trace.test.mjs) notices if it changes.
#[component]
fn LazyRoutePreloads() -> impl IntoView {
    #[cfg(feature = "ssr")]
    {
        let route = use_context::<http::request::Parts>()
            .and_then(|request| LazyPage::serving(request.uri.path()))
            .map(LazyPage::chunk);
        let manifest = use_context::<leptos::WasmSplitManifest>()
            .filter(|_| route.is_some())
            .and_then(|manifest| manifest.0.try_get_value());
        manifest.map(|(pkg, chunks, loader)| {
            // This route's chunks only (its own and those it shares with another lazy route).
            let chunks = chunks
                .into_iter()
                .filter(|(name, _)| route.is_some_and(|route| name.starts_with(route)))
                .flat_map(|(_, chunks)| chunks)
                .map(|chunk| {
                    view! {
                        <link rel="preload" href=format!("{pkg}/{chunk}.wasm") r#as="fetch" r#type="application/wasm" crossorigin="anonymous" />
                    }
                })
                .collect_view();
            view! {
                {chunks}
                <link rel="modulepreload" href=format!("{pkg}/{loader}") crossorigin="anonymous" />
            }
        })
    }
}

#[component]
pub fn App() -> impl IntoView {
    provide_meta_context();
    settings::provide_settings();
    view! {
        <Title text="Glassbox" />
        <Router>
            <Routes fallback=pages::NotFound>
                // Async: the server sends the page once its data is in, so a page load shows the
                // stored conversation at once, with no loading state to flash.
                <Route path=path!("") view=pages::ChatPage ssr=SsrMode::Async />
                <Route path=path!("/c/:id") view=pages::ChatPage ssr=SsrMode::Async />
                // Lazy: its code is a wasm chunk of its own; keep `LazyPage` in step.
                <Route path=path!("/t/:id") view={Lazy::<pages::TracePage>::new()} ssr=SsrMode::Async />
                <Route path=path!("/compare/:a/:b") view={Lazy::<pages::ComparePage>::new()} ssr=SsrMode::Async />
            </Routes>
        </Router>
    }
}

/// The lazily loaded routes (above): each one's code is a wasm chunk of its own (`--split`).
#[derive(Clone, Copy)]
enum LazyPage {
    Trace,
    Compare,
}

impl LazyPage {
    /// The lazy route that may serve `path`: by prefix, so a path under `/t/` that the router
    /// answers with the not-found page (`/t/a/b`) loads the trace chunk too, needlessly. The
    /// other way round would be worse: hydrating a lazy route whose chunk is not loaded panics.
    /// Matching the segments exactly cost the chat page 474 B (brotli), not worth that fetch.
    fn serving(path: &str) -> Option<Self> {
        if path.starts_with("/t/") {
            Some(Self::Trace)
        } else if path.starts_with("/compare/") {
            Some(Self::Compare)
        } else {
            None
        }
    }

    /// How the split manifest names the route's chunk (the `#[lazy_route]` type's name in snake
    /// case, then `_view`).
    #[cfg_attr(not(feature = "ssr"), allow(dead_code))]
    fn chunk(self) -> &'static str {
        match self {
            Self::Trace => "__trace_page_view_",
            Self::Compare => "__compare_page_view_",
        }
    }
}

/// Loads the chunk of the lazy route serving `path`, if one does, and its loader. The browser
/// awaits it before hydrating, so that every page hydrates synchronously: the route's view is
/// then ready when the walk reaches it. (Leptos's asynchronous walk is not in the bundle: see
/// vendor/README.md.) The page's head preloads the same files, so this mostly waits for them.
pub async fn load_lazy_route(path: &str) {
    use leptos_router::LazyRoute;
    match LazyPage::serving(path) {
        Some(LazyPage::Trace) => pages::TracePage::preload().await,
        Some(LazyPage::Compare) => pages::ComparePage::preload().await,
        None => {}
    }
}

#[cfg(test)]
mod tests {
    use super::LazyPage;

    #[test]
    fn every_path_of_a_lazy_route_loads_its_chunk() {
        let chunk = |path| LazyPage::serving(path).map(LazyPage::chunk);
        for path in ["/t/abc", "/t/abc/", "/t/a/b"] {
            assert_eq!(chunk(path), Some("__trace_page_view_"), "{path}");
        }
        for path in ["/compare/a/b", "/compare/a/b/"] {
            assert_eq!(chunk(path), Some("__compare_page_view_"), "{path}");
        }
        for path in ["/", "/c/x", "/t", "/compare", "/trace/x"] {
            assert_eq!(chunk(path), None, "{path}");
        }
    }
}
