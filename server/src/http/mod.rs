//! HTTP: the JSON/SSE API under `/api`, `/healthz`, the server-rendered pages and static files.
//! Handlers parse, call one engine or store method, and map errors through [`crate::error::Error`].

mod body;
mod chat;
mod extract;
pub mod guard;
mod health;
mod read;
pub mod serve;
mod session;
mod shares;
mod sse;
mod static_files;

use std::sync::Arc;

use app::api::ssr::{BoxFuture, ConversationSource, SharedSource};
use app::models::{Conversation, ConversationSummary, ModelList, ModelTurnTiming, Trace};
use axum::{
    extract::{DefaultBodyLimit, FromRef},
    routing::{get, post},
    Router,
};
use leptos::prelude::*;
use leptos_axum::{generate_route_list, LeptosRoutes};

use crate::{auth::Auth, runs::Engine, store::Store};

pub use extract::CurrentUser;

/// Bodies larger than this get 413.
pub const MAX_BODY_BYTES: usize = 1024 * 1024;

#[derive(Clone, FromRef)]
pub struct AppState {
    pub leptos_options: LeptosOptions,
    pub engine: Arc<Engine>,
    pub store: Store,
    /// Content-hashed file names under `/pkg`, cached as immutable.
    pub immutable_assets: Arc<std::collections::HashSet<String>>,
    /// The host names this server answers to.
    pub hosts: Arc<guard::HostPolicy>,
    /// Who is asking (`--auth`).
    pub auth: Arc<Auth>,
    /// The stylesheet's path, for the sign-in page.
    pub stylesheet: Arc<str>,
    /// How long a request's body may take to arrive (`--body-read-timeout-secs`).
    pub body_deadline: std::time::Duration,
}

pub fn router(state: AppState) -> Router {
    let routes = generate_route_list(app::App);
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
    let api = Router::new()
        .route("/api/chat", post(chat::start))
        .route("/api/runs/{run_id}/events", get(chat::events))
        .route("/api/runs/{run_id}/cancel", post(chat::cancel))
        .route(
            "/api/runs/{run_id}/approvals/{call_id}",
            post(chat::approve),
        )
        .route("/api/models", get(read::models))
        .route("/api/tools", get(read::tools))
        .route("/api/traces/{trace_id}", get(read::trace))
        .route(
            "/api/traces/{trace_id}/inspector.json",
            get(read::inspector),
        )
        .route("/api/traces/{trace_id}/model-turns", get(read::model_turns))
        .route(
            "/api/traces/{trace_id}/shares",
            get(shares::list).post(shares::create),
        )
        .route(
            "/api/traces/{trace_id}/shares/{token}",
            axum::routing::delete(shares::revoke),
        )
        .route("/thoughtflow/{file}", get(read::thoughtflow))
        .route("/api/conversations", get(read::conversations))
        .route("/api/conversations/{id}", get(read::conversation))
        .route("/api/{*rest}", axum::routing::any(read::unknown_api))
        .route("/healthz", get(health::health))
        .route("/login", get(session::login_page))
        .route("/auth/login", post(session::login))
        .route("/auth/logout", post(session::logout))
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES));
    let pkg = static_files::pkg_router(&options, state.immutable_assets.clone());
    api.leptos_routes_with_context(&state, routes, context.clone(), {
        let options = options.clone();
        move || app::shell(options.clone())
    })
    .fallback(leptos_axum::file_and_error_handler_with_context::<
        AppState,
        _,
    >(context, app::shell))
    .route_service("/favicon.svg", static_files::favicon(&options))
    .layer(static_files::private_by_default())
    .nest_service("/pkg", pkg)
    .layer(axum::middleware::from_fn_with_state(
        state.auth.clone(),
        session::authenticate,
    ))
    .layer(axum::middleware::from_fn_with_state(
        state.body_deadline,
        body::limit_body,
    ))
    .layer(axum::middleware::from_fn_with_state(
        state.hosts.clone(),
        guard::guard,
    ))
    .with_state(state)
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
    async fn reader(&self, share: Option<String>) -> crate::error::Result<crate::auth::Reader> {
        let user = self.user.as_ref().map(|user| user.0.clone());
        crate::auth::Reader::resolve(&self.store, user, share.as_deref()).await
    }

    /// A trace the request may read (see [`Self::reader`]), with its model turns.
    async fn trace_with_turns(
        &self,
        share: Option<String>,
        trace_id: &str,
    ) -> crate::error::Result<Option<(Trace, Vec<crate::store::ModelTurn>)>> {
        let reader = self.reader(share).await?;
        let Some(trace) = reader.trace(&self.store, trace_id).await? else {
            return Ok(None);
        };
        let turns = reader.model_turns(&self.store, &trace).await?;
        Ok(Some((trace, turns)))
    }

    fn owner_id(&self) -> Result<&str, String> {
        self.user
            .as_ref()
            .map(CurrentUser::id)
            .ok_or_else(|| "sign in first".to_owned())
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
        Box::pin(async move {
            self.store
                .list_conversations(self.owner_id()?)
                .await
                .map_err(|error| {
                    tracing::error!(%error, "listing conversations for a page");
                    error.public_message()
                })
        })
    }

    fn get(&self, id: String) -> BoxFuture<'_, Result<Option<Conversation>, String>> {
        Box::pin(async move {
            self.store
                .get_conversation(self.owner_id()?, &id)
                .await
                .map_err(|error| {
                    tracing::error!(%error, "reading a conversation for a page");
                    error.public_message()
                })
        })
    }

    fn models(&self) -> ModelList {
        let (models, default) = self.engine.models();
        ModelList {
            models,
            default: default.to_owned(),
        }
    }

    fn trace(
        &self,
        trace_id: String,
        share: Option<String>,
    ) -> BoxFuture<'_, Result<Option<Trace>, String>> {
        let status = use_context::<leptos_axum::ResponseOptions>();
        Box::pin(async move {
            let reader = match self.reader(share).await {
                Ok(reader) => reader,
                Err(error) => return not_found_is_none(error, status),
            };
            let trace = reader.trace(&self.store, &trace_id).await;
            trace.map_err(|error| page_error(error, status, "reading a trace for a page"))
        })
    }

    fn inspector(
        &self,
        trace_id: String,
        share: Option<String>,
    ) -> BoxFuture<'_, Result<Vec<serde_json::Value>, String>> {
        let status = use_context::<leptos_axum::ResponseOptions>();
        Box::pin(async move {
            let found = self.trace_with_turns(share, &trace_id).await;
            found
                .map(|found| {
                    found.map_or_else(Vec::new, |(trace, turns)| {
                        crate::exports::inspector(&trace, &turns)
                    })
                })
                .map_err(|error| page_error(error, status, "building the inspector for a page"))
        })
    }

    fn model_turns(
        &self,
        trace_id: String,
        share: Option<String>,
    ) -> BoxFuture<'_, Result<Vec<ModelTurnTiming>, String>> {
        let status = use_context::<leptos_axum::ResponseOptions>();
        Box::pin(async move {
            let turns = async {
                let Some((_, turns)) = self.trace_with_turns(share, &trace_id).await? else {
                    return Ok(Vec::new());
                };
                Ok::<_, crate::error::Error>(
                    turns
                        .into_iter()
                        .map(|turn| ModelTurnTiming {
                            model: turn.model,
                            started_at: turn.started_at,
                            completed_at: turn.completed_at,
                        })
                        .collect(),
                )
            };
            turns
                .await
                .map_err(|error| page_error(error, status, "reading model turns for a page"))
        })
    }
}

/// A read refused because the share link does not exist reads as a trace that does not.
fn not_found_is_none<T>(
    error: crate::error::Error,
    status: Option<leptos_axum::ResponseOptions>,
) -> Result<Option<T>, String> {
    match error {
        crate::error::Error::NotFound(_) => Ok(None),
        other => Err(page_error(other, status, "reading a trace for a page")),
    }
}

/// What a page or server function shows of `error`; the response gets its status (401 for a
/// server function called without a user), and server-side failures are logged.
fn page_error(
    error: crate::error::Error,
    status: Option<leptos_axum::ResponseOptions>,
    doing: &str,
) -> String {
    if error.status().is_server_error() {
        tracing::error!(%error, "{doing}");
    }
    if let Some(status) = status {
        status.set_status(error.status());
    }
    error.public_message()
}
