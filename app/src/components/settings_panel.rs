use leptos::prelude::*;

use crate::settings::{save, use_settings, DisplayMode, Settings};

/// The settings: display mode and the collapse and preview limits. Applies at once and persists.
/// The panel's controls are drawn the first time it opens, from a chunk of their own
/// (`on_demand`); the server renders the button and the closed, empty panel.
#[component]
pub fn SettingsPanel() -> impl IntoView {
    let open = RwSignal::new(false);
    super::escape::close_on_escape(open);
    view! {
        <div class="settings">
            <button
                type="button"
                class="settings-toggle"
                aria-expanded=move || open.get().to_string()
                aria-controls="settings-panel"
                on:click=move |_| open.update(|o| *o = !*o)
            >
                "Settings"
            </button>
            <div id="settings-panel" class="settings-panel" role="group" aria-label="Settings" hidden=move || !open.get()>
                {super::on_demand::once_wanted(move || open.get(), move || settings_controls(open))}
            </div>
        </div>
    }
    .into_any()
}

/// The panel's content.
#[leptos::lazy]
fn settings_controls(open: RwSignal<bool>) -> AnyView {
    let settings = use_settings();
    view! {
        <div class="settings-head">
            <h2>"Settings"</h2>
            <button type="button" class="settings-close" aria-label="Close" title="Close (Esc)" on:click=move |_| open.set(false)>"×"</button>
        </div>
        <fieldset class="mode-group">
            <legend>"Agent transparency"</legend>
            {mode_option(settings, DisplayMode::Minimal, "Minimal", "The answer only: reasoning and tool calls are hidden.")}
            {mode_option(settings, DisplayMode::Normal, "Normal", "Reasoning and tool calls as collapsed blocks; a running tool shows its output.")}
            {mode_option(settings, DisplayMode::Verbose, "Verbose", "Everything expanded: every reasoning part, argument and output.")}
        </fieldset>
        <fieldset class="limits">
            <legend>"Limits"</legend>
            {number(settings, "Collapse all when more tools than", "tool calls", |s| s.auto_collapse_tool_count, |s, v| s.auto_collapse_tool_count = v)}
            {number(settings, "Preview output longer than (lines)", "lines", |s| s.auto_collapse_output_lines, |s, v| s.auto_collapse_output_lines = v)}
            {number(settings, "Output preview (characters)", "characters", |s| s.output_preview_chars, |s, v| s.output_preview_chars = v)}
            {number(settings, "Reasoning preview (characters)", "characters", |s| s.reasoning_preview_chars, |s, v| s.reasoning_preview_chars = v)}
        </fieldset>
        <p class="muted settings-note">"Changes apply at once and are kept in this browser."</p>
        <fieldset class="models-group">
            <legend>"Models"</legend>
            <ReloadModels />
        </fieldset>
        <fieldset class="danger-zone">
            <legend>"Conversations"</legend>
            <super::manage::DeleteAll />
        </fieldset>
    }
    .into_any()
}

/// Asks the servers configured with `"models": "discover"` for their models again, then reloads
/// the page so the model picker lists them.
#[component]
fn ReloadModels() -> impl IntoView {
    let note = RwSignal::new(None::<String>);
    let busy = RwSignal::new(false);
    let reload = move |_| {
        busy.set(true);
        #[cfg(feature = "hydrate")]
        leptos::task::spawn_local(async move {
            match crate::client::reload_models().await {
                Ok(_) => {
                    let _ = window().location().reload();
                }
                Err(problem) => {
                    note.set(Some(format!("Could not reload: {problem}")));
                    busy.set(false);
                }
            }
        });
    };
    view! {
        <button type="button" class="reload-models" disabled=move || busy.get() on:click=reload>
            {move || if busy.get() { "Asking the servers…" } else { "Reload models" }}
        </button>
        <p class="muted settings-note">"Lists again the models of servers configured with \"models\": \"discover\"."</p>
        {move || note.get().map(|message| view! { <p class="error" role="alert">{message}</p> })}
    }
}

/// Changes the settings and keeps them in this browser.
fn update(settings: RwSignal<Settings>, change: &dyn Fn(&mut Settings)) {
    settings.update(|settings| change(settings));
    save(&settings.get_untracked());
}

/// One display mode, as a radio button with its hint.
fn mode_option(
    settings: RwSignal<Settings>,
    mode: DisplayMode,
    label: &'static str,
    hint: &'static str,
) -> impl IntoView {
    view! {
        <label class="mode-option">
            <input
                type="radio"
                name="display-mode"
                value=mode.as_str()
                prop:checked=move || settings.get().mode == mode
                on:change=move |_| update(settings, &|s| s.mode = mode)
            />
            <span class="mode-text">
                <span class="mode-name">{label}</span>
                <span class="mode-hint muted">{hint}</span>
            </span>
        </label>
    }
}

/// One limit, as a number field (1 to 100,000).
fn number(
    settings: RwSignal<Settings>,
    label: &'static str,
    unit: &'static str,
    get: fn(&Settings) -> u32,
    set: fn(&mut Settings, u32),
) -> impl IntoView {
    view! {
        <label class="number-setting">
            <span class="number-label">{label}</span>
            <span class="number-field">
            <input
                type="number"
                min="1"
                max="100000"
                inputmode="numeric"
                prop:value=move || get(&settings.get()).to_string()
                on:change=move |event| {
                    if let Ok(value) = event_target_value(&event).trim().parse::<u32>() {
                        update(settings, &|s| set(s, value.clamp(1, 100_000)));
                    }
                }
            />
            <span class="unit muted">{unit}</span>
            </span>
        </label>
    }
}
