//! Glassbox's runs in other projects' wire formats: pure mappings from a run's events, fed by
//! the same run log as Glassbox's own event stream (`http::sse`).

pub mod ai_sdk;
pub mod steps;
