//! Faults in the store: writes that fail (a full database), rows that cannot be read.

mod common;

use std::time::Duration;

use common::*;
use serde_json::json;

/// Makes large trace writes fail, as a full disk would: SQLite's page cap, or on PostgreSQL a
/// constraint no large trace meets. The reason each gives: "full" and "constraint".
async fn fill_the_database(server: &TestServer) -> &'static str {
    let Some(sqlite) = server.store.sqlite() else {
        server
            .store
            .execute_as_writer(
                "ALTER TABLE agent_traces ADD CONSTRAINT full_disk
                 CHECK (events IS NULL OR length(events::text) < 100000) NOT VALID"
                    .into(),
            )
            .await
            .expect("refuse large traces");
        return "full_disk";
    };
    let pages: i64 = sqlx::query_scalar("PRAGMA page_count")
        .fetch_one(sqlite.pool())
        .await
        .expect("page_count");
    sqlite
        .set_max_page_count(pages as u64 + 8)
        .await
        .expect("cap the database");
    "full"
}

async fn free_the_database(server: &TestServer) {
    match server.store.sqlite() {
        Some(sqlite) => sqlite.set_max_page_count(1 << 30).await,
        None => server
            .store
            .execute_as_writer("ALTER TABLE agent_traces DROP CONSTRAINT full_disk".into())
            .await
            .map(drop),
    }
    .expect("make room");
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
    let reason = fill_the_database(&server).await;
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
            .is_some_and(|r| r.contains(reason)),
        "{degraded}"
    );
    // Nothing was published as ended: the terminal event waits for the write.
    let (status, trace) = server
        .get_json(&format!(
            "/api/traces/{}",
            started["trace_id"].as_str().expect("trace")
        ))
        .await;
    assert_eq!((status, trace["status"].as_str()), (200, Some("running")));

    // Room again: the retry stores the trace, the stream ends with exactly one terminal event.
    free_the_database(&server).await;
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
    let refused = match server.store.sqlite() {
        Some(sqlite) => sqlx::query("CREATE TABLE sneaky (x INTEGER)")
            .execute(sqlite.pool())
            .await
            .map(drop),
        None => sqlx::query("CREATE TABLE sneaky (x INTEGER)")
            .execute(server.store.postgres().expect("a store").pool())
            .await
            .map(drop),
    };
    assert!(refused.is_err(), "a read connection wrote");
    server
        .store
        .execute_as_writer("CREATE TABLE allowed (x INTEGER)".into())
        .await
        .expect("the writer writes");
    server.stop().await;
}

/// Committed pages move from the WAL into the database file on a connection of their own, not in
/// a commit of the writer (where the copy and its fsync held up every run start queued behind
/// it). 2 MiB is under any automatic checkpoint of the writer (SQLite's default is 4 MiB), so only
/// the background one moves it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_wal_is_moved_into_the_database_file_off_the_writers_path() {
    if sqlite_only("the WAL is SQLite's") {
        return;
    }
    let server = TestServer::start().await;
    let store = &server.store;
    store
        .execute_as_writer("CREATE TABLE filler (data BLOB)".into())
        .await
        .expect("create");
    for _ in 0..2 {
        store
            .execute_as_writer("INSERT INTO filler VALUES (zeroblob(1048576))".into())
            .await
            .expect("insert");
    }
    let db = db_path(&server.dir);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let size = std::fs::metadata(&db).map_or(0, |meta| meta.len());
        if size >= 2 * 1024 * 1024 {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the database file is still {size} bytes: the WAL was not checkpointed"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    server.stop().await;
}

/// Issue 30: `/healthz` is public, and its reason showed anyone the database's own words (which
/// may name a path or a host). Signed out it says that writes fail; signed in, why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signed_out_health_check_does_not_show_the_databases_words() {
    let server = TestServer::start_with(test_dir(), |config| {
        config.auth = glassbox::auth::AuthMode::Password;
    })
    .await;
    glassbox::auth::add_user(&server.store, "alice", "alice-password")
        .await
        .expect("add a user");
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("client");
    let signed_in = client
        .post(server.url("/auth/login"))
        .form(&[("name", "alice"), ("password", "alice-password")])
        .send()
        .await
        .expect("sign in");
    let cookie = signed_in
        .headers()
        .get("set-cookie")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .expect("a session cookie")
        .to_owned();
    let big = "x".repeat(200_000);
    server.scenario(
        "big",
        json!({"delta_chars": 4000, "delta_interval_ms": 0, "steps": [{"text": big}]}),
    );
    let reason = fill_the_database(&server).await;
    let started = client
        .post(server.url("/api/chat"))
        .header("cookie", &cookie)
        .header("accept", "application/json")
        .json(&json!({"content": "fill it", "model": "scenario:big"}))
        .send()
        .await
        .expect("start");
    assert_eq!(started.status(), 201);
    let health = |cookie: Option<String>| {
        let mut request = client.get(server.url("/healthz"));
        if let Some(cookie) = cookie {
            request = request.header("cookie", cookie);
        }
        async move {
            let response = request.send().await.expect("healthz");
            let status = response.status().as_u16();
            (
                status,
                response.json::<serde_json::Value>().await.expect("JSON"),
            )
        }
    };
    let mut signed_out = None;
    for _ in 0..100 {
        let (status, body) = health(None).await;
        if status == 503 {
            signed_out = Some(body);
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let signed_out = signed_out.expect("healthz answers 503 while writes fail");
    assert_eq!(
        signed_out["reason"], "writes to the database fail",
        "{signed_out}"
    );
    let (_, owner) = health(Some(cookie)).await;
    assert!(
        owner["reason"].as_str().is_some_and(|r| r.contains(reason)),
        "a signed-in user reads why: {owner}"
    );
    free_the_database(&server).await;
    server.stop().await;
}
