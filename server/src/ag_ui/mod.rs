//! AG-UI 1.0, the streaming protocol agent frameworks share (pydantic-ai, LangGraph, CrewAI, ADK…):
//! its wire types ([`wire`]), typed serde structs both ways, so that an AG-UI agent can run inside
//! Glassbox (`agents::ag_ui`) and Glassbox can answer an AG-UI client ([`outbound`], a Glassbox
//! run's events as AG-UI events); and the steps an agent's stored request reports, for the trace's
//! timeline. It names only the leaf `records`.

pub mod outbound;
pub mod wire;

use app::models::StepTiming;
use serde_json::Value;

use crate::records::ProviderKind;

/// The steps an AG-UI request's kept events report, in order (a step not finished has no end).
/// Each kept event is `{at_ms, event}`: the agent's time stamp, or when it arrived.
pub fn steps(format: ProviderKind, response: &Value) -> Vec<StepTiming> {
    let mut steps: Vec<StepTiming> = Vec::new();
    if format != ProviderKind::AgUi {
        return steps;
    }
    let kept = response["events"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    for entry in kept {
        let at = entry["at_ms"].as_i64().unwrap_or(0);
        let name = entry["event"]["stepName"].as_str().unwrap_or("").to_owned();
        match entry["event"]["type"].as_str() {
            Some("STEP_STARTED") => steps.push(StepTiming {
                name,
                started_ms: at,
                finished_ms: None,
            }),
            Some("STEP_FINISHED") => {
                if let Some(step) = steps
                    .iter_mut()
                    .rev()
                    .find(|step| step.name == name && step.finished_ms.is_none())
                {
                    step.finished_ms = Some(at);
                }
            }
            _ => {}
        }
    }
    steps
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn steps_pair_by_name_and_nest() {
        let response = json!({"events": [
            {"at_ms": 10, "event": {"type": "RUN_STARTED"}},
            {"at_ms": 11, "event": {"type": "STEP_STARTED", "stepName": "agent"}},
            {"at_ms": 12, "event": {"type": "STEP_STARTED", "stepName": "tools"}},
            {"at_ms": 15, "event": {"type": "STEP_FINISHED", "stepName": "tools"}},
            {"at_ms": 20, "event": {"type": "STEP_FINISHED", "stepName": "agent"}},
            {"at_ms": 21, "event": {"type": "STEP_STARTED", "stepName": "agent"}},
        ]});
        let steps = steps(ProviderKind::AgUi, &response);
        let spans: Vec<(&str, i64, Option<i64>)> = steps
            .iter()
            .map(|step| (step.name.as_str(), step.started_ms, step.finished_ms))
            .collect();
        assert_eq!(
            spans,
            [
                ("agent", 11, Some(20)),
                ("tools", 12, Some(15)),
                ("agent", 21, None)
            ]
        );
        assert!(super::steps(ProviderKind::OpenaiChat, &response).is_empty());
    }
}
