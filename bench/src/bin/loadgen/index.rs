//! What indexing finished steps costs the store's writer (issue 35): `runs` running traces, then
//! `writes` writes of `pieces` reasoning pieces each, spread over the runs at random, through the
//! server's own `Store::index_steps` on a file database, as the checkpointer makes them. At 1,000
//! streams x 50 events/s with a reasoning part every 50 deltas (`streams --reasoning-every 50`)
//! a checkpoint indexes about 250 pieces, four times a second. The numbers are the writer's time
//! alone, without the streams that share its cores, so a change to the indexing can be weighed in
//! seconds before the per-event p99 is measured (which takes dozens of alternated rounds).
//!
//! With `--behind`, a one-event checkpoint write of another trace is queued 1 ms into each
//! indexing write, and timed: what a run's start (or any write queued from outside the
//! checkpointer) waits for a background write in flight, which yields to it (its pieces are
//! then left out, as the checkpointer leaves them for its next checkpoint). With `--behind end`
//! the write queued is a run's end (`Store::finish_run` of a trace begun for it): the
//! checkpointer does not hold a run's end back for its indexing write in flight, so this is
//! what a run's end waits for it.

use std::{
    collections::BTreeMap,
    sync::Arc,
    time::{Duration, Instant},
};

use app::protocol::{Message, MessageStatus};
use glassbox::store::{search::SearchDoc, FinishedTrace, StepDocs, Store};
use glassbox_bench::{summary, Jitter};

use super::storage::{begin, Begun};

/// The write `--behind` queues behind each indexing write.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Behind {
    /// A one-event checkpoint write.
    Event,
    /// A run's end.
    End,
}

pub async fn run(
    runs: usize,
    pieces: usize,
    writes: usize,
    behind: Option<Behind>,
    wakeups: bool,
) -> Result<(), String> {
    if runs == 0 {
        return Err("--runs must be at least 1: the pieces are the running traces' steps".into());
    }
    let dir = tempfile::tempdir().map_err(|error| error.to_string())?;
    let url = format!("sqlite://{}", dir.path().join("bench.db").display());
    let store = Store::connect(&url)
        .await
        .map_err(|error| error.to_string())?;
    // Each in a conversation of its own, as the load generator's runs are.
    let begun = begin_many(&store, "index", runs).await?;
    // A running trace for each run's end queued behind a write.
    let ends = if behind == Some(Behind::End) {
        writes
    } else {
        0
    };
    let mut ending = begin_many(&store, "ending", ends).await?.into_iter();
    let sleeper = wakeups.then(Sleeper::start);
    let mut jitter = Jitter::new(7);
    let mut write_us = Vec::with_capacity(writes);
    let mut behind_us = Vec::with_capacity(writes);
    let mut yielded = 0usize;
    let mut piece = 0usize;
    let started = Instant::now();
    for write in 0..writes {
        let steps = spread(&begun, &mut jitter, pieces, &mut piece);
        let began = Instant::now();
        let indexed = store.index_steps(steps);
        let queued = queue_behind(&store, behind, &begun[0], write as u64 + 1, ending.next());
        let (indexed, queued) = tokio::join!(indexed, queued);
        match indexed {
            Err(error) if error.is_interrupted() => yielded += 1,
            done => done.map_err(|error| error.to_string())?,
        }
        write_us.push(began.elapsed().as_micros() as u64);
        behind_us.extend(queued.map_err(|error| error.to_string())?);
    }
    let total = started.elapsed().as_secs_f64();
    let late_us = sleeper.map(Sleeper::stop);
    let sum_ms = write_us.iter().sum::<u64>() as f64 / 1000.0;
    let (p50, p99, max) = summary(&mut write_us);
    println!(
        "indexing: {writes} writes of {pieces} pieces over {runs} running traces: {:.2} ms of writes per 1,000 pieces; one write p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms ({total:.1} s in all)",
        sum_ms * 1000.0 / piece.max(1) as f64,
        p50 as f64 / 1000.0,
        p99 as f64 / 1000.0,
        max as f64 / 1000.0,
    );
    if let Some(behind) = behind {
        let (p50, p99, max) = summary(&mut behind_us);
        let what = match behind {
            Behind::Event => "a write",
            Behind::End => "a run's end",
        };
        println!(
            "{what} queued 1 ms into each: p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms; {yielded} of {writes} indexing writes yielded to it",
            p50 as f64 / 1000.0,
            p99 as f64 / 1000.0,
            max as f64 / 1000.0,
        );
    }
    if let Some(late_us) = late_us {
        report_wakeups(late_us);
    }
    store.close().await;
    Ok(())
}

/// `count` runs begun, each in a conversation of its own, their ids numbered after `prefix`.
async fn begin_many(store: &Store, prefix: &str, count: usize) -> Result<Vec<Begun>, String> {
    let mut begun = Vec::with_capacity(count);
    for run in 0..count {
        begun.push(begin(store, &format!("{prefix}_{run}")).await?);
    }
    Ok(begun)
}

/// How late the [`Sleeper`] woke.
fn report_wakeups(mut late_us: Vec<u64>) {
    let woken = late_us.len();
    let stalled = late_us.iter().filter(|&&late| late > 500).count();
    let (p50, p99, max) = summary(&mut late_us);
    println!(
        "a thread waking every 1 ms beside them, {woken} times: late p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms; more than 0.5 ms late {stalled} times",
        p50 as f64 / 1000.0,
        p99 as f64 / 1000.0,
        max as f64 / 1000.0,
    );
}

/// A thread at the normal priority that sleeps 1 ms at a time until stopped, and how late it
/// woke each time (µs).
struct Sleeper {
    stop: Arc<std::sync::atomic::AtomicBool>,
    thread: std::thread::JoinHandle<Vec<u64>>,
}

impl Sleeper {
    fn start() -> Sleeper {
        use std::sync::atomic::Ordering;
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let stopped = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut late_us = Vec::new();
            while !stopped.load(Ordering::Relaxed) {
                let slept = Instant::now();
                std::thread::sleep(Duration::from_millis(1));
                let late = slept.elapsed().saturating_sub(Duration::from_millis(1));
                late_us.push(late.as_micros() as u64);
            }
            late_us
        });
        Sleeper { stop, thread }
    }

    fn stop(self) -> Vec<u64> {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        self.thread.join().unwrap_or_default()
    }
}

/// 1 ms into an indexing write, the write `behind` says, timed: event `seq` of `running`, or the
/// end of `ending`; `None` without `--behind`.
async fn queue_behind(
    store: &Store,
    behind: Option<Behind>,
    running: &Begun,
    seq: u64,
    ending: Option<Begun>,
) -> Result<Option<u64>, glassbox::error::Error> {
    let Some(behind) = behind else {
        return Ok(None);
    };
    tokio::time::sleep(Duration::from_millis(1)).await;
    let event: Arc<str> = Arc::from(r#"{"type":"text_delta","delta":"x "}"#);
    let queued = Instant::now();
    match (behind, ending) {
        (Behind::End, Some(ending)) => end(store, &ending, event).await?,
        _ => {
            store
                .append_events(&running.trace_id, &[(seq, event)])
                .await?
        }
    }
    Ok(Some(queued.elapsed().as_micros() as u64))
}

/// Closes `run`'s trace with one event and an empty answer, as a run's end does.
async fn end(store: &Store, run: &Begun, event: Arc<str>) -> Result<(), glassbox::error::Error> {
    let mut message = Message::assistant(
        run.answer_id.clone(),
        "scenario:bench".into(),
        "2026-11-22T10:00:00.000Z".into(),
    );
    message.status = MessageStatus::Complete;
    store
        .finish_run(FinishedTrace {
            trace_id: &run.trace_id,
            message: &message,
            completed_at: "2026-11-22T10:00:01.000Z",
            duration_ms: 1_000,
            cancelled_by: None,
            reason: None,
            error_code: None,
            events: &[event],
            model_turns: &[],
        })
        .await
        .map(|_closed| ())
}

/// `pieces` pieces spread over the running traces at random, numbered from `piece` on.
fn spread(begun: &[Begun], jitter: &mut Jitter, pieces: usize, piece: &mut usize) -> Vec<StepDocs> {
    let mut by_run: BTreeMap<usize, Vec<SearchDoc>> = BTreeMap::new();
    for _ in 0..pieces {
        let run = jitter.below(begun.len() as u64) as usize;
        by_run
            .entry(run)
            .or_default()
            .push(doc(&begun[run].answer_id, *piece));
        *piece += 1;
    }
    by_run
        .into_iter()
        .map(|(run, docs)| StepDocs {
            trace_id: begun[run].trace_id.clone(),
            docs,
        })
        .collect()
}

/// A finished reasoning block's piece, worded as `streams --reasoning-every` words it.
fn doc(answer_id: &str, piece: usize) -> SearchDoc {
    SearchDoc {
        kind: "reasoning",
        message_id: Some(answer_id.to_owned()),
        step: Some(format!("step_{piece}")),
        tool: None,
        status: Some("complete".into()),
        model: Some("scenario:bench".into()),
        created_at: "2026-11-22T10:00:01.000Z".into(),
        body: format!(
            "Part {piece}: the checkpoint indexes this finished step for search while the \
             other runs stream; the words are ordinary ones a reader would look for later."
        ),
    }
}
