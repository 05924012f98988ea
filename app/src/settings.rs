//! Display settings: how much of the agent's work a message shows. They live in a cookie so the
//! server renders the page in the chosen mode (no flash of the wrong one) and the browser reads
//! the same value when it hydrates; changes apply at once, without a reload.

use leptos::prelude::*;

pub const COOKIE: &str = "glassbox_settings";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DisplayMode {
    /// The answer only: no tool or reasoning blocks.
    Minimal,
    /// Tool blocks collapsed, expand on click; all collapse when a message has many tools.
    Normal,
    /// Every block expanded, with its full output.
    Verbose,
}

impl DisplayMode {
    pub fn as_str(self) -> &'static str {
        match self {
            DisplayMode::Minimal => "minimal",
            DisplayMode::Normal => "normal",
            DisplayMode::Verbose => "verbose",
        }
    }

    fn parse(text: &str) -> Option<Self> {
        match text {
            "minimal" => Some(DisplayMode::Minimal),
            "normal" => Some(DisplayMode::Normal),
            "verbose" => Some(DisplayMode::Verbose),
            _ => None,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Settings {
    pub mode: DisplayMode,
    /// In normal mode, a message with more tool calls than this shows them all collapsed.
    pub auto_collapse_tool_count: u32,
    /// Output with more lines than this shows a preview.
    pub auto_collapse_output_lines: u32,
    /// Output longer than this shows a preview of this many characters.
    pub output_preview_chars: u32,
    /// Characters of reasoning shown beside a collapsed "Thought for …" header.
    pub reasoning_preview_chars: u32,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            mode: DisplayMode::Normal,
            auto_collapse_tool_count: 5,
            auto_collapse_output_lines: 10,
            output_preview_chars: 500,
            reasoning_preview_chars: 200,
        }
    }
}

impl Settings {
    /// `mode=normal&tools=5&lines=10&output=500&reasoning=200`
    pub fn encode(&self) -> String {
        format!(
            "mode={}&tools={}&lines={}&output={}&reasoning={}",
            self.mode.as_str(),
            self.auto_collapse_tool_count,
            self.auto_collapse_output_lines,
            self.output_preview_chars,
            self.reasoning_preview_chars
        )
    }

    /// Reads the settings from a `Cookie` header value; anything missing or odd keeps its default.
    pub fn from_cookie_header(header: &str) -> Self {
        let mut settings = Settings::default();
        let Some(value) = header
            .split(';')
            .filter_map(|pair| pair.trim().split_once('='))
            .find_map(|(name, value)| (name == COOKIE).then_some(value))
        else {
            return settings;
        };
        for pair in value.split('&') {
            let Some((key, raw)) = pair.split_once('=') else {
                continue;
            };
            let number = || raw.parse::<u32>().ok().map(|n| n.min(1_000_000));
            match key {
                "mode" => settings.mode = DisplayMode::parse(raw).unwrap_or(settings.mode),
                "tools" => {
                    settings.auto_collapse_tool_count =
                        number().unwrap_or(settings.auto_collapse_tool_count)
                }
                "lines" => {
                    settings.auto_collapse_output_lines = number()
                        .unwrap_or(settings.auto_collapse_output_lines)
                        .max(1)
                }
                "output" => {
                    settings.output_preview_chars =
                        number().unwrap_or(settings.output_preview_chars).max(1)
                }
                "reasoning" => {
                    settings.reasoning_preview_chars =
                        number().unwrap_or(settings.reasoning_preview_chars)
                }
                _ => {}
            }
        }
        settings
    }
}

/// Provides the settings signal, read from this request's (or this document's) cookie.
pub fn provide_settings() -> RwSignal<Settings> {
    let settings = RwSignal::new(Settings::from_cookie_header(&request_cookies()));
    provide_context(settings);
    settings
}

pub fn use_settings() -> RwSignal<Settings> {
    use_context::<RwSignal<Settings>>().unwrap_or_else(|| RwSignal::new(Settings::default()))
}

fn request_cookies() -> String {
    #[cfg(feature = "ssr")]
    {
        use_context::<http::request::Parts>()
            .and_then(|parts| {
                parts
                    .headers
                    .get(http::header::COOKIE)
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_owned)
            })
            .unwrap_or_default()
    }
    #[cfg(all(feature = "hydrate", not(feature = "ssr")))]
    {
        use wasm_bindgen::JsCast;
        document()
            .dyn_into::<web_sys::HtmlDocument>()
            .ok()
            .and_then(|d| d.cookie().ok())
            .unwrap_or_default()
    }
    #[cfg(not(any(feature = "ssr", feature = "hydrate")))]
    String::new()
}

/// Stores the settings in the cookie for a year.
pub fn save(settings: &Settings) {
    #[cfg(feature = "hydrate")]
    {
        use wasm_bindgen::JsCast;
        if let Ok(document) = document().dyn_into::<web_sys::HtmlDocument>() {
            let _ = document.set_cookie(&format!(
                "{COOKIE}={}; path=/; max-age=31536000; SameSite=Lax",
                settings.encode()
            ));
        }
    }
    #[cfg(not(feature = "hydrate"))]
    let _ = settings;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_round_trip_through_the_cookie() {
        let settings = Settings {
            mode: DisplayMode::Verbose,
            auto_collapse_tool_count: 3,
            output_preview_chars: 80,
            ..Settings::default()
        };
        let header = format!("other=1; {COOKIE}={}; theme=dark", settings.encode());
        assert_eq!(Settings::from_cookie_header(&header), settings);
    }

    #[test]
    fn odd_cookies_fall_back_to_defaults() {
        assert_eq!(Settings::from_cookie_header(""), Settings::default());
        let odd = Settings::from_cookie_header(&format!("{COOKIE}=mode=loud&tools=-1&output=abc"));
        assert_eq!(odd, Settings::default());
    }
}
