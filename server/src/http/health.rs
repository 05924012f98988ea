//! `GET /healthz`: the version, whether the database answers reads, whether writes succeed, and
//! the runs going with the memory their logs hold, and, with an OTLP endpoint, what the export
//! sent and dropped (`null` without one).
//! While either fails it answers 503 `degraded` and says why: in the database's own words to a
//! signed-in user, in general terms to anyone else (the check is public, the error may name a path
//! or a host).

use axum::{extract::State, http::StatusCode, routing::get, Extension, Json, Router};
use serde_json::{json, Value};

use super::{AppState, CurrentUser};

/// `GET /healthz`.
pub(super) fn router() -> Router<AppState> {
    Router::new().route("/healthz", get(health))
}

pub async fn health(
    State(state): State<AppState>,
    user: Option<Extension<CurrentUser>>,
) -> (StatusCode, Json<Value>) {
    let database = state.store.ping().await;
    let write_failure = state
        .store
        .write_failure()
        .or_else(|| state.engine.store_failure());
    let ok = database && write_failure.is_none();
    let status = if ok {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    let (runs, run_memory_bytes) = state.engine.load();
    let reason = match (&write_failure, database) {
        (Some(failure), _) if user.is_some() => {
            Some(format!("writes to the database fail: {failure}"))
        }
        (Some(_), _) => Some("writes to the database fail".to_owned()),
        (None, false) => Some("the database does not answer".to_owned()),
        (None, true) => None,
    };
    (
        status,
        Json(json!({
            "status": if ok { "ok" } else { "degraded" },
            "version": env!("CARGO_PKG_VERSION"),
            "database": database,
            "writes": write_failure.is_none(),
            "reason": reason,
            "runs": runs,
            "run_memory_bytes": run_memory_bytes,
            "bus": state.engine.bus().map(|bus| bus.stats()),
            "otlp": state.engine.otlp().map(|otlp| otlp.stats()),
        })),
    )
}
