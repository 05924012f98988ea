//! Server functions the pages call. They read through [`ssr::ConversationSource`], which the
//! server crate implements over its store, so this crate never touches SQL.

use leptos::prelude::*;

use crate::compare::{Comparison, TraceChoice};
use crate::models::{
    Conversation, ConversationSummary, InspectorEntry, ModelList, ModelTurnTiming, Trace,
    TraceOverview,
};

#[server(prefix = "/api/fn", endpoint = "model_turns")]
pub async fn get_model_turns(
    trace_id: String,
    share: Option<String>,
) -> Result<Vec<ModelTurnTiming>, ServerFnError> {
    ssr::source()?
        .model_turns(trace_id, share)
        .await
        .map_err(ServerFnError::new)
}

#[server(prefix = "/api/fn", endpoint = "trace")]
pub async fn get_trace(
    trace_id: String,
    share: Option<String>,
) -> Result<Option<Trace>, ServerFnError> {
    ssr::source()?
        .trace(trace_id, share)
        .await
        .map_err(ServerFnError::new)
}

/// A trace without its events, as its page opens (the replay fetches them with `get_trace`).
#[server(prefix = "/api/fn", endpoint = "trace-overview")]
pub async fn get_trace_overview(
    trace_id: String,
    share: Option<String>,
) -> Result<Option<TraceOverview>, ServerFnError> {
    ssr::source()?
        .trace(trace_id, share)
        .await
        .map(|trace| trace.map(TraceOverview::of))
        .map_err(ServerFnError::new)
}

/// The Agent Inspector entries of a trace (seed 003's JSON list).
#[server(prefix = "/api/fn", endpoint = "inspector")]
pub async fn get_inspector(
    trace_id: String,
    share: Option<String>,
) -> Result<Vec<InspectorEntry>, ServerFnError> {
    ssr::source()?
        .inspector(trace_id, share)
        .await
        .map_err(ServerFnError::new)
}

/// Two of the user's runs compared step by step (`None` when either is not theirs or is gone;
/// an error when `a` is `b`).
#[server(prefix = "/api/fn", endpoint = "compare")]
pub async fn get_comparison(a: String, b: String) -> Result<Option<Comparison>, ServerFnError> {
    ssr::source()?
        .compare(a, b)
        .await
        .map_err(ServerFnError::new)
}

/// The user's runs the trace `trace_id` may be compared with, those of its conversation first.
#[server(prefix = "/api/fn", endpoint = "compare-choices")]
pub async fn get_compare_choices(trace_id: String) -> Result<Vec<TraceChoice>, ServerFnError> {
    ssr::source()?
        .compare_choices(trace_id)
        .await
        .map_err(ServerFnError::new)
}

/// Who is signed in (`None` without accounts): the sidebar shows the name and Sign out.
#[server(prefix = "/api/fn", endpoint = "whoami")]
pub async fn current_user() -> Result<Option<String>, ServerFnError> {
    Ok(ssr::source()?.user_name())
}

#[server(prefix = "/api/fn", endpoint = "models")]
pub async fn list_models() -> Result<ModelList, ServerFnError> {
    Ok(ssr::source()?.models())
}

#[server(prefix = "/api/fn", endpoint = "conversations")]
pub async fn list_conversations() -> Result<Vec<ConversationSummary>, ServerFnError> {
    let source = ssr::source()?;
    source.list().await.map_err(ServerFnError::new)
}

/// A page of a conversation: its newest messages, or those before index `before`.
#[server(prefix = "/api/fn", endpoint = "conversation")]
pub async fn get_conversation(
    id: String,
    before: Option<usize>,
) -> Result<Option<Conversation>, ServerFnError> {
    let source = ssr::source()?;
    let conversation = source.get(id).await.map_err(ServerFnError::new)?;
    Ok(conversation.map(|conversation| conversation.page(before)))
}

#[cfg(feature = "ssr")]
pub mod ssr {
    use std::{future::Future, pin::Pin, sync::Arc};

    use leptos::prelude::*;

    use crate::compare::{Comparison, TraceChoice};
    use crate::models::{
        Conversation, ConversationSummary, InspectorEntry, ModelList, ModelTurnTiming, Trace,
    };

    pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

    /// What the pages may read, for the user of the current request. Errors are messages safe to
    /// show; the implementation logs the details.
    pub trait ConversationSource: Send + Sync {
        /// The signed-in user's name; `None` for the single local user of `--auth none`.
        fn user_name(&self) -> Option<String> {
            None
        }
        fn list(&self) -> BoxFuture<'_, Result<Vec<ConversationSummary>, String>>;
        fn get(&self, id: String) -> BoxFuture<'_, Result<Option<Conversation>, String>>;
        fn models(&self) -> ModelList;
        // The trace reads take the `share` token of a share link (see the server's `Reader`):
        // with one, they read that link's trace only, whoever asks.
        fn trace(
            &self,
            trace_id: String,
            share: Option<String>,
        ) -> BoxFuture<'_, Result<Option<Trace>, String>>;
        fn inspector(
            &self,
            trace_id: String,
            share: Option<String>,
        ) -> BoxFuture<'_, Result<Vec<InspectorEntry>, String>>;
        fn model_turns(
            &self,
            trace_id: String,
            share: Option<String>,
        ) -> BoxFuture<'_, Result<Vec<ModelTurnTiming>, String>>;
        /// Two of the user's traces compared (never through a share link).
        fn compare(
            &self,
            a: String,
            b: String,
        ) -> BoxFuture<'_, Result<Option<Comparison>, String>>;
        fn compare_choices(
            &self,
            trace_id: String,
        ) -> BoxFuture<'_, Result<Vec<TraceChoice>, String>>;
    }

    pub type SharedSource = Arc<dyn ConversationSource>;

    pub fn source() -> Result<SharedSource, ServerFnError> {
        use_context::<SharedSource>()
            .ok_or_else(|| ServerFnError::new("the conversation store is not available"))
    }
}
