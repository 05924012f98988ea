//! Every read the REST API and the server-rendered pages share, written once. The REST handlers
//! (`http::read`) answer an [`Error`] through its `IntoResponse` (`error.rs`); the pages' source
//! (`http::pages`) maps it to what a page shows in one function. Something missing, or not this
//! reader's, is [`Error::NotFound`] here whichever side asks.

use app::compare::{self, Comparison, TraceChoice};
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

/// The traces `a` and `b` of `owner_id` compared step by step (issue 36). A trace compared with
/// itself is [`Error::SameTrace`]; one that is not the owner's (or is gone) is not found. A
/// running trace is compared as far as it is stored.
pub async fn compare(store: &Store, owner_id: &str, a: &str, b: &str) -> Result<Comparison> {
    if a == b {
        return Err(Error::SameTrace);
    }
    let side = |trace_id: &str| {
        let trace_id = trace_id.to_owned();
        async move {
            let trace = store
                .get_trace(owner_id, &trace_id)
                .await?
                .ok_or(Error::NotFound("trace"))?;
            let question = store
                .trace_choices(owner_id, &trace.conversation_id, Some(&trace_id), 1)
                .await?
                .pop()
                .map(|choice| choice.question)
                .unwrap_or_default();
            let turns = store.model_turns(&trace.trace_id).await?;
            let starts: Vec<u64> = turns.iter().map(|turn| turn.after_seq).collect();
            Ok::<_, Error>(compare::side_of(&trace, question, &starts))
        }
    };
    let (a, b) = futures::try_join!(side(a), side(b))?;
    Ok(Comparison::of(a, b))
}

/// The traces of `owner_id` that the trace `trace_id` may be compared with: those of its
/// conversation first, then the newest others (at most [`compare::MAX_CHOICES`]).
pub async fn trace_choices(
    store: &Store,
    owner_id: &str,
    trace_id: &str,
) -> Result<Vec<TraceChoice>> {
    let this = store
        .trace_choices(owner_id, "", Some(trace_id), 1)
        .await?
        .pop()
        .ok_or(Error::NotFound("trace"))?;
    let mut choices = store
        .trace_choices(
            owner_id,
            &this.conversation_id,
            None,
            compare::MAX_CHOICES + 1,
        )
        .await?;
    choices.retain(|choice| choice.trace_id != trace_id);
    choices.truncate(compare::MAX_CHOICES);
    Ok(choices)
}

/// The conversation `id` of `owner_id` as a ThoughtFlow session (seed 004).
pub async fn thoughtflow(store: &Store, owner_id: &str, id: &str) -> Result<Value> {
    let conversation = conversation(store, owner_id, id).await?;
    let traces = store.traces_for_conversation(owner_id, id).await?;
    Ok(crate::exports::thoughtflow(&conversation, &traces))
}
