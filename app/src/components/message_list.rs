use leptos::prelude::*;

use crate::models::Conversation;
use crate::protocol::{Message, MessageStatus, Role};

/// The open conversation's stored messages. Model text is only ever inserted as text nodes.
#[component]
pub fn MessageList(
    conversation: Resource<Result<Option<Conversation>, ServerFnError>>,
) -> impl IntoView {
    view! {
        <section class="messages" aria-live="polite">
            <Transition fallback=|| ()>
                {move || Suspend::new(async move {
                    match conversation.await {
                        Ok(Some(conversation)) => conversation
                            .messages
                            .into_iter()
                            .map(|message| view! { <MessageView message /> })
                            .collect_view()
                            .into_any(),
                        Ok(None) => view! {
                            <div class="welcome">
                                <h1>"What should the agent look into?"</h1>
                                <p class="muted">
                                    "Every reasoning step and tool call shows up here as it happens."
                                </p>
                            </div>
                        }
                            .into_any(),
                        Err(error) => view! { <p class="error">{error.to_string()}</p> }.into_any(),
                    }
                })}
            </Transition>
        </section>
    }
}

#[component]
fn MessageView(message: Message) -> impl IntoView {
    let role = match message.role {
        Role::User => "user",
        Role::Assistant => "assistant",
    };
    let tools = message.tool_calls().count();
    let status = match message.status {
        MessageStatus::Complete => None,
        MessageStatus::Streaming => Some("Running…"),
        MessageStatus::Cancelled => Some("Stopped"),
        MessageStatus::Error => Some("Failed"),
        MessageStatus::Interrupted => Some("Interrupted"),
    };
    view! {
        <article class=format!("message {role}") data-status=message.status.as_str()>
            {(tools > 0).then(|| view! { <p class="muted tool-count">{format!("{tools} tool call(s)")}</p> })}
            <div class="message-text">{message.text()}</div>
            {status.map(|status| view! { <p class="message-status">{status}</p> })}
            {message.ended_reason.map(|reason| view! { <p class="muted">{reason}</p> })}
        </article>
    }
}
