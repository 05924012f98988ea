//! See Cargo.toml: a floor for the size of a Leptos 0.8 bundle, in four steps (a component with
//! a signal; + the router and meta tags; + a server function read through a resource under
//! `Suspense`; + pulldown-cmark with the options the app's markdown uses), and the same parts in
//! islands mode without the router.

use leptos::prelude::*;

#[component]
fn Counter() -> impl IntoView {
    let (count, set_count) = signal(0);
    view! { <button on:click=move |_| set_count.update(|n| *n += 1)>"count " {count}</button> }
}

#[cfg(not(any(feature = "router", feature = "islands")))]
#[component]
fn App() -> impl IntoView {
    view! { <main><Counter/></main> }
}

#[cfg(feature = "router")]
#[component]
fn App() -> impl IntoView {
    use leptos_router::{components::*, path};
    leptos_meta::provide_meta_context();
    view! {
        <leptos_meta::Title text="floor"/>
        <Router>
            <nav><A href="/">"home"</A><A href="/page">"page"</A></nav>
            <main>
                <Routes fallback=|| "not found">
                    <Route path=path!("/") view=Counter/>
                    <Route path=path!("/page") view=Page/>
                </Routes>
            </main>
        </Router>
    }
}

#[cfg(feature = "router")]
#[component]
fn Page() -> impl IntoView {
    view! { <p>"page"</p> {items()} {markdown()} }
}

#[cfg(any(feature = "server-fn", feature = "islands"))]
#[derive(Clone, serde::Serialize, serde::Deserialize)]
pub struct Item {
    pub id: String,
    pub title: String,
    pub count: u64,
}

#[cfg(any(feature = "server-fn", feature = "islands"))]
#[server]
pub async fn list_items(limit: u32) -> Result<Vec<Item>, ServerFnError> {
    let _ = limit;
    Ok(Vec::new())
}

#[cfg(feature = "server-fn")]
fn items() -> impl IntoView {
    let items = Resource::new(|| (), |_| list_items(10));
    view! {
        <Suspense fallback=|| "loading">
            <ul>
                {move || items.get().map(|result| {
                    result.unwrap_or_default().into_iter()
                        .map(|item| view! { <li id=item.id>{item.title} " " {item.count}</li> })
                        .collect_view()
                })}
            </ul>
        </Suspense>
    }
}

#[cfg(all(feature = "router", not(feature = "server-fn")))]
fn items() {}

/// The text of a markdown document, so the whole parser is kept.
#[cfg(any(feature = "markdown", feature = "islands"))]
fn markdown() -> impl IntoView {
    use pulldown_cmark::{Event, Options, Parser};
    let (source, _) = signal(String::from("# title\n\n| a | b |\n|---|---|\n| 1 | 2 |"));
    let options = Options::ENABLE_TABLES
        | Options::ENABLE_STRIKETHROUGH
        | Options::ENABLE_TASKLISTS
        | Options::ENABLE_FOOTNOTES;
    let text = move || {
        Parser::new_ext(&source.get(), options)
            .filter_map(|event| match event {
                Event::Text(text) => Some(text.into_string()),
                _ => None,
            })
            .collect::<String>()
    };
    view! { <div>{text}</div> }
}

#[cfg(all(feature = "router", not(feature = "markdown")))]
fn markdown() {}

/// The one interactive part in islands mode: a counter, a server function called on click, and
/// markdown parsed in the browser.
#[cfg(feature = "islands")]
#[island]
fn Interactive() -> impl IntoView {
    let (items, set_items) = signal(Vec::<Item>::new());
    let load = move |_| {
        leptos::task::spawn_local(async move {
            set_items.set(list_items(10).await.unwrap_or_default());
        })
    };
    view! {
        <Counter/>
        <button on:click=load>"load"</button>
        <ul>
            {move || items.get().into_iter()
                .map(|item| view! { <li id=item.id>{item.title} " " {item.count}</li> })
                .collect_view()}
        </ul>
        {markdown()}
    }
}

#[cfg(not(feature = "islands"))]
#[wasm_bindgen::prelude::wasm_bindgen]
pub fn hydrate() {
    console_error_panic_hook::set_once();
    leptos::mount::hydrate_body(App);
}

#[cfg(feature = "islands")]
#[wasm_bindgen::prelude::wasm_bindgen]
pub fn hydrate() {
    console_error_panic_hook::set_once();
    leptos::mount::hydrate_islands();
}
