//! The Agent Inspector tab: every model request and tool call of the run as a drop-down.

use leptos::prelude::*;

use crate::api::get_inspector;
use crate::json;

/// The Agent Inspector: every entry as a drop-down; long strings in multi-line boxes.
#[component]
pub(super) fn InspectorView(trace_id: String, share: Option<String>) -> impl IntoView {
    let entries = json::resource(
        move || trace_id.clone(),
        move |trace_id| get_inspector(trace_id, share.clone()),
    );
    view! {
        <div class="inspector">
            <Transition fallback=|| view! { <p class="muted">"Loading…"</p> }>
                {move || Suspend::new(async move {
                    match entries.await {
                        Ok(entries) if entries.is_empty() => {
                            view! { <p class="muted">"This run made no model requests and no tool calls."</p> }.into_any()
                        }
                        Ok(entries) => entries
                            .into_iter()
                            .enumerate()
                            .map(|(index, entry)| view! { <InspectorEntry index entry /> })
                            .collect_view()
                            .into_any(),
                        Err(error) => view! { <p class="error">{error.to_string()}</p> }.into_any(),
                    }
                })}
            </Transition>
        </div>
    }
    .into_any()
}

fn as_text(value: &serde_json::Value) -> String {
    match value {
        serde_json::Value::String(text) => text.clone(),
        serde_json::Value::Null => String::new(),
        other => serde_json::to_string_pretty(other).unwrap_or_default(),
    }
}

#[component]
fn Field(label: &'static str, value: String) -> impl IntoView {
    let rows = value.lines().count().clamp(1, 12);
    view! {
        <label class="inspector-field">
            <span class="inspector-label">{label}</span>
            <textarea readonly rows=rows.to_string()>{value}</textarea>
        </label>
    }
}

#[component]
fn InspectorEntry(index: usize, entry: crate::models::InspectorEntry) -> impl IntoView {
    use crate::models::InspectorEntry as Entry;
    let (name, arguments, result, cli_output, status) = match entry {
        Entry::LlmRequest(entry) => return llm_request_entry(index, entry),
        Entry::ToolCall(call) => (
            call.tool_name,
            call.arguments,
            call.result,
            call.cli_output,
            call.status,
        ),
        Entry::Mcp(call) => (
            call.tool,
            call.arguments,
            call.result,
            call.cli_output,
            call.status,
        ),
    };
    let status = as_text(&serde_json::to_value(status).unwrap_or_default());
    view! {
        <details class="inspector-entry tool-call-entry">
            <summary>{format!("{}. Tool call · {name}", index + 1)}</summary>
            <Field label="Tool name" value=name.clone() />
            <Field label="Arguments" value=as_text(&arguments) />
            <Field label="Result" value=result />
            {cli_output.map(|out| view! { <Field label="CLI output" value=out /> })}
            <Field label="Status" value=status />
        </details>
    }
    .into_any()
}

fn llm_request_entry(index: usize, entry: crate::models::LlmRequestEntry) -> AnyView {
    let model = entry.model;
    let message = &entry.response["choices"][0]["message"];
    let output = as_text(&message["content"]);
    let calls = message["tool_calls"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    view! {
        <details class="inspector-entry llm-request">
            <summary>{format!("{}. LLM request · {model}", index + 1)}</summary>
            <Field label="Model" value=model.clone() />
            <div class="inspector-label">"Conversation"</div>
            {entry.conversation
                .into_iter()
                .map(|m| {
                    let rows = m.content.lines().count().clamp(1, 12).to_string();
                    view! {
                        <details class="inspector-message">
                            <summary>{m.role}</summary>
                            <textarea readonly rows=rows>{m.content}</textarea>
                        </details>
                    }
                })
                .collect_view()}
            <Field label="Output" value=output />
            {(!calls.is_empty()).then(|| view! {
                <div class="inspector-label">"Tool calls"</div>
                {calls
                    .into_iter()
                    .map(|call| {
                        let name = as_text(&call["function"]["name"]);
                        let arguments: serde_json::Value = json::parse(call["function"]["arguments"].as_str().unwrap_or("{}")).unwrap_or_default();
                        let pairs: Vec<(String, String)> = arguments.as_object().map(|o| o.iter().map(|(k, v)| (k.clone(), as_text(v))).collect()).unwrap_or_default();
                        view! {
                            <div class="inspector-call">
                                <strong>{name}</strong>
                                <table>
                                    {pairs.into_iter().map(|(key, value)| view! { <tr><th>{key}</th><td><pre>{value}</pre></td></tr> }).collect_view()}
                                </table>
                            </div>
                        }
                    })
                    .collect_view()}
            })}
            {entry.annotation.map(|note| view! { <Field label="Annotation" value=note /> })}
        </details>
    }
    .into_any()
}
