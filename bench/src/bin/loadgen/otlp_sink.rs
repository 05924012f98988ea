//! `--otlp`: a stand-in OpenTelemetry collector in the load generator's process, which the server
//! exports to (`--otlp-endpoint`). It takes every OTLP/HTTP request, counts it and its bytes, and
//! answers 200 at once without decoding, so what is measured is the server's side of the export.

use std::sync::{
    atomic::{AtomicU64, Ordering},
    Arc,
};

use axum::{body::Bytes, extract::State, routing::post, Router};

/// Requests and bytes the sink has taken.
#[derive(Default)]
pub struct Sink {
    requests: AtomicU64,
    bytes: AtomicU64,
}

impl Sink {
    /// Starts the sink on a free loopback port; answers it and the base URL to export to.
    pub async fn start() -> Result<(Arc<Sink>, String), String> {
        let sink = Arc::new(Sink::default());
        let router = Router::new()
            .route("/v1/traces", post(take))
            .with_state(sink.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .map_err(|error| error.to_string())?;
        let address = listener.local_addr().map_err(|error| error.to_string())?;
        tokio::spawn(async move {
            let _ = axum::serve(listener, router).await;
        });
        Ok((sink, format!("http://{address}")))
    }

    pub fn report(&self) -> String {
        format!(
            "OTLP sink: {} requests, {:.1} MiB",
            self.requests.load(Ordering::Relaxed),
            self.bytes.load(Ordering::Relaxed) as f64 / 1048576.0
        )
    }
}

async fn take(State(sink): State<Arc<Sink>>, body: Bytes) -> &'static str {
    sink.requests.fetch_add(1, Ordering::Relaxed);
    sink.bytes.fetch_add(body.len() as u64, Ordering::Relaxed);
    ""
}
