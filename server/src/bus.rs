//! Several instances on one PostgreSQL database talk through it, with LISTEN/NOTIFY: no broker of
//! our own, no second server to run.
//!
//! - `glassbox_events`, payload `<trace_id> <last_seq>` or `<trace_id> end`: sent in the same
//!   transaction as a checkpoint or a trace's close, so it arrives only once the events can be
//!   read. A notification only wakes readers; they read the events from the tables (so payload
//!   limits do not matter, and a lost notification costs at most the 1 s poll readers fall back on).
//! - `glassbox_cancel`, payload `{"run_id", "owner_id", "reason"}`: Stop pressed on an instance
//!   that does not run the run; the one that does cancels it.
//!
//! Each instance also refreshes its lease every 2 s and ends, as interrupted, the runs of any
//! instance whose lease is 6 s old (see `PgStore::leftover_runs`).

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::Duration,
};

use serde::{Deserialize, Serialize};
use sqlx::postgres::{PgListener, PgPoolOptions};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::error::Result;
use crate::store::{PgStore, Store, HEARTBEAT_INTERVAL};

/// What readers of one trace know of it: the newest stored seq, and whether it has ended.
/// `wakes` changes when notifications may have been lost, so readers read again.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Progress {
    pub last_seq: u64,
    pub ended: bool,
    pub wakes: u64,
}

/// Stop, sent to whichever instance runs the run.
#[derive(Debug, Serialize, Deserialize)]
pub struct CancelRequest {
    pub run_id: String,
    pub owner_id: String,
    pub reason: Option<String>,
}

type OnCancel = Box<dyn Fn(CancelRequest) + Send + Sync>;

pub struct Bus {
    store: Store,
    postgres: PgStore,
    /// Readers' watches by trace id; dropped when no reader is left.
    followers: Mutex<HashMap<String, watch::Sender<Progress>>>,
}

impl Bus {
    /// Starts listening and holding the lease, until `stop`. `on_cancel` receives every Stop
    /// sent to the bus (the engine cancels the runs it has).
    pub fn start(
        store: Store,
        postgres: PgStore,
        on_cancel: OnCancel,
        stop: CancellationToken,
    ) -> Arc<Bus> {
        let bus = Arc::new(Bus {
            store,
            postgres,
            followers: Mutex::new(HashMap::new()),
        });
        tokio::spawn(bus.clone().listen(on_cancel, stop.clone()));
        tokio::spawn(bus.clone().hold_lease(stop));
        bus
    }

    fn followers(&self) -> std::sync::MutexGuard<'_, HashMap<String, watch::Sender<Progress>>> {
        self.followers
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// A watch on `trace_id`'s progress, as notifications report it.
    pub fn follow(&self, trace_id: &str) -> watch::Receiver<Progress> {
        self.followers()
            .entry(trace_id.to_owned())
            .or_insert_with(|| watch::channel(Progress::default()).0)
            .subscribe()
    }

    /// Sends Stop for a run that another instance runs.
    pub async fn request_cancel(&self, request: &CancelRequest) -> Result<()> {
        let payload = serde_json::to_string(request)
            .map_err(|error| crate::error::Error::Internal(error.to_string()))?;
        self.postgres.notify_cancel(payload).await
    }

    async fn listen(self: Arc<Self>, on_cancel: OnCancel, stop: CancellationToken) {
        let pool = PgPoolOptions::new()
            .max_connections(1)
            .connect_lazy_with(self.postgres.listener_options().clone());
        let mut listener = loop {
            match PgListener::connect_with(&pool).await {
                Ok(listener) => break listener,
                Err(error) => tracing::warn!(%error, "the bus cannot connect; retrying"),
            }
            tokio::select! {
                _ = stop.cancelled() => return,
                _ = tokio::time::sleep(Duration::from_secs(1)) => {}
            }
        };
        if let Err(error) = listener
            .listen_all(["glassbox_events", "glassbox_cancel"])
            .await
        {
            tracing::error!(%error, "the bus cannot listen; other instances' streams fall back to polling");
        }
        loop {
            let received = tokio::select! {
                _ = stop.cancelled() => return,
                received = listener.try_recv() => received,
            };
            match received {
                Ok(Some(notification)) => match notification.channel() {
                    "glassbox_events" => self.on_events(notification.payload()),
                    _ => match serde_json::from_str(notification.payload()) {
                        Ok(request) => on_cancel(request),
                        Err(error) => tracing::warn!(%error, "an unreadable cancel notification"),
                    },
                },
                // The connection was lost; the next call reconnects. What was sent meanwhile is
                // lost: every reader reads again.
                Ok(None) => self.wake_all(),
                Err(error) => {
                    tracing::warn!(%error, "the bus lost its connection; reconnecting");
                    self.wake_all();
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
            }
        }
    }

    fn on_events(&self, payload: &str) {
        let Some((trace_id, what)) = payload.split_once(' ') else {
            return;
        };
        let mut followers = self.followers();
        let Some(sender) = followers.get(trace_id) else {
            return;
        };
        if sender.receiver_count() == 0 {
            followers.remove(trace_id);
            return;
        }
        sender.send_modify(|progress| match what {
            "end" => progress.ended = true,
            seq => {
                let seq = seq.parse().unwrap_or(0);
                progress.last_seq = progress.last_seq.max(seq);
            }
        });
    }

    fn wake_all(&self) {
        let mut followers = self.followers();
        followers.retain(|_, sender| sender.receiver_count() > 0);
        for sender in followers.values() {
            sender.send_modify(|progress| progress.wakes += 1);
        }
    }

    /// Refreshes this instance's lease and ends the runs of instances whose lease has expired.
    async fn hold_lease(self: Arc<Self>, stop: CancellationToken) {
        loop {
            tokio::select! {
                _ = stop.cancelled() => return,
                _ = tokio::time::sleep(HEARTBEAT_INTERVAL) => {}
            }
            if let Err(error) = self.postgres.heartbeat().await {
                tracing::warn!(%error, "could not refresh this instance's lease");
            }
            match self
                .store
                .interrupt_orphaned_runs(&crate::runs::now_rfc3339())
                .await
            {
                Ok(0) => {}
                Ok(ended) => {
                    tracing::warn!(
                        ended,
                        "ended the runs of an instance that stopped answering"
                    )
                }
                Err(error) => tracing::warn!(%error, "could not look for runs of lost instances"),
            }
        }
    }
}
