use leptos::prelude::*;

/// The message box. Enter sends, Shift+Enter adds a line; Send is enabled once there is text.
#[component]
pub fn Composer(conversation_id: Memo<Option<String>>) -> impl IntoView {
    let (draft, set_draft) = signal(String::new());
    let (sending, set_sending) = signal(false);
    let (error, set_error) = signal(None::<String>);
    let can_send = move || !sending.get() && !draft.read().trim().is_empty();

    let send = move || {
        if !can_send() {
            return;
        }
        let content = draft.get_untracked();
        let conversation = conversation_id.get_untracked();
        set_sending.set(true);
        set_error.set(None);
        #[cfg(feature = "hydrate")]
        leptos::task::spawn_local(async move {
            match browser::start_chat(conversation, content).await {
                Ok(conversation_id) => {
                    set_draft.set(String::new());
                    let navigate = leptos_router::hooks::use_navigate();
                    navigate(&format!("/c/{conversation_id}"), Default::default());
                }
                Err(message) => set_error.set(Some(message)),
            }
            set_sending.set(false);
        });
        #[cfg(not(feature = "hydrate"))]
        let _ = (content, conversation, set_draft);
    };

    view! {
        <form
            class="composer"
            on:submit=move |event| {
                event.prevent_default();
                send();
            }
        >
            <textarea
                name="content"
                aria-label="Message"
                placeholder="Ask the agent… (Enter sends, Shift+Enter adds a line)"
                rows="2"
                prop:value=move || draft.get()
                on:input=move |event| set_draft.set(event_target_value(&event))
                on:keydown=move |event| {
                    if event.key() == "Enter" && !event.shift_key() && !event.is_composing() {
                        event.prevent_default();
                        send();
                    }
                }
            ></textarea>
            <button type="submit" class="send" disabled=move || !can_send()>
                "Send"
            </button>
            <p class="error" role="alert">
                {move || error.get()}
            </p>
        </form>
    }
}

#[cfg(feature = "hydrate")]
mod browser {
    use serde::Deserialize;

    #[derive(Deserialize)]
    struct Started {
        conversation_id: String,
    }

    #[derive(Deserialize)]
    struct ApiError {
        message: String,
    }

    /// Starts a run and answers with its conversation's id.
    pub async fn start_chat(
        conversation_id: Option<String>,
        content: String,
    ) -> Result<String, String> {
        let body = serde_json::json!({ "conversation_id": conversation_id, "content": content });
        let response = gloo_net::http::Request::post("/api/chat")
            .header("Accept", "application/json")
            .json(&body)
            .map_err(|error| error.to_string())?
            .send()
            .await
            .map_err(|error| format!("Could not reach the server: {error}"))?;
        if response.ok() {
            let started: Started = response.json().await.map_err(|error| error.to_string())?;
            Ok(started.conversation_id)
        } else {
            let status = response.status();
            match response.json::<ApiError>().await {
                Ok(error) => Err(error.message),
                Err(_) => Err(format!("The server answered {status}")),
            }
        }
    }
}
