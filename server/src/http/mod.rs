//! HTTP: the JSON/SSE API under `/api`, `/healthz`, the server-rendered pages and static files.
//! Each area builds its own router in its module (chat and runs, reads and exports, managing
//! conversations, feedback, search, shares, health, sign-in, pages); [`router`] merges them. Handlers parse, call one engine method or one
//! [`crate::reads`] read, and map errors through [`crate::error::Error`].

mod ag_ui;
mod ai_sdk;
mod body;
mod chat;
mod compare;
mod extract;
mod feedback;
pub mod guard;
mod health;
mod manage;
mod pages;
mod read;
mod search;
pub mod serve;
mod session;
mod shares;
mod source;
mod sse;
pub mod sse_frames;
mod static_files;

use std::sync::Arc;

use axum::{
    extract::{DefaultBodyLimit, FromRef},
    Router,
};
use leptos::prelude::*;

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

/// Every route: each area's router (built in its module), merged, under the layers every request
/// passes. Layers listed later wrap those before: the guard is outermost, then the body deadline,
/// then the session (who is asking); `/pkg` is outside `private_by_default` (it is cached as
/// immutable), and only the JSON API gets the body limit.
pub fn router(state: AppState) -> Router {
    let options = state.leptos_options.clone();
    let api = Router::new()
        .merge(chat::router())
        .merge(ag_ui::router())
        .merge(ai_sdk::router())
        .merge(compare::router())
        .merge(read::router())
        .merge(manage::router())
        .merge(feedback::router())
        .merge(search::router())
        .merge(shares::router())
        .merge(health::router())
        .merge(session::router())
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES));
    let pkg = static_files::pkg_router(&options, state.immutable_assets.clone());
    api.merge(pages::router(&state))
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
