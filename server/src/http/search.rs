//! `GET /api/search?q=`: the caller's conversations searched (issue 35); the syntax is in
//! docs/protocol.md and parsed by [`crate::store::search::parse_query`]. Only the caller's own
//! conversations are ever searched.

use axum::{
    extract::{rejection::QueryRejection, Query, State},
    routing::get,
    Json, Router,
};
use serde::Deserialize;

use app::models::SearchResults;

use super::{AppState, CurrentUser};
use crate::{
    error::{Error, Result},
    store::search::parse_query,
};

#[derive(Debug, Deserialize)]
pub struct SearchParams {
    #[serde(default)]
    q: String,
}

pub(super) fn router() -> Router<AppState> {
    Router::new().route("/api/search", get(search))
}

/// `GET /api/search?q=`: the hits, newest first.
pub async fn search(
    State(state): State<AppState>,
    user: CurrentUser,
    params: Result<Query<SearchParams>, QueryRejection>,
) -> Result<Json<SearchResults>> {
    let Query(params) = params.map_err(|rejection| Error::InvalidField(rejection.body_text()))?;
    let query = parse_query(&params.q)?;
    let results = state.store.search(user.id(), &query).await?;
    Ok(Json(SearchResults { results }))
}
