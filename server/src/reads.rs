//! Every read the REST API and the server-rendered pages share, written once. The REST handlers
//! (`http::read`) answer an [`Error`] through its `IntoResponse` (`error.rs`); the pages' source
//! (`http::pages`) maps it to what a page shows in one function. Something missing, or not this
//! reader's, is [`Error::NotFound`] here whichever side asks.

use app::models::{Conversation, ConversationSummary, InspectorEntry, ModelList};
use serde_json::Value;

use crate::{
    auth::Reader,
    error::{Error, Result},
    runs::Engine,
    store::{ModelTurn, Store, Trace},
};

/// The conversations of `owner_id`, newest first: the archived ones, or the others.
pub async fn conversations(
    store: &Store,
    owner_id: &str,
    archived: bool,
) -> Result<Vec<ConversationSummary>> {
    store.list_conversations(owner_id, archived).await
}

/// The conversation `id` of `owner_id`.
pub async fn conversation(store: &Store, owner_id: &str, id: &str) -> Result<Conversation> {
    store
        .get_conversation(owner_id, id)
        .await?
        .ok_or(Error::NotFound("conversation"))
}

/// Switches the conversation `id` of `owner_id` to the version `message_id` of one of its
/// messages; the conversation (its active path) after.
pub async fn switch_branch(
    store: &Store,
    owner_id: &str,
    id: &str,
    message_id: &str,
) -> Result<Conversation> {
    store.switch_branch(owner_id, id, message_id).await?;
    conversation(store, owner_id, id).await
}

/// The model ids a conversation may use (never a provider's URL or key), and the default.
pub fn models(engine: &Engine) -> ModelList {
    let (models, default) = engine.models();
    ModelList {
        default: default.to_owned(),
        models,
    }
}

/// The trace `trace_id`, when `reader` may read it.
pub async fn trace(store: &Store, reader: &Reader, trace_id: &str) -> Result<Trace> {
    reader
        .trace(store, trace_id)
        .await?
        .ok_or(Error::NotFound("trace"))
}

/// The model turns of the trace `trace_id` as `reader` may see them (see
/// [`Reader::model_turns`]), with the trace.
pub async fn model_turns(
    store: &Store,
    reader: &Reader,
    trace_id: &str,
) -> Result<(Trace, Vec<ModelTurn>)> {
    let trace = trace(store, reader, trace_id).await?;
    let turns = reader.model_turns(store, &trace).await?;
    Ok((trace, turns))
}

/// The Agent Inspector list of the trace `trace_id` (seed 003).
pub async fn inspector(
    store: &Store,
    reader: &Reader,
    trace_id: &str,
) -> Result<Vec<InspectorEntry>> {
    let (trace, turns) = model_turns(store, reader, trace_id).await?;
    Ok(crate::exports::inspector(&trace, &turns))
}

/// The conversation `id` of `owner_id` as a ThoughtFlow session (seed 004).
pub async fn thoughtflow(store: &Store, owner_id: &str, id: &str) -> Result<Value> {
    let conversation = conversation(store, owner_id, id).await?;
    let traces = store.traces_for_conversation(owner_id, id).await?;
    Ok(crate::exports::thoughtflow(&conversation, &traces))
}
