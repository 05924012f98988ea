//! UI components, each in its own file.

mod composer;
mod message_list;
mod sidebar;

pub use composer::Composer;
pub use message_list::MessageList;
pub use sidebar::Sidebar;
