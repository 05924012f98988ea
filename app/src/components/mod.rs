//! UI components, each in its own file.

pub mod activity;
mod approval;
mod composer;
pub mod feed;
#[cfg(feature = "hydrate")]
mod follow_bottom;
mod icons;
pub mod live;
pub mod markdown;
mod message_list;
pub mod segments;
mod settings_panel;
pub mod share;
mod sidebar;
#[cfg(feature = "hydrate")]
mod when_visible;

pub use composer::Composer;

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
pub use live::ChatState;
pub use message_list::MessageList;
pub use settings_panel::SettingsPanel;
pub use sidebar::Sidebar;
