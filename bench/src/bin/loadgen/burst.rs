//! Runs started in a burst, as users start them: `runs` new runs spread evenly over `over`
//! seconds, each streaming `deltas` clock-stamped text deltas at `rate` per second, each read to
//! its end. Measures what a user feels: the time from sending the request to the first event, and
//! the latency of every delta after it.

use std::time::Duration;

use glassbox_bench::summary;
use serde_json::json;

use crate::{
    client::{clock_stamp, event_type, unix_micros, RunStream},
    server::ServerProcess,
    Env,
};

const SCENARIO: &str = "burst";
/// How long after the last run the server's CPU is read.
const SETTLE: Duration = Duration::from_secs(2);

#[derive(Default)]
struct Outcome {
    first_event_us: Option<u64>,
    latencies_us: Vec<u64>,
    events: u64,
    error: Option<String>,
}

async fn one_run(client: reqwest::Client, base: String, start_at: tokio::time::Instant) -> Outcome {
    tokio::time::sleep_until(start_at).await;
    let mut outcome = Outcome::default();
    let sent = unix_micros();
    let mut stream = match RunStream::start(&client, &base, &format!("scenario:{SCENARIO}")).await {
        Ok(stream) => stream,
        Err(error) => {
            outcome.error = Some(error);
            return outcome;
        }
    };
    let mut ended = false;
    while let Some((received, events)) = stream.next_chunk().await {
        outcome
            .first_event_us
            .get_or_insert(received.saturating_sub(sent));
        for event in &events {
            outcome.events += 1;
            match event_type(event) {
                Some("text_delta") => {
                    if let Some(stamp) = clock_stamp(event) {
                        outcome.latencies_us.push(received.saturating_sub(stamp));
                    }
                }
                Some("message_final") => ended = true,
                _ => {}
            }
        }
    }
    if !ended {
        outcome.error = Some("the stream ended without message_final".into());
    }
    outcome
}

/// What one burst gives a comparison (`compare`).
#[derive(Clone, Copy, Debug)]
pub struct Row {
    pub first_p50_ms: f64,
    pub first_p99_ms: f64,
    pub p99_ms: f64,
}

pub async fn run(env: &Env, runs: usize, over: f64, deltas: u32, rate: u32) -> Result<Row, String> {
    let scenario = json!({
        "delta_interval_ms": 1000 / rate.max(1),
        "steps": [{ "clock_text": deltas }]
    });
    let server = ServerProcess::start(env, &[(SCENARIO, scenario)])?;
    let client = crate::streams::client()?;
    let cpu_before = server.usage().cpu_seconds;
    let began = tokio::time::Instant::now() + Duration::from_millis(100);
    let spacing = Duration::from_secs_f64(over.max(0.0) / runs.max(1) as f64);
    let wall = std::time::Instant::now();
    let tasks: Vec<_> = (0..runs)
        .map(|index| {
            tokio::spawn(one_run(
                client.clone(),
                server.base.clone(),
                began + spacing * index as u32,
            ))
        })
        .collect();
    let mut totals = Totals::default();
    for task in tasks {
        match task.await {
            Ok(outcome) => {
                totals.first.extend(outcome.first_event_us);
                totals.latencies.extend(outcome.latencies_us);
                totals.events += outcome.events;
                totals.errors.extend(outcome.error);
            }
            Err(error) => totals.errors.push(error.to_string()),
        }
    }
    let elapsed = wall.elapsed().as_secs_f64();
    let rss = server.usage().rss_bytes;
    // The last runs' exports (with --otlp) leave within the export's batch window: counted too.
    tokio::time::sleep(SETTLE).await;
    let cpu = server.usage().cpu_seconds - cpu_before;
    let otlp = otlp_health(&server.base).await;
    drop(server);
    println!(
        "server CPU: {cpu:.2} s from the first start to {} s after the last run ended; otlp: {otlp}",
        SETTLE.as_secs()
    );
    println!(
        "burst: {runs} runs started over {over} s, {deltas} deltas each at {rate}/s; {} events in {elapsed:.1} s",
        totals.events
    );
    let Totals {
        mut first,
        mut latencies,
        errors,
        ..
    } = totals;
    let row = report(runs, over, &mut first, &mut latencies, rss, errors.len());
    if let Some(error) = errors.first() {
        return Err(format!("{} runs failed (first: {error})", errors.len()));
    }
    if first.len() != runs {
        return Err(format!("only {} of {runs} runs sent an event", first.len()));
    }
    Ok(row)
}

/// `/healthz`'s `otlp` (null without an export, or from a server with no such answer, as the
/// Node.js reference).
async fn otlp_health(base: &str) -> serde_json::Value {
    let Ok(client) = crate::streams::client() else {
        return serde_json::Value::Null;
    };
    let health = match client.get(format!("{base}/healthz")).send().await {
        Ok(response) => response.json::<serde_json::Value>().await.ok(),
        Err(_) => None,
    };
    health.map_or(serde_json::Value::Null, |health| health["otlp"].clone())
}

/// What every run of a burst saw.
#[derive(Default)]
struct Totals {
    first: Vec<u64>,
    latencies: Vec<u64>,
    events: u64,
    errors: Vec<String>,
}

/// Prints the burst's latencies (first event, per event), the server's memory and the table row.
fn report(
    runs: usize,
    over: f64,
    first: &mut [u64],
    latencies: &mut [u64],
    rss_bytes: u64,
    errors: usize,
) -> Row {
    let ms = |us: u64| us as f64 / 1000.0;
    let (first_p50, first_p99, first_max) = summary(first);
    let (p50, p99, max) = summary(latencies);
    println!(
        "first event (request sent -> first event read): p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
        ms(first_p50),
        ms(first_p99),
        ms(first_max)
    );
    println!(
        "per-event latency (emit -> client read), {} samples: p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms",
        latencies.len(),
        ms(p50),
        ms(p99),
        ms(max)
    );
    println!(
        "server RSS at the end: {:.1} MiB",
        rss_bytes as f64 / 1048576.0
    );
    println!(
        "| {runs} over {over} s | {:.1} / {:.1} | {:.3} / {:.3} | {errors} |",
        ms(first_p50),
        ms(first_p99),
        ms(p50),
        ms(p99),
    );
    Row {
        first_p50_ms: ms(first_p50),
        first_p99_ms: ms(first_p99),
        p99_ms: ms(p99),
    }
}
