//! SQLite costs of traces: checkpoint appends at several batch sizes, the finalize transaction,
//! and the bytes one event takes on disk. Uses the server's own `Store` on a file database.

use std::{sync::Arc, time::Instant};

use app::protocol::fold;
use glassbox::store::{FinishedTrace, NewRun, Store};
use glassbox_bench::{fixtures, summary};

pub async fn run(events_per_trace: usize, traces: usize) -> Result<(), String> {
    let dir = tempfile::tempdir().map_err(|error| error.to_string())?;
    let url = format!("sqlite://{}", dir.path().join("bench.db").display());
    let store = Store::connect(&url)
        .await
        .map_err(|error| error.to_string())?;
    // A run with `events_per_trace` events: text tokens and one tool call per 100 of them.
    let tool_calls = events_per_trace / 100;
    let text_tokens = events_per_trace.saturating_sub(tool_calls * 5 + 33);
    let sample = fixtures::agent_run("run_sample", text_tokens, tool_calls);
    let json_bytes: usize = fixtures::as_json(&sample)
        .iter()
        .map(|(_, json)| json.len())
        .sum();
    println!(
        "trace: {} events, {:.0} bytes of JSON per event on average",
        sample.len(),
        json_bytes as f64 / sample.len() as f64
    );
    let used_before = used_bytes(&store).await?;

    for batch in [1usize, 10, 50, 250] {
        let mut commit_us = Vec::new();
        let mut finalize_us = Vec::new();
        let mut append_seconds = 0.0;
        let mut appended = 0usize;
        for trace in 0..traces {
            let run_id = format!("run_{batch}_{trace}");
            let timing = one_trace(&store, &run_id, batch, text_tokens, tool_calls).await?;
            commit_us.extend(timing.commits_us);
            finalize_us.push(timing.finalize_us);
            append_seconds += timing.append_seconds;
            appended += timing.appended;
        }
        let (commit_p50, commit_p99, _) = summary(&mut commit_us);
        let (finalize_p50, finalize_p99, _) = summary(&mut finalize_us);
        println!(
            "checkpoints of {batch} events: {:.0} events/s; one commit p50 {:.3} ms, p99 {:.3} ms. Finalize ({} events): p50 {:.2} ms, p99 {:.2} ms ({traces} traces)",
            appended as f64 / append_seconds,
            commit_p50 as f64 / 1000.0,
            commit_p99 as f64 / 1000.0,
            sample.len(),
            finalize_p50 as f64 / 1000.0,
            finalize_p99 as f64 / 1000.0,
        );
    }
    let used_after = used_bytes(&store).await?;
    let stored_events = 4 * traces * sample.len();
    println!(
        "on disk: {:.0} bytes per stored event (database pages in use, WAL included; {} events in {} finished traces)",
        used_after.saturating_sub(used_before) as f64 / stored_events as f64,
        stored_events,
        4 * traces
    );
    store.close().await;
    Ok(())
}

/// Bytes of database pages in use (not free), as a reader sees the database (WAL included).
async fn used_bytes(store: &Store) -> Result<u64, String> {
    let pool = store
        .sqlite()
        .ok_or("the storage benchmark measures SQLite's file")?
        .pool();
    let error = |error: sqlx::Error| error.to_string();
    let mut values = [0i64; 3];
    for (value, pragma) in values.iter_mut().zip([
        "PRAGMA page_count",
        "PRAGMA freelist_count",
        "PRAGMA page_size",
    ]) {
        *value = sqlx::query_scalar(pragma)
            .fetch_one(pool)
            .await
            .map_err(error)?;
    }
    let [pages, free, size] = values;
    Ok(((pages - free) * size) as u64)
}

/// How long one trace's checkpoints and its finalize took.
struct TraceTiming {
    commits_us: Vec<u64>,
    append_seconds: f64,
    appended: usize,
    finalize_us: u64,
}

/// A run [`begin`] started: its trace's id and its answer's (the assistant message's).
pub struct Begun {
    pub trace_id: String,
    pub answer_id: String,
}

/// Begins run `run_id` in a conversation of its own.
pub async fn begin(store: &Store, run_id: &str) -> Result<Begun, String> {
    let trace_id = format!("tr_{run_id}");
    let answer_id = format!("ma_{run_id}");
    store
        .begin_run(NewRun {
            owner_id: "bench".into(),
            conversation_id: None,
            new_conversation_id: None,
            content: "benchmark".into(),
            model: Some("scenario:bench".into()),
            default_model: "demo".into(),
            run_id: run_id.to_owned(),
            trace_id: trace_id.clone(),
            user_message_id: format!("mu_{run_id}"),
            assistant_message_id: answer_id.clone(),
            now: "2026-11-22T10:00:00.000Z".into(),
            rerun: None,
        })
        .await
        .map_err(|error| error.to_string())?;
    Ok(Begun {
        trace_id,
        answer_id,
    })
}

/// Begins a run, appends its events in checkpoints of `batch`, then finishes its trace.
async fn one_trace(
    store: &Store,
    run_id: &str,
    batch: usize,
    text_tokens: usize,
    tool_calls: usize,
) -> Result<TraceTiming, String> {
    let trace_id = begin(store, run_id).await?.trace_id;
    let events = fixtures::agent_run(run_id, text_tokens, tool_calls);
    let rows = fixtures::as_json(&events);
    let mut commits_us = Vec::new();
    let started = Instant::now();
    for chunk in rows.chunks(batch) {
        let commit = Instant::now();
        store
            .append_events(&trace_id, chunk)
            .await
            .map_err(|error| error.to_string())?;
        commits_us.push(commit.elapsed().as_micros() as u64);
    }
    let append_seconds = started.elapsed().as_secs_f64();

    let message = fold(&events).ok_or("the fixture has no message")?;
    let all: Vec<Arc<str>> = rows.iter().map(|(_, json)| json.clone()).collect();
    let started = Instant::now();
    store
        .finish_run(FinishedTrace {
            trace_id: &trace_id,
            message: &message,
            completed_at: "2026-11-22T10:00:10.000Z",
            duration_ms: 10_000,
            cancelled_by: None,
            reason: None,
            error_code: None,
            events: &all,
            model_turns: &[],
        })
        .await
        .map_err(|error| error.to_string())?;
    Ok(TraceTiming {
        commits_us,
        append_seconds,
        appended: rows.len(),
        finalize_us: started.elapsed().as_micros() as u64,
    })
}
