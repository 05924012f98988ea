//! Routed pages.

mod chat;
mod not_found;

pub use chat::ChatPage;
pub use not_found::NotFound;
