//! Reattaching with Last-Event-ID to a run with many events: while it is live (from the in-memory
//! log) and after it ended and the server restarted (from the stored trace).

use std::time::Instant;

use glassbox_bench::summary;
use serde_json::json;

use crate::{
    client::{event_type, seq, string_field, RunStream},
    server::ServerProcess,
    streams, Env,
};

const SCENARIO: &str = "resume";

pub async fn run(env: &Env, events: u32, repeat: usize) -> Result<(), String> {
    // `events` text deltas as fast as the engine goes, then a long pause: a live run to resume.
    let scenario = json!({
        "delta_interval_ms": 0,
        "steps": [{"clock_text": events}, {"pause_ms": 600000}]
    });
    let mut server = ServerProcess::start(env, &[(SCENARIO, scenario)])?;
    let client = streams::client()?;

    let (run_id, last_seq) = start_run(&client, &server.base, events).await?;
    println!("run {run_id}: {last_seq} events");

    for (label, after) in [
        ("live run, Last-Event-ID 0 (every event)", 0),
        (
            "live run, the last 100 events",
            last_seq.saturating_sub(100),
        ),
    ] {
        measure(
            &client,
            &server.base,
            &run_id,
            after,
            last_seq,
            repeat,
            label,
        )
        .await?;
    }

    let cancelled = client
        .post(format!("{}/api/runs/{run_id}/cancel", server.base))
        .send()
        .await
        .map_err(|error| error.to_string())?;
    if !cancelled.status().is_success() {
        return Err(format!("cancel answered {}", cancelled.status()));
    }
    // A restart empties memory: the events now come from the stored trace.
    server.terminate();
    server.restart()?;
    let total = last_seq + 1; // and message_cancelled
    for (label, after) in [
        ("stored trace (after a restart), Last-Event-ID 0", 0),
        (
            "stored trace, the last 100 events",
            total.saturating_sub(100),
        ),
    ] {
        measure(&client, &server.base, &run_id, after, total, repeat, label).await?;
    }
    Ok(())
}

/// Starts the run and reads it until its `events` text deltas are out: its id and last seq.
async fn start_run(
    client: &reqwest::Client,
    base: &str,
    events: u32,
) -> Result<(String, u64), String> {
    let mut stream = RunStream::start(client, base, &format!("scenario:{SCENARIO}")).await?;
    let mut run_id = String::new();
    let mut deltas = 0;
    let mut last_seq = 0;
    while deltas < events {
        let event = stream.next_event().await.ok_or("the run ended early")?;
        if run_id.is_empty() {
            run_id = string_field(&event, "run_id")
                .unwrap_or_default()
                .to_owned();
        }
        last_seq = seq(&event).unwrap_or(last_seq);
        if event_type(&event) == Some("text_delta") {
            deltas += 1;
        }
    }
    Ok((run_id, last_seq))
}

/// Reattaches `repeat` times and reads up to `until_seq`: time to the first and the last event.
async fn measure(
    client: &reqwest::Client,
    base: &str,
    run_id: &str,
    after: u64,
    until_seq: u64,
    repeat: usize,
    label: &str,
) -> Result<(), String> {
    let mut firsts = Vec::new();
    let mut lasts = Vec::new();
    let mut bytes = 0usize;
    for _ in 0..repeat {
        let started = Instant::now();
        let mut stream = RunStream::attach(client, base, run_id, after).await?;
        let mut first = None;
        bytes = 0;
        loop {
            let event = stream
                .next_event()
                .await
                .ok_or_else(|| format!("{label}: the stream ended before seq {until_seq}"))?;
            first.get_or_insert_with(|| started.elapsed());
            bytes += event.len();
            if seq(&event).unwrap_or(0) >= until_seq {
                break;
            }
        }
        firsts.push(first.unwrap_or_default().as_micros() as u64);
        lasts.push(started.elapsed().as_micros() as u64);
    }
    let (first_p50, _, _) = summary(&mut firsts);
    let (last_p50, last_p99, _) = summary(&mut lasts);
    println!(
        "{label}: {} events, {:.1} KiB of JSON; first event p50 {:.2} ms; all of them p50 {:.2} ms, p99 {:.2} ms ({repeat} times)",
        until_seq - after,
        bytes as f64 / 1024.0,
        first_p50 as f64 / 1000.0,
        last_p50 as f64 / 1000.0,
        last_p99 as f64 / 1000.0,
    );
    Ok(())
}
