//! The browser entry point: hydrates the HTML the server rendered.

#![warn(clippy::too_many_lines)]

use wasm_bindgen::JsCast;

#[wasm_bindgen::prelude::wasm_bindgen]
pub fn hydrate() {
    std::panic::set_hook(Box::new(|info| {
        console_error_panic_hook::hook(info);
        show_crash_notice();
    }));
    let Some(body) = web_sys::window()
        .and_then(|w| w.document())
        .and_then(|d| d.body())
    else {
        return;
    };
    let path = web_sys::window()
        .and_then(|w| w.location().pathname().ok())
        .unwrap_or_default();
    wasm_bindgen_futures::spawn_local(async move {
        // A trace or compare page's code is a chunk of its own (`--split`): it loads first (the
        // head has preloaded it), so its view is ready when the walk reaches it and every page
        // hydrates synchronously. The bundle has no asynchronous walk (vendor/README.md).
        app::load_lazy_route(&path).await;
        // Hydration runs in a task of its own: Leptos's script calls `hydrate` in the microtask
        // that finished compiling and instantiating the wasm, and the two made one long task
        // (52-88 ms for a new chat on the benchmark's machine, 20-31 ms of it the compile's).
        app::components::deferred::next_task().await;
        leptos::mount::hydrate_body(app::App);
        // Each stored message hydrates in a task of its own after the rest (`deferred`).
        app::components::deferred::settled().await;
        mark_hydrated(&body);
    });
    install_test_panic_hook();
}

/// `<body data-hydrated="true">` once the whole page is hydrated, a lazy route's chunk included,
/// so every handler is attached. Browser tests wait for it; nothing styles it.
fn mark_hydrated(body: &web_sys::HtmlElement) {
    let _ = body.set_attribute("data-hydrated", "true");
}

/// For the browser tests only: when the page set `window.__glassboxTestHooks` before the wasm
/// loaded (nothing but a test's init script does), a `glassbox-test-panic` event panics inside
/// the wasm, so the suite can check what a person sees when the wasm dies.
fn install_test_panic_hook() {
    use wasm_bindgen::closure::Closure;
    let Some(window) = web_sys::window() else {
        return;
    };
    if window.get("__glassboxTestHooks").is_none() {
        return;
    }
    let panic = Closure::<dyn Fn()>::new(|| panic!("test panic requested by the page"));
    let _ = window
        .add_event_listener_with_callback("glassbox-test-panic", panic.as_ref().unchecked_ref());
    panic.forget();
}

/// A panic leaves the wasm unusable: say so on the page instead of leaving it silently dead. Plain
/// DOM calls, because the reactive system may be what panicked.
fn show_crash_notice() {
    let Some(document) = web_sys::window().and_then(|w| w.document()) else {
        return;
    };
    let Some(body) = document.body() else {
        return;
    };
    if document.get_element_by_id("crash-notice").is_some() {
        return;
    }
    let _ = body.set_attribute("data-crashed", "true");
    let Ok(notice) = document.create_element("div") else {
        return;
    };
    notice.set_id("crash-notice");
    let _ = notice.set_attribute("role", "alert");
    let _ = notice.set_attribute("class", "crash-notice");
    notice.set_text_content(Some("Something went wrong and this page stopped working. "));
    if let Ok(link) = document.create_element("a") {
        let href = web_sys::window()
            .and_then(|w| w.location().href().ok())
            .unwrap_or_else(|| "/".to_owned());
        let _ = link.set_attribute("href", &href);
        link.set_text_content(Some("Reload"));
        let _ = notice.append_child(&link);
    }
    if let Ok(element) = notice.dyn_into::<web_sys::HtmlElement>() {
        let _ = body.prepend_with_node_1(&element);
    }
}
