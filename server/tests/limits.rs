//! The limits that keep a server up under load: runs at once, memory for run logs.

mod common;

use std::time::Duration;

use common::*;
use serde_json::json;

fn sleeper() -> serde_json::Value {
    json!({"delta_interval_ms": 0, "steps": [
        {"tool_calls": [{"name": "sleep", "args": {"seconds": 30}}]},
        {"text": "woke"}
    ]})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_start_beyond_the_run_limit_answers_429_with_retry_after_and_stores_nothing() {
    let server = TestServer::start_with(test_dir(), |config| config.max_runs = 2).await;
    server.scenario("sleeper", sleeper());
    let mut started = Vec::new();
    for _ in 0..2 {
        started.push(server.start_run("scenario:sleeper", "go").await);
    }
    let refused = server.post_chat("scenario:sleeper", "go", true).await;
    assert_eq!(refused.status(), 429);
    assert_eq!(
        refused
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok()),
        Some("5")
    );
    let body: serde_json::Value = refused.json().await.expect("JSON");
    assert_eq!(body["code"], "too_many_runs", "{body}");
    let (_, conversations) = server.get_json("/api/conversations").await;
    assert_eq!(
        conversations.as_array().map(Vec::len),
        Some(2),
        "the refused start stored nothing"
    );
    let (_, health) = server.get_json("/healthz").await;
    assert_eq!(health["runs"], 2);

    // Stopping one gives its slot back.
    let run_id = started[0]["run_id"].as_str().expect("run id");
    let (status, _) = server
        .post_json(&format!("/api/runs/{run_id}/cancel"), json!({}))
        .await;
    assert_eq!(status, 200);
    let mut accepted = false;
    for _ in 0..50 {
        if server
            .post_chat("scenario:sleeper", "go", true)
            .await
            .status()
            == 201
        {
            accepted = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(accepted, "a slot came back after a run ended");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_past_the_memory_budget_ends_with_memory_exhausted_and_gives_the_memory_back() {
    let server = TestServer::start_with(test_dir(), |config| config.run_memory_mib = 1).await;
    let text = "word ".repeat(300_000); // 1.5 MB of answer
    server.scenario(
        "big",
        json!({"delta_chars": 4000, "delta_interval_ms": 0, "steps": [{"text": text}]}),
    );
    server.scenario("small", json!({"steps": [{"text": "fine"}]}));
    let events = server
        .chat_stream("scenario:big", "go")
        .await
        .collect()
        .await;
    assert_invariants(&events);
    match &events.last().expect("events").kind {
        app::protocol::EventKind::MessageError { code, .. } => {
            assert_eq!(*code, app::protocol::ErrorCode::MemoryExhausted)
        }
        other => panic!("expected message_error, got {other:?}"),
    }
    let mut freed = false;
    for _ in 0..50 {
        let (_, health) = server.get_json("/healthz").await;
        if health["run_memory_bytes"].as_u64() == Some(0) {
            freed = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(freed, "the ended run's log left memory");
    let events = server
        .chat_stream("scenario:small", "go")
        .await
        .collect()
        .await;
    assert!(is_type(events.last().expect("events"), "message_final"));
    server.stop().await;
}
