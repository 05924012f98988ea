//! Routed pages.

mod chat;
mod compare;
mod not_found;
mod trace;

pub use chat::ChatPage;
pub use compare::ComparePage;
pub use not_found::NotFound;
pub use trace::TracePage;
