use leptos::prelude::*;

/// On the server, the page's status becomes 404 (the routes render `SsrMode::Async`, so the status
/// is set before it is sent); in the browser it does nothing.
pub fn status_not_found() {
    #[cfg(feature = "ssr")]
    if let Some(response) = use_context::<leptos_axum::ResponseOptions>() {
        response.set_status(http::StatusCode::NOT_FOUND);
    }
}

#[component]
pub fn NotFound() -> impl IntoView {
    status_not_found();
    view! {
        <main class="not-found">
            <h1>"Page not found"</h1>
            <a href="/">"Back to the chat"</a>
        </main>
    }
}
