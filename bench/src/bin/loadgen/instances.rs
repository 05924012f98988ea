//! Two instances on one PostgreSQL database: runs started on both, half of them read on the
//! instance that runs them and half on the other one. Per-event and first-event latency for
//! each, Stop across instances, and what PostgreSQL spends per event.

use std::{
    sync::Arc,
    time::{Duration, Instant},
};

use glassbox_bench::summary;
use serde_json::{json, Value};
use sqlx::{Connection, PgConnection, Row};

use crate::{
    client::{unix_micros, RunStream},
    server::ServerProcess,
    streams::{scenario, Window, SCENARIO},
    Env,
};

#[derive(Default)]
struct Reader {
    cross: bool,
    first_event_us: Option<u64>,
    latencies_us: Vec<u64>,
    events: u64,
    error: Option<String>,
}

async fn start_run(client: &reqwest::Client, base: &str) -> Result<String, String> {
    let response = client
        .post(format!("{base}/api/chat"))
        .header("accept", "application/json")
        .json(&json!({"content": "benchmark", "model": format!("scenario:{SCENARIO}")}))
        .send()
        .await
        .map_err(|error| format!("POST /api/chat: {error}"))?;
    let started: Value = response
        .json()
        .await
        .map_err(|error| format!("POST /api/chat: {error}"))?;
    started["run_id"]
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| format!("no run id: {started}"))
}

/// Starts a run on `owner`, reads it on `reader` until the window closes.
async fn follow(
    client: reqwest::Client,
    owner: String,
    reader: String,
    window: Arc<Window>,
    opening: Arc<tokio::sync::Semaphore>,
) -> Reader {
    let mut result = Reader {
        cross: owner != reader,
        ..Reader::default()
    };
    let permit = opening.acquire_owned().await.ok();
    let asked = unix_micros();
    let stream = match start_run(&client, &owner).await {
        Ok(run_id) => RunStream::attach(&client, &reader, &run_id, 0).await,
        Err(error) => Err(error),
    };
    let mut stream = match stream {
        Ok(stream) => stream,
        Err(error) => {
            result.error = Some(error);
            return result;
        }
    };
    drop(permit);
    let mut opened = false;
    while let Some((received, events)) = stream.next_chunk().await {
        if !opened {
            opened = true;
            result.first_event_us = Some(received.saturating_sub(asked));
            window.opened_one();
        }
        if !window.record(
            received,
            &events,
            &mut result.latencies_us,
            &mut result.events,
        ) {
            return result;
        }
    }
    result.error = Some("the stream ended early".into());
    result
}

/// PostgreSQL's counters for the database: commits, rows written, WAL bytes so far.
async fn pg_counters(url: &str) -> Result<(i64, i64, i64), String> {
    let error = |error: sqlx::Error| error.to_string();
    let mut connection = PgConnection::connect(url).await.map_err(error)?;
    let row = sqlx::query(
        "SELECT xact_commit, tup_inserted + tup_updated + tup_deleted AS rows,
                pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::bigint AS wal
         FROM pg_stat_database WHERE datname = current_database()",
    )
    .fetch_one(&mut connection)
    .await
    .map_err(error)?;
    Ok((
        row.try_get("xact_commit").map_err(error)?,
        row.try_get("rows").map_err(error)?,
        row.try_get("wal").map_err(error)?,
    ))
}

fn start_pair(env: &Env, url: &str, rate: u32) -> Result<[ServerProcess; 2], String> {
    let scenarios = [(SCENARIO, scenario(rate))];
    let a = ServerProcess::start_with(
        env,
        &scenarios,
        &["--database-url", url, "--instance-id", "bench-a"],
    )?;
    let b = ServerProcess::start_with(
        env,
        &scenarios,
        &["--database-url", url, "--instance-id", "bench-b"],
    )?;
    Ok([a, b])
}

pub async fn run(
    env: &Env,
    url: &str,
    streams: usize,
    rate: u32,
    seconds: u64,
) -> Result<(), String> {
    let servers = start_pair(env, url, rate)?;
    let bases = [servers[0].base.clone(), servers[1].base.clone()];
    let client = crate::streams::client()?;
    let window = Window::new();
    let tasks = open_streams(&client, &bases, &window, streams).await?;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let before = pg_counters(url).await?;
    let wall = Instant::now();
    window.open_now();
    tokio::time::sleep(Duration::from_secs(seconds)).await;
    window.close();
    let elapsed = wall.elapsed().as_secs_f64();
    let after = pg_counters(url).await?;
    let (mut same, mut cross, events, errors) = collect(tasks).await;
    let cancel = cancel_across(&client, &bases).await?;
    drop(servers);
    println!("two instances: {streams} streams at {rate} events/s, {elapsed:.1} s window");
    println!("events received: {:.0}/s", events as f64 / elapsed);
    for (name, (latencies, firsts)) in
        [("same instance", &mut same), ("cross instance", &mut cross)]
    {
        let (p50, p99, max) = summary(latencies);
        let (f50, f99, _) = summary(firsts);
        println!(
            "{name}: per-event p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms ({} samples); first event p50 {:.1} ms, p99 {:.1} ms",
            p50 as f64 / 1000.0,
            p99 as f64 / 1000.0,
            max as f64 / 1000.0,
            latencies.len(),
            f50 as f64 / 1000.0,
            f99 as f64 / 1000.0,
        );
    }
    let produced = streams as f64 * rate as f64 * elapsed;
    println!(
        "PostgreSQL: {:.0} commits/s, {:.2} rows and {:.0} WAL bytes per event ({:.0} events produced)",
        (after.0 - before.0) as f64 / elapsed,
        (after.1 - before.1) as f64 / produced,
        (after.2 - before.2) as f64 / produced,
        produced
    );
    println!(
        "cancel across instances (request on B -> message_cancelled on B), {} trials: p50 {:.1} ms, p99 {:.1} ms",
        cancel.len(),
        summary(&mut cancel.clone()).0 as f64 / 1000.0,
        summary(&mut cancel.clone()).1 as f64 / 1000.0,
    );
    if let Some(first) = errors.first() {
        return Err(format!("{} streams failed (first: {first})", errors.len()));
    }
    Ok(())
}

/// Opens `streams` runs, each started on instance i % 2 and read on the same instance or the
/// other, alternately; returns once all are open (at most 300 s).
async fn open_streams(
    client: &reqwest::Client,
    bases: &[String; 2],
    window: &Arc<Window>,
    streams: usize,
) -> Result<Vec<tokio::task::JoinHandle<Reader>>, String> {
    let opening = Arc::new(tokio::sync::Semaphore::new(100));
    let tasks: Vec<_> = (0..streams)
        .map(|i| {
            let owner = bases[i % 2].clone();
            let reader = bases[(i % 2 + (i / 2) % 2) % 2].clone();
            tokio::spawn(follow(
                client.clone(),
                owner,
                reader,
                window.clone(),
                opening.clone(),
            ))
        })
        .collect();
    let ramp = Instant::now();
    while window.opened() < streams {
        if ramp.elapsed() > Duration::from_secs(300) {
            return Err(format!(
                "only {} of {streams} streams opened",
                window.opened()
            ));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok(tasks)
}

type Samples = (Vec<u64>, Vec<u64>);

/// Every stream's latencies and first-event times, same-instance and cross-instance apart; the
/// events read; the errors.
async fn collect(
    tasks: Vec<tokio::task::JoinHandle<Reader>>,
) -> (Samples, Samples, u64, Vec<String>) {
    let mut same = (Vec::new(), Vec::new());
    let mut cross = (Vec::new(), Vec::new());
    let mut events = 0u64;
    let mut errors = Vec::new();
    for task in tasks {
        let Ok(Ok(result)) = tokio::time::timeout(Duration::from_secs(30), task).await else {
            errors.push("a stream did not finish".to_owned());
            continue;
        };
        let bucket = if result.cross { &mut cross } else { &mut same };
        bucket.0.extend(result.latencies_us);
        bucket.1.extend(result.first_event_us);
        events += result.events;
        errors.extend(result.error);
    }
    (same, cross, events, errors)
}

/// Runs started on A, read and stopped on B: microseconds from the request to `message_cancelled`.
async fn cancel_across(client: &reqwest::Client, bases: &[String; 2]) -> Result<Vec<u64>, String> {
    let mut times = Vec::new();
    for _ in 0..20 {
        let run_id = start_run(client, &bases[0]).await?;
        let mut stream = RunStream::attach(client, &bases[1], &run_id, 0).await?;
        stream.until_type("text_delta").await;
        let asked = Instant::now();
        let response = client
            .post(format!("{}/api/runs/{run_id}/cancel", bases[1]))
            .send();
        let (answered, ended) = tokio::join!(response, stream.until_type("message_cancelled"));
        let answered = answered.map_err(|error| error.to_string())?;
        if ended.is_none() {
            let status = answered.status();
            let body = answered.text().await.unwrap_or_default();
            return Err(format!(
                "no message_cancelled on B (cancel answered {status}: {body})"
            ));
        }
        times.push(asked.elapsed().as_micros() as u64);
    }
    Ok(times)
}
