//! Traces leaving the app: the Agent Inspector list (seed 003) and the ThoughtFlow session
//! (seed 004) as JSON and as a D2 diagram, and OpenTelemetry GenAI spans. Pure functions over
//! stored traces; the HTTP layer reads the store (checking the owner) and calls them, and so does
//! `otel` for the spans it sends.

mod inspector;
mod otel;
mod thoughtflow;

pub use inspector::inspector;
pub use otel::{otel_spans, run_spans, SpanContent, SpanSource, Timings};
pub use thoughtflow::{thoughtflow, to_d2};
