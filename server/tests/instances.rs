//! Two instances of the real binary on one PostgreSQL database: a run started on A is read,
//! resumed and stopped on B; one run per conversation holds across them; when A is killed, B ends
//! A's runs as interrupted and every reader sees exactly one terminal event.

mod common;

use std::time::{Duration, Instant};

use common::*;
use serde_json::{json, Value};

/// Streams a line, then `steps` more slowly (one delta every 50 ms), then sleeps in a tool.
fn write_scenarios(dir: &tempfile::TempDir) {
    write_scenario(
        dir,
        "slow",
        json!({"delta_chars": 4, "delta_interval_ms": 50, "steps": [
            {"text": "Counting slowly across two instances, one word at a time."},
            {"tool_calls": [{"name": "sleep", "args": {"seconds": 60}}]}
        ]}),
    );
}

/// Starts a run that must be accepted (201): what the start answered, and the run's id.
async fn start_ok(client: &reqwest::Client, base: &str, body: Value) -> (Value, String) {
    let (status, started) = chat_json_at(client, base, body).await;
    assert_eq!(status, 201, "{started}");
    let run_id = started["run_id"].as_str().expect("run").to_owned();
    (started, run_id)
}

async fn follow(
    client: &reqwest::Client,
    base: &str,
    run_id: &str,
    last_event_id: Option<u64>,
) -> SseStream {
    let mut request = client.get(format!("{base}/api/runs/{run_id}/events"));
    if let Some(seq) = last_event_id {
        request = request.header("last-event-id", seq.to_string());
    }
    SseStream::new(request.send().await.expect("GET events"))
}

/// The one terminal event of a run's events (there must be exactly one).
fn the_terminal_event(events: &[app::protocol::Event]) -> &app::protocol::Event {
    let terminal: Vec<_> = events.iter().filter(|e| e.kind.is_terminal()).collect();
    assert_eq!(terminal.len(), 1, "exactly one terminal event");
    terminal[0]
}

/// `GET /api/traces/{trace_id}` of a started run, on the instance at `base`.
async fn trace_on(client: &reqwest::Client, base: &str, started: &Value) -> Value {
    let trace_id = started["trace_id"].as_str().expect("trace");
    get_json_at(client, format!("{base}/api/traces/{trace_id}")).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs PostgreSQL: GLASSBOX_TEST_STORE=postgres with --include-ignored (scripts/test.sh)"]
async fn a_run_started_on_one_instance_is_read_resumed_stopped_and_taken_over_on_another() {
    if postgres_only("several instances share a PostgreSQL database") {
        return;
    }
    let dir = test_dir();
    write_scenarios(&dir);
    let mut a = launch(&dir, &["--instance-id", "a"]).await;
    let b = launch(&dir, &["--instance-id", "b"]).await;
    let client = reqwest::Client::new();

    // Read on B, then resume on B after a disconnect: no duplicate, no gap.
    let (started, run_id) = start_ok(
        &client,
        &a.base,
        json!({"content": "one", "model": "scenario:slow"}),
    )
    .await;
    let mut on_b = follow(&client, &b.base, &run_id, None).await;
    let mut first = Vec::new();
    while first.len() < 5 {
        first.push(on_b.next_event().await.expect("an event on B"));
    }
    drop(on_b);
    let resumed_from = first.last().expect("events").seq;
    let mut on_b = follow(&client, &b.base, &run_id, Some(resumed_from)).await;
    let rest = on_b
        .until(|event| is_type(event, "tool_call_started"))
        .await;
    let seqs: Vec<u64> = first.iter().chain(&rest).map(|event| event.seq).collect();
    assert_eq!(
        seqs,
        (1..=seqs.len() as u64).collect::<Vec<_>>(),
        "no duplicate, no gap"
    );

    // Live, the same bytes on both instances (A from its memory, B from the database's JSONB).
    let (_, other) = chat_json_at(
        &client,
        &a.base,
        json!({"content": "bytes", "model": "scenario:slow"}),
    )
    .await;
    let other_run = other["run_id"].as_str().expect("run");
    let mut frames = Vec::new();
    for base in [&a.base, &b.base] {
        let mut stream = follow(&client, base, other_run, None).await;
        let mut data = Vec::new();
        while !data
            .iter()
            .any(|d: &String| d.contains("\"type\":\"tool_call_started\""))
        {
            data.push(stream.next_frame().await.expect("a frame").data);
        }
        frames.push(data);
    }
    assert_eq!(
        frames[0], frames[1],
        "a run's events read the same on every instance"
    );

    // One run per conversation, whichever instance is asked.
    let conversation_id = started["conversation_id"].as_str().expect("conversation");
    let (status, refused) = chat_json_at(
        &client,
        &b.base,
        json!({"content": "two", "model": "scenario:slow", "conversation_id": conversation_id}),
    )
    .await;
    assert_eq!(status, 409, "{refused}");

    // Stop on B reaches A; B's reader sees exactly one terminal event, message_cancelled.
    let asked = Instant::now();
    let cancelled = client
        .post(format!("{}/api/runs/{run_id}/cancel", b.base))
        .send()
        .await
        .expect("cancel on B");
    assert_eq!(cancelled.status(), 200);
    let ending = tokio::time::timeout(Duration::from_secs(5), on_b.collect())
        .await
        .expect("B's stream ends");
    println!("cancel across instances: {:?}", asked.elapsed());
    let terminal = the_terminal_event(&ending);
    assert!(is_type(terminal, "message_cancelled"), "{terminal:?}");
    let trace = trace_on(&client, &b.base, &started).await;
    assert_eq!(trace["status"], "cancelled");

    // Kill A mid-run: B notices within 10 s and ends the run as interrupted, events kept.
    let (_, second) = chat_json_at(
        &client,
        &a.base,
        json!({"content": "three", "model": "scenario:slow"}),
    )
    .await;
    let second_run = second["run_id"].as_str().expect("run").to_owned();
    let mut on_b = follow(&client, &b.base, &second_run, None).await;
    let before = on_b
        .until(|event| is_type(event, "tool_call_started"))
        .await;
    a.child.start_kill().expect("SIGKILL A");
    let _ = a.child.wait().await;
    let killed = Instant::now();
    let after = tokio::time::timeout(Duration::from_secs(15), on_b.collect())
        .await
        .expect("B's stream of A's run ends after A dies");
    println!("takeover after SIGKILL: {:?}", killed.elapsed());
    assert!(
        killed.elapsed() < Duration::from_secs(12),
        "noticed within 10 s (and a read)"
    );
    let all: Vec<_> = before.iter().chain(&after).cloned().collect();
    let terminal = the_terminal_event(&all);
    assert!(
        matches!(&terminal.kind, app::protocol::EventKind::MessageError { code, .. } if *code == app::protocol::ErrorCode::Interrupted),
        "{terminal:?}"
    );
    let trace = trace_on(&client, &b.base, &second).await;
    assert_eq!(trace["status"], "interrupted");
    assert!(
        trace["events"]
            .as_array()
            .is_some_and(|events| events.len() >= before.len()),
        "the events before the kill are kept"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs PostgreSQL: GLASSBOX_TEST_STORE=postgres with --include-ignored (scripts/test.sh)"]
async fn an_approval_answered_on_another_instance_reaches_the_run() {
    if postgres_only("several instances share a PostgreSQL database") {
        return;
    }
    let dir = test_dir();
    write_scenario(
        &dir,
        "ask",
        json!({"steps": [{"tool_calls": [{"name": "list_dir", "args": {"path": "."}}]}, {"text": "ok"}]}),
    );
    let file = dir.path().join("providers.json");
    let approval = json!({"approval": {"tools": {"list_dir": "ask"}}});
    std::fs::write(&file, approval.to_string()).expect("write");
    let file = file.display().to_string();
    let a = launch(&dir, &["--instance-id", "a", "--providers-file", &file]).await;
    let b = launch(&dir, &["--instance-id", "b", "--providers-file", &file]).await;
    let client = reqwest::Client::new();
    let (_, run_id) = start_ok(
        &client,
        &a.base,
        json!({"content": "ls", "model": "scenario:ask"}),
    )
    .await;
    let mut stream = follow(&client, &b.base, &run_id, None).await;
    let events = stream
        .until(|event| is_type(event, "tool_approval_requested"))
        .await;
    let Some(app::protocol::EventKind::ToolApprovalRequested { call_id, .. }) =
        events.last().map(|event| &event.kind)
    else {
        unreachable!()
    };
    // The answer given on B is recorded by A, which runs the run: B says so (200), and any later
    // answer, on either instance, gets 409.
    let answer_on = |base: String, decision: &'static str| {
        let client = client.clone();
        let url = format!("{base}/api/runs/{run_id}/approvals/{call_id}");
        async move {
            let response = client
                .post(url)
                .json(&json!({ "decision": decision }))
                .send()
                .await
                .expect("POST approval");
            response.status().as_u16()
        }
    };
    assert_eq!(answer_on(b.base.clone(), "approve").await, 200);
    assert_eq!(answer_on(b.base.clone(), "deny").await, 409);
    assert_eq!(answer_on(a.base.clone(), "deny").await, 409);
    let rest = stream.collect().await;
    assert!(rest
        .iter()
        .any(|event| is_type(event, "tool_approval_resolved")));
    assert!(matches!(
        the_terminal_event(&rest).kind,
        app::protocol::EventKind::MessageFinal { .. }
    ));
}

/// `instances` keeps only live and recently lost instances: a tool's connection takes no lease,
/// and an instance gone for over an hour is forgotten by the next heartbeat of a live one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs PostgreSQL: GLASSBOX_TEST_STORE=postgres with --include-ignored (scripts/test.sh)"]
async fn tools_take_no_lease_and_long_gone_instances_are_forgotten() {
    if postgres_only("leases are PostgreSQL's") {
        return;
    }
    let dir = test_dir();
    let tool = open_store(&dir).await;
    tool.execute_as_writer(
        "INSERT INTO instances (instance_id, heartbeat_at) VALUES ('gone', now() - interval '2 hours'), ('recent', now() - interval '1 minute')".into(),
    )
    .await
    .expect("old leases");
    let names = || async {
        let rows: Vec<(String,)> =
            sqlx::query_as("SELECT instance_id FROM instances ORDER BY instance_id")
                .fetch_all(tool.postgres().expect("PostgreSQL").pool())
                .await
                .expect("instances");
        rows.into_iter().map(|(name,)| name).collect::<Vec<_>>()
    };
    assert_eq!(names().await, ["gone", "recent"], "no row for the tool");
    let _a = launch(&dir, &["--instance-id", "a"]).await;
    let deadline = Instant::now() + Duration::from_secs(10);
    while names().await != ["a", "recent"] {
        assert!(
            Instant::now() < deadline,
            "instances are {:?}",
            names().await
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// A reader on another instance reads new events from the bus's shared fetch, not from the tables
/// at every event: before the fix each batch it handed out sent it back to the tables (500
/// readers made 3,400 queries a second). `/healthz` counts the readers' own table reads.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs PostgreSQL: GLASSBOX_TEST_STORE=postgres with --include-ignored (scripts/test.sh)"]
async fn a_reader_on_another_instance_keeps_to_the_shared_fetch() {
    if postgres_only("several instances share a PostgreSQL database") {
        return;
    }
    let dir = test_dir();
    write_scenario(
        &dir,
        "steady",
        json!({"delta_chars": 1, "delta_interval_ms": 20, "steps": [
            {"text": "word ".repeat(80)}
        ]}),
    );
    let a = launch(&dir, &["--instance-id", "a"]).await;
    let b = launch(&dir, &["--instance-id", "b"]).await;
    let client = reqwest::Client::new();
    let (_, run_id) = start_ok(
        &client,
        &a.base,
        json!({"content": "go", "model": "scenario:steady"}),
    )
    .await;
    let events = follow(&client, &b.base, &run_id, None)
        .await
        .collect()
        .await;
    let deltas = events.iter().filter(|e| is_type(e, "text_delta")).count();
    assert!(deltas >= 40, "{deltas} deltas");
    the_terminal_event(&events);
    let health = get_json_at(&client, format!("{}/healthz", b.base)).await;
    let table_reads = health["bus"]["table_reads"].as_u64().expect("bus stats");
    assert!(
        table_reads <= 5,
        "the reader read the tables {table_reads} times for {deltas} deltas: {health}"
    );
}
