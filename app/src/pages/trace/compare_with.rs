//! "Compare with…": the owner's other runs (those of this conversation first), each a link to
//! `/compare/{this}/{other}`. The list is asked for when the panel first opens; the server renders
//! it closed and empty.

use leptos::prelude::*;

use crate::api::get_compare_choices;
use crate::compare::TraceChoice;
use crate::protocol::shorten_chars;

/// How much of a question a choice shows, in characters.
const QUESTION_CHARS: usize = 120;

#[component]
pub(super) fn CompareWith(trace_id: String, conversation_id: String) -> impl IntoView {
    let choices = RwSignal::new(None::<Result<Vec<TraceChoice>, String>>);
    let loaded = RwSignal::new(false);
    let this = StoredValue::new(trace_id);
    let on_toggle = move |_| {
        if !loaded.get_untracked() {
            loaded.set(true);
            leptos::task::spawn_local(async move {
                let found = get_compare_choices(this.get_value()).await;
                choices.set(Some(found.map_err(|error| error.to_string())));
            });
        }
    };
    let list = move || match choices.get() {
        None => view! { <p class="muted">"Loading your runs…"</p> }.into_any(),
        Some(Err(message)) => view! { <p class="error" role="alert">{message}</p> }.into_any(),
        Some(Ok(list)) if list.is_empty() => {
            view! { <p class="muted">"You have no other run to compare this one with."</p> }
                .into_any()
        }
        Some(Ok(list)) => {
            let items = list
                .into_iter()
                .map(|choice| choice_item(&this.get_value(), &conversation_id, choice))
                .collect_view();
            view! { <ul class="compare-choices">{items}</ul> }.into_any()
        }
    };
    view! {
        <details class="compare-with" on:toggle=on_toggle>
            <summary>"Compare with…"</summary>
            <div class="compare-with-body">{list}</div>
        </details>
    }
}

fn choice_item(this: &str, conversation_id: &str, choice: TraceChoice) -> impl IntoView {
    let question = match shorten_chars(&choice.question, QUESTION_CHARS) {
        Some(short) => format!("{short}…"),
        None => choice.question.clone(),
    };
    let place = match choice.conversation_id == conversation_id {
        true => "this conversation".to_owned(),
        false => choice.conversation_title.clone(),
    };
    let facts = format!(
        "{} · {} · {} · {place}",
        choice.model, choice.started_at, choice.status
    );
    view! {
        <li>
            <a class="compare-choice" href=format!("/compare/{this}/{}", choice.trace_id)>
                <span class="compare-choice-question">{question}</span>
                <span class=format!("compare-choice-facts muted {}", choice.status)>{facts}</span>
            </a>
        </li>
    }
}
