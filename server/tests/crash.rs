//! A run cut off by a crash: the real binary, killed with SIGKILL mid-run, then started again.

mod common;

use std::time::Duration;

use common::*;
use serde_json::{json, Value};

/// A scenario that streams a line, then sleeps in a tool for a minute.
fn write_slow_scenario(dir: &tempfile::TempDir) {
    write_scenario(
        dir,
        "slow",
        json!({"delta_interval_ms": 0, "steps": [
            {"text": "Before the crash."},
            {"tool_calls": [{"name": "sleep", "args": {"seconds": 60}}]}
        ]}),
    );
}

/// Starts a run of `model` (JSON reply) and subscribes to its events.
async fn start_and_follow(client: &reqwest::Client, base: &str, model: &str) -> (Value, SseStream) {
    let started: Value = client
        .post(format!("{base}/api/chat"))
        .header("accept", "application/json")
        .json(&json!({"content": "go", "model": model}))
        .send()
        .await
        .expect("POST")
        .json()
        .await
        .expect("JSON");
    let run_id = started["run_id"].as_str().expect("run id");
    let response = client
        .get(format!("{base}/api/runs/{run_id}/events"))
        .send()
        .await
        .expect("GET");
    (started, SseStream::new(response))
}

/// Starts a `scenario:slow` run and reads its stream until the tool call has started.
async fn start_until_tool_call(
    client: &reqwest::Client,
    base: &str,
) -> (Value, Vec<app::protocol::Event>) {
    let (started, mut stream) = start_and_follow(client, base, "scenario:slow").await;
    let seen = stream
        .until(|event| is_type(event, "tool_call_started"))
        .await;
    (started, seen)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_left_running_by_a_crash_is_interrupted_at_the_next_start_with_its_events_kept() {
    let dir = test_dir();
    write_slow_scenario(&dir);
    let mut binary = launch(&dir, &[]).await;
    let client = reqwest::Client::new();
    let base = binary.base.clone();
    // Two runs at once: the one checkpointer writes both in the same transactions.
    let mut runs = Vec::new();
    for _ in 0..2 {
        let (started, seen) = start_until_tool_call(&client, &base).await;
        runs.push((started, seen));
    }
    // Wait past one checkpoint window (250 ms) so the events are on disk.
    tokio::time::sleep(Duration::from_millis(700)).await;
    binary.child.start_kill().expect("SIGKILL");
    let _ = binary.child.wait().await;

    let mut binary = launch(&dir, &[]).await;
    let base = binary.base.clone();
    for (started, seen) in &runs {
        let trace = get_json_at(
            &client,
            format!(
                "{base}/api/traces/{}",
                started["trace_id"].as_str().expect("trace")
            ),
        )
        .await;
        assert_eq!(trace["status"], "interrupted");
        let stored: Vec<app::protocol::Event> =
            serde_json::from_value(trace["events"].clone()).expect("events");
        assert!(
            stored.len() >= seen.len(),
            "the checkpointed events are kept"
        );
        assert_eq!(
            stored[..seen.len()],
            seen[..],
            "the checkpointed events are kept as they were streamed"
        );
    }
    let started = &runs[0].0;
    let conversation = get_json_at(
        &client,
        format!(
            "{base}/api/conversations/{}",
            started["conversation_id"].as_str().expect("conversation")
        ),
    )
    .await;
    let assistant = &conversation["messages"][1];
    assert_eq!(assistant["status"], "interrupted");
    assert!(assistant["ended_reason"]
        .as_str()
        .is_some_and(|reason| reason.contains("server stopped")));
    let text: String = assistant["segments"]
        .as_array()
        .expect("segments")
        .iter()
        .filter_map(|s| s["text"].as_str())
        .collect();
    assert_eq!(text, "Before the crash.");

    // SIGTERM stops it gracefully.
    let pid = binary.child.id().expect("pid").to_string();
    std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .expect("kill -TERM");
    let status = tokio::time::timeout(Duration::from_secs(15), binary.child.wait())
        .await
        .expect("stops on SIGTERM")
        .expect("status");
    assert!(status.success(), "{status}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_damaged_checkpoint_row_does_not_stop_the_server_from_starting() {
    let dir = test_dir();
    write_slow_scenario(&dir);
    let mut binary = launch(&dir, &[]).await;
    let client = reqwest::Client::new();
    let base = binary.base.clone();
    let mut trace_ids = Vec::new();
    for _ in 0..2 {
        let (started, _) = start_until_tool_call(&client, &base).await;
        trace_ids.push(started["trace_id"].as_str().expect("trace").to_owned());
    }
    tokio::time::sleep(Duration::from_millis(700)).await;
    binary.child.start_kill().expect("SIGKILL");
    let _ = binary.child.wait().await;

    // Damage the first run's checkpoint rows: cut short in SQLite; in PostgreSQL, whose JSONB
    // holds only valid JSON, an event missing all its fields.
    let store = open_store(&dir).await;
    let damage = if store.sqlite().is_some() {
        r#"'[{"seq":1,'"#
    } else {
        r#"'[{"seq":1}]'"#
    };
    let damaged = store
        .execute_as_writer(format!(
            "UPDATE trace_event_chunks SET events = {damage} WHERE {}",
            common::chunks_of_traces_in(&format!("('{}')", trace_ids[0]))
        ))
        .await
        .expect("damage a row");
    assert!(damaged > 0, "the run was checkpointed");
    store.close().await;

    let binary = launch(&dir, &[]).await;
    let base = binary.base.clone();
    for trace_id in &trace_ids {
        let trace = get_json_at(&client, format!("{base}/api/traces/{trace_id}")).await;
        assert_eq!(trace["status"], "interrupted", "{trace_id}");
    }
    let health = get_json_at(&client, format!("{base}/healthz")).await;
    assert_eq!(health["status"], "ok");
}

/// Starts a run of `model` and reads its stream to the end.
async fn run_to_end(
    client: &reqwest::Client,
    base: &str,
    model: &str,
) -> Vec<app::protocol::Event> {
    start_and_follow(client, base, model)
        .await
        .1
        .collect()
        .await
}

fn tool_errors(events: &[app::protocol::Event]) -> Vec<String> {
    events
        .iter()
        .filter_map(|event| match &event.kind {
            app::protocol::EventKind::ToolResult { error, .. } => Some(
                error
                    .as_ref()
                    .map_or("ok".to_owned(), |e| e.kind.to_string()),
            ),
            _ => None,
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tool_calls_stuck_in_io_neither_stop_checkpoints_nor_static_files_and_pipes_are_refused() {
    let dir = test_dir();
    let pipe = dir.path().join("workspace/pipe");
    let made = std::process::Command::new("mkfifo")
        .arg(&pipe)
        .status()
        .expect("mkfifo");
    assert!(made.success());
    write_slow_scenario(&dir);
    write_scenario(
        &dir,
        "pipe",
        json!({"delta_interval_ms": 0, "steps": [
            {"tool_calls": [
                {"name": "read_file", "args": {"path": "pipe"}},
                {"name": "grep_search", "args": {"query": "TODO"}}
            ]},
            {"text": "Done."}
        ]}),
    );
    let stuck: Vec<Value> = (0..40)
        .map(|_| json!({"name": "sleep", "args": {"seconds": 120, "blocking": true}}))
        .collect();
    write_scenario(
        &dir,
        "stuck",
        json!({"delta_interval_ms": 0, "steps": [{"tool_calls": stuck}, {"text": "Gave up."}]}),
    );
    let mut binary = launch(&dir, &["--tool-timeout-secs", "1"]).await;
    let client = reqwest::Client::new();
    let base = binary.base.clone();

    // A pipe is refused at once, and a search walks past it.
    let events = tokio::time::timeout(
        Duration::from_secs(5),
        run_to_end(&client, &base, "scenario:pipe"),
    )
    .await
    .expect("a pipe does not hang the run");
    let mut outcomes = tool_errors(&events);
    outcomes.sort();
    assert_eq!(outcomes, ["not_a_file", "ok"]);

    // 600 calls stuck in I/O (more than tokio's 512 blocking threads), each abandoned after 1 s.
    let runs: Vec<_> = (0..15)
        .map(|_| run_to_end(&client, &base, "scenario:stuck"))
        .collect();
    for events in futures::future::join_all(runs).await {
        assert!(is_type(events.last().expect("events"), "message_final"));
        assert_eq!(tool_errors(&events).len(), 40);
    }
    // The server still serves files from disk and still checkpoints.
    let asset = tokio::time::timeout(
        Duration::from_secs(5),
        client.get(format!("{base}/pkg/glassbox.js")).send(),
    )
    .await
    .expect("static files are served while tools are stuck")
    .expect("GET");
    assert_eq!(asset.status(), 200);
    let (started, seen) = start_until_tool_call(&client, &base).await;
    tokio::time::sleep(Duration::from_millis(700)).await;
    binary.child.start_kill().expect("SIGKILL");
    let _ = binary.child.wait().await;

    let binary = launch(&dir, &[]).await;
    let base = binary.base.clone();
    let trace_id = started["trace_id"].as_str().expect("trace");
    let trace = get_json_at(&client, format!("{base}/api/traces/{trace_id}")).await;
    let stored: Vec<app::protocol::Event> =
        serde_json::from_value(trace["events"].clone()).expect("events");
    assert_eq!(
        stored[..seen.len()],
        seen[..],
        "the events were checkpointed"
    );
}

#[tokio::test]
async fn the_binary_says_what_is_wrong_when_the_site_is_missing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let output = tokio::process::Command::new(env!("CARGO_BIN_EXE_glassbox"))
        .args(["--addr", "127.0.0.1:0"])
        .arg("--data-dir")
        .arg(dir.path().join("data"))
        .arg("--site-root")
        .arg(dir.path().join("no-site"))
        .output()
        .await
        .expect("run glassbox");
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("site assets are missing") && stderr.contains("scripts/run.sh"),
        "{stderr}"
    );
}
