//! How a [`Comparison`] looks: the two runs' headers, their totals, the aligned steps, the
//! answers' word diff and the two timelines on one axis. Every text is the runs' own, inserted as
//! text.

use leptos::prelude::*;

use super::super::trace::timeline::{bar_rows, Axis, Bar};
use super::PageData;
use crate::compare::{
    Comparison, Field, Row, RowChange, RunSide, Step, StepKind, Totals, WordChange, WordOp,
};
use crate::components::chunks::in_chunks;
use crate::components::deferred::waits_from;
use crate::components::inert::inert;
use crate::components::segments::format_duration;

/// Rows of the steps the server's page draws at once; the rest wait until the reader nears them
/// ([`waits_from`]): enough to fill a tall screen.
const ROWS_AT_ONCE: usize = 16;

/// Bars of the timelines the server's page draws at once: none, they are under the rows.
const BARS_AT_ONCE: usize = 0;

/// The page's view; `scroller` is the element the page scrolls in.
pub(super) fn compare_view(page: PageData, scroller: NodeRef<leptos::html::Main>) -> impl IntoView {
    let PageData { a, b, all } = page;
    reveal_later_parts(scroller);
    view! {
        <header class="trace-header compare-header">
            <a href=format!("/t/{}", a.trace_id)>"← Back to run A's trace"</a>
            <h1>"Compare two runs"</h1>
            <div class="compare-sides">{side_card(&a, "A")} {side_card(&b, "B")}</div>
        </header>
        <section class="compare-section" aria-label="Totals">
            <h2>"Totals"</h2>
            {totals_table(&a.totals, &b.totals)}
        </section>
        // The steps, the answers and the timelines are most of the page's nodes and never
        // change: the browser keeps the server's elements instead of hydrating them, and does
        // not decode the comparison they were drawn from.
        {inert(move || view! { <div class="compare-body">{all.read().map(sections)}</div> })}
    }
}

/// Draws the rows and bars the server left out of the first layout as the reader nears them.
fn reveal_later_parts(scroller: NodeRef<leptos::html::Main>) {
    #[cfg(feature = "hydrate")]
    crate::components::when_visible::Reveal::while_mounted(move || scroller.get().map(Into::into));
    #[cfg(not(feature = "hydrate"))]
    let _ = scroller;
}

fn sections(comparison: Comparison) -> impl IntoView {
    let Comparison {
        a,
        b,
        rows,
        answer_diff,
    } = comparison;
    view! {
        <section class="compare-section" aria-label="Steps">
            <h2>"Steps"</h2>
            {steps_view(&rows, &a.steps, &b.steps)}
        </section>
        <section class="compare-section" aria-label="Answers">
            <h2>"Answers"</h2>
            {word_diff_view(answer_diff)}
        </section>
        <section class="compare-section" aria-label="Timelines">
            <h2>"Timelines"</h2>
            {timelines(&a, &b)}
        </section>
    }
}

fn side_card(side: &RunSide, name: &'static str) -> impl IntoView {
    let question = match side.question.is_empty() {
        true => "(the question could not be read)".to_owned(),
        false => side.question.clone(),
    };
    view! {
        <div class=format!("compare-side side-{}", name.to_lowercase())>
            <p class="compare-side-name">
                <a href=format!("/t/{}", side.trace_id)>{format!("Run {name}")}</a>
                <span class=format!("trace-status {}", side.status)>{side.status.to_string()}</span>
            </p>
            <p class="compare-question">{question}</p>
            <p class="muted">{format!("{} · {}", side.model, side.started_at)}</p>
            {side.feedback.as_ref().map(feedback_line)}
        </div>
    }
}

/// The owner's thumbs and comment on a run's answer, as text.
fn feedback_line(feedback: &crate::models::Feedback) -> impl IntoView {
    let rating = match feedback.rating {
        Some(crate::models::Rating::Up) => "Rated up",
        Some(crate::models::Rating::Down) => "Rated down",
        None => "Comment",
    };
    let text = match feedback.comment.is_empty() {
        true => rating.to_owned(),
        false => format!("{rating}: {}", feedback.comment),
    };
    view! { <p class="compare-feedback" data-rating=feedback.rating.map(|r| r.as_str())>{text}</p> }
}

fn tokens(totals: &Totals) -> String {
    match (totals.input_tokens, totals.output_tokens) {
        (Some(input), Some(output)) => format!("{input} in · {output} out"),
        _ => "—".to_owned(),
    }
}

fn duration(ms: Option<u64>) -> String {
    ms.map_or_else(|| "—".to_owned(), format_duration)
}

fn totals_table(a: &Totals, b: &Totals) -> impl IntoView {
    let line = |label: &'static str, x: String, y: String| {
        let class = match x == y {
            true => "",
            false => "differ",
        };
        view! {
            <tr>
                <th scope="row">{label}</th>
                <td class=class>{x}</td>
                <td class=class>{y}</td>
            </tr>
        }
    };
    view! {
        <table class="compare-totals">
            <thead>
                <tr><th></th><th scope="col">"Run A"</th><th scope="col">"Run B"</th></tr>
            </thead>
            <tbody>
                {line("Time", duration(a.duration_ms), duration(b.duration_ms))}
                {line("Tool calls", a.tool_calls.to_string(), b.tool_calls.to_string())}
                {line("Tokens", tokens(a), tokens(b))}
                {line("Errors", a.errors.to_string(), b.errors.to_string())}
            </tbody>
        </table>
    }
}

/// The mark of a row: what happened to its step from A to B.
fn change_mark(row: &Row) -> &'static str {
    match (row.change, row.moved) {
        (RowChange::Inserted, _) => "+ only in B",
        (RowChange::Deleted, _) => "− only in A",
        (RowChange::Changed, true) => "changed, moved",
        (RowChange::Changed, false) => "changed",
        (RowChange::Same, true) => "moved",
        (RowChange::Same, false) => "same",
    }
}

fn steps_view(rows: &[Row], a: &[Step], b: &[Step]) -> impl IntoView {
    if rows.is_empty() {
        return view! { <p class="muted">"Neither run has any step."</p> }.into_any();
    }
    let rows: Vec<AnyView> = rows
        .iter()
        .enumerate()
        .map(|(index, row)| {
            let change = serde_json::to_value(row.change)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default();
            let left = step_cell(row.a.and_then(|i| a.get(i)), &row.differs);
            let right = step_cell(row.b.and_then(|j| b.get(j)), &row.differs);
            view! {
                <li
                    class=format!("compare-row {change}")
                    data-change=change.clone()
                    hidden=waits_from(index, ROWS_AT_ONCE)
                >
                    <span class="change-mark">{change_mark(row)}</span>
                    {left}
                    {right}
                </li>
            }
            .into_any()
        })
        .collect();
    view! { <ol class="compare-rows">{in_chunks(rows)}</ol> }.into_any()
}

fn step_label(step: &Step) -> String {
    match step.kind {
        StepKind::Reasoning => "Reasoning".to_owned(),
        StepKind::Answer => "Answer".to_owned(),
        StepKind::ToolCall => step.name.clone(),
    }
}

fn step_cell(step: Option<&Step>, differs: &[Field]) -> AnyView {
    let Some(step) = step else {
        return view! { <div class="compare-cell empty" aria-hidden="true"></div> }.into_any();
    };
    let mark = |field: Field| match differs.contains(&field) {
        true => "differ",
        false => "",
    };
    let tokens = step
        .tokens
        .map(|n| format!("{n} tokens"))
        .unwrap_or_default();
    view! {
        <div class="compare-cell">
            <p class="compare-step-name">
                <code class=format!("tool-name {}", mark(Field::Args))>{step_label(step)}</code>
                <span class=format!("compare-step-status {} {}", step.status, mark(Field::Status))>
                    {step.status.clone()}
                </span>
            </p>
            <p class=format!("compare-step-summary {}", mark(Field::Args))>{step.summary.clone()}</p>
            <p class="compare-step-facts muted">
                <span class=mark(Field::Duration)>{duration(step.duration_ms)}</span>
                " "
                <span class=mark(Field::Tokens)>{tokens}</span>
            </p>
            {step.note.clone().map(|note| view! { <p class="compare-step-note">"Note: " {note}</p> })}
        </div>
    }
    .into_any()
}

fn word_diff_view(diff: Vec<WordChange>) -> impl IntoView {
    if diff.is_empty() {
        return view! { <p class="muted">"Neither run has an answer."</p> }.into_any();
    }
    let words = diff
        .into_iter()
        .map(|change| match change.op {
            WordOp::Equal => view! { <span>{change.text}</span> }.into_any(),
            WordOp::Delete => view! { <del>{change.text}</del> }.into_any(),
            WordOp::Insert => view! { <ins>{change.text}</ins> }.into_any(),
        })
        .collect_view();
    view! {
        <p class="muted">"Run A's answer turned into run B's: removed words struck through, added ones underlined."</p>
        <div class="word-diff">{words}</div>
    }
    .into_any()
}

/// Where a run's steps end, in milliseconds from its start.
fn span(side: &RunSide) -> i64 {
    let steps = side
        .steps
        .iter()
        .map(|step| step.start_ms + step.duration_ms.unwrap_or(0) as i64);
    let total = side.totals.duration_ms.map_or(0, |ms| ms as i64);
    steps.chain([total]).max().unwrap_or(0)
}

/// Both runs on one time axis, each from its own start.
fn timelines(a: &RunSide, b: &RunSide) -> impl IntoView {
    let axis = Axis {
        origin: 0,
        end: span(a).max(span(b)).max(1),
    };
    let lane = |side: &RunSide, name: &'static str| {
        let bars: Vec<Bar> = side
            .steps
            .iter()
            .map(|step| Bar {
                label: step_label(step),
                kind: match step.kind {
                    StepKind::Reasoning => "reasoning",
                    StepKind::ToolCall => "tool",
                    StepKind::Answer => "text",
                },
                start: step.start_ms,
                end: step.start_ms + step.duration_ms.unwrap_or(0) as i64,
            })
            .collect();
        view! {
            <div
                class="timeline compare-timeline"
                aria-label=format!("Timeline of run {name}")
                style=format!("--bars:{}", side.steps.len())
            >
                <h3>{format!("Run {name} · {}", duration(Some(span(side).max(0) as u64)))}</h3>
                {in_chunks(bar_rows(bars, axis, BARS_AT_ONCE))}
            </div>
        }
    };
    view! {
        <p class="muted">{format!("One axis for both: 0 – {}", format_duration(axis.end as u64))}</p>
        {lane(a, "A")}
        {lane(b, "B")}
    }
}
