//! Routed pages.

mod chat;
mod not_found;
mod trace;

pub use chat::ChatPage;
pub use not_found::NotFound;
pub use trace::TracePage;
