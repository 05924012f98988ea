//! The memory caps on run logs hold to the terminal event (issue 30, item 7). The terminal event
//! carries the whole message, so charged past the cap it streamed and stored the run's content a
//! second time (its reasoning a third): a run capped at 32 MiB streamed 66-99 MB. Now it fits in
//! what is left of the cap (its message cut), and an overflowed run's log leaves memory at once.
//! Measured on the real binary: the bytes of the event stream, live and read back once stored.

mod common;

use std::time::{Duration, Instant};

use common::*;
use serde_json::{json, Value};

/// SSE framing (`id:`, `data:` and blank lines) on top of the event JSON the caps count.
const FRAMING: usize = 256 * 1024;
/// The most a terminal event may take when nothing is left (its message's bare bones).
const BARE_TERMINAL: usize = 16 * 1024;

/// `parts` of reasoning and an answer of `text_mib` MiB, in 8,000-character deltas.
fn big_scenario(parts: usize, part_mib: usize, text_mib: usize) -> Value {
    let words = |mib: usize| "word ".repeat(mib * 1024 * 1024 / 5);
    json!({"delta_chars": 8000, "delta_interval_ms": 0, "steps": [
        {"reasoning": (0..parts).map(|_| words(part_mib)).collect::<Vec<_>>()},
        {"text": words(text_mib)},
    ]})
}

/// Starts `model` and reads its whole stream: (run, conversation id, the stream's bytes).
async fn run_to_end(base: &str, model: &str) -> (String, String, String) {
    let client = reqwest::Client::new();
    let started: Value = client
        .post(format!("{base}/api/chat"))
        .header("accept", "application/json")
        .json(&json!({"content": "go", "model": model}))
        .send()
        .await
        .expect("POST /api/chat")
        .json()
        .await
        .expect("JSON");
    let run = started["run_id"].as_str().expect("run_id").to_owned();
    let conversation = started["conversation_id"].as_str().expect("id").to_owned();
    let stream = read_stream(base, &run).await;
    (run, conversation, stream)
}

async fn read_stream(base: &str, run: &str) -> String {
    let response = reqwest::get(format!("{base}/api/runs/{run}/events"))
        .await
        .expect("GET events");
    assert_eq!(response.status(), 200);
    tokio::time::timeout(Duration::from_secs(120), response.text())
        .await
        .expect("the stream ends")
        .expect("the stream")
}

/// The last event's JSON in an SSE body.
fn terminal(stream: &str) -> &str {
    stream
        .lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .map(str::trim_start)
        .rfind(|data| data.starts_with('{'))
        .expect("a terminal event")
}

/// Waits until no run log is held in memory; answers how long that took.
async fn memory_freed(base: &str) -> Option<Duration> {
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(5) {
        let health = get_json_at(&reqwest::Client::new(), format!("{base}/healthz")).await;
        if health["run_memory_bytes"].as_u64() == Some(0) {
            return Some(start.elapsed());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    None
}

/// Checks a capped run's stream, live and stored, against `cap` bytes of event JSON.
async fn assert_capped(base: &str, run: &str, stream: &str, cap: usize, code: &str) {
    let last = terminal(stream);
    let event: Value = serde_json::from_str(last).expect("terminal JSON");
    assert_eq!(
        event["type"],
        "message_error",
        "{}",
        &last[..last.len().min(300)]
    );
    assert_eq!(event["code"], code);
    assert!(
        last.len() <= BARE_TERMINAL,
        "the terminal event is {} bytes with nothing left under the cap",
        last.len()
    );
    assert!(
        stream.len() <= cap + FRAMING,
        "streamed {} bytes under a cap of {cap}",
        stream.len()
    );
    let reason = event["message"]["ended_reason"]
        .as_str()
        .unwrap_or_default();
    assert!(
        reason.contains("cut"),
        "the message says it was cut: {reason}"
    );
    let freed = memory_freed(base).await;
    assert!(
        freed.is_some_and(|took| took < Duration::from_secs(2)),
        "an overflowed run's log leaves memory at once: {freed:?}"
    );
    let stored = read_stream(base, run).await;
    assert!(
        stored.len() <= cap + FRAMING,
        "stored {} bytes under a cap of {cap}",
        stored.len()
    );
    assert_eq!(
        terminal(&stored),
        last,
        "the stored terminal is the streamed one"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_past_the_memory_budget_streams_and_stores_no_more_than_the_budget() {
    let dir = test_dir();
    write_scenario(&dir, "big", big_scenario(2, 2, 5));
    let server = launch(&dir, &["--run-memory-mib", "8"]).await;
    let (run, conversation, stream) = run_to_end(&server.base, "scenario:big").await;
    assert_capped(&server.base, &run, &stream, 8 << 20, "memory_exhausted").await;
    // The stored message is the cut one: the page that draws it stays small.
    let page = reqwest::get(format!("{}/c/{conversation}", server.base))
        .await
        .expect("GET the conversation")
        .text()
        .await
        .expect("page");
    assert!(
        page.len() < 1 << 20,
        "the conversation page is {} bytes",
        page.len()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_past_its_own_cap_streams_and_stores_no_more_than_the_cap() {
    let dir = test_dir();
    write_scenario(&dir, "huge", big_scenario(2, 8, 20));
    let server = launch(&dir, &[]).await;
    let (run, _, stream) = run_to_end(&server.base, "scenario:huge").await;
    assert_capped(&server.base, &run, &stream, 32 << 20, "run_too_large").await;
}
