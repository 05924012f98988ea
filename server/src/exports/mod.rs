//! Traces leaving the app: the Agent Inspector list (seed 003) and the ThoughtFlow session
//! (seed 004) as JSON and as a D2 diagram. Pure functions over stored traces; the HTTP layer reads
//! the store (checking the owner) and calls them.

mod inspector;
mod thoughtflow;

pub use inspector::inspector;
pub use thoughtflow::{thoughtflow, to_d2};
