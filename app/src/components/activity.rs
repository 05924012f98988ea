//! The activity strip under an answer: each tool call as a lane on one time axis, so calls that
//! ran side by side overlap and a long one stands out. Clicking a lane opens its tool block.
//!
//! Only the message's own timestamps are used (never the clock), so the server's HTML and the
//! hydrated page agree; a call still running reaches to the latest moment the message knows of.

use leptos::prelude::*;

use super::feed::MessageModel;
use super::segments::{format_duration, status_class};
use crate::protocol::{parse_rfc3339_millis, Segment, ToolCallStatus};
use crate::settings::{use_settings, DisplayMode};

/// One lane: where its bar starts and how wide it is, in percent of the strip.
#[derive(Clone, Debug, PartialEq)]
pub struct Lane {
    pub call_id: String,
    pub label: String,
    pub status: ToolCallStatus,
    pub left: f64,
    pub width: f64,
    pub took: Option<u64>,
}

/// The lanes of the message's tool calls, in the order they started.
pub fn lanes(model: &MessageModel) -> Vec<Lane> {
    let calls: Vec<(String, String, ToolCallStatus, i64, Option<u64>)> =
        model.blocks.with(|blocks| {
            blocks
                .iter()
                .filter_map(|block| {
                    block.segment.with(|segment| match segment {
                        Segment::ToolCall(call) => Some((
                            call.call_id.clone(),
                            call.display.clone().unwrap_or_else(|| call.name.clone()),
                            call.status,
                            parse_rfc3339_millis(&call.started_at)?,
                            call.duration_ms,
                        )),
                        _ => None,
                    })
                })
                .collect()
        });
    let Some(origin) = calls.iter().map(|call| call.3).min() else {
        return Vec::new();
    };
    let known_end = calls
        .iter()
        .map(|call| call.3 + call.4.unwrap_or(0) as i64)
        .max()
        .unwrap_or(origin);
    let span = (known_end - origin).max(1) as f64;
    let mut lanes: Vec<Lane> = calls
        .into_iter()
        .map(|(call_id, label, status, start, took)| {
            let end = took.map_or(known_end, |ms| start + ms as i64);
            // `clamp` only with constant bounds: with computed ones it panics when they cross.
            let left = ((start - origin) as f64 / span * 100.0).clamp(0.0, 99.0);
            let width = ((end - start).max(0) as f64 / span * 100.0)
                .max(1.0)
                .min(100.0 - left);
            Lane {
                call_id,
                label,
                status,
                left,
                width,
                took,
            }
        })
        .collect();
    lanes.sort_by(|a, b| a.left.total_cmp(&b.left));
    lanes
}

#[component]
pub fn ActivityStrip(model: MessageModel) -> impl IntoView {
    let settings = use_settings();
    let lanes = Memo::new(move |_| lanes(&model));
    let shown = move || settings.get().mode != DisplayMode::Minimal && !lanes.with(Vec::is_empty);
    let draw = move || {
        lanes
            .get()
            .into_iter()
            .map(|lane| {
                let took = lane.took.map(format_duration).unwrap_or_else(|| "running".into());
                let title = format!("{} · {took}", lane.label);
                let call_id = lane.call_id.clone();
                view! {
                    <li class="activity-lane">
                        <button
                            type="button"
                            class=format!("lane-button {}", status_class(lane.status))
                            title=title.clone()
                            aria-label=format!("{title}: show this tool call")
                            data-call-id=lane.call_id.clone()
                            on:click=move |event| open_block(&event, &call_id)
                        >
                            <span class="lane-label">{lane.label}</span>
                            <span class="lane-track">
                                <span class="lane-bar" style=format!("left:{:.2}%;width:{:.2}%", lane.left, lane.width)></span>
                            </span>
                        </button>
                    </li>
                }
            })
            .collect_view()
    };
    view! {
        <Show when=shown>
            <ol class="activity-strip" aria-label="Tool calls over time">{draw}</ol>
        </Show>
    }
    .into_any()
}

/// Opens the tool block of `call_id` in the lane's own message and brings it into view, as a
/// click on the block's header would (the block keeps it as the reader's choice).
fn open_block(event: &leptos::ev::MouseEvent, call_id: &str) {
    #[cfg(feature = "hydrate")]
    {
        use wasm_bindgen::JsCast;
        let message = event
            .current_target()
            .and_then(|target| target.dyn_into::<web_sys::Element>().ok())
            .and_then(|button| button.closest("article").ok().flatten());
        let Some(blocks) = message.and_then(|m| m.query_selector_all(".segment.tool-call").ok())
        else {
            return;
        };
        let found = (0..blocks.length())
            .filter_map(|index| blocks.item(index))
            .filter_map(|node| node.dyn_into::<web_sys::Element>().ok())
            .find(|block| block.get_attribute("data-call-id").as_deref() == Some(call_id));
        if let Some(block) = found {
            let header = super::segments::open_block(&block);
            block.scroll_into_view_with_bool(false);
            if let Some(header) = header {
                let _ = header.focus();
            }
        }
    }
    #[cfg(not(feature = "hydrate"))]
    let _ = (event, call_id);
}
