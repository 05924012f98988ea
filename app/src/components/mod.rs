//! UI components, each in its own file.

pub mod activity;
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

pub use composer::Composer;
pub use live::ChatState;
pub use message_list::MessageList;
pub use settings_panel::SettingsPanel;
pub use sidebar::Sidebar;
