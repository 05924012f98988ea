//! UI components, each in its own file.

pub mod activity;
mod approval;
mod branches;
pub mod chunks;
mod composer;
pub mod deferred;
pub mod escape;
pub mod feed;
pub mod feedback;
#[cfg(feature = "hydrate")]
mod follow_bottom;
mod icons;
pub mod inert;
pub mod live;
pub mod manage;
pub mod markdown;
mod menu;
mod message_list;
pub mod on_demand;
pub mod search;
pub mod segments;
mod settings_panel;
pub mod share;
mod sidebar;
#[cfg(feature = "hydrate")]
pub mod when_visible;

pub use composer::Composer;
pub use live::ChatState;
pub use message_list::MessageList;
pub use sidebar::Sidebar;
