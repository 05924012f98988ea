//! Escape closes what is open.

use leptos::prelude::*;

/// Escape closes what `open` shows (the drawer, the settings) while the view lives. It marks the
/// key as used, so Escape does not also stop a run (see `message_list::RunControls`).
pub fn close_on_escape(open: RwSignal<bool>) {
    #[cfg(feature = "hydrate")]
    {
        let handle = window_event_listener(leptos::ev::keydown, move |event| {
            if event.key() == "Escape" && open.get_untracked() {
                event.prevent_default();
                open.set(false);
            }
        });
        on_cleanup(move || handle.remove());
    }
    #[cfg(not(feature = "hydrate"))]
    let _ = open;
}
