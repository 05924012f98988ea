//! UI components, each in its own file.

mod composer;
mod icons;
pub mod live;
mod message_list;
pub mod segments;
mod sidebar;

pub use composer::Composer;
pub use live::ChatState;
pub use message_list::MessageList;
pub use sidebar::Sidebar;
