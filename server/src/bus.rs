//! Several instances on one PostgreSQL database talk through it, with LISTEN/NOTIFY: no broker of
//! our own, no second server to run.
//!
//! - `glassbox_events`, payload `<trace_id> <last_seq>` or `<trace_id> end`: sent in the same
//!   transaction as a checkpoint or a trace's close, so it arrives only once the events can be
//!   read. The events themselves are read from the tables (so payload limits do not matter): one
//!   query for every followed trace announced since the last one (the bus's fetcher), into a
//!   short window of recent events per trace that all its readers on this instance share. A
//!   reader behind that window, or one woken by the 1 s poll after a lost notification, reads
//!   the tables itself.
//! - `glassbox_commands`, the commands channel (earlier versions used `glassbox_cancel` with
//!   another shape; the new name keeps an older instance from misreading a command). A [`RunCommand`] (Stop, or an answer to an approval
//!   request) given on an instance that does not run the run goes there as
//!   `{"kind": "command", "id", "run_id", "owner_id", "command": {…}}`; the instance that runs it
//!   carries it out and answers on the same channel with `{"kind": "reply", "id", "outcome"}`,
//!   which wakes the sender (it waits at most [`REPLY_WAIT`]). Nothing polls the tables for it.
//!
//! Each instance also refreshes its lease every 2 s and ends, as interrupted, the runs of any
//! instance whose lease is 6 s old (see `PgStore::leftover_runs`).

use std::{
    collections::{HashMap, HashSet, VecDeque},
    sync::{
        atomic::{AtomicU64, Ordering},
        Arc, Mutex,
    },
    time::Duration,
};

use serde::{Deserialize, Serialize};
use sqlx::postgres::{PgListener, PgPoolOptions};
use tokio::sync::{oneshot, watch, Notify};
use tokio_util::sync::CancellationToken;

use crate::error::Result;
use crate::sink::ApprovalAnswer;
use crate::store::{PgStore, Store, TraceEvents, HEARTBEAT_INTERVAL};

/// What readers of one trace know of it: the newest stored seq, and whether it has ended.
/// `wakes` changes when notifications may have been lost, so readers read again.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Progress {
    pub last_seq: u64,
    pub ended: bool,
    pub wakes: u64,
}

/// What one instance asks of the instance that runs a run.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum RunCommand {
    Stop {
        reason: Option<String>,
    },
    Answer {
        call_id: String,
        answer: ApprovalAnswer,
    },
}

/// A command with the run it is for, as it travels.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Addressed {
    /// Names the reply.
    pub id: String,
    pub run_id: String,
    pub owner_id: String,
    pub command: RunCommand,
}

/// What the instance that runs the run made of a command.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CommandOutcome {
    Done,
    /// The run has already ended.
    Ended,
    /// No call of the run asked for approval under that id.
    UnknownCall,
    /// Someone answered the call first.
    AlreadyAnswered,
}

/// One message on the commands channel.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum Wire {
    Command(Addressed),
    Reply { id: String, outcome: CommandOutcome },
}

/// Carries out a command for a run of this instance; `None` when this instance does not run it
/// (another one answers).
pub type OnCommand = Box<dyn Fn(Addressed) -> Option<CommandOutcome> + Send + Sync>;

/// Receives the runs of lost instances this instance closed (the engine exports them).
pub type OnRecovered = Box<dyn Fn(Vec<crate::store::LeftoverRun>) + Send + Sync>;

/// How long a sender waits for the reply to a command.
pub const REPLY_WAIT: Duration = Duration::from_secs(5);

/// The most recent events kept per followed trace for its readers.
const WINDOW: usize = 512;

/// A trace that readers on this instance follow.
struct Followed {
    progress: watch::Sender<Progress>,
    /// The newest events the fetcher has read, in seq order, ending at `read_up_to`.
    recent: VecDeque<(u64, Arc<str>)>,
    /// `None` while only a Stop waits on the trace: nothing to read for it.
    read_up_to: Option<u64>,
}

pub struct Bus {
    store: Store,
    postgres: PgStore,
    /// Followed traces by id; dropped when no reader is left.
    followers: Mutex<HashMap<String, Followed>>,
    /// Traces announced with events the fetcher has not read yet.
    due: Mutex<HashSet<String>>,
    fetch: Notify,
    /// Queries of the fetcher, and reads of the tables by readers themselves (`/healthz`): the
    /// second stays near the number of readers while they keep up.
    fetches: AtomicU64,
    table_reads: AtomicU64,
    /// Commands sent from here that wait for their reply, by id.
    pending: Mutex<HashMap<String, oneshot::Sender<CommandOutcome>>>,
}

/// What `/healthz` says of the bus.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct BusStats {
    /// Traces of other instances that readers here follow.
    pub followed: usize,
    pub fetches: u64,
    pub table_reads: u64,
}

impl Bus {
    /// Starts listening and holding the lease, until `stop`. `on_command` receives every command
    /// sent to the bus (the engine carries out those for the runs it has); `on_recovered` the runs
    /// of lost instances this one closed.
    pub fn start(
        store: Store,
        postgres: PgStore,
        on_command: OnCommand,
        on_recovered: OnRecovered,
        stop: CancellationToken,
    ) -> Arc<Bus> {
        let bus = Arc::new(Bus {
            store,
            postgres,
            followers: Mutex::new(HashMap::new()),
            due: Mutex::new(HashSet::new()),
            fetch: Notify::new(),
            fetches: AtomicU64::new(0),
            table_reads: AtomicU64::new(0),
            pending: Mutex::new(HashMap::new()),
        });
        tokio::spawn(bus.clone().listen(on_command, stop.clone()));
        tokio::spawn(bus.clone().fetcher(stop.clone()));
        tokio::spawn(bus.clone().hold_lease(on_recovered, stop));
        bus
    }

    fn followers(&self) -> std::sync::MutexGuard<'_, HashMap<String, Followed>> {
        self.followers
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn due(&self) -> std::sync::MutexGuard<'_, HashSet<String>> {
        self.due
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub fn stats(&self) -> BusStats {
        BusStats {
            followed: self.followers().len(),
            fetches: self.fetches.load(Ordering::Relaxed),
            table_reads: self.table_reads.load(Ordering::Relaxed),
        }
    }

    /// Counts a reader's own read of the tables.
    pub fn count_table_read(&self) {
        self.table_reads.fetch_add(1, Ordering::Relaxed);
    }

    /// A watch on `trace_id`'s progress, for a reader that has read up to `cursor` (`None`: one
    /// that only waits for the end).
    pub fn follow(&self, trace_id: &str, cursor: Option<u64>) -> watch::Receiver<Progress> {
        let mut followers = self.followers();
        let followed = followers
            .entry(trace_id.to_owned())
            .or_insert_with(|| Followed {
                progress: watch::channel(Progress::default()).0,
                recent: VecDeque::new(),
                read_up_to: None,
            });
        // A reader further back than the window reads the tables itself; one ahead of an empty
        // window moves the fetcher on.
        if followed.recent.is_empty() && cursor > followed.read_up_to {
            followed.read_up_to = cursor;
        }
        followed.progress.subscribe()
    }

    /// The events after `cursor` from the shared window: `None` when the window does not reach
    /// back to `cursor` (the reader reads the tables).
    pub fn recent_after(&self, trace_id: &str, cursor: u64) -> Option<Vec<(u64, Arc<str>)>> {
        let followers = self.followers();
        let followed = followers.get(trace_id)?;
        let read_up_to = followed.read_up_to?;
        let oldest = followed
            .recent
            .front()
            .map_or(read_up_to, |(seq, _)| seq - 1);
        if cursor < oldest || cursor > read_up_to {
            return None;
        }
        Some(
            followed
                .recent
                .iter()
                .filter(|(seq, _)| *seq > cursor)
                .cloned()
                .collect(),
        )
    }

    /// Reads the new events of every trace announced since the last read, in one query.
    async fn fetcher(self: Arc<Self>, stop: CancellationToken) {
        loop {
            tokio::select! {
                _ = stop.cancelled() => return,
                _ = self.fetch.notified() => {}
            }
            let due: Vec<String> = self.due().drain().collect();
            let wanted: Vec<(String, u64)> = {
                let followers = self.followers();
                due.into_iter()
                    .filter_map(|trace| {
                        let read_up_to = followers.get(&trace)?.read_up_to?;
                        Some((trace, read_up_to))
                    })
                    .collect()
            };
            if wanted.is_empty() {
                continue;
            }
            self.fetches.fetch_add(1, Ordering::Relaxed);
            match self.postgres.chunks_after(&wanted).await {
                Ok(events) => self.take_in(events),
                Err(error) => {
                    tracing::warn!(%error, "the bus could not read new events; readers fall back");
                    self.wake_all();
                }
            }
        }
    }

    /// Appends what the fetcher read to each trace's window and wakes its readers.
    fn take_in(&self, events: Vec<TraceEvents>) {
        let mut followers = self.followers();
        for (trace_id, chunk) in events {
            let Some(followed) = followers.get_mut(&trace_id) else {
                continue;
            };
            let Some(mut read_up_to) = followed.read_up_to else {
                continue;
            };
            for (seq, json) in chunk {
                if seq == read_up_to + 1 {
                    followed.recent.push_back((seq, json));
                    read_up_to = seq;
                }
            }
            while followed.recent.len() > WINDOW {
                followed.recent.pop_front();
            }
            followed.read_up_to = Some(read_up_to);
            followed
                .progress
                .send_modify(|progress| progress.last_seq = progress.last_seq.max(read_up_to));
        }
    }

    /// Sends a command for a run that another instance runs, and waits (at most
    /// [`REPLY_WAIT`]) for that instance's reply: `None` when none came.
    pub async fn send(
        &self,
        run_id: &str,
        owner_id: &str,
        command: RunCommand,
    ) -> Result<Option<CommandOutcome>> {
        let id = crate::stamps::new_id("cmd");
        let (reply, replied) = oneshot::channel();
        self.pending().insert(id.clone(), reply);
        // Removes the entry however this ends, a dropped request included.
        let _waiting = Waiting { bus: self, id: &id };
        self.notify(&Wire::Command(Addressed {
            id: id.clone(),
            run_id: run_id.to_owned(),
            owner_id: owner_id.to_owned(),
            command,
        }))
        .await?;
        let outcome = tokio::time::timeout(REPLY_WAIT, replied).await.ok();
        Ok(outcome.and_then(Result::ok))
    }

    fn pending(
        &self,
    ) -> std::sync::MutexGuard<'_, HashMap<String, oneshot::Sender<CommandOutcome>>> {
        self.pending
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    async fn notify(&self, message: &Wire) -> Result<()> {
        let payload = serde_json::to_string(message)
            .map_err(|error| crate::error::Error::Internal(error.to_string()))?;
        self.postgres.notify_command(payload).await
    }

    /// A message on the commands channel: a command is carried out here (if this instance runs
    /// its run) and answered; a reply wakes the command's sender, if it is here.
    fn on_command_channel(self: &Arc<Self>, payload: &str, on_command: &OnCommand) {
        match serde_json::from_str(payload) {
            Ok(Wire::Command(addressed)) => {
                let id = addressed.id.clone();
                if let Some(outcome) = on_command(addressed) {
                    let bus = self.clone();
                    tokio::spawn(async move {
                        if let Err(error) = bus.notify(&Wire::Reply { id, outcome }).await {
                            tracing::warn!(%error, "could not answer a command from another instance");
                        }
                    });
                }
            }
            Ok(Wire::Reply { id, outcome }) => {
                if let Some(waiting) = self.pending().remove(&id) {
                    let _ = waiting.send(outcome);
                }
            }
            Err(error) => tracing::warn!(%error, "an unreadable command notification"),
        }
    }

    async fn listen(self: Arc<Self>, on_command: OnCommand, stop: CancellationToken) {
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
            .listen_all(["glassbox_events", "glassbox_commands"])
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
                    _ => self.on_command_channel(notification.payload(), &on_command),
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
        let Some(followed) = followers.get(trace_id) else {
            return;
        };
        if followed.progress.receiver_count() == 0 {
            followers.remove(trace_id);
            return;
        }
        if what == "end" {
            followed
                .progress
                .send_modify(|progress| progress.ended = true);
            return;
        }
        let announced = what.parse::<u64>().unwrap_or(0);
        if followed.read_up_to.is_some_and(|read| announced > read) {
            drop(followers);
            self.due().insert(trace_id.to_owned());
            self.fetch.notify_one();
        }
    }

    fn wake_all(&self) {
        let mut followers = self.followers();
        followers.retain(|_, followed| followed.progress.receiver_count() > 0);
        for followed in followers.values() {
            followed
                .progress
                .send_modify(|progress| progress.wakes += 1);
        }
    }

    /// Refreshes this instance's lease and ends the runs of instances whose lease has expired.
    async fn hold_lease(self: Arc<Self>, on_recovered: OnRecovered, stop: CancellationToken) {
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
                .recover_orphaned_runs(&crate::stamps::now_rfc3339())
                .await
            {
                Ok(ended) if ended.is_empty() => {}
                Ok(ended) => {
                    tracing::warn!(
                        ended = ended.len(),
                        "ended the runs of an instance that stopped answering"
                    );
                    on_recovered(ended);
                }
                Err(error) => tracing::warn!(%error, "could not look for runs of lost instances"),
            }
        }
    }
}

/// A command waiting for its reply: its entry in `pending` goes when this does.
struct Waiting<'a> {
    bus: &'a Bus,
    id: &'a str,
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.bus.pending().remove(self.id);
    }
}
