//! The scripted agent: plays a JSON scenario file for tests, benchmarks and demos. Its tool calls
//! run for real through the engine. The format is documented in docs/scenarios.md.

use app::protocol::ErrorCode;
use std::{path::Path, time::Duration};

use app::protocol::Usage;
use serde::Deserialize;
use serde_json::Value;

use futures::future::BoxFuture;

use super::{pause, Agent, AgentOutcome, Pacing, RunContext};
use crate::{error::Error, tools::ToolCallRequest};

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    #[serde(default = "default_delta_chars")]
    pub delta_chars: usize,
    #[serde(default = "default_delta_interval_ms")]
    pub delta_interval_ms: u64,
    pub steps: Vec<Step>,
}

fn default_delta_chars() -> usize {
    8
}

fn default_delta_interval_ms() -> u64 {
    20
}

#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Step {
    /// One reasoning segment with these parts.
    Reasoning(Vec<String>),
    /// Calls that run concurrently; the step ends when all have ended.
    ToolCalls(Vec<ScenarioCall>),
    /// Answer text.
    Text(String),
    PauseMs(u64),
    /// This many text deltas, each the server's wall clock (microseconds since the Unix epoch)
    /// read just before the delta is emitted: a load generator reads them to measure latency.
    ClockText(u32),
    /// Ends the run with `message_error`.
    Error(ScenarioError),
    Usage(Usage),
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScenarioCall {
    pub name: String,
    #[serde(default)]
    pub args: Value,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScenarioError {
    pub code: ErrorCode,
    pub message: String,
}

fn unix_micros() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_micros())
}

pub struct ScenarioAgent {
    scenario: Scenario,
}

impl ScenarioAgent {
    /// Reads `<dir>/<name>.json`. Names are letters, digits, `-` and `_` only, so no path escapes.
    pub fn load(dir: &Path, name: &str) -> Result<Self, Error> {
        let valid = !name.is_empty()
            && name.len() <= 100
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
        if !valid {
            return Err(Error::InvalidField(format!(
                "'{name}' is not a valid scenario name"
            )));
        }
        let path = dir.join(format!("{name}.json"));
        let text = std::fs::read_to_string(&path)
            .map_err(|_| Error::InvalidField(format!("unknown model 'scenario:{name}'")))?;
        let scenario = serde_json::from_str(&text).map_err(|error| {
            Error::InvalidField(format!("scenario '{name}' is not valid: {error}"))
        })?;
        Ok(ScenarioAgent { scenario })
    }
}

impl Agent for ScenarioAgent {
    fn run<'a>(&'a self, context: &'a RunContext) -> BoxFuture<'a, AgentOutcome> {
        Box::pin(async move {
            let pacing = Pacing {
                delta_chars: self.scenario.delta_chars,
                interval: Duration::from_millis(self.scenario.delta_interval_ms),
            };
            for step in &self.scenario.steps {
                match step {
                    Step::Reasoning(parts) => context.stream_reasoning(parts, pacing).await,
                    Step::ToolCalls(calls) => {
                        let requests = calls
                            .iter()
                            .map(|call| ToolCallRequest::new(call.name.clone(), call.args.clone()))
                            .collect();
                        context.run_tools(requests).await;
                    }
                    Step::Text(text) => context.stream_text(text, pacing).await,
                    Step::PauseMs(ms) => tokio::time::sleep(Duration::from_millis(*ms)).await,
                    Step::ClockText(count) => {
                        for _ in 0..*count {
                            pause(pacing.interval).await;
                            context.emit_text(&format!("{} ", unix_micros()));
                        }
                    }
                    Step::Error(error) => {
                        return AgentOutcome::Failed {
                            code: error.code.clone(),
                            message: error.message.clone(),
                        }
                    }
                    Step::Usage(usage) => context.emit_usage(*usage),
                }
            }
            AgentOutcome::Completed
        })
    }
}
