//! The browser's side of the REST API, in one place. Every URL the pages link to or the browser
//! sends to is written here once; every write goes through [`send`], and a refused request
//! (`{code, message}` in the body, or none) becomes one [`ClientError`], whose text is what the UI
//! shows. The URLs and types build on both sides; the requests exist in the browser only (the
//! server renders nothing that writes).

use std::fmt;

#[cfg(feature = "hydrate")]
use gloo_net::http::{Request, Response};
use serde::Deserialize;

#[cfg(feature = "hydrate")]
use crate::models::ConversationSummary;
#[cfg(feature = "hydrate")]
use crate::protocol::ApprovalDecision;

/// `POST` here starts a run.
pub const CHAT: &str = "/api/chat";

/// A run's events as a stream (SSE), from its first event or `Last-Event-ID`.
pub fn run_events(run_id: &str) -> String {
    format!("/api/runs/{run_id}/events")
}

pub fn run_cancel(run_id: &str) -> String {
    format!("/api/runs/{run_id}/cancel")
}

pub fn run_approval(run_id: &str, call_id: &str) -> String {
    format!("/api/runs/{run_id}/approvals/{call_id}")
}

/// `DELETE` here deletes all of the user's conversations; `GET ?archived=true` lists the archived.
pub const CONVERSATIONS: &str = "/api/conversations";

/// One conversation: `PATCH` renames or archives it, `DELETE` deletes it.
pub fn conversation(id: &str) -> String {
    format!("{CONVERSATIONS}/{id}")
}

pub fn trace_shares(trace_id: &str) -> String {
    format!("/api/traces/{trace_id}/shares")
}

/// A trace in the Agent Inspector's JSON.
pub fn trace_inspector(trace_id: &str) -> String {
    format!("/api/traces/{trace_id}/inspector.json")
}

/// `PUT` sets the feedback on an answer, `DELETE` removes it.
pub fn message_feedback(message_id: &str) -> String {
    format!("/api/messages/{}/feedback", url_encode(message_id))
}

/// `PUT` sets a note on a step of an answer, `DELETE` removes it.
pub fn step_note(message_id: &str, step_id: &str) -> String {
    format!(
        "/api/messages/{}/steps/{}/note",
        url_encode(message_id),
        url_encode(step_id)
    )
}

/// `GET` here with `?q=` searches the user's conversations.
pub const SEARCH: &str = "/api/search";

/// `text` percent-encoded for a URL's query or path: every byte but letters, digits and `-_.~`.
pub fn url_encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(byte as char)
            }
            _ => out.push_str(&format!("%{byte:02X}")),
        }
    }
    out
}

/// Where a search hit opens: its conversation, naming the message (`m`) and the step (`step`).
pub fn search_hit_href(hit: &crate::models::SearchHit) -> String {
    let mut href = format!("/c/{}", url_encode(&hit.conversation_id));
    if let Some(message) = &hit.message_id {
        href.push_str(&format!("?m={}", url_encode(message)));
        if let Some(step) = &hit.step {
            href.push_str(&format!("&step={}", url_encode(step)));
        }
    }
    href
}

/// A conversation in ThoughtFlow's form: `json` or `d2`.
pub fn thoughtflow(conversation_id: &str, format: &str) -> String {
    format!("/thoughtflow/{conversation_id}.{format}")
}

/// One share link as `GET /api/traces/{id}/shares` lists it.
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct ShareLink {
    pub token: String,
    pub created_at: String,
    /// The page it opens, relative to this server.
    pub path: String,
    /// Whether it shows the conversation before its turn (in the model turns' requests).
    #[serde(default)]
    pub include_history: bool,
}

/// A started run's ids, as `POST /api/chat` answers in JSON.
#[derive(Clone, Debug, Deserialize)]
pub struct Started {
    pub run_id: String,
    pub conversation_id: String,
    pub user_message_id: String,
    pub message_id: String,
}

/// Why a request did not do what it asked. Its text is what the UI shows.
#[derive(Clone, Debug, PartialEq)]
pub enum ClientError {
    /// No answer: the network, or the server is down.
    Unreachable,
    /// The server refused: its `{code, message}` when the body was that.
    Refused {
        status: u16,
        code: Option<String>,
        message: Option<String>,
    },
    /// An answer that did not read as what was asked for.
    Unreadable,
}

impl fmt::Display for ClientError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClientError::Unreachable => f.write_str("Could not reach the server."),
            ClientError::Refused {
                message: Some(message),
                ..
            } => f.write_str(message),
            ClientError::Refused { status, .. } => write!(f, "The server answered {status}."),
            ClientError::Unreadable => f.write_str("The server's answer could not be read."),
        }
    }
}

/// The API's error body.
#[derive(Deserialize)]
struct ErrorBody {
    code: Option<String>,
    message: Option<String>,
}

impl ClientError {
    /// A refusal, from its status and body (whatever the body is).
    pub fn refused(status: u16, body: &str) -> Self {
        let body = crate::json::parse::<ErrorBody>(body).ok();
        let (code, message) = body.map_or((None, None), |body| (body.code, body.message));
        ClientError::Refused {
            status,
            code,
            message,
        }
    }
}

/// Sends `request`; an answer that is not a success, nor one of `fine`, is a refusal.
#[cfg(feature = "hydrate")]
async fn send(
    request: Result<Request, gloo_net::Error>,
    fine: &[u16],
) -> Result<Response, ClientError> {
    let request = request.map_err(|_| ClientError::Unreadable)?;
    let response = request.send().await.map_err(|_| ClientError::Unreachable)?;
    if response.ok() || fine.contains(&response.status()) {
        return Ok(response);
    }
    let body = response.text().await.unwrap_or_default();
    Err(ClientError::refused(response.status(), &body))
}

#[cfg(feature = "hydrate")]
async fn read<T: serde::de::DeserializeOwned>(response: Response) -> Result<T, ClientError> {
    crate::json::read(&response)
        .await
        .map_err(|_| ClientError::Unreadable)
}

/// Starts a run (`POST /api/chat` in JSON mode).
#[cfg(feature = "hydrate")]
pub async fn start_chat(
    conversation_id: Option<String>,
    content: String,
    model: String,
) -> Result<Started, ClientError> {
    let body = serde_json::json!({ "conversation_id": conversation_id, "content": content, "model": model });
    let request = Request::post(CHAT)
        .header("Accept", "application/json")
        .json(&body);
    read(send(request, &[]).await?).await
}

/// Regenerates an answer (`regenerate`, no content) or sends an edited question (`edit`, with
/// `content`): `POST /api/chat` as a send, on a branch of the conversation (issue 36).
#[cfg(feature = "hydrate")]
pub async fn rerun(
    conversation_id: String,
    rerun: Rerun,
    model: String,
) -> Result<Started, ClientError> {
    let body = match rerun {
        Rerun::Regenerate(id) => serde_json::json!({
            "conversation_id": conversation_id, "regenerate": id, "model": model }),
        Rerun::Edit(id, content) => serde_json::json!({
            "conversation_id": conversation_id, "edit": id, "content": content, "model": model }),
    };
    let request = Request::post(CHAT)
        .header("Accept", "application/json")
        .json(&body);
    read(send(request, &[]).await?).await
}

/// What a rerun replaces: an answer to regenerate, or a question with its new text.
#[derive(Clone, Debug, PartialEq)]
pub enum Rerun {
    Regenerate(String),
    Edit(String, String),
}

/// Switches a conversation to another version of one of its messages: the conversation's newest
/// page after (`?page=newest`: the whole of a long one is megabytes to decode).
#[cfg(feature = "hydrate")]
pub async fn switch_branch(
    id: &str,
    message_id: &str,
) -> Result<crate::models::Conversation, ClientError> {
    let body = serde_json::json!({ "message_id": message_id });
    let request = Request::post(&format!("{}/branch?page=newest", conversation(id))).json(&body);
    read(send(request, &[]).await?).await
}

/// Asks the server to stop a run; the stream then brings `message_cancelled`. 409: the run
/// already ended, and the stream brings how.
#[cfg(feature = "hydrate")]
pub async fn stop_run(run_id: &str) -> Result<(), ClientError> {
    send(Request::post(&run_cancel(run_id)).build(), &[409]).await?;
    Ok(())
}

/// Approves or denies a call; the stream then brings `tool_approval_resolved`. 409: someone
/// answered first, and their answer is on its way.
#[cfg(feature = "hydrate")]
pub async fn answer_approval(
    run_id: &str,
    call_id: &str,
    decision: ApprovalDecision,
    reason: Option<String>,
) -> Result<(), ClientError> {
    let body = serde_json::json!({ "decision": decision, "reason": reason });
    let request = Request::post(&run_approval(run_id, call_id)).json(&body);
    send(request, &[409]).await?;
    Ok(())
}

/// The trace's share links.
#[cfg(feature = "hydrate")]
pub async fn share_links(trace_id: &str) -> Result<Vec<ShareLink>, ClientError> {
    read(send(Request::get(&trace_shares(trace_id)).build(), &[]).await?).await
}

/// Makes a share link.
#[cfg(feature = "hydrate")]
pub async fn create_share(trace_id: &str, include_history: bool) -> Result<ShareLink, ClientError> {
    let body = serde_json::json!({ "include_history": include_history });
    let request = Request::post(&trace_shares(trace_id)).json(&body);
    read(send(request, &[]).await?).await
}

/// Revokes a share link. 404: already gone.
#[cfg(feature = "hydrate")]
pub async fn revoke_share(trace_id: &str, token: &str) -> Result<(), ClientError> {
    let url = format!("{}/{token}", trace_shares(trace_id));
    send(Request::delete(&url).build(), &[404]).await?;
    Ok(())
}

/// Renames and/or archives (`Some(true)`) or unarchives a conversation: its summary after.
#[cfg(feature = "hydrate")]
pub async fn change_conversation(
    id: &str,
    title: Option<String>,
    archived: Option<bool>,
) -> Result<ConversationSummary, ClientError> {
    let mut body = serde_json::Map::new();
    if let Some(title) = title {
        body.insert("title".into(), title.into());
    }
    if let Some(archived) = archived {
        body.insert("archived".into(), archived.into());
    }
    let request = Request::patch(&conversation(id)).json(&body);
    read(send(request, &[]).await?).await
}

/// Deletes a conversation with everything of it. 404: already gone, which is what was asked.
#[cfg(feature = "hydrate")]
pub async fn delete_conversation(id: &str) -> Result<(), ClientError> {
    send(Request::delete(&conversation(id)).build(), &[404]).await?;
    Ok(())
}

/// `POST` here lists again the models of servers configured with `"models": "discover"`.
pub const RELOAD_MODELS: &str = "/api/models/reload";

/// Asks the servers for their models again: how many models can be chosen now.
#[cfg(feature = "hydrate")]
pub async fn reload_models() -> Result<usize, ClientError> {
    let list: crate::models::ModelList =
        read(send(Request::post(RELOAD_MODELS).build(), &[]).await?).await?;
    Ok(list.models.len())
}

/// Deletes every conversation of the user: how many.
#[cfg(feature = "hydrate")]
pub async fn delete_all_conversations() -> Result<u64, ClientError> {
    #[derive(Deserialize)]
    struct Deleted {
        deleted: u64,
    }
    let deleted: Deleted = read(send(Request::delete(CONVERSATIONS).build(), &[]).await?).await?;
    Ok(deleted.deleted)
}

/// The user's archived conversations, newest first.
#[cfg(feature = "hydrate")]
pub async fn archived_conversations() -> Result<Vec<ConversationSummary>, ClientError> {
    let url = format!("{CONVERSATIONS}?archived=true");
    read(send(Request::get(&url).build(), &[]).await?).await
}

/// Sets (or edits) the feedback on an answer, or a step's note when `step_id` is given: the
/// stored feedback.
#[cfg(feature = "hydrate")]
pub async fn put_feedback(
    message_id: &str,
    step_id: Option<&str>,
    rating: Option<crate::models::Rating>,
    comment: String,
) -> Result<crate::models::Feedback, ClientError> {
    let request = match step_id {
        Some(step) => Request::put(&step_note(message_id, step))
            .json(&serde_json::json!({ "comment": comment })),
        None => Request::put(&message_feedback(message_id))
            .json(&serde_json::json!({ "rating": rating, "comment": comment })),
    };
    read(send(request, &[]).await?).await
}

/// Removes the feedback on an answer, or a step's note. 404: already gone.
#[cfg(feature = "hydrate")]
pub async fn delete_feedback(message_id: &str, step_id: Option<&str>) -> Result<(), ClientError> {
    let url = match step_id {
        Some(step) => step_note(message_id, step),
        None => message_feedback(message_id),
    };
    send(Request::delete(&url).build(), &[404]).await?;
    Ok(())
}

/// The user's conversations searched for `query` (the syntax of docs/protocol.md).
#[cfg(feature = "hydrate")]
pub async fn search(query: &str) -> Result<crate::models::SearchResults, ClientError> {
    let url = format!("{SEARCH}?q={}", url_encode(query));
    read(send(Request::get(&url).build(), &[]).await?).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_shows_the_servers_message_or_its_status() {
        let refused = ClientError::refused(
            429,
            r#"{"code":"too_many_runs","message":"Too many runs at once."}"#,
        );
        assert_eq!(refused.to_string(), "Too many runs at once.");
        assert!(
            matches!(refused, ClientError::Refused { code: Some(code), .. } if code == "too_many_runs")
        );
        assert_eq!(
            ClientError::refused(502, "<html>Bad gateway</html>").to_string(),
            "The server answered 502."
        );
    }
}
