//! How a message's segments look: the persisted blocks (after a run, and on page load) and the live
//! overlays (while a run streams). Model and tool text is only ever inserted as text, never as HTML.

use leptos::prelude::*;

use super::icons::Icon;

use crate::protocol::{
    ReasoningSegment as Reasoning, Segment, ToolCallSegment as ToolCall, ToolCallStatus,
};

/// "1.2 s", "850 ms", "2 min 5 s".
pub fn format_duration(ms: u64) -> String {
    match ms {
        0..=999 => format!("{ms} ms"),
        1000..=59_999 => format!("{:.1} s", ms as f64 / 1000.0),
        _ => format!("{} min {} s", ms / 60_000, ms % 60_000 / 1000),
    }
}

/// The icon name for a tool: its own for the built-ins, a wrench for the rest.
fn tool_icon(name: &str) -> &'static str {
    match name {
        "grep_search" => "grep_search",
        "read_file" => "read_file",
        "list_dir" => "list_dir",
        _ => "tool",
    }
}

fn pretty_args(args: &serde_json::Value) -> String {
    serde_json::to_string_pretty(args).unwrap_or_else(|_| args.to_string())
}

/// The persisted reasoning: collapsed by default, its header says how long the model thought.
/// Open or closed is local to this block.
#[component]
pub fn ReasoningSegment(segment: Reasoning) -> impl IntoView {
    let label = match segment.duration_ms {
        Some(ms) => format!("Thought for {}", format_duration(ms)),
        None => "Thoughts".to_owned(),
    };
    view! {
        <details class="segment reasoning">
            <summary>
                <span class="segment-icon"><Icon name="reasoning" /></span>
                <span>{label}</span>
            </summary>
            <div class="reasoning-parts">
                {segment
                    .parts
                    .into_iter()
                    .map(|part| view! { <p class="reasoning-part">{part.text}</p> })
                    .collect_view()}
            </div>
        </details>
    }
    .into_any()
}

/// One tool call: icon, name or display line, status (spinner, check mark and duration, or cross),
/// its arguments and its output.
#[component]
pub fn ToolCallSegment(call: ToolCall, #[prop(optional)] open: bool) -> impl IntoView {
    let status_class = match call.status {
        ToolCallStatus::Running => "running",
        ToolCallStatus::Success => "success",
        ToolCallStatus::Error => "error",
        ToolCallStatus::Cancelled => "cancelled",
    };
    let duration = call.duration_ms.map(format_duration);
    let status = match call.status {
        ToolCallStatus::Running => view! {
            <span class="tool-status">
                <span class="spinner" role="img" aria-label="running"></span>
                "Running…"
            </span>
        }
        .into_any(),
        ToolCallStatus::Success => view! {
            <span class="tool-status">
                <span class="check" role="img" aria-label="succeeded">"✓"</span>
                {duration.clone()}
            </span>
        }
        .into_any(),
        ToolCallStatus::Error | ToolCallStatus::Cancelled => view! {
            <span class="tool-status">
                <span class="cross" role="img" aria-label=status_class>"✗"</span>
                {if call.status == ToolCallStatus::Cancelled { "Cancelled".to_owned() } else { "Failed".to_owned() }}
                {duration.clone().map(|d| format!(" · {d}"))}
            </span>
        }
        .into_any(),
    };
    let title = call.display.clone().unwrap_or_else(|| call.name.clone());
    let truncation = call.truncated.then(|| {
        let full = call
            .full_length
            .map(|n| format!(" of {n} characters"))
            .unwrap_or_default();
        view! { <p class="truncation-notice">{format!("The output was cut{full}.")}</p> }
    });
    let error = call
        .error
        .clone()
        .map(|error| view! { <p class="tool-error">{error.message}</p> });
    let output = (!call.output.is_empty()).then(|| {
        view! {
            <div class="tool-section">
                <div class="tool-label">"Output"</div>
                <pre class="tool-output">{call.output.clone()}</pre>
            </div>
        }
    });
    view! {
        <details class=format!("segment tool-call {status_class}") open=open data-call-id=call.call_id.clone()>
            <summary>
                <span class="segment-icon"><Icon name=tool_icon(&call.name) /></span>
                <span class="tool-title">{title}</span>
                <code class="tool-name">{call.name.clone()}</code>
                {status}
            </summary>
            {error}
            <div class="tool-section">
                <div class="tool-label">"Arguments"</div>
                <pre class="tool-args">{pretty_args(&call.args)}</pre>
            </div>
            {output}
            {truncation}
        </details>
    }
    .into_any()
}

/// The stored message's segments in `sequence_number` order.
#[component]
pub fn PersistedSegments(segments: Vec<Segment>) -> impl IntoView {
    segments
        .into_iter()
        .map(|segment| match segment {
            Segment::Reasoning(reasoning) => {
                view! { <ReasoningSegment segment=reasoning /> }.into_any()
            }
            Segment::ToolCall(call) => view! { <ToolCallSegment call /> }.into_any(),
            Segment::Text(text) => view! { <div class="message-text">{text.text}</div> }.into_any(),
        })
        .collect_view()
}

/// Live reasoning parts in order, each with a spinner until it completes; no toggle.
#[component]
pub fn StreamingReasoningOverlay(segment: Reasoning) -> impl IntoView {
    view! {
        <div class="segment reasoning live" aria-label="Reasoning">
            {segment
                .parts
                .into_iter()
                .map(|part| {
                    view! {
                        <div class="reasoning-part live-part" class:complete=part.is_complete>
                            {(!part.is_complete)
                                .then(|| view! { <span class="spinner" role="img" aria-label="thinking"></span> })}
                            <span>{part.text}</span>
                        </div>
                    }
                })
                .collect_view()}
        </div>
    }
}

/// Live tool blocks: open while running so their output streams into view.
#[component]
pub fn StreamingToolsOverlay(call: ToolCall) -> impl IntoView {
    let open = call.status == ToolCallStatus::Running;
    view! { <ToolCallSegment call open /> }
}
