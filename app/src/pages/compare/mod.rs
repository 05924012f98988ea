//! `/compare/{a}/{b}`: two of the user's runs side by side (issue 36). The server compares them
//! ([`crate::compare`], through the `compare` server function) and the page draws the
//! [`Comparison`]: the aligned steps, the totals, the answers' word diff and both timelines on one
//! time axis. Like the trace page, its code is a wasm chunk of its own (`--split`), so the chat's
//! bundle does not carry it.

use leptos::prelude::*;
use leptos_router::{hooks::use_params_map, lazy_route, LazyRoute};

mod view;

use crate::api::get_comparison;
use crate::compare::Comparison;
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
        let comparison: json::Resource<Result<Option<Comparison>, ServerFnError>> =
            json::resource(move || ids.get(), |(a, b)| get_comparison(a, b));
        view! {
            <main class="trace-page compare-page">
                <Transition fallback=|| view! { <p class="muted">"Comparing the runs…"</p> }>
                    {move || Suspend::new(async move {
                        match comparison.await {
                            Ok(Some(comparison)) => view::compare_view(comparison).into_any(),
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

/// A server function's error as its message, without the "error running server function" frame.
fn server_message(error: &ServerFnError) -> String {
    match error {
        ServerFnError::ServerError(message) => message.clone(),
        other => other.to_string(),
    }
}
