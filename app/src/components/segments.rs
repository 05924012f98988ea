//! How a message's blocks look, live and stored alike. Model and tool text is only ever inserted as text, never as HTML.

use std::sync::Arc;

use leptos::prelude::*;

use super::feed::MessageModel;
use super::feedback::{NoteTarget, StepNote};
use super::icons::Icon;
use super::markdown::{Markdown, StreamingMarkdown};
use crate::settings::{use_settings, DisplayMode, Settings};

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

/// An MCP tool's name, `<server>__<tool>`, as its server and its tool.
fn mcp_parts(name: &str) -> Option<(&str, &str)> {
    name.split_once("__")
        .filter(|(server, tool)| !server.is_empty() && !tool.is_empty())
}

/// The tool's name in the block's header; an MCP tool shows its server, then its tool.
fn tool_name_view(name: &str) -> AnyView {
    match mcp_parts(name) {
        Some((server, tool)) => view! {
            <code class="tool-name" title=format!("{tool} on the MCP server {server}")>
                <span class="tool-server">{server.to_owned()}</span>
                {tool.to_owned()}
            </code>
        }
        .into_any(),
        None => view! { <code class="tool-name">{name.to_owned()}</code> }.into_any(),
    }
}

/// A progress report with numbers, as a bar: `{"progress": 3, "total": 5, "message"?}`.
fn progress_view(progress: Option<&serde_json::Value>) -> Option<AnyView> {
    let progress = progress?;
    let done = progress.get("progress")?.as_f64()?;
    let total = progress.get("total").and_then(serde_json::Value::as_f64);
    let label = match total {
        Some(total) => format!("{done} of {total}"),
        None => format!("{done}"),
    };
    let message = progress
        .get("message")
        .and_then(serde_json::Value::as_str)
        .map(str::to_owned);
    Some(
        view! {
            <div class="tool-progress">
                <progress value=done.to_string() max=total.map(|t| t.to_string())></progress>
                <span class="muted">{label}</span>
                {message.map(|message| view! { <span>{message}</span> })}
            </div>
        }
        .into_any(),
    )
}

/// The arguments as indented JSON. Writing a `Value` cannot fail; a fallback through its
/// `Display` would bring two more copies of the JSON writer into the bundle.
fn pretty_args(args: &serde_json::Value) -> String {
    serde_json::to_string_pretty(args).unwrap_or_default()
}

/// The blocks of a long stored answer the server's page lays out at once: enough to fill a tall
/// screen (a collapsed tool call is one line); the rest wait until the reader nears them.
pub const BLOCKS_AT_ONCE: usize = 24;

/// A message's blocks in `sequence_number` order, live or stored: the same components either
/// way, so the end of a run changes attributes, not the DOM. Blocks are keyed by id; each reads
/// its own signal, so a change in one block redraws that block only.
#[component]
pub fn MessageBlocks(
    model: MessageModel,
    /// Where step notes go (a finished answer of the reader's); none: no notes.
    #[prop(default = None)]
    notes: Option<NoteTarget>,
    /// Each block hydrates in a task of its own ([`Deferred`](super::deferred::Deferred)): a
    /// stored answer on a page of its own (the trace page), whose hundreds of blocks hydrated
    /// in one task of 250-290 ms (a run of 249 tool calls). Never for an answer being written.
    /// The server also sends the blocks after the first [`BLOCKS_AT_ONCE`] to be laid out as
    /// the reader nears them ([`waits_from`](super::deferred::waits_from); the page runs a
    /// `components::when_visible::Reveal`).
    #[prop(default = false)]
    defer: bool,
) -> impl IntoView {
    let notes = StoredValue::new(notes);
    let working = move || model.is_streaming() && model.blocks.with(Vec::is_empty);
    let streaming = Memo::new(move |_| model.is_streaming());
    let tool_count = Memo::new(move |_| model.tool_counts().0);
    view! {
        <Show when=working>
            <p class="muted working">
                <span class="spinner" aria-hidden="true"></span>
                " Working…"
            </p>
        </Show>
        <For each=move || model.blocks.get() key=|block| block.id.clone() let:block>
            {
                let id = block.id.clone();
                let is_last = Memo::new(move |_| {
                    model.blocks.with(|blocks| blocks.last().is_some_and(|last| last.id == id))
                });
                let live = Signal::derive(move || streaming.get() && is_last.get());
                let is_step = block.segment.with_untracked(|s| !matches!(s, Segment::Text(_)));
                let segment = block.segment;
                let view = match defer {
                    true => {
                        let waits = block_waits(model, &block.id);
                        super::deferred::Deferred::new(move || {
                            block_view(segment, live, streaming.into(), tool_count.into())
                        })
                        .waiting(waits)
                        .into_any()
                    }
                    false => block_view(segment, live, streaming.into(), tool_count.into()),
                };
                let note = notes.get_value().filter(|_| is_step).map(|target| {
                    let step = block.id.clone();
                    move || (!streaming.get()).then(|| view! { <StepNote target=target.clone() step_id=step.clone() /> })
                });
                view! { {view} {note} }
            }
        </For>
    }
    .into_any()
}

/// Whether the server sends the block `id` to wait until the reader nears it ([`waits_from`](super::deferred::waits_from)):
/// its place in the message, not a count of the blocks made (a view may be made more than once
/// while the server renders). Only the server's page has blocks that wait.
fn block_waits(model: MessageModel, id: &str) -> Option<&'static str> {
    #[cfg(not(feature = "hydrate"))]
    {
        let index = model
            .blocks
            .with_untracked(|blocks| blocks.iter().position(|block| block.id == id))?;
        super::deferred::waits_from(index, BLOCKS_AT_ONCE)
    }
    #[cfg(feature = "hydrate")]
    {
        let _ = (model, id);
        None
    }
}

fn block_view(
    segment: ArcRwSignal<Segment>,
    live: Signal<bool>,
    streaming: Signal<bool>,
    tool_count: Signal<usize>,
) -> AnyView {
    // A block's kind never changes for its id. Each kind reads its part of the signal once per
    // change (one clone), and its pieces borrow from that.
    match segment.get_untracked() {
        Segment::Text(_) => {
            let text = Memo::new(move |_| {
                segment.with(|segment| match segment {
                    Segment::Text(text) => text.text.clone(),
                    _ => String::new(),
                })
            });
            view! {
                <div class="message-text" class:streaming=live>
                    <StreamingMarkdown text />
                </div>
            }
            .into_any()
        }
        Segment::Reasoning(_) => {
            let reasoning = Memo::new(move |_| {
                segment.with(|segment| match segment {
                    Segment::Reasoning(reasoning) => reasoning.clone(),
                    _ => Reasoning::default(),
                })
            });
            view! { <ReasoningSegment segment=reasoning.into() live=streaming /> }.into_any()
        }
        Segment::ToolCall(_) => {
            // The call without its output, which grows every frame while it runs: the output is
            // read in place from the block's signal (`OutputText`), never copied whole.
            let segment = RwSignal::from(segment);
            let call = Memo::new(move |_| {
                segment.with(|segment| match segment {
                    Segment::ToolCall(call) => without_output(call),
                    _ => ToolCall::default(),
                })
            });
            let output = OutputText(segment);
            view! { <ToolCallSegment call=call.into() output streaming tool_count /> }.into_any()
        }
    }
}

/// A copy of a call's record with an empty output.
fn without_output(call: &ToolCall) -> ToolCall {
    ToolCall {
        call_id: call.call_id.clone(),
        sequence_number: call.sequence_number,
        name: call.name.clone(),
        display: call.display.clone(),
        args: call.args.clone(),
        args_text: call.args_text.clone(),
        status: call.status,
        output: String::new(),
        truncated: call.truncated,
        full_length: call.full_length,
        error: call.error.clone(),
        progress: call.progress.clone(),
        approval: call.approval.clone(),
        started_at: call.started_at.clone(),
        duration_ms: call.duration_ms,
    }
}

/// A tool call's output, read in place from its block's signal.
#[derive(Clone, Copy)]
pub struct OutputText(RwSignal<Segment>);

impl OutputText {
    fn with<R>(&self, read: impl FnOnce(&str) -> R) -> R {
        self.0.with(|segment| match segment {
            Segment::ToolCall(call) => read(&call.output),
            _ => read(""),
        })
    }
}

/// Reasoning: while its message streams, its parts stream in place, each with a spinner until it
/// completes, and no toggle; when the run ends it becomes a collapsed block whose header says how
/// long the model thought and previews the start of the thinking (the one block whose element
/// changes at the end of a run). Open or closed is then local to this block.
#[component]
pub fn ReasoningSegment(segment: Signal<Reasoning>, live: Signal<bool>) -> impl IntoView {
    let live = Memo::new(move |_| live.get());
    move || {
        if live.get() {
            view! { <LiveReasoning segment /> }.into_any()
        } else {
            view! { <StoredReasoning segment /> }.into_any()
        }
    }
}

#[component]
fn StoredReasoning(segment: Signal<Reasoning>) -> impl IntoView {
    let settings = use_settings();
    let label = move || match segment.with(|s| s.duration_ms) {
        Some(ms) => format!("Thought for {}", format_duration(ms)),
        None => "Thoughts".to_owned(),
    };
    let preview = move || {
        let limit = settings.get().reasoning_preview_chars as usize;
        segment.with(|segment| {
            let combined = segment
                .combined_text
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ");
            match crate::protocol::shorten_chars(&combined, limit) {
                Some(cut) => format!("{cut}…"),
                None => combined,
            }
        })
    };
    let block = Disclosure::new(
        settings,
        Memo::new(move |_| settings.get().mode == DisplayMode::Verbose),
    );
    let open = move || block.open.get();
    // The parts are drawn the first time the block opens, and stay.
    let parts = move || {
        block.drawn.get().then(|| {
            segment.with(|segment| {
                segment
                    .parts
                    .iter()
                    .map(|part| view! { <div class="reasoning-part"><Markdown text=part.text.clone() /></div> })
                    .collect_view()
            })
        })
    };
    let toggle = move |_| block.toggle();
    let step = segment.with_untracked(|segment| segment.id.clone());
    // A disclosure, not a `<details>`: see `ToolCallSegment`.
    view! {
        <div
            class=move || if open() { "segment reasoning open" } else { "segment reasoning" }
            data-step=step
            hidden=move || settings.get().mode == DisplayMode::Minimal
        >
            <button type="button" class="segment-header" aria-expanded=move || if open() { "true" } else { "false" } on:click=toggle>
                <span class="segment-icon"><Icon name="reasoning" /></span>
                <span class="reasoning-label">{label}</span>
                <span class="reasoning-preview muted">{preview}</span>
            </button>
            <div class="reasoning-parts" hidden=move || !open()>{parts}</div>
        </div>
    }
    .into_any()
}

/// Live reasoning parts in order, keyed by their index: a part's element stays while its text
/// grows, and its markdown is cut into stable pieces as an answer's is, so only the last piece is
/// parsed and drawn again per frame (a selection in an earlier piece stays).
#[component]
fn LiveReasoning(segment: Signal<Reasoning>) -> impl IntoView {
    let settings = use_settings();
    let indexes = move || {
        segment.with(|segment| {
            segment
                .parts
                .iter()
                .map(|part| part.summary_index)
                .collect::<Vec<_>>()
        })
    };
    view! {
        <div class="segment reasoning live" aria-label="Reasoning" hidden=move || settings.get().mode == DisplayMode::Minimal>
            <For each=indexes key=|index| *index let:index>
                <LivePart segment index />
            </For>
        </div>
    }
    .into_any()
}

/// One live reasoning part: a spinner until it completes, and its text as streaming markdown.
#[component]
fn LivePart(segment: Signal<Reasoning>, index: u32) -> impl IntoView {
    let complete = Memo::new(move |_| {
        segment.with(|segment| with_part(segment, index, |part| part.is_complete))
    });
    let text = Memo::new(move |_| {
        segment.with(|segment| with_part(segment, index, |part| part.text.clone()))
    });
    view! {
        <div class="reasoning-part live-part" class:complete=complete>
            {move || (!complete.get()).then(|| view! { <span class="spinner" role="img" aria-label="thinking"></span> })}
            <StreamingMarkdown text />
        </div>
    }
}

fn with_part<R: Default>(
    segment: &Reasoning,
    index: u32,
    read: impl FnOnce(&crate::protocol::ReasoningPart) -> R,
) -> R {
    segment
        .parts
        .iter()
        .find(|part| part.summary_index == index)
        .map(read)
        .unwrap_or_default()
}

/// Opens a tool or reasoning block of this module, as a click on its header does (so the block
/// keeps it as the reader's choice), and returns its header.
#[cfg(feature = "hydrate")]
pub fn open_block(block: &web_sys::Element) -> Option<web_sys::HtmlElement> {
    use wasm_bindgen::JsCast;
    // A block the server sent to wait (`waits_from`) has no layout to scroll to or focus yet.
    if block.get_attribute("hidden").as_deref() == Some("until-found") {
        let _ = block.remove_attribute("hidden");
    }
    let header = block
        .query_selector(":scope > .segment-header")
        .ok()??
        .dyn_into::<web_sys::HtmlElement>()
        .ok()?;
    if header.get_attribute("aria-expanded").as_deref() != Some("true") {
        header.click();
    }
    Some(header)
}

pub(crate) fn status_class(status: ToolCallStatus) -> &'static str {
    match status {
        ToolCallStatus::Running => "running",
        ToolCallStatus::AwaitingApproval => "awaiting-approval",
        ToolCallStatus::Success => "success",
        ToolCallStatus::Error => "error",
        ToolCallStatus::Cancelled => "cancelled",
        ToolCallStatus::Denied => "denied",
    }
}

/// One tool call: icon, name or display line, status (spinner, check mark and duration, or cross),
/// its arguments and its output. `streaming` is whether its message is still being written;
/// `tool_count` is how many tool calls the message has.
///
/// Open or closed follows the display mode; a person who opens or closes the block keeps that
/// choice (in that mode) while the call runs, streams and ends.
#[component]
pub fn ToolCallSegment(
    call: Signal<ToolCall>,
    output: OutputText,
    streaming: Signal<bool>,
    tool_count: Signal<usize>,
) -> impl IntoView {
    let settings = use_settings();
    let status = Memo::new(move |_| call.with(|call| call.status));
    let by_default = Memo::new(move |_| {
        let settings = settings.get();
        open_by_default(&settings, status.get(), streaming.get(), tool_count.get())
    });
    let block = Disclosure::new(settings, by_default);
    let open = move || block.open.get();
    let toggle = move |_| block.toggle();
    let (name, call_id) = call.with_untracked(|c| (c.name.clone(), c.call_id.clone()));
    // The display line ("Searching for 'TODO'…") when the tool gave one; the name follows anyway,
    // so a call without one shows its name once (an MCP tool as its server and tool).
    let title = move || {
        call.with(|c| c.display.clone())
            .map(|display| view! { <span class="tool-title">{display}</span> })
    };
    let status_view = move || {
        let (status, duration) = call.with(|c| (c.status, c.duration_ms.map(format_duration)));
        tool_status(status, duration)
    };
    // A disclosure (a button and the body it shows), not a `<details>`: Chromium spends time in
    // proportion to every element already styled in the page on each `<details>` that goes in
    // (10-15 ms with 400 messages shown, against 1-2 ms for any other element), and a streaming
    // answer inserts one per tool call (docs/benchmarks.md, issue 38).
    view! {
        <div
            // `open` in the class, not only the button's state: the server's HTML arrives open in
            // verbose mode. (One class closure: a `class:` beside it would be overwritten.)
            class=move || {
                let open = if open() { " open" } else { "" };
                format!("segment tool-call {}{open}", status_class(status.get()))
            }
            hidden=move || {
                settings.get().mode == DisplayMode::Minimal
                    && status.get() != ToolCallStatus::AwaitingApproval
            }
            data-call-id=call_id
        >
            <button type="button" class="segment-header" aria-expanded=move || if open() { "true" } else { "false" } on:click=toggle>
                <span class="segment-icon"><Icon name=tool_icon(&name) /></span>
                {title}
                {tool_name_view(&name)}
                {status_view}
            </button>
            <Show when=move || block.drawn.get()>
                <div class="segment-body" hidden=move || !open()>
                    <ToolCallBody call output />
                </div>
            </Show>
        </div>
    }
    .into_any()
}

/// A block's open or closed state, for a tool call or reasoning: the display mode's default
/// (`by_default`) unless the reader chose otherwise in the mode they are in; and whether its body
/// is drawn: from the first time it opens (a long conversation holds thousands of closed
/// blocks) for good, also when the block closes by itself (a call that ends, the run's end, the
/// mode), so what the reader did in it ("Show all", a scroll) is kept.
#[derive(Clone, Copy)]
struct Disclosure {
    settings: RwSignal<Settings>,
    by_default: Memo<bool>,
    chosen: RwSignal<Option<(DisplayMode, bool)>>,
    open: Memo<bool>,
    drawn: Memo<bool>,
}

impl Disclosure {
    fn new(settings: RwSignal<Settings>, by_default: Memo<bool>) -> Self {
        let chosen = RwSignal::new(None::<(DisplayMode, bool)>);
        let open = Memo::new(move |_| match chosen.get() {
            Some((mode, open)) if mode == settings.get().mode => open,
            _ => by_default.get(),
        });
        let drawn = Memo::new(move |before: Option<&bool>| before == Some(&true) || open.get());
        Disclosure {
            settings,
            by_default,
            chosen,
            open,
            drawn,
        }
    }

    /// The header's click. Back to the default is no choice: the block follows the mode (and a
    /// call's status) again.
    fn toggle(&self) {
        let now = !self.open.get_untracked();
        let mode = self.settings.get_untracked().mode;
        self.chosen
            .set((now != self.by_default.get_untracked()).then_some((mode, now)));
    }
}

/// Whether a tool block is open when nobody chose: a call that waits for a person is open in
/// every mode (the question is inside); in normal mode a running call shows its output as it
/// streams, unless the message has so many calls that they all collapse.
fn open_by_default(
    settings: &Settings,
    status: ToolCallStatus,
    streaming: bool,
    tool_count: usize,
) -> bool {
    if status == ToolCallStatus::AwaitingApproval {
        return true;
    }
    match settings.mode {
        DisplayMode::Verbose => true,
        DisplayMode::Minimal => false,
        DisplayMode::Normal => {
            streaming
                && status == ToolCallStatus::Running
                && tool_count <= settings.auto_collapse_tool_count as usize
        }
    }
}

/// What an open tool block shows: the approval, progress, error, arguments and output.
#[component]
fn ToolCallBody(call: Signal<ToolCall>, output: OutputText) -> impl IntoView {
    let error = move || {
        call.with(|c| c.error.as_ref().map(|e| e.message.clone()))
            .map(|message| view! { <p class="tool-error">{message}</p> })
    };
    // While an agent streams the arguments, their text so far; then the parsed arguments.
    let args = Memo::new(move |_| {
        call.with(|c| {
            if c.args_text.is_empty() {
                pretty_args(&c.args)
            } else {
                c.args_text.clone()
            }
        })
    });
    let truncation =
        move || {
            call.with(|c| c.truncated.then_some(c.full_length)).map(|full| {
            let full = full.map(|n| format!(" of {n} characters")).unwrap_or_default();
            view! { <p class="truncation-notice">{format!("The output was cut{full}.")}</p> }
        })
        };
    view! {
        <super::approval::ApprovalPanel call />
        {move || call.with(|c| (c.status == ToolCallStatus::Running).then(|| progress_view(c.progress.as_ref())).flatten())}
        {error}
        <div class="tool-section">
            <div class="tool-label">"Arguments"</div>
            <pre class="tool-args">{args}</pre>
        </div>
        <Show when=move || output.with(|o| !o.is_empty())>
            <ToolOutput output />
        </Show>
        {truncation}
    }
}

fn tool_status(status: ToolCallStatus, duration: Option<String>) -> AnyView {
    match status {
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
                {duration}
            </span>
        }
        .into_any(),
        ToolCallStatus::AwaitingApproval => view! {
            <span class="tool-status">
                <span class="pause" role="img" aria-label="awaiting approval"><Icon name="pause" /></span>
                "Waiting for approval"
            </span>
        }
        .into_any(),
        ToolCallStatus::Error | ToolCallStatus::Cancelled | ToolCallStatus::Denied => view! {
            <span class="tool-status">
                <span class="cross" role="img" aria-label=status_class(status)>"✗"</span>
                {match status {
                    ToolCallStatus::Cancelled => "Cancelled",
                    ToolCallStatus::Denied => "Denied",
                    _ => "Failed",
                }}
                {duration.map(|d| format!(" · {d}"))}
            </span>
        }
        .into_any(),
    }
}

/// A tool's output: in full in verbose mode; otherwise a preview when it is long, with a control
/// to see it all. The output may grow while the call runs; "Show all" stays pressed.
#[component]
fn ToolOutput(output: OutputText) -> impl IntoView {
    let settings = use_settings();
    let show_all = RwSignal::new(false);
    // What is shown, copied once per change (the text node needs its own); the notice when cut.
    let shown = Memo::new(move |_| {
        let settings = settings.get();
        let whole = show_all.get() || settings.mode == DisplayMode::Verbose;
        output.with(|output| shown_output(output, whole, &settings))
    });
    view! {
        <div class="tool-section">
            <div class="tool-label">"Output"</div>
            // `<code>` first: the HTML parser drops a newline right after `<pre>`, which would
            // leave the hydrated DOM without the text node the view expects.
            <pre class="tool-output"><code>{move || shown.with(|shown| shown.0.clone())}</code></pre>
            {move || {
                shown
                    .with(|shown| shown.1.clone())
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

/// The output as shown: whole, or a preview when it is long (by lines or characters, whichever
/// is shorter) with a notice saying how much of it.
fn shown_output(
    output: &str,
    whole: bool,
    settings: &crate::settings::Settings,
) -> (Arc<str>, Option<String>) {
    if whole {
        return (Arc::from(output), None);
    }
    let by_lines = output
        .char_indices()
        .filter(|(_, c)| *c == '\n')
        .nth(settings.auto_collapse_output_lines.saturating_sub(1) as usize)
        .map(|(index, _)| &output[..index]);
    let by_chars = crate::protocol::shorten_chars(output, settings.output_preview_chars as usize);
    let preview = match (by_lines, by_chars) {
        (Some(a), Some(b)) => Some(if a.len() < b.len() { a } else { b }),
        (a, b) => a.or(b),
    };
    match preview {
        Some(preview) => {
            let notice = format!(
                "Showing {} of {} chars",
                group(preview.chars().count()),
                group(output.chars().count())
            );
            (Arc::from(preview), Some(notice))
        }
        None => (Arc::from(output), None),
    }
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
