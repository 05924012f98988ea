//! `/compare/{a}/{b}`: two of the user's runs side by side (issue 36). The server compares them
//! ([`crate::compare`], through the `compare` server function) and the page draws the
//! [`Comparison`]: the aligned steps, the totals, the answers' word diff and both timelines on one
//! time axis. Like the trace page, its code is a wasm chunk of its own (`--split`), so the chat's
//! bundle does not carry it.

use leptos::prelude::*;
use leptos_router::{hooks::use_params_map, lazy_route, LazyRoute};
use serde::{de::DeserializeOwned, Deserialize, Deserializer, Serialize, Serializer};

mod view;

use crate::api::get_comparison;
use crate::compare::{Comparison, RunSide};
use crate::json;

/// Nothing is read before the chunk is in: the comparison's resource (and its JSON decoder) is
/// made in `view`, so none of the compare page's code is in the chat's bundle. The page's
/// request therefore starts once its chunk has loaded, not beside it as the trace page's does:
/// with the resource in `data`, the chat's wasm grew by 47 KB raw and 10 KB brotli.
pub struct ComparePage;

#[lazy_route]
impl LazyRoute for ComparePage {
    fn data() -> Self {
        ComparePage
    }

    fn view(_this: Self) -> AnyView {
        let params = use_params_map();
        let ids = Memo::new(move |_| {
            let params = params.read();
            (
                params.get("a").unwrap_or_default(),
                params.get("b").unwrap_or_default(),
            )
        });
        let comparison: json::Resource<Result<Option<PageData>, ServerFnError>> = json::resource(
            move || ids.get(),
            |(a, b)| async move { get_comparison(a, b).await.map(|c| c.map(PageData::of)) },
        );
        let scroller = NodeRef::new();
        view! {
            <main class="trace-page compare-page" node_ref=scroller>
                <Transition fallback=|| view! { <p class="muted">"Comparing the runs…"</p> }>
                    {move || Suspend::new(async move {
                        match comparison.await {
                            Ok(Some(page)) => view::compare_view(page, scroller).into_any(),
                            Ok(None) => {
                                super::not_found::status_not_found();
                                view! {
                                    <p class="error notice">"One of these runs does not exist."</p>
                                    <a href="/">"Back to the chat"</a>
                                }
                                .into_any()
                            }
                            Err(error) => view! {
                                <p class="error notice">{server_message(&error)}</p>
                                <a href="/">"Back to the chat"</a>
                            }
                            .into_any(),
                        }
                    })}
                </Transition>
            </main>
        }
        .into_any()
    }
}

/// The comparison as the page's resource carries it from the server's render to the browser:
/// the two runs' headers and totals, which hydration reads, and the whole comparison as JSON
/// text, which only a view built in the browser decodes (the steps, answers and timelines are
/// [`inert`](crate::components::inert): hydration keeps the server's elements). Decoding all of
/// it for two runs of 500 steps (about 200 KB) took 8–20 ms of the hydrating task.
#[derive(Clone, Serialize, Deserialize)]
pub(crate) struct PageData {
    /// Run A without its steps and answer.
    pub a: RunSide,
    /// Run B without its steps and answer.
    pub b: RunSide,
    pub all: Later<Comparison>,
}

impl PageData {
    fn of(mut comparison: Comparison) -> Self {
        let head = |side: &RunSide| RunSide {
            steps: Vec::new(),
            answer: String::new(),
            ..side.clone()
        };
        let (a, b) = (head(&comparison.a), head(&comparison.b));
        // What the page does not show stays out of the HTML: the answers (their word diff is
        // there) and the calls' arguments (their one-line summary is).
        for side in [&mut comparison.a, &mut comparison.b] {
            side.answer.clear();
            for step in &mut side.steps {
                step.args = serde_json::Value::Null;
            }
        }
        PageData {
            a,
            b,
            all: Later::Value(comparison),
        }
    }
}

/// A value serialized as JSON text (a string inside the surrounding JSON) and decoded only when
/// read.
#[derive(Clone)]
pub(crate) enum Later<T> {
    Value(T),
    Text(String),
}

impl<T: DeserializeOwned> Later<T> {
    /// The value, decoding it if it came as text (`None` if that text is not a `T`).
    pub fn read(self) -> Option<T> {
        match self {
            Later::Value(value) => Some(value),
            Later::Text(text) => json::parse(&text).ok(),
        }
    }
}

impl<T: Serialize> Serialize for Later<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Later::Value(value) => serde_json::to_string(value)
                .map_err(serde::ser::Error::custom)?
                .serialize(serializer),
            Later::Text(text) => text.serialize(serializer),
        }
    }
}

impl<'de, T> Deserialize<'de> for Later<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        String::deserialize(deserializer).map(Later::Text)
    }
}

/// A server function's error as its message, without the "error running server function" frame.
fn server_message(error: &ServerFnError) -> String {
    match error {
        ServerFnError::ServerError(message) => message.clone(),
        other => other.to_string(),
    }
}
