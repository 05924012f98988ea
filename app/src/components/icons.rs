//! Small inline SVG icons (stroke-based, 16 px, `currentColor`), so they render the same in every
//! browser and font setup. Decorative: hidden from screen readers.

use leptos::prelude::*;

/// The icon for a tool or a segment kind.
#[component]
pub fn Icon(name: &'static str) -> impl IntoView {
    let path = match name {
        "grep_search" => "M7 12a5 5 0 1 1 0-10 5 5 0 0 1 0 10zm3.6-1.4L14 14",
        "read_file" => "M4 1.5h5l3 3v10H4zM9 1.5v3h3M6 8h4M6 10.5h4",
        "list_dir" => "M1.5 3.5h4.5l1.5 1.5h7v8h-13z",
        // Waiting for approval: two bars (U+23F8 is missing from many fonts, Chromium's included).
        "pause" => "M5.5 3.5v9M10.5 3.5v9",
        "reasoning" => "M8 2.5a4 4 0 0 0-2.5 7.1V11h5V9.6A4 4 0 0 0 8 2.5zM6 13.5h4",
        _ => "M10.5 2a3 3 0 0 0-2.8 4.1L2 11.8 4.2 14l5.7-5.7A3 3 0 0 0 14 5.5l-1.8 1.8-2-.5-.5-2z",
    };
    view! {
        <svg class="icon" viewBox="0 0 16 16" width="16" height="16" aria-hidden="true" focusable="false">
            <path d=path fill="none" stroke="currentColor" stroke-width="1.4" stroke-linecap="round" stroke-linejoin="round"></path>
        </svg>
    }
}
