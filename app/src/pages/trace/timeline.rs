//! The Timeline tab: a waterfall of the run's model turns, reasoning parts, tool calls and answer
//! on one time axis.

use leptos::prelude::*;

use crate::api::get_model_turns;
use crate::components::deferred::waits_from;
use crate::components::segments::format_duration;
use crate::json;
use crate::models::{ModelTurnTiming, TraceOverview};
use crate::protocol::{parse_rfc3339_millis, ReasoningSegment, Segment, ToolCallSegment};

/// One bar of a waterfall (the compare page draws its runs' steps with these too).
pub(crate) struct Bar {
    pub label: String,
    pub kind: &'static str,
    pub start: i64,
    pub end: i64,
}

/// The time axis: where it starts and ends, in milliseconds (since the epoch here; from each
/// run's start on the compare page, whose two runs share one axis).
#[derive(Clone, Copy)]
pub(crate) struct Axis {
    pub origin: i64,
    pub end: i64,
}

impl Axis {
    fn of(overview: &TraceOverview) -> Self {
        let trace = &overview.trace;
        let origin = parse_rfc3339_millis(&trace.started_at).unwrap_or(0);
        let last = overview.last_event_ms.unwrap_or(origin);
        let end = trace
            .completed_at
            .as_deref()
            .and_then(parse_rfc3339_millis)
            .unwrap_or(last)
            .max(last)
            .max(origin + 1);
        Axis { origin, end }
    }

    /// A time stamp on the axis, or `default` when it does not parse.
    fn at(&self, stamp: Option<&str>, default: i64) -> i64 {
        stamp.and_then(parse_rfc3339_millis).unwrap_or(default)
    }
}

/// A waterfall: model turns, reasoning parts, tool calls and the answer on one time axis.
#[component]
pub(super) fn Timeline(overview: TraceOverview, share: Option<String>) -> impl IntoView {
    let trace = &overview.trace;
    let turns = json::resource(move || (), {
        let trace_id = trace.trace_id.clone();
        move |_| get_model_turns(trace_id.clone(), share.clone())
    });
    let axis = Axis::of(&overview);
    let bars = segment_bars(&overview, axis);
    let total = format_duration((axis.end - axis.origin) as u64);
    view! {
        <div class="timeline" aria-label="Timeline">
            <p class="muted">{format!("0 – {total}")}</p>
            <Transition fallback=|| ()>
                {move || Suspend::new(async move {
                    let turns = turns.await.unwrap_or_default();
                    let bars: Vec<Bar> = turns
                        .into_iter()
                        .enumerate()
                        .flat_map(|(index, turn)| turn_bars(index, turn, axis))
                        .collect();
                    draw(bars, axis)
                })}
            </Transition>
            {draw(bars, axis)}
        </div>
    }
    .into_any()
}

/// A model turn (an AG-UI agent's request), then the steps the agent reported in it.
fn turn_bars(index: usize, turn: ModelTurnTiming, axis: Axis) -> Vec<Bar> {
    let what = if turn.model.starts_with("agent/") {
        "Agent request"
    } else {
        "Model turn"
    };
    let mut bars = vec![Bar {
        label: format!("{what} {} ({})", index + 1, turn.model),
        kind: "model",
        start: axis.at(Some(&turn.started_at), axis.origin),
        end: axis.at(Some(&turn.completed_at), axis.end),
    }];
    bars.extend(turn.steps.into_iter().map(|step| Bar {
        label: format!("Step: {}", step.name),
        kind: "step",
        start: step.started_ms,
        end: step.finished_ms.unwrap_or(axis.end),
    }));
    bars
}

/// The bars of the message's blocks, in order.
fn segment_bars(overview: &TraceOverview, axis: Axis) -> Vec<Bar> {
    let mut bars = Vec::new();
    let segments = overview.message.iter().flat_map(|m| &m.segments);
    for segment in segments {
        match segment {
            Segment::Reasoning(reasoning) => reasoning_bars(reasoning, axis, &mut bars),
            Segment::ToolCall(call) => tool_bars(call, axis, &mut bars),
            Segment::Text(text) => {
                let span = overview.text_spans.iter().find(|s| s.segment_id == text.id);
                if let Some(span) = span {
                    bars.push(Bar {
                        label: "Answer text".to_owned(),
                        kind: "text",
                        start: span.first_ms,
                        end: span.last_ms,
                    });
                }
            }
        }
    }
    bars
}

fn reasoning_bars(reasoning: &ReasoningSegment, axis: Axis, bars: &mut Vec<Bar>) {
    for part in &reasoning.parts {
        bars.push(Bar {
            label: format!("Reasoning part {}", part.summary_index + 1),
            kind: "reasoning",
            start: axis.at(Some(&part.started_at), axis.origin),
            end: axis.at(part.completed_at.as_deref(), axis.end),
        });
    }
}

fn tool_bars(call: &ToolCallSegment, axis: Axis, bars: &mut Vec<Bar>) {
    let mut start = axis.at(Some(&call.started_at), axis.origin);
    // The wait for a person is its own span; the call runs from the answer on.
    if let Some(approval) = &call.approval {
        let answered = axis.at(approval.resolved_at.as_deref(), axis.end);
        bars.push(Bar {
            label: format!("Waiting for approval: {}", call.name),
            kind: "approval",
            start,
            end: answered,
        });
        start = answered;
    }
    let stop = call.duration_ms.map_or(axis.end, |ms| start + ms as i64);
    bars.push(Bar {
        label: call.display.clone().unwrap_or(call.name.clone()),
        kind: "tool",
        start,
        end: stop,
    });
}

/// The bars as rows: a label, the bar at its place on the axis, and how long it took.
pub(crate) fn draw(bars: Vec<Bar>, axis: Axis) -> impl IntoView {
    bars.into_iter()
        .map(|bar| bar_row(bar, axis, None))
        .collect_view()
}

/// Each bar's row as a view of its own (for `components::chunks`); those from the `at_once`th on
/// wait to be drawn ([`waits_from`](crate::components::deferred::waits_from)).
pub(crate) fn bar_rows(bars: Vec<Bar>, axis: Axis, at_once: usize) -> Vec<AnyView> {
    bars.into_iter()
        .enumerate()
        .map(|(index, bar)| bar_row(bar, axis, waits_from(index, at_once)).into_any())
        .collect()
}

fn bar_row(bar: Bar, axis: Axis, hidden: Option<&'static str>) -> impl IntoView {
    let span = (axis.end - axis.origin) as f64;
    // `clamp` only with constant bounds: with computed ones it panics when they cross.
    let left = ((bar.start - axis.origin) as f64 / span * 100.0).clamp(0.0, 99.6);
    let width = ((bar.end - bar.start).max(0) as f64 / span * 100.0)
        .max(0.4)
        .min(100.0 - left);
    let took = format_duration((bar.end - bar.start).max(0) as u64);
    let title = bar.label.clone();
    view! {
        <div class="timeline-row" hidden=hidden>
            <span class="timeline-label" title=title>{bar.label}</span>
            <span class="timeline-track">
                <span
                    class=format!("timeline-bar {}", bar.kind)
                    style=format!("left:{left:.2}%;width:{width:.2}%")
                ></span>
            </span>
            <span class="timeline-duration">{took}</span>
        </div>
    }
}
