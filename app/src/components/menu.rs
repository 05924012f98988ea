//! An answer's footer menus (Export, Regenerate with…): a button and the list it shows.
//!
//! Not a `<details>`: Chromium spends time in proportion to every element already styled in the
//! page on each `<details>` that goes in (10-15 ms with 400 messages shown, 1-2 ms for any other
//! element; docs/benchmarks.md, issue 38), and every answer's footer goes in when its run ends.

use std::future::Future;

use leptos::prelude::*;

/// A footer menu: `label` on its button; the view `items` loads shown while it is open, drawn the
/// first time it opens (from a chunk of its own: see `on_demand`). `menu_open` is how many of the
/// message's menus are open (it draws the message in full so a list can reach past it).
#[component]
pub fn FooterMenu<F, Fut>(
    class: &'static str,
    label: &'static str,
    menu_open: RwSignal<u8>,
    items: F,
) -> impl IntoView
where
    F: Fn() -> Fut + Send + Sync + 'static,
    Fut: Future<Output = AnyView> + Send + 'static,
{
    let open = RwSignal::new(false);
    let toggle = move |_| {
        let now = !open.get_untracked();
        open.set(now);
        menu_open.update(|open| {
            *open = if now {
                *open + 1
            } else {
                open.saturating_sub(1)
            }
        });
    };
    // A footer drawn again (the answer's run ended anew) takes its open menu with it.
    on_cleanup(move || {
        if open.try_get_untracked() == Some(true) {
            menu_open.try_update(|open| *open = open.saturating_sub(1));
        }
    });
    view! {
        <div class=format!("menu {class}")>
            <button
                type="button"
                class="footer-action menu-toggle"
                aria-expanded=move || if open.get() { "true" } else { "false" }
                on:click=toggle
            >
                {label}
            </button>
            <div class="menu-items" role="menu" hidden=move || !open.get()>
                {super::on_demand::once_wanted(move || open.get(), items)}
            </div>
        </div>
    }
}
