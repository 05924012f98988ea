//! Who may read a trace: its owner, or anyone holding a share link to it, and nothing else with
//! that link. Every read of a trace, its events, its model turns and its exports, REST and server
//! functions alike, resolves a [`Reader`] and asks [`Reader::may_read`].

use crate::{
    error::{Error, Result},
    store::{Store, Trace, TraceShare},
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
        store.get_trace(self.owner_id(), trace_id).await
    }

    /// The trace of run `run_id` when this reader may read it.
    pub async fn trace_of_run(&self, store: &Store, run_id: &str) -> Result<Option<Trace>> {
        let trace = store.trace_by_run(self.owner_id(), run_id).await?;
        Ok(trace.filter(|trace| self.may_read(self.owner_id(), &trace.trace_id)))
    }
}
