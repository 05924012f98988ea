//! Faults in the store: writes that fail (a full database), rows that cannot be read.

mod common;

use std::time::Duration;

use common::*;
use serde_json::json;

async fn page_count(server: &TestServer) -> u64 {
    let pages: i64 = sqlx::query_scalar("PRAGMA page_count")
        .fetch_one(server.store.pool())
        .await
        .expect("page_count");
    pages as u64
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trace_that_cannot_be_stored_is_retried_and_health_says_why() {
    let server = TestServer::start().await;
    let big = "x".repeat(200_000);
    server.scenario(
        "big",
        json!({"delta_chars": 4000, "delta_interval_ms": 0, "steps": [{"text": big}]}),
    );
    // The database may grow by a few pages only: a full disk, on purpose.
    let pages = page_count(&server).await;
    server
        .store
        .set_max_page_count(pages + 8)
        .await
        .expect("cap the database");
    let started = server.start_run("scenario:big", "fill it").await;
    let run_id = started["run_id"].as_str().expect("run").to_owned();

    // The final write fails and is retried; health reports it.
    let mut degraded = None;
    for _ in 0..100 {
        let (status, body) = server.get_json("/healthz").await;
        if status == 503 {
            degraded = Some(body);
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let degraded = degraded.expect("healthz answers 503 while writes fail");
    assert_eq!(degraded["status"], "degraded");
    assert_eq!(degraded["writes"], false);
    assert!(
        degraded["reason"]
            .as_str()
            .is_some_and(|r| r.contains("full")),
        "{degraded}"
    );
    // Nothing was published as ended: the terminal event waits for the write.
    let trace = sqlx::query_scalar::<_, String>("SELECT status FROM agent_traces WHERE run_id = ?")
        .bind(&run_id)
        .fetch_one(server.store.pool())
        .await
        .expect("trace row");
    assert_eq!(trace, "running");

    // Room again: the retry stores the trace, the stream ends with exactly one terminal event.
    server
        .store
        .set_max_page_count(1 << 30)
        .await
        .expect("lift the cap");
    let events = tokio::time::timeout(
        Duration::from_secs(20),
        server.subscribe(&run_id, None).await.collect(),
    )
    .await
    .expect("the stream ends once the trace is stored");
    assert_invariants(&events);
    assert!(events.last().is_some_and(|e| is_type(e, "message_final")));
    let (status, trace) = server
        .get_json(&format!(
            "/api/traces/{}",
            started["trace_id"].as_str().expect("trace")
        ))
        .await;
    assert_eq!((status, trace["status"].as_str()), (200, Some("completed")));
    let (status, _) = server.get_json("/healthz").await;
    assert_eq!(status, 200, "healthy again once writes succeed");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_read_pool_cannot_write_only_the_writer_can() {
    let server = TestServer::start().await;
    let refused = sqlx::query("CREATE TABLE sneaky (x)")
        .execute(server.store.pool())
        .await;
    assert!(refused.is_err(), "a read connection wrote");
    server
        .store
        .execute_as_writer("CREATE TABLE allowed (x)".into())
        .await
        .expect("the writer writes");
    server.stop().await;
}
