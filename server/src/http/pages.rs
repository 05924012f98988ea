//! The server-rendered pages and their server functions. They read as the request's user through
//! [`PageSource`], which calls [`crate::reads`] as the REST handlers do; [`PageReply`] is the one
//! place a read's [`Error`] becomes what a page shows.

use std::sync::{Arc, LazyLock};

use app::api::ssr::{BoxFuture, ConversationSource, SharedSource};
use app::compare::{Comparison, TraceChoice};
use app::models::{
    Conversation, ConversationSummary, InspectorEntry, ModelList, ModelTurnTiming, Trace,
};
use axum::Router;
use leptos::prelude::*;
use leptos_axum::{generate_route_list, AxumRouteListing, LeptosRoutes, ResponseOptions};

use super::{guard, AppState, CurrentUser};
use crate::{
    auth::Reader,
    error::{Error, Result},
    reads,
    runs::Engine,
    store::Store,
};

/// The app's routes, generated once per process. Generating them renders the app with
/// leptos_server's `SuppressResourceLoad` set, a process-wide flag: a resource that first polls
/// while it is set never loads (leptos issue #4773), so a page another server of the process
/// (a test's, an embedding's) was rendering at that moment hung for good.
static ROUTES: LazyLock<Vec<AxumRouteListing>> = LazyLock::new(|| generate_route_list(app::App));

/// The pages, their server functions (under `/api/fn/`) and the fallback (a static file of the
/// site, else the not-found page).
pub(super) fn router(state: &AppState) -> Router<AppState> {
    let routes = ROUTES.clone();
    let (store, engine) = (state.store.clone(), state.engine.clone());
    // Pages and server functions read as the request's user, like the REST routes.
    let context = move || {
        let user = use_context::<axum::http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<CurrentUser>().cloned());
        let source: SharedSource = Arc::new(PageSource {
            store: store.clone(),
            engine: engine.clone(),
            user,
        });
        provide_context(source);
        use_csp_nonce();
    };
    let options = state.leptos_options.clone();
    Router::new()
        .leptos_routes_with_context(state, routes, context.clone(), move || {
            app::shell(options.clone())
        })
        .fallback(leptos_axum::file_and_error_handler_with_context::<
            AppState,
            _,
        >(context, app::shell))
}

/// The page's inline scripts carry the nonce the Content-Security-Policy header names (made per
/// request in [`guard::guard`]), in place of the one leptos_axum made.
fn use_csp_nonce() {
    let nonce = use_context::<axum::http::request::Parts>()
        .and_then(|parts| parts.extensions.get::<guard::CspNonce>().cloned());
    if let Some(guard::CspNonce(nonce)) = nonce {
        provide_context(leptos::nonce::Nonce::from_value(nonce));
    }
}

/// The pages' view of the store, for the request's user (none on a public page: it reads nothing).
struct PageSource {
    store: Store,
    engine: Arc<Engine>,
    user: Option<CurrentUser>,
}

impl PageSource {
    /// Who reads a trace: the share link's holder when `share` names one, else the user.
    async fn reader(&self, share: Option<String>) -> Result<Reader> {
        let user = self.user.as_ref().map(|user| user.0.clone());
        Reader::resolve(&self.store, user, share.as_deref()).await
    }

    /// The user's id, for reads of their own conversations.
    fn owner_id(&self) -> Result<&str> {
        self.user
            .as_ref()
            .map(CurrentUser::id)
            .ok_or_else(|| Error::Unauthenticated("sign in first".into()))
    }
}

impl ConversationSource for PageSource {
    fn user_name(&self) -> Option<String> {
        self.user
            .as_ref()
            .filter(|user| !user.0.is_local())
            .map(|user| user.0.name.clone())
    }

    fn list(&self) -> BoxFuture<'_, Result<Vec<ConversationSummary>, String>> {
        let reply = PageReply::new("listing conversations for a page");
        Box::pin(async move {
            let list = async { reads::conversations(&self.store, self.owner_id()?, false).await };
            reply.found(list.await).map(Option::unwrap_or_default)
        })
    }

    fn get(&self, id: String) -> BoxFuture<'_, Result<Option<Conversation>, String>> {
        let reply = PageReply::new("reading a conversation for a page");
        Box::pin(async move {
            let found = async { reads::conversation(&self.store, self.owner_id()?, &id).await };
            reply.found(found.await)
        })
    }

    fn models(&self) -> ModelList {
        reads::models(&self.engine)
    }

    fn trace(
        &self,
        trace_id: String,
        share: Option<String>,
    ) -> BoxFuture<'_, Result<Option<Trace>, String>> {
        let reply = PageReply::new("reading a trace for a page");
        Box::pin(async move {
            let reader = self.reader(share).await;
            let found = async { reads::trace(&self.store, &reader?, &trace_id).await };
            reply.found(found.await)
        })
    }

    fn inspector(
        &self,
        trace_id: String,
        share: Option<String>,
    ) -> BoxFuture<'_, Result<Vec<InspectorEntry>, String>> {
        let reply = PageReply::new("building the inspector for a page");
        Box::pin(async move {
            let reader = self.reader(share).await;
            let found = async { reads::inspector(&self.store, &reader?, &trace_id).await };
            reply.found(found.await).map(Option::unwrap_or_default)
        })
    }

    fn compare(&self, a: String, b: String) -> BoxFuture<'_, Result<Option<Comparison>, String>> {
        let reply = PageReply::new("comparing two traces for a page");
        Box::pin(async move {
            let found = async { reads::compare(&self.store, self.owner_id()?, &a, &b).await };
            reply.found(found.await)
        })
    }

    fn compare_choices(&self, trace_id: String) -> BoxFuture<'_, Result<Vec<TraceChoice>, String>> {
        let reply = PageReply::new("listing traces to compare for a page");
        Box::pin(async move {
            let found =
                async { reads::trace_choices(&self.store, self.owner_id()?, &trace_id).await };
            reply.found(found.await).map(Option::unwrap_or_default)
        })
    }

    fn model_turns(
        &self,
        trace_id: String,
        share: Option<String>,
    ) -> BoxFuture<'_, Result<Vec<ModelTurnTiming>, String>> {
        let reply = PageReply::new("reading model turns for a page");
        Box::pin(async move {
            let reader = self.reader(share).await;
            let found = async { reads::model_turns(&self.store, &reader?, &trace_id).await };
            let turns = reply.found(found.await)?.map(|(_, turns)| turns);
            Ok(turns
                .unwrap_or_default()
                .into_iter()
                .map(|turn| ModelTurnTiming {
                    steps: crate::ag_ui::steps(turn.format, &turn.response),
                    model: turn.model,
                    started_at: turn.started_at,
                    completed_at: turn.completed_at,
                })
                .collect())
        })
    }
}

/// How a page or server function takes a read's answer: what is not found (or not this reader's)
/// is nothing, as a REST read's 404 is; any other error is its public message, the response gets
/// its status (401 for a server function called without a user), and server-side failures are
/// logged.
struct PageReply {
    /// Taken when the read is asked for, inside the request's reactive owner.
    status: Option<ResponseOptions>,
    doing: &'static str,
}

impl PageReply {
    fn new(doing: &'static str) -> Self {
        PageReply {
            status: use_context::<ResponseOptions>(),
            doing,
        }
    }

    fn found<T>(&self, read: Result<T>) -> Result<Option<T>, String> {
        match read {
            Ok(value) => Ok(Some(value)),
            Err(Error::NotFound(_)) => Ok(None),
            Err(error) => {
                if error.status().is_server_error() {
                    tracing::error!(%error, "{}", self.doing);
                }
                if let Some(status) = &self.status {
                    status.set_status(error.status());
                }
                Err(error.public_message())
            }
        }
    }
}
