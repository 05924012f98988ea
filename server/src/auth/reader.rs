//! Who may read a trace: its owner, or anyone holding a share link to it, and nothing else with
//! that link. Every read of a trace, its events, its model turns and its exports, REST and server
//! functions alike, resolves a [`Reader`] and asks [`Reader::may_read`].

use serde_json::Value;

use crate::{
    error::{Error, Result},
    records::ProviderKind,
    store::{ModelTurn, Store, Trace, TraceShare},
};

use super::User;

#[derive(Clone, Debug)]
pub enum Reader {
    /// A signed-in user (or the local user): their own traces.
    User(User),
    /// A share link: its one trace, whoever asks.
    Share(TraceShare),
}

impl Reader {
    /// The reader of a request: its share token when it carries one (an unknown or revoked token
    /// is `NotFound`, as a trace of someone else is), else its user, else `Unauthenticated`.
    pub async fn resolve(store: &Store, user: Option<User>, share: Option<&str>) -> Result<Self> {
        match share {
            Some(token) => store
                .share(token)
                .await?
                .map(Reader::Share)
                .ok_or(Error::NotFound("trace")),
            None => user
                .map(Reader::User)
                .ok_or_else(|| Error::Unauthenticated("sign in first".into())),
        }
    }

    /// The owner whose traces store reads are restricted to.
    pub fn owner_id(&self) -> &str {
        match self {
            Reader::User(user) => &user.id,
            Reader::Share(share) => &share.owner_id,
        }
    }

    /// Whether this reader may read the trace `trace_id` of `owner_id`.
    pub fn may_read(&self, owner_id: &str, trace_id: &str) -> bool {
        match self {
            Reader::User(user) => user.id == owner_id,
            Reader::Share(share) => share.owner_id == owner_id && share.trace_id == trace_id,
        }
    }

    /// The trace `trace_id` when this reader may read it.
    pub async fn trace(&self, store: &Store, trace_id: &str) -> Result<Option<Trace>> {
        if !self.may_read(self.owner_id(), trace_id) {
            return Ok(None);
        }
        let trace = store.get_trace(self.owner_id(), trace_id).await?;
        // Feedback is its author's: a share link shows the run, not what its owner thought of it.
        Ok(trace.map(|mut trace| {
            if matches!(self, Reader::Share(_)) {
                trace.feedback.clear();
            }
            trace
        }))
    }

    /// The model turns of `trace` (which this reader may read), each request as it was sent. A
    /// share link that does not include the conversation before its turn gets the requests
    /// without the earlier questions and answers they repeated to the model.
    pub async fn model_turns(&self, store: &Store, trace: &Trace) -> Result<Vec<ModelTurn>> {
        let mut turns = store.model_turns(&trace.trace_id).await?;
        if matches!(self, Reader::Share(share) if !share.include_history) {
            without_history(&mut turns);
        }
        Ok(turns)
    }

    /// The trace of run `run_id` when this reader may read it.
    pub async fn trace_of_run(&self, store: &Store, run_id: &str) -> Result<Option<Trace>> {
        let trace = store.trace_by_run(self.owner_id(), run_id).await?;
        Ok(trace.filter(|trace| self.may_read(self.owner_id(), &trace.trace_id)))
    }
}

/// Removes from each request the messages before the run's question, keeping system prompts. The
/// question is the last user message of the run's first request: later requests of the run repeat
/// the same history before it and add only what the run itself produced after it.
fn without_history(turns: &mut [ModelTurn]) {
    let Some(first) = turns.first() else {
        return;
    };
    let Some(question) = conversation(&first.request, first.format)
        .and_then(|items| items.iter().rposition(|item| item["role"] == "user"))
    else {
        return;
    };
    for turn in turns {
        let format = turn.format;
        if let Some(items) = conversation_mut(&mut turn.request, format) {
            let mut position = 0;
            items.retain(|item| {
                let keep = position >= question
                    || matches!(item["role"].as_str(), Some("system" | "developer"));
                position += 1;
                keep
            });
        }
    }
}

/// The list of messages a request carries in `format`.
fn conversation(request: &Value, format: ProviderKind) -> Option<&Vec<Value>> {
    request[conversation_key(format)].as_array()
}

fn conversation_mut(request: &mut Value, format: ProviderKind) -> Option<&mut Vec<Value>> {
    request
        .get_mut(conversation_key(format))
        .and_then(Value::as_array_mut)
}

fn conversation_key(format: ProviderKind) -> &'static str {
    match format {
        ProviderKind::OpenaiChat | ProviderKind::Anthropic | ProviderKind::AgUi => "messages",
        ProviderKind::OpenaiResponses => "input",
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn turn(format: ProviderKind, request: Value) -> ModelTurn {
        ModelTurn {
            model: "m".into(),
            format,
            after_seq: 0,
            request,
            response: Value::Null,
            started_at: String::new(),
            completed_at: String::new(),
        }
    }

    #[test]
    fn a_turn_alone_keeps_the_system_prompt_its_question_and_what_followed() {
        let history = json!([
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Earlier secret question"},
            {"role": "assistant", "content": "Earlier answer"},
            {"role": "user", "content": "This question"},
        ]);
        let mut later = history.as_array().cloned().unwrap_or_default();
        later.push(json!({"role": "assistant", "tool_calls": []}));
        later.push(json!({"role": "tool", "content": "result"}));
        let mut turns = vec![
            turn(ProviderKind::OpenaiChat, json!({"messages": history})),
            turn(ProviderKind::OpenaiChat, json!({"messages": later})),
        ];
        without_history(&mut turns);
        for turn in &turns {
            let text = turn.request.to_string();
            assert!(!text.contains("Earlier"), "{text}");
            assert!(
                text.contains("Be brief.") && text.contains("This question"),
                "{text}"
            );
        }
        assert_eq!(
            turns[1].request["messages"].as_array().map(Vec::len),
            Some(4)
        );
        let mut responses = vec![turn(
            ProviderKind::OpenaiResponses,
            json!({"input": [{"role": "user", "content": "Earlier"}, {"type": "message", "role": "user", "content": "Now"}]}),
        )];
        without_history(&mut responses);
        assert_eq!(
            responses[0].request["input"].as_array().map(Vec::len),
            Some(1)
        );
    }
}
