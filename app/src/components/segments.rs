//! How a message's segments look: the persisted blocks (after a run, and on page load) and the live
//! overlays (while a run streams). Model and tool text is only ever inserted as text, never as HTML.

use leptos::prelude::*;

use super::icons::Icon;
use super::markdown::Markdown;
use crate::settings::{use_settings, DisplayMode};

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

/// The persisted reasoning: collapsed by default, its header says how long the model thought and
/// previews the start of the thinking. Open or closed is local to this block.
#[component]
pub fn ReasoningSegment(segment: Reasoning) -> impl IntoView {
    let settings = use_settings();
    let label = match segment.duration_ms {
        Some(ms) => format!("Thought for {}", format_duration(ms)),
        None => "Thoughts".to_owned(),
    };
    let combined = segment
        .combined_text
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    let preview = move || {
        let limit = settings.get().reasoning_preview_chars as usize;
        match crate::protocol::shorten_chars(&combined, limit) {
            Some(cut) => format!("{cut}…"),
            None => combined.clone(),
        }
    };
    view! {
        <details
            class="segment reasoning"
            open=move || settings.get().mode == DisplayMode::Verbose
            hidden=move || settings.get().mode == DisplayMode::Minimal
        >
            <summary>
                <span class="segment-icon"><Icon name="reasoning" /></span>
                <span class="reasoning-label">{label}</span>
                <span class="reasoning-preview muted">{preview}</span>
            </summary>
            <div class="reasoning-parts">
                {segment
                    .parts
                    .into_iter()
                    .map(|part| view! { <div class="reasoning-part"><Markdown text=part.text /></div> })
                    .collect_view()}
            </div>
        </details>
    }
    .into_any()
}

/// One tool call: icon, name or display line, status (spinner, check mark and duration, or cross),
/// its arguments and its output.
/// `tool_count` is how many tool calls the message has; `live` is true in the streaming overlay.
#[component]
pub fn ToolCallSegment(
    call: ToolCall,
    tool_count: usize,
    #[prop(optional)] live: bool,
) -> impl IntoView {
    let settings = use_settings();
    let running = call.status == ToolCallStatus::Running;
    let open = move || {
        let settings = settings.get();
        match settings.mode {
            DisplayMode::Verbose => true,
            DisplayMode::Minimal => false,
            // Normal: a running call shows its output as it streams, unless the message has so
            // many calls that they all collapse; finished calls stay collapsed.
            DisplayMode::Normal => {
                live && running && tool_count <= settings.auto_collapse_tool_count as usize
            }
        }
    };
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
    let output =
        (!call.output.is_empty()).then(|| view! { <ToolOutput output=call.output.clone() /> });
    view! {
        <details
            class=format!("segment tool-call {status_class}")
            // The attribute, not only the property: the server's HTML arrives open in verbose mode.
            open=open
            hidden=move || settings.get().mode == DisplayMode::Minimal
            data-call-id=call.call_id.clone()
        >
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
    let tool_count = segments
        .iter()
        .filter(|s| matches!(s, Segment::ToolCall(_)))
        .count();
    segments
        .into_iter()
        .map(|segment| match segment {
            Segment::Reasoning(reasoning) => {
                view! { <ReasoningSegment segment=reasoning /> }.into_any()
            }
            Segment::ToolCall(call) => view! { <ToolCallSegment call tool_count /> }.into_any(),
            Segment::Text(text) => {
                view! { <div class="message-text"><Markdown text=text.text /></div> }.into_any()
            }
        })
        .collect_view()
}

/// Live reasoning parts in order, each with a spinner until it completes; no toggle.
#[component]
pub fn StreamingReasoningOverlay(segment: Reasoning) -> impl IntoView {
    let settings = use_settings();
    view! {
        <div class="segment reasoning live" aria-label="Reasoning" hidden=move || settings.get().mode == DisplayMode::Minimal>
            {segment
                .parts
                .into_iter()
                .map(|part| {
                    view! {
                        <div class="reasoning-part live-part" class:complete=part.is_complete>
                            {(!part.is_complete)
                                .then(|| view! { <span class="spinner" role="img" aria-label="thinking"></span> })}
                            <Markdown text=part.text />
                        </div>
                    }
                })
                .collect_view()}
        </div>
    }
    .into_any()
}

/// A live tool block: open while running (in normal and verbose modes) so its output streams into
/// view.
#[component]
pub fn StreamingToolsOverlay(call: ToolCall, tool_count: usize) -> impl IntoView {
    view! { <ToolCallSegment call tool_count live=true /> }
}

/// A tool's output: in full in verbose mode; otherwise a preview when it is long, with a control
/// to see it all.
#[component]
fn ToolOutput(output: String) -> impl IntoView {
    let settings = use_settings();
    let show_all = RwSignal::new(false);
    let total_chars = output.chars().count();
    let shown = {
        let output = output.clone();
        move || {
            let settings = settings.get();
            if show_all.get() || settings.mode == DisplayMode::Verbose {
                return (output.clone(), None);
            }
            let by_lines = output
                .char_indices()
                .filter(|(_, c)| *c == '\n')
                .nth(settings.auto_collapse_output_lines.saturating_sub(1) as usize)
                .map(|(index, _)| &output[..index]);
            let by_chars =
                crate::protocol::shorten_chars(&output, settings.output_preview_chars as usize);
            let preview = match (by_lines, by_chars) {
                (Some(a), Some(b)) => Some(if a.len() < b.len() { a } else { b }),
                (a, b) => a.or(b),
            };
            match preview {
                Some(preview) => {
                    let count = preview.chars().count();
                    (
                        preview.to_owned(),
                        Some(format!(
                            "Showing {} of {} chars",
                            group(count),
                            group(total_chars)
                        )),
                    )
                }
                None => (output.clone(), None),
            }
        }
    };
    let shown = Memo::new(move |_| shown());
    view! {
        <div class="tool-section">
            <div class="tool-label">"Output"</div>
            // `<code>` first: the HTML parser drops a newline right after `<pre>`, which would
            // leave the hydrated DOM without the text node the view expects.
            <pre class="tool-output"><code>{move || shown.get().0}</code></pre>
            {move || {
                shown
                    .get()
                    .1
                    .map(|notice| {
                        view! {
                            <p class="preview-notice">
                                {notice}
                                " "
                                <button type="button" class="show-all" on:click=move |_| show_all.set(true)>
                                    "Show all"
                                </button>
                            </p>
                        }
                    })
            }}
        </div>
    }
    .into_any()
}

/// 4523 -> "4,523"
pub fn group(number: usize) -> String {
    let digits = number.to_string();
    let mut out = String::new();
    for (index, digit) in digits.chars().enumerate() {
        if index > 0 && (digits.len() - index).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_and_durations_read_well() {
        assert_eq!(group(4523), "4,523");
        assert_eq!(group(500), "500");
        assert_eq!(group(1_234_567), "1,234,567");
        assert_eq!(format_duration(850), "850 ms");
        assert_eq!(format_duration(1234), "1.2 s");
        assert_eq!(format_duration(125_000), "2 min 5 s");
    }
}
