//! One checkpointer for every run. Each [`CHECKPOINT_INTERVAL`] (sooner after a `tool_result`;
//! [`SHARED_CHECKPOINT_INTERVAL`] on PostgreSQL) it appends the new events of the running runs in
//! one transaction of the store's one writer, on either database: one commit per interval rather
//! than one per run, so thousands of concurrent runs stay within what one writer commits. A
//! transaction holds at most `RUNS_PER_TRANSACTION` runs (`SHARED_RUNS_PER_TRANSACTION` on
//! PostgreSQL), so past that an interval is several short transactions. Each is whole or nothing
//! (`Store::append_chunks`: one writer job; `tests/store.rs` checks it on both databases). A crash
//! loses at most the events of the last interval plus one write. The steps the runs finished
//! since the last checkpoint are indexed for search after the chunks, in one more write (more
//! past [`INDEX_PIECES_PER_WRITE`]), background work of the writer's (at the lowest priority: on
//! a busy machine it waits, and the next checkpoint's chunks do not wait for all of it; a run's
//! end does not wait for it in the checkpointer, and on SQLite makes it yield).
//!
//! It runs on a thread of its own (see [`Checkpointer::spawn`]): tools stuck in blocking I/O can
//! fill tokio's blocking pool and busy async workers can lag, and neither may stop checkpoints.

use std::{
    collections::{HashMap, HashSet},
    sync::{Arc, Mutex, MutexGuard},
    time::{Duration, Instant},
};

use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::Run;
use crate::store::{CheckpointChunk, StepDocs, Store};

/// Checkpoint at least this often while a run goes (and at each `tool_result`).
pub const CHECKPOINT_INTERVAL: Duration = Duration::from_millis(250);
/// On PostgreSQL, readers on other instances read the run from its checkpoints, so they are
/// written this often (start to start): what a reader there waits at most, beside the commit and
/// the notification. 5 ms: cross-instance p99 16.6-19.4 ms at 1,000 streams x 20/s against
/// 22.4-27.4 ms at 10 ms, for 780 commits/s instead of 415 (docs/benchmarks.md).
pub const SHARED_CHECKPOINT_INTERVAL: Duration = Duration::from_millis(5);
/// About 3 ms of writing each (measured at 5 events per run): what a closing run may wait for.
const RUNS_PER_TRANSACTION: usize = 100;
/// On PostgreSQL every commit is a round trip and a WAL flush, and the interval is short: one
/// transaction per interval for up to this many runs.
const SHARED_RUNS_PER_TRANSACTION: usize = 2_000;

pub struct Checkpointer {
    store: Store,
    interval: Duration,
    runs_per_transaction: usize,
    /// Running runs by id, with the last seq stored.
    tracked: Mutex<HashMap<String, Tracked>>,
    /// Runs call `notify_one` on it after a `tool_result`.
    wake: Arc<Notify>,
    /// Held for each write of chunks, so `untrack` can wait for one in flight.
    writing: tokio::sync::Mutex<()>,
}

struct Tracked {
    run: Arc<Run>,
    saved: u64,
    /// The run's finished steps counted at the last checkpoint that indexed them, and their ids.
    steps_seen: u64,
    indexed: HashSet<String>,
    /// When a checkpoint first found steps of the run waiting to be indexed, until they are:
    /// the oldest wait is indexed first, so a checkpoint that leaves some for the next one (past
    /// its time) does not leave the same runs each time.
    waiting_since: Option<Instant>,
}

impl Checkpointer {
    pub fn new(store: Store) -> Arc<Self> {
        let (interval, runs_per_transaction) = match store.postgres() {
            Some(_) => (SHARED_CHECKPOINT_INTERVAL, SHARED_RUNS_PER_TRANSACTION),
            None => (CHECKPOINT_INTERVAL, RUNS_PER_TRANSACTION),
        };
        Arc::new(Checkpointer {
            store,
            interval,
            runs_per_transaction,
            tracked: Mutex::new(HashMap::new()),
            wake: Arc::new(Notify::new()),
            writing: tokio::sync::Mutex::new(()),
        })
    }

    /// What a run notifies to be checkpointed early.
    pub fn waker(&self) -> Arc<Notify> {
        self.wake.clone()
    }

    fn tracked(&self) -> MutexGuard<'_, HashMap<String, Tracked>> {
        self.tracked
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub fn track(&self, run: Arc<Run>) {
        self.tracked().insert(
            run.run_id.clone(),
            Tracked {
                run,
                saved: 0,
                steps_seen: 0,
                indexed: HashSet::new(),
                waiting_since: None,
            },
        );
    }

    /// Stops checkpointing the run. When this returns, no write of its events is in flight and none
    /// will start, so the final write (which replaces the checkpoint rows) is the last. It does
    /// not wait for an indexing write in flight: the final write is queued behind it (on SQLite
    /// it yields to that write; on PostgreSQL it goes first, as any job queued before), and it
    /// indexes nothing of a trace closed before it.
    pub async fn untrack(&self, run_id: &str) {
        self.tracked().remove(run_id);
        let _in_flight = self.writing.lock().await;
    }

    /// Starts checkpointing on its own thread (with its own small runtime) until `stop`.
    pub fn spawn(self: Arc<Self>, stop: CancellationToken) -> std::io::Result<()> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        std::thread::Builder::new()
            .name("glassbox-checkpointer".into())
            .spawn(move || runtime.block_on(self.run(stop)))?;
        Ok(())
    }

    /// Writes every interval, or when woken, until `stop`.
    async fn run(self: Arc<Self>, stop: CancellationToken) {
        // Start to start: the time a write takes does not add to the wait of the next events.
        let mut ticks = tokio::time::interval(self.interval);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = stop.cancelled() => return,
                _ = ticks.tick() => {}
                _ = self.wake.notified() => {}
            }
            self.write_once().await;
        }
    }

    async fn write_once(self: &Arc<Self>) {
        let due = tokio::time::Instant::now() + self.interval;
        // Gathering and joining thousands of runs' events takes milliseconds: on this thread, so
        // it holds up no run or stream on the async workers.
        let (gathered, steps) = self.gather();
        let mut pending = gathered.into_iter().peekable();
        // Several short writes rather than one long one: a run that ends (or starts) waits for
        // the writer's transaction in flight.
        while pending.peek().is_some() {
            let batch: Vec<(Saved, CheckpointChunk)> =
                pending.by_ref().take(self.runs_per_transaction).collect();
            let _writing = self.writing.lock().await;
            let (saved, chunks) = self.still_tracked(batch);
            if chunks.is_empty() {
                continue;
            }
            let runs = chunks.len();
            match self.store.append_chunks(chunks).await {
                Ok(()) => self.move_forward(saved),
                Err(error) => {
                    tracing::warn!(runs, %error, "checkpoint failed; will retry")
                }
            }
        }
        self.index_steps(steps, due).await;
    }

    /// Indexes the steps the runs finished since the last checkpoint after the chunks, in as few
    /// writes as [`INDEX_PIECES_PER_WRITE`] and [`INDEX_BYTES_PER_WRITE`] allow (one, mostly): in
    /// the chunks' transactions (up to ten per checkpoint, a hundred runs each) each transaction's
    /// pieces went to random pages of SQLite's b-trees on conversation and message, so most of
    /// those pages were written once per transaction, not once per checkpoint.
    ///
    /// The writes are background ones ([`crate::store::writer::Writer::write_background`]): on a
    /// saturated machine one takes far longer than its CPU time, so past `due` (the next
    /// checkpoint's time) the rest is left for the next checkpoint, which gathers it again, and
    /// the chunks keep their interval. The first write is always tried (it may still yield to other
    /// writes queued behind it, and then goes first next time).
    async fn index_steps(&self, steps: Vec<(Indexed, StepDocs)>, due: tokio::time::Instant) {
        for (written, batch) in index_batches(steps).into_iter().enumerate() {
            if written > 0 && tokio::time::Instant::now() >= due {
                tracing::debug!(written, "indexing left for the next checkpoint");
                break;
            }
            // Without `writing`: a run that ends meanwhile does not wait for this write here (its
            // end is queued behind it, which it yields to on SQLite), and the store indexes no
            // piece of a trace closed before the write (its end indexed its message).
            let (indexed, steps) = self.still_tracked(batch);
            match self.store.index_steps(steps).await {
                Ok(()) => self.move_forward(indexed),
                // Gathered again at the next checkpoint, whether the run has new events or not;
                // first of all, as it has waited longest.
                Err(error) if error.is_interrupted() => {
                    tracing::debug!("indexing yielded to other writes; the next checkpoint retries")
                }
                Err(error) => tracing::warn!(%error, "indexing finished steps failed; will retry"),
            }
        }
    }

    /// What of `batch` is for runs still tracked, split into what storing it moves forward and
    /// what is stored. A run untracked since the gathering has ended: its final write, queued
    /// or done, closes its trace and indexes its message, so none of its rows may follow
    /// (chunks are filtered with `writing` held; the store leaves out the pieces of a trace
    /// already closed, and the final write keeps or replaces those written before it).
    fn still_tracked<P: Progress, T>(&self, batch: Vec<(P, T)>) -> (Vec<P>, Vec<T>) {
        let tracked = self.tracked();
        batch
            .into_iter()
            .filter(|(progress, _)| tracked.contains_key(progress.run_id()))
            .unzip()
    }

    /// After a write: moves each run that is still tracked forward by what it stored.
    fn move_forward(&self, progress: Vec<impl Progress>) {
        let mut tracked = self.tracked();
        for progress in progress {
            if let Some(entry) = tracked.get_mut(progress.run_id()) {
                progress.apply(entry);
            }
        }
    }

    /// Each tracked run's events since its last checkpoint and what storing them moves forward,
    /// in the order the runs started, and the steps runs finished since the last checkpoint that
    /// indexed theirs, those waiting longest first. The runs' order is that of their traces'
    /// keys in SQLite's index of chunks (`agent_traces.chunk_key`, given in insertion order), so
    /// each transaction of a checkpoint adds its index entries to the pages of its own range of
    /// traces: with the runs in the map's order, each of the ten transactions of a checkpoint of
    /// a thousand runs rewrote most of the index's pages.
    fn gather(&self) -> Gathered {
        let now = Instant::now();
        let mut chunks = Vec::new();
        let mut steps = Vec::new();
        for (run_id, tracked) in self.tracked().iter_mut() {
            // Before the events: steps whose indexing failed are tried again while the run is
            // quiet (a long tool, an approval awaited).
            if let Some(step_docs) = tracked.step_docs(run_id, now) {
                steps.push(step_docs);
            }
            let up_to = tracked.run.published().last_seq;
            if up_to <= tracked.saved {
                continue;
            }
            let events = tracked.run.events_between(tracked.saved, up_to, usize::MAX);
            let Some(chunk) = CheckpointChunk::new(&tracked.run.trace_id, &events) else {
                continue;
            };
            let saved = Saved {
                run_id: run_id.clone(),
                last_seq: chunk.last_seq,
            };
            chunks.push((tracked.run.started_at, saved, chunk));
        }
        chunks.sort_unstable_by_key(|(started_at, _, _)| *started_at);
        let chunks = chunks
            .into_iter()
            .map(|(_, saved, chunk)| (saved, chunk))
            .collect();
        steps.sort_unstable_by_key(|(order, _)| *order);
        (chunks, steps.into_iter().map(|(_, steps)| steps).collect())
    }
}

impl Tracked {
    /// The pieces of the steps the run finished since the last checkpoint that indexed its
    /// steps, and what indexing them moves forward, with the order they are indexed in (how
    /// long they have waited, then the run's start); `None` when no step has finished since, and
    /// when none of those has a piece (an empty reasoning block: then nothing is left to write).
    fn step_docs(
        &mut self,
        run_id: &str,
        now: Instant,
    ) -> Option<(IndexOrder, (Indexed, StepDocs))> {
        let (steps_seen, docs) = self
            .run
            .finished_step_docs(self.steps_seen, &self.indexed)?;
        if docs.is_empty() {
            self.steps_seen = steps_seen;
            return None;
        }
        let ids = docs.iter().filter_map(|doc| doc.step.clone()).collect();
        let indexed = Indexed {
            run_id: run_id.to_owned(),
            steps_seen,
            ids,
        };
        let trace_id = self.run.trace_id.clone();
        let order = (*self.waiting_since.get_or_insert(now), self.run.started_at);
        Some((order, (indexed, StepDocs { trace_id, docs })))
    }
}

/// Since when a run's steps wait to be indexed, and when the run started.
type IndexOrder = (Instant, Instant);

/// The most pieces one write of a checkpoint's finished steps indexes: the write runs at the
/// lowest priority's share of a saturated machine (250 pieces: 3 ms of CPU on a quiet machine,
/// about 290 ms with both cores busy at nice 0; 500, about 0.55 s: docs/benchmarks.md), and
/// yields (on SQLite) to a write queued behind it (a run's start or end), which may still wait
/// for the part that cannot stop (its commit). Fewer a write cost more a piece (a commit each, and
/// the indexes' pages written again, which the WAL's checkpoints copy at the normal priority):
/// at 1,000 streams x 50 events/s a checkpoint has about 250, in one write.
const INDEX_PIECES_PER_WRITE: usize = 500;
/// About the most text one such write indexes (a piece is at most 32 K characters).
const INDEX_BYTES_PER_WRITE: usize = 512 << 10;

/// `steps` cut into writes of at most [`INDEX_PIECES_PER_WRITE`] pieces and about
/// [`INDEX_BYTES_PER_WRITE`] of text (a run's steps are never cut).
fn index_batches(steps: Vec<(Indexed, StepDocs)>) -> Vec<Vec<(Indexed, StepDocs)>> {
    let mut batches: Vec<Vec<(Indexed, StepDocs)>> = Vec::new();
    let (mut pieces, mut bytes) = (0, 0);
    for entry in steps {
        let size: usize = entry.1.docs.iter().map(|doc| doc.body.len()).sum();
        let count = entry.1.docs.len();
        match batches.last_mut() {
            Some(batch)
                if pieces + count <= INDEX_PIECES_PER_WRITE
                    && bytes + size <= INDEX_BYTES_PER_WRITE =>
            {
                batch.push(entry);
                (pieces, bytes) = (pieces + count, bytes + size);
            }
            _ => {
                batches.push(vec![entry]);
                (pieces, bytes) = (count, size);
            }
        }
    }
    batches
}

/// A checkpoint's chunks, and the steps it indexes, each with what storing it moves forward.
type Gathered = (Vec<(Saved, CheckpointChunk)>, Vec<(Indexed, StepDocs)>);

/// What a stored chunk moves forward in its run's entry.
struct Saved {
    run_id: String,
    last_seq: u64,
}

/// What a write of the checkpointer moves forward in a run's entry.
trait Progress {
    fn run_id(&self) -> &str;
    fn apply(self, entry: &mut Tracked);
}

impl Progress for Saved {
    fn run_id(&self) -> &str {
        &self.run_id
    }

    fn apply(self, entry: &mut Tracked) {
        entry.saved = self.last_seq;
    }
}

impl Progress for Indexed {
    fn run_id(&self) -> &str {
        &self.run_id
    }

    fn apply(self, entry: &mut Tracked) {
        entry.steps_seen = self.steps_seen;
        entry.indexed.extend(self.ids);
        entry.waiting_since = None;
    }
}

/// What indexing a run's finished steps moves forward in its entry.
struct Indexed {
    run_id: String,
    steps_seen: u64,
    ids: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn steps(run: &str, pieces: usize, chars: usize) -> (Indexed, StepDocs) {
        let doc = crate::store::search::title_doc(&"w".repeat(chars), "2026-11-28T00:00:00Z");
        let indexed = Indexed {
            run_id: run.into(),
            steps_seen: 1,
            ids: Vec::new(),
        };
        let docs = vec![doc; pieces];
        (
            indexed,
            StepDocs {
                trace_id: run.into(),
                docs,
            },
        )
    }

    #[test]
    fn a_checkpoints_pieces_go_in_few_writes_of_bounded_size() {
        let runs = |batch: &Vec<(Indexed, StepDocs)>| -> Vec<String> {
            batch
                .iter()
                .map(|(indexed, _)| indexed.run_id.clone())
                .collect()
        };
        let batches = index_batches(vec![
            steps("a", 300, 100),
            steps("b", 200, 100),
            steps("c", 1, 100),
        ]);
        assert_eq!(
            batches.iter().map(runs).collect::<Vec<_>>(),
            [vec!["a", "b"], vec!["c"]]
        );
        // By text: 32 K characters each, 16 of them 512 KiB.
        let big: Vec<_> = (0..20)
            .map(|n| steps(&n.to_string(), 1, 32 * 1024))
            .collect();
        let sizes: Vec<usize> = index_batches(big).iter().map(Vec::len).collect();
        assert_eq!(sizes, [16, 4]);
        // A run's steps are never cut, even past the bounds.
        assert_eq!(index_batches(vec![steps("huge", 1_500, 10)]).len(), 1);
        assert!(index_batches(Vec::new()).is_empty());
    }

    /// A tracked run that has started its message.
    fn started(checkpointer: &Checkpointer, id: &str) -> Arc<Run> {
        let ids = crate::runs::RunIds {
            run_id: id.into(),
            trace_id: format!("trace_{id}"),
            conversation_id: format!("conversation_{id}"),
            message_id: format!("message_{id}"),
            owner_id: "owner".into(),
            model: "demo".into(),
        };
        let budget = crate::runs::MemoryBudget::new(usize::MAX);
        let run = Run::new(
            ids.clone(),
            "2026-11-28T00:00:00Z".into(),
            checkpointer.waker(),
            budget,
        );
        run.emit(app::protocol::EventKind::MessageStarted {
            conversation_id: ids.conversation_id,
            user_message_id: format!("question_{id}"),
            message_id: ids.message_id,
            trace_id: ids.trace_id,
            model: ids.model,
        });
        checkpointer.track(run.clone());
        run
    }

    /// `calls` more finished tool calls in `run`: a piece each.
    fn finish_calls(run: &Run, calls: usize) {
        use app::protocol::{EventKind, ToolResultStatus};
        for _ in 0..calls {
            let call_id = uuid::Uuid::new_v4().to_string();
            run.emit(EventKind::ToolCallStarted {
                call_id: call_id.clone(),
                name: "grep_search".into(),
                display: None,
                args: serde_json::json!({"query": "needle"}),
                sequence_number: 1,
            });
            run.emit(EventKind::ToolResult {
                call_id,
                status: ToolResultStatus::Success,
                duration_ms: 1,
                output: Some("found".into()),
                truncated: false,
                full_length: None,
                error: None,
            });
        }
    }

    /// Within its time a checkpoint indexes all its runs' new steps, in several writes; past it,
    /// one write, and the next checkpoint starts with the runs left waiting, so no run is left
    /// each time while others keep finishing steps. (Seen failing with the steps in the map's
    /// order: the same run was indexed at every checkpoint.)
    #[tokio::test]
    async fn past_its_time_a_checkpoint_leaves_the_rest_to_the_next_longest_waiting_first() {
        let dir = tempfile::tempdir().expect("temporary directory");
        let url = format!("sqlite://{}", dir.path().join("index.db").display());
        let checkpointer = Checkpointer::new(Store::connect(&url).await.expect("store"));
        let runs: Vec<_> = ["a", "b", "c"]
            .iter()
            .map(|id| started(&checkpointer, id))
            .collect();
        let seen = || -> Vec<u64> {
            let tracked = checkpointer.tracked();
            runs.iter()
                .map(|run| tracked[&run.run_id].steps_seen)
                .collect()
        };
        // 300 pieces a run: three writes of the 500-piece bound.
        runs.iter().for_each(|run| finish_calls(run, 300));
        let (_, steps) = checkpointer.gather();
        let later = tokio::time::Instant::now() + Duration::from_secs(60);
        checkpointer.index_steps(steps, later).await;
        assert_eq!(seen(), [300, 300, 300], "within its time, every write");
        let mut turns = Vec::new();
        for _ in 0..3 {
            runs.iter().for_each(|run| finish_calls(run, 300));
            let before = seen();
            let (_, steps) = checkpointer.gather();
            checkpointer
                .index_steps(steps, tokio::time::Instant::now())
                .await;
            let moved: Vec<usize> = (0..runs.len())
                .filter(|&n| seen()[n] != before[n])
                .collect();
            assert_eq!(moved.len(), 1, "past its time, one write: {moved:?}");
            turns.extend(moved);
        }
        turns.sort_unstable();
        assert_eq!(turns, [0, 1, 2], "each run in its turn");
    }

    /// A run that ends while the checkpointer's indexing write waits (here for another
    /// connection's write lock; on a saturated machine for the lowest priority's share of a core)
    /// stops being checkpointed at once, so its end can be queued behind that write (that the
    /// write then yields is `store::writer`'s test; that it adds nothing of a closed trace,
    /// `tests/store.rs`'). (Seen failing with the indexing write under `writing`: `untrack`
    /// waited for it.)
    #[tokio::test]
    async fn a_run_that_ends_does_not_wait_for_the_indexing_write_in_flight() {
        let dir = tempfile::tempdir().expect("temporary directory");
        let path = dir.path().join("index.db");
        let url = format!("sqlite://{}", path.display());
        let checkpointer = Checkpointer::new(Store::connect(&url).await.expect("store"));
        let run = started(&checkpointer, "a");
        finish_calls(&run, 3);
        let (_, steps) = checkpointer.gather();
        let holder = rusqlite::Connection::open(&path).expect("a second connection");
        holder
            .execute_batch("BEGIN IMMEDIATE")
            .expect("the write lock");
        let later = tokio::time::Instant::now() + Duration::from_secs(60);
        let mut indexing = std::pin::pin!(checkpointer.index_steps(steps, later));
        assert!(
            futures::poll!(&mut indexing).is_pending(),
            "the write waits"
        );
        let untracked =
            tokio::time::timeout(Duration::from_secs(2), checkpointer.untrack(&run.run_id)).await;
        holder
            .execute_batch("ROLLBACK")
            .expect("the lock given back");
        assert!(
            untracked.is_ok(),
            "the run's end waited for the indexing write"
        );
        indexing.await;
        assert!(checkpointer.tracked().is_empty());
    }
}
