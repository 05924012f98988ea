//! The accept loop: `axum::serve` with the limits it does not offer. A connection cap (the loop
//! stops accepting at the cap, and the kernel's backlog holds the rest), a header-read timeout (a
//! connection that does not send a whole request head in time is closed, idle keep-alive ones
//! included), and a drain with a deadline: after the shutdown signal, open connections get a few
//! seconds to finish, then the server exits whatever clients still hold open.
//!
//! Written on hyper-util's auto builder and graceful shutdown, as axum's own `serve` is; axum 0.8
//! exposes neither the timer nor the header timeout, so this loop replaces it.

use std::{future::Future, sync::Arc, time::Duration};

use axum::Router;
use hyper_util::{
    rt::{TokioExecutor, TokioIo, TokioTimer},
    server::{conn::auto::Builder, graceful::GracefulShutdown},
    service::TowerToHyperService,
};
use tokio::{net::TcpListener, sync::Semaphore};
use tower::ServiceExt;

use crate::config::Config;

/// What bounds the connections a server holds.
#[derive(Clone, Copy, Debug)]
pub struct ConnectionLimits {
    pub max_connections: usize,
    pub header_read_timeout: Duration,
    /// How long open connections get after the shutdown signal.
    pub drain: Duration,
}

impl ConnectionLimits {
    /// The limits `config` asks for, the cap lowered to fit the open-files limit `open_files`.
    pub fn from_config(config: &Config, open_files: u64) -> Self {
        // Room for the database, the site's files, tools and the listener.
        let room = open_files.saturating_sub(256).max(16);
        ConnectionLimits {
            max_connections: config.max_connections.clamp(1, room as usize),
            header_read_timeout: Duration::from_secs(config.header_read_timeout_secs.max(1)),
            drain: config.shutdown_drain(),
        }
    }
}

/// Serves `router` on `listener` until `shutdown` completes, then drains.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    limits: ConnectionLimits,
    shutdown: impl Future<Output = ()>,
) {
    let slots = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let graceful = GracefulShutdown::new();
    // HTTP/1 only, without upgrades (the app uses SSE, no WebSockets): browsers speak HTTP/2
    // only over TLS, which a proxy in front terminates. The auto builder's version sniffing (and
    // its upgradeable connection) waits for a first byte with no timeout at all.
    let mut builder = Builder::new(TokioExecutor::new()).http1_only();
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout);
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let slot = tokio::select! {
            slot = slots.clone().acquire_owned() => match slot {
                Ok(slot) => slot,
                Err(_) => break,
            },
            () = &mut shutdown => break,
        };
        let (tcp, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    // Out of file descriptors, say: wait instead of spinning.
                    tracing::warn!(%error, "accept failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        // Events are small writes that must leave at once: without TCP_NODELAY, Nagle's algorithm
        // holds a write back until the previous one is acknowledged (40 ms with delayed ACKs).
        if let Err(error) = tcp.set_nodelay(true) {
            tracing::debug!(%error, "cannot set TCP_NODELAY");
        }
        // The peer's address, for `--auth proxy`'s trusted proxies and sign-in throttling.
        let service = TowerToHyperService::new(router.clone().map_request(
            move |mut request: hyper::Request<hyper::body::Incoming>| {
                request
                    .extensions_mut()
                    .insert(axum::extract::ConnectInfo(peer));
                request
            },
        ));
        let connection = builder
            .serve_connection(TokioIo::new(tcp), service)
            .into_owned();
        let connection = graceful.watch(connection);
        tokio::spawn(async move {
            if let Err(error) = connection.await {
                tracing::trace!(%error, "connection ended with an error");
            }
            drop(slot);
        });
    }
    drop(listener);
    if tokio::time::timeout(limits.drain, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::warn!(
            drain_secs = limits.drain.as_secs(),
            "connections still open after the drain; closing them"
        );
    }
}
