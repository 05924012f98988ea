//! The search box of the sidebar (issue 35): `/` focuses it (unless one is typing in a field),
//! each change searches the user's conversations once typing pauses (`GET /api/search`), and
//! each hit links to its conversation at the message and step (`?m=…&step=…`, which
//! `reveal_search_target` opens and scrolls to). A hit's snippet is text: its marks become `<mark>` elements around text nodes,
//! never markup from the stored text.

use leptos::prelude::*;

use crate::models::SearchHit;

/// A snippet cut at its marks: `(text, marked)` pieces in order. Marks out of order, overlapping
/// or past the end are skipped.
pub fn pieces(snippet: &str, marks: &[[usize; 2]]) -> Vec<(String, bool)> {
    let chars: Vec<char> = snippet.chars().collect();
    let mut out = Vec::new();
    let mut at = 0;
    for &[from, to] in marks {
        if from < at || from >= to || to > chars.len() {
            continue;
        }
        if from > at {
            out.push((chars[at..from].iter().collect(), false));
        }
        out.push((chars[from..to].iter().collect(), true));
        at = to;
    }
    if at < chars.len() {
        out.push((chars[at..].iter().collect(), false));
    }
    out
}

/// What a hit is, in a word or two.
fn kind_label(hit: &SearchHit) -> String {
    match (hit.kind.as_str(), &hit.tool) {
        ("tool", Some(tool)) => format!("tool {tool}"),
        ("title", _) => "title".to_owned(),
        ("feedback", _) => match hit.status.as_deref() {
            Some("up") => "feedback 👍".to_owned(),
            Some("down") => "feedback 👎".to_owned(),
            _ => "note".to_owned(),
        },
        (kind, _) => kind.to_owned(),
    }
}

/// The results as they stand: none asked yet, an error, or the hits (only the browser asks).
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(not(feature = "hydrate"), allow(dead_code))]
enum Found {
    Nothing,
    Failed(String),
    Hits(Vec<SearchHit>),
}

#[component]
pub fn SearchBox() -> impl IntoView {
    let found = RwSignal::new(Found::Nothing);
    let input = NodeRef::<leptos::html::Input>::new();
    // Each search's number: an answer to an older one is dropped.
    let asked = StoredValue::new(0u64);
    #[cfg(feature = "hydrate")]
    slash_focuses(input);
    let search = move |query: String, wait: std::time::Duration| {
        asked.update_value(|n| *n += 1);
        if query.trim().is_empty() {
            found.set(Found::Nothing);
        } else {
            ask(query, asked, found, wait);
        }
    };
    // Typing asks once the keys pause; Enter asks at once.
    let on_input = move |event: leptos::ev::Event| search(event_target_value(&event), TYPING_PAUSE);
    let on_submit = move |event: leptos::ev::SubmitEvent| {
        event.prevent_default();
        if let Some(input) = input.get_untracked() {
            search(input.value(), std::time::Duration::ZERO);
        }
    };
    let on_keydown = move |event: leptos::ev::KeyboardEvent| {
        if event.key() == "Escape" {
            found.set(Found::Nothing);
        }
    };
    view! {
        <form class="search" role="search" on:submit=on_submit>
            <input
                type="search"
                id="search-input"
                name="q"
                placeholder="Search (press /)"
                aria-label="Search conversations"
                aria-keyshortcuts="/"
                autocomplete="off"
                maxlength="1000"
                node_ref=input
                on:input=on_input
                on:keydown=on_keydown
            />
        </form>
        // Drawn from a chunk of its own (`on_demand`): nothing is found before one types.
        {move || {
            let found = found.get();
            (found != Found::Nothing).then(|| Suspend::new(results_view(found)))
        }}
    }
}

/// How long typing must pause before a search is asked: one request per word typed, not per key.
const TYPING_PAUSE: std::time::Duration = std::time::Duration::from_millis(150);

/// Searches for `query` in the browser after `wait`, unless a newer search was asked by then;
/// the answer counts only if no newer search was asked meanwhile.
#[cfg(feature = "hydrate")]
fn ask(query: String, asked: StoredValue<u64>, found: RwSignal<Found>, wait: std::time::Duration) {
    let mine = asked.get_value();
    let go = move || {
        if asked.get_value() != mine {
            return;
        }
        leptos::task::spawn_local(async move {
            let answer = search_hits(query).await;
            if asked.get_value() != mine {
                return;
            }
            found.set(answer);
        });
    };
    match wait.is_zero() {
        true => go(),
        false => leptos::leptos_dom::helpers::set_timeout(go, wait),
    }
}

/// The search's answer, asked and read in the chunk of the results' view (`on_demand`).
#[cfg(feature = "hydrate")]
#[leptos::lazy]
async fn search_hits(query: String) -> Found {
    match crate::client::search(&query).await {
        Ok(results) => Found::Hits(results.results),
        Err(error) => Found::Failed(error.to_string()),
    }
}

/// On the server nothing is typed: the box renders empty.
#[cfg(not(feature = "hydrate"))]
fn ask(
    _query: String,
    _asked: StoredValue<u64>,
    _found: RwSignal<Found>,
    _wait: std::time::Duration,
) {
}

/// The results' view (never asked for [`Found::Nothing`]).
#[leptos::lazy]
fn results_view(found: Found) -> AnyView {
    match found {
        Found::Nothing => ().into_any(),
        Found::Failed(message) => {
            view! { <p class="error search-error" role="alert">{message}</p> }.into_any()
        }
        Found::Hits(hits) if hits.is_empty() => {
            view! { <p class="muted search-none" role="status">"Nothing found."</p> }.into_any()
        }
        Found::Hits(hits) => view! {
            <ul class="search-results" aria-label="Search results">
                {hits.into_iter().map(|hit| view! { <li><HitLink hit /></li> }).collect_view()}
            </ul>
        }
        .into_any(),
    }
}

#[component]
fn HitLink(hit: SearchHit) -> impl IntoView {
    let href = crate::client::search_hit_href(&hit);
    let label = kind_label(&hit);
    let snippet = pieces(&hit.snippet, &hit.marks)
        .into_iter()
        .map(|(text, marked)| match marked {
            true => view! { <mark>{text}</mark> }.into_any(),
            false => text.into_any(),
        })
        .collect_view();
    view! {
        <a class="search-hit" href=href data-kind=hit.kind.clone()>
            <span class="search-hit-head">
                <span class="search-hit-title">{hit.conversation_title.clone()}</span>
                <span class="search-hit-kind muted">{label}</span>
            </span>
            <span class="search-hit-snippet">{snippet}</span>
        </a>
    }
}

/// `/` focuses the search box, unless the key goes to a field (an input, a text area, a select,
/// something editable) or comes with a modifier.
#[cfg(feature = "hydrate")]
fn slash_focuses(input: NodeRef<leptos::html::Input>) {
    use wasm_bindgen::JsCast;
    let handle = window_event_listener(leptos::ev::keydown, move |event| {
        if event.key() != "/" || event.ctrl_key() || event.meta_key() || event.alt_key() {
            return;
        }
        let typing = event
            .target()
            .and_then(|target| target.dyn_into::<web_sys::HtmlElement>().ok())
            .is_some_and(|element| {
                matches!(element.tag_name().as_str(), "INPUT" | "TEXTAREA" | "SELECT")
                    || element.is_content_editable()
            });
        if typing {
            return;
        }
        if let Some(input) = input.get_untracked() {
            event.prevent_default();
            let _ = input.focus();
            input.select();
        }
    });
    on_cleanup(move || handle.remove());
}

/// Opens a search hit's element (a step's block) and scrolls it into view.
#[cfg(feature = "hydrate")]
pub fn reveal_search_target(target: &web_sys::Element) {
    super::segments::open_block(target);
    let _ = target.set_attribute("data-search-target", "");
    target.scroll_into_view();
}

/// The element a search hit points at, when its message is on the page: the block of step
/// `step` (a tool call's or reasoning part's id), or the message.
#[cfg(feature = "hydrate")]
pub fn find_search_target(message: &str, step: Option<&str>) -> Option<web_sys::Element> {
    use wasm_bindgen::JsCast;
    let document = web_sys::window().and_then(|window| window.document())?;
    let find = |selector: &str, attribute: &str, value: &str| {
        let list = document.query_selector_all(selector).ok()?;
        (0..list.length())
            .filter_map(|index| list.item(index))
            .filter_map(|node| node.dyn_into::<web_sys::Element>().ok())
            .find(|element| element.get_attribute(attribute).as_deref() == Some(value))
    };
    let article = find("article[data-message-id]", "data-message-id", message)?;
    let block = step.and_then(|step| {
        find(".segment[data-call-id]", "data-call-id", step)
            .or_else(|| find(".segment[data-step]", "data-step", step))
    });
    Some(block.unwrap_or(article))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_snippet_is_cut_at_its_marks_and_bad_marks_are_skipped() {
        let cut = pieces(
            "a <b>walrus</b> é walrus",
            &[[5, 11], [3, 4], [18, 24], [20, 99]],
        );
        assert_eq!(
            cut,
            [
                ("a <b>".to_owned(), false),
                ("walrus".to_owned(), true),
                ("</b> é ".to_owned(), false),
                ("walrus".to_owned(), true),
            ]
        );
        assert_eq!(pieces("plain", &[]), [("plain".to_owned(), false)]);
    }
}
