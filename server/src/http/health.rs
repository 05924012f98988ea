//! `GET /healthz`: the version, and whether the database answers.

use axum::{extract::State, http::StatusCode, Json};
use serde_json::{json, Value};

use super::AppState;

pub async fn health(State(state): State<AppState>) -> (StatusCode, Json<Value>) {
    let database = state.store.ping().await;
    let status = if database {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    (
        status,
        Json(json!({
            "status": if database { "ok" } else { "degraded" },
            "version": env!("CARGO_PKG_VERSION"),
            "database": database,
        })),
    )
}
