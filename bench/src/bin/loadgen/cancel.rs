//! Stop latency: from the cancel request leaving the client to `message_cancelled` arriving on the
//! run's stream, while a blocking tool runs and while text streams.

use std::time::{Duration, Instant};

use glassbox_bench::{summary, Jitter};
use serde_json::json;

use crate::{
    client::{string_field, RunStream},
    server::ServerProcess,
    streams, Env,
};

/// What the run is doing when Stop is pressed.
struct Case {
    name: &'static str,
    label: &'static str,
    scenario: serde_json::Value,
    /// The event that shows the run is in that state.
    ready_on: &'static str,
}

fn cases() -> Vec<Case> {
    vec![
        Case {
            name: "cancel_blocking_tool",
            label: "during a blocking tool (sleep on the blocking pool)",
            scenario: json!({"steps": [{"tool_calls": [
                {"name": "sleep", "args": {"seconds": 5, "blocking": true}}
            ]}]}),
            ready_on: "tool_call_started",
        },
        Case {
            name: "cancel_text",
            label: "during text streaming (a delta every 20 ms)",
            scenario: json!({"delta_interval_ms": 20, "steps": [{"clock_text": 100000}]}),
            ready_on: "text_delta",
        },
    ]
}

pub async fn run(env: &Env, trials: usize, background: usize) -> Result<(), String> {
    let mut scenarios: Vec<(&str, serde_json::Value)> = cases()
        .into_iter()
        .map(|case| (case.name, case.scenario))
        .collect();
    scenarios.push((streams::SCENARIO, streams::scenario(20)));
    let server = ServerProcess::start(env, &scenarios)?;
    let client = streams::client()?;

    // Optional load: runs streaming 20 events/s each, read by their own clients.
    let window = streams::Window::new();
    let opening = std::sync::Arc::new(tokio::sync::Semaphore::new(200));
    let load: Vec<_> = (0..background)
        .map(|_| {
            tokio::spawn(streams::follow(
                client.clone(),
                server.base.clone(),
                format!("scenario:{}", streams::SCENARIO),
                window.clone(),
                opening.clone(),
                crate::client::StreamFormat::Glassbox,
            ))
        })
        .collect();
    while window.opened() < background {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    let mut jitter = Jitter::new(0x9e37_79b9);
    for case in cases() {
        let mut latencies = Vec::with_capacity(trials);
        let mut answered = Vec::with_capacity(trials);
        for _ in 0..trials {
            let delay = Duration::from_millis(10 + jitter.below(190));
            let (latency, answer) = one_stop(&client, &server.base, &case, delay).await?;
            latencies.push(latency);
            answered.push(answer);
        }
        let (p50, p99, max) = summary(&mut latencies);
        let (answer_p50, answer_p99, _) = summary(&mut answered);
        println!(
            "{}: {trials} stops with {background} other streams: message_cancelled at the client p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms; the cancel request answered p50 {:.2} ms, p99 {:.2} ms",
            case.label,
            p50 as f64 / 1000.0,
            p99 as f64 / 1000.0,
            max as f64 / 1000.0,
            answer_p50 as f64 / 1000.0,
            answer_p99 as f64 / 1000.0,
        );
    }
    window.close();
    drop(server);
    for task in load {
        let _ = tokio::time::timeout(Duration::from_secs(10), task).await;
    }
    Ok(())
}

/// Starts a run, waits until it is in the case's state, waits `delay` more, presses Stop: the
/// microseconds until `message_cancelled` arrived, and until the cancel request was answered.
async fn one_stop(
    client: &reqwest::Client,
    base: &str,
    case: &Case,
    delay: Duration,
) -> Result<(u64, u64), String> {
    let mut stream = RunStream::start(client, base, &format!("scenario:{}", case.name)).await?;
    let first = stream
        .next_event()
        .await
        .ok_or("the run's stream was empty")?;
    let run_id = string_field(&first, "run_id")
        .ok_or("no run_id in the first event")?
        .to_owned();
    stream
        .until_type(case.ready_on)
        .await
        .ok_or("the run ended before it was ready")?;
    // Stop at a varying moment in the state, 10 to 200 ms in.
    tokio::time::sleep(delay).await;

    let pressed = Instant::now();
    let cancel = tokio::spawn({
        let client = client.clone();
        let url = format!("{base}/api/runs/{run_id}/cancel");
        async move {
            let response = client.post(url).send().await;
            (pressed.elapsed(), response.map(|r| r.status().as_u16()))
        }
    });
    stream
        .until_type("message_cancelled")
        .await
        .ok_or("the stream ended without message_cancelled")?;
    let latency = pressed.elapsed().as_micros() as u64;
    let (elapsed, status) = cancel.await.map_err(|error| error.to_string())?;
    if status.as_ref().ok() != Some(&200) {
        return Err(format!("cancel answered {status:?}"));
    }
    Ok((latency, elapsed.as_micros() as u64))
}
