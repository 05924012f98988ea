//! Glassbox's shared crate. `protocol` is the wire contract and its reducer (pure, used on both
//! sides); `models` are the shapes the read API returns; `api` holds the server functions the pages
//! call; `components` and `pages` are the UI, rendered on the server and hydrated in the browser.

pub mod api;
pub mod components;
pub mod models;
pub mod pages;
pub mod protocol;

use leptos::prelude::*;
use leptos_meta::{provide_meta_context, MetaTags, Stylesheet, Title};
use leptos_router::{
    components::{Route, Router, Routes},
    path,
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
                <AutoReload options=options.clone() />
                <HydrationScripts options />
                <MetaTags />
            </head>
            <body>
                <App />
            </body>
        </html>
    }
}

#[component]
pub fn App() -> impl IntoView {
    provide_meta_context();
    view! {
        <Stylesheet id="glassbox" href="/pkg/glassbox.css" />
        <Title text="Glassbox" />
        <Router>
            <Routes fallback=pages::NotFound>
                <Route path=path!("") view=pages::ChatPage />
                <Route path=path!("/c/:id") view=pages::ChatPage />
            </Routes>
        </Router>
    }
}
