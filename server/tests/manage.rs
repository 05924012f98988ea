//! Managing conversations (issue 35): rename and archive (`PATCH /api/conversations/{id}`),
//! delete one (`DELETE /api/conversations/{id}`) and all (`DELETE /api/conversations`). Bad input
//! answers a clear JSON error; a delete removes every row and, on SQLite, the text from the files.
//! The two-user isolation of these endpoints is in `accounts.rs`.

mod common;

use common::*;
use reqwest::Method;
use serde_json::{json, Value};

/// A finished run in a new conversation: (conversation, trace) ids.
async fn finished_conversation(
    server: &TestServer,
    scenario: &str,
    content: &str,
) -> (String, String) {
    let started = server
        .start_run(&format!("scenario:{scenario}"), content)
        .await;
    let run_id = started["run_id"].as_str().expect("run id");
    server.subscribe(run_id, None).await.collect().await;
    let field = |name: &str| started[name].as_str().expect(name).to_owned();
    (field("conversation_id"), field("trace_id"))
}

fn quick(server: &TestServer) {
    server.scenario(
        "quick",
        json!({"delta_interval_ms": 0, "steps": [{"text": "a quick answer"}]}),
    );
}

async fn listed(server: &TestServer, path: &str) -> Vec<Value> {
    let (status, list) = server.get_json(path).await;
    assert_eq!(status, 200, "{path}: {list}");
    list.as_array().expect("a list").clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_conversation_is_renamed_archived_and_unarchived() {
    let server = TestServer::start().await;
    quick(&server);
    let (id, _) = finished_conversation(&server, "quick", "what is the question").await;
    let path = format!("/api/conversations/{id}");

    // A title is plain text on one line: HTML stays text, whitespace and controls become a space.
    let typed = "  <b>Plans</b>\n\tfor <script>alert(1)</script> \u{7} May ";
    let (status, summary) = server
        .send_json(Method::PATCH, &path, Some(json!({"title": typed})))
        .await;
    assert_eq!(status, 200, "{summary}");
    let title = "<b>Plans</b> for <script>alert(1)</script> May";
    assert_eq!(summary["title"], title);
    assert_eq!(summary["archived"], false);
    let (_, conversation) = server.get_json(&path).await;
    assert_eq!(conversation["title"], title);
    assert_eq!(
        listed(&server, "/api/conversations").await[0]["title"],
        title
    );

    // Archived: gone from the list, in the archived list, still readable; then back.
    let (status, summary) = server
        .send_json(Method::PATCH, &path, Some(json!({"archived": true})))
        .await;
    assert_eq!((status, &summary["archived"]), (200, &json!(true)));
    assert!(listed(&server, "/api/conversations").await.is_empty());
    let archived = listed(&server, "/api/conversations?archived=true").await;
    assert_eq!((archived.len(), &archived[0]["id"]), (1, &json!(id)));
    assert_eq!(server.get_json(&path).await.0, 200);
    let (status, summary) = server
        .send_json(
            Method::PATCH,
            &path,
            Some(json!({"archived": false, "title": "Back"})),
        )
        .await;
    assert_eq!(
        (status, &summary["archived"], &summary["title"]),
        (200, &json!(false), &json!("Back"))
    );
    assert_eq!(listed(&server, "/api/conversations").await.len(), 1);
    assert!(listed(&server, "/api/conversations?archived=true")
        .await
        .is_empty());

    // Bad input: a clear JSON error, the title unchanged.
    for (body, code) in [
        (json!({"title": ""}), "invalid_field"),
        (json!({"title": " \n\t "}), "invalid_field"),
        (json!({"title": "x".repeat(10 * 1024)}), "invalid_field"),
        (json!({}), "invalid_field"),
        (json!({"title": 7}), "invalid_field"),
        (json!({"name": "x"}), "invalid_field"),
        (json!({"archived": "yes"}), "invalid_field"),
    ] {
        let (status, error) = server
            .send_json(Method::PATCH, &path, Some(body.clone()))
            .await;
        assert_eq!(
            (status, error["code"].as_str()),
            (422, Some(code)),
            "{body}: {error}"
        );
        assert!(error["message"].is_string());
    }
    let (status, error) = server.send_json(Method::PATCH, &path, None).await;
    assert_eq!(
        (status, error["code"].as_str()),
        (415, Some("unsupported_media_type"))
    );
    let (status, error) = server
        .send_json(
            Method::PATCH,
            "/api/conversations/no-such-id",
            Some(json!({"title": "x"})),
        )
        .await;
    assert_eq!((status, error["code"].as_str()), (404, Some("not_found")));
    let (status, error) = server.get_json("/api/conversations?archived=maybe").await;
    assert_eq!(
        (status, error["code"].as_str()),
        (422, Some("invalid_field"))
    );
    assert_eq!(server.get_json(&path).await.1["title"], "Back");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delete_removes_every_row_and_the_text_from_the_database() {
    let dir = test_dir();
    let server = TestServer::start_in(dir.clone()).await;
    let secret = "zebra-quartz-4711-forget-me";
    server.scenario(
        "secret",
        json!({"delta_interval_ms": 0, "steps": [
            {"tool_calls": [{"name": "grep_search", "args": {"query": secret}}]},
            {"text": format!("the answer is {secret}. {}", format!("{secret} and more words ").repeat(1500))}
        ]}),
    );
    quick(&server);
    let (kept, kept_trace) = finished_conversation(&server, "quick", "keep me").await;
    let (id, trace) = finished_conversation(&server, "secret", &format!("find {secret}")).await;
    let (reply, share_path) = every_kind_of_row(&server, &id, &trace, secret).await;
    let mut before = Vec::new();
    for sql in rows(&id) {
        before.push(server.count(&sql).await);
    }
    assert_eq!(before[..3], [1, 4, 2], "{before:?}");
    // Its search pieces: the title, two questions, two tool calls, two answers, two feedback.
    assert_eq!(before[4..], [1, 1, 9, 2], "{before:?}");
    let kept_before = server.count(&rows(&kept)[1]).await;
    let search = format!("/api/search?q=%22{secret}%22");
    let (status, found) = server.get_json(&search).await;
    assert_eq!(status, 200, "{found}");
    assert_eq!(
        found["results"].as_array().map(Vec::len),
        Some(9),
        "{found}"
    );

    let path = format!("/api/conversations/{id}");
    let (status, body) = server.send_json(Method::DELETE, &path, None).await;
    assert_eq!((status, &body), (204, &Value::Null));
    for sql in rows(&id) {
        assert_eq!(server.count(&sql).await, 0, "left after the delete: {sql}");
    }
    let events = format!(
        "/api/runs/{}/events",
        reply["run_id"].as_str().expect("run")
    );
    for gone in [
        path.clone(),
        format!("/api/traces/{trace}"),
        format!("/thoughtflow/{id}.json"),
        share_path,
        events,
    ] {
        let (status, body) = server.get_json(&gone).await;
        assert_eq!(
            (status, body["code"].as_str()),
            (404, Some("not_found")),
            "{gone}"
        );
    }
    // Deleting twice: 404, as for any conversation that is not there.
    let (status, error) = server.send_json(Method::DELETE, &path, None).await;
    assert_eq!((status, error["code"].as_str()), (404, Some("not_found")));
    // The other conversation is whole.
    assert_eq!(server.count(&rows(&kept)[1]).await, kept_before);
    assert_eq!(
        server
            .get_json(&format!("/api/traces/{kept_trace}"))
            .await
            .0,
        200
    );
    let list = listed(&server, "/api/conversations").await;
    assert_eq!((list.len(), &list[0]["id"]), (1, &json!(kept)));
    let search = format!("/api/search?q=%22{secret}%22");
    gone_from_search(&server, &search).await;
    text_left_the_files(&dir, &server, secret).await;
    server.stop().await;
}

/// A second turn, a share link, a model turn, feedback and a note in conversation `id`, so every
/// kind of row is there: the second run's reply and the share link's trace path.
async fn every_kind_of_row(
    server: &TestServer,
    id: &str,
    trace: &str,
    secret: &str,
) -> (Value, String) {
    let response = server
        .client
        .post(server.url("/api/chat"))
        .header("accept", "application/json")
        .json(&json!({"content": format!("again {secret}"), "conversation_id": id, "model": "scenario:secret"}))
        .send()
        .await
        .expect("POST /api/chat");
    let status = response.status().as_u16();
    let reply: Value = response.json().await.expect("JSON");
    assert_eq!(status, 201, "{reply}");
    server
        .subscribe(reply["run_id"].as_str().expect("run"), None)
        .await
        .collect()
        .await;
    let (status, share) = server
        .post_json(&format!("/api/traces/{trace}/shares"), json!({}))
        .await;
    assert_eq!(status, 201, "{share}");
    let share_path = format!(
        "/api/traces/{trace}?share={}",
        share["token"].as_str().expect("token")
    );
    server
        .store
        .execute_as_writer(format!(
            "INSERT INTO model_turns (trace_id, turn_index, model, after_seq, request, response, started_at, completed_at)
             VALUES ('{trace}', 0, 'm', 0, '{{\"q\": \"{secret}\"}}', '{{\"a\": \"{secret}\"}}',
                     '2026-11-26T00:00:00Z', '2026-11-26T00:00:01Z')"
        ))
        .await
        .expect("a model turn");
    // Feedback on the answer and a note on its tool call (issue 36), each with a search piece.
    let answer = reply["message_id"].as_str().expect("message");
    let call = tool_call_of(server, id, answer).await;
    let (status, body) = server
        .send_json(
            Method::PUT,
            &format!("/api/messages/{answer}/feedback"),
            Some(json!({"rating": "down", "comment": format!("wrong about {secret}")})),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = server
        .send_json(
            Method::PUT,
            &format!("/api/messages/{answer}/steps/{call}/note"),
            Some(json!({"comment": format!("searched {secret} again")})),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    (reply, share_path)
}

/// Counts of every kind of row a conversation `conversation` has.
fn rows(conversation: &str) -> [String; 8] {
    let traces =
        format!("(SELECT trace_id FROM agent_traces WHERE conversation_id = '{conversation}')");
    [
        format!("SELECT COUNT(*) FROM conversations WHERE id = '{conversation}'"),
        format!("SELECT COUNT(*) FROM messages WHERE conversation_id = '{conversation}'"),
        format!("SELECT COUNT(*) FROM agent_traces WHERE conversation_id = '{conversation}'"),
        format!(
            "SELECT COUNT(*) FROM trace_event_chunks WHERE {}",
            common::chunks_of_traces_in(&traces)
        ),
        format!("SELECT COUNT(*) FROM model_turns WHERE trace_id IN {traces}"),
        format!("SELECT COUNT(*) FROM trace_shares WHERE trace_id IN {traces}"),
        format!("SELECT COUNT(*) FROM search_docs WHERE conversation_id = '{conversation}'"),
        format!("SELECT COUNT(*) FROM feedback WHERE conversation_id = '{conversation}'"),
    ]
}

/// Not found by search, and gone from the full-text index itself.
async fn gone_from_search(server: &TestServer, search: &str) {
    let (status, found) = server.get_json(search).await;
    assert_eq!((status, &found["results"]), (200, &json!([])), "{found}");
    assert_eq!(
        server.get_json("/api/search?q=keep").await.1["results"]
            .as_array()
            .map(Vec::len),
        Some(2),
        "the other conversation's title and question"
    );
    if server.store.sqlite().is_some() {
        for sql in [
            "SELECT COUNT(*) FROM search_fts WHERE search_fts MATCH 'zebra OR quartz OR forget'",
            "SELECT COUNT(*) FROM search_fts_data",
        ] {
            let counted = server.count(sql).await;
            assert!(sql.ends_with("data") || counted == 0, "{sql}: {counted}");
        }
    } else {
        let indexed =
            "SELECT COUNT(*) FROM search_docs WHERE tsv @@ to_tsquery('simple', 'zebra | quartz')";
        assert_eq!(server.count(indexed).await, 0);
    }
}

/// On SQLite, the files (WAL included) after a checkpoint, while the server runs; on
/// PostgreSQL, every row: the deleted text is in none, the other conversation's is.
async fn text_left_the_files(dir: &tempfile::TempDir, server: &TestServer, secret: &str) {
    if server.store.sqlite().is_some() {
        checkpoint(dir).await;
    }
    let stored = stored_bytes(dir).await;
    assert!(
        stored.windows(8).any(|window| window == b"keep me\""),
        "the other conversation's text is stored"
    );
    // The whole text, and its words as the full-text index keeps them (each on its own).
    for needle in [secret, "zebra", "quartz"] {
        let needle = needle.as_bytes();
        assert!(
            !stored.windows(needle.len()).any(|window| window == needle),
            "the deleted text {} is still in the database",
            String::from_utf8_lossy(needle)
        );
    }
}

/// The `call_id` of the first tool call of the message `message_id` of conversation `id`.
async fn tool_call_of(server: &TestServer, id: &str, message_id: &str) -> String {
    let message = server.message_of(id, message_id).await;
    message["segments"]
        .as_array()
        .expect("segments")
        .iter()
        .find_map(|segment| segment["call_id"].as_str())
        .expect("a tool call")
        .to_owned()
}

/// Moves the whole WAL into the database file and empties it (`TRUNCATE`), from a connection of
/// its own, retried while a read holds an older snapshot.
async fn checkpoint(dir: &tempfile::TempDir) {
    let connection = rusqlite::Connection::open(db_path(dir)).expect("open the database");
    for _ in 0..100 {
        let busy: i64 = connection
            .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |row| row.get(0))
            .expect("checkpoint");
        if busy == 0 {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    panic!("the WAL was never checkpointed whole");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_conversation_with_a_run_going_is_not_deleted() {
    let server = TestServer::start().await;
    quick(&server);
    server.scenario(
        "slow",
        json!({"delta_chars": 1, "delta_interval_ms": 100, "steps": [{"text": "a slow answer that takes a while"}]}),
    );
    let (other, _) = finished_conversation(&server, "quick", "done already").await;
    let started = server.start_run("scenario:slow", "go slowly").await;
    let id = started["conversation_id"].as_str().expect("id");
    let run_id = started["run_id"].as_str().expect("run");
    let path = format!("/api/conversations/{id}");
    let (status, error) = server.send_json(Method::DELETE, &path, None).await;
    assert_eq!(
        (status, error["code"].as_str()),
        (409, Some("run_in_progress")),
        "{error}"
    );
    let (status, error) = server
        .send_json(Method::DELETE, "/api/conversations", None)
        .await;
    assert_eq!(
        (status, error["code"].as_str()),
        (409, Some("run_in_progress")),
        "{error}"
    );
    assert_eq!(
        listed(&server, "/api/conversations").await.len(),
        2,
        "nothing was deleted"
    );
    assert_eq!(
        server
            .get_json(&format!("/api/conversations/{other}"))
            .await
            .0,
        200
    );

    let (status, _) = server
        .post_json(&format!("/api/runs/{run_id}/cancel"), json!({}))
        .await;
    assert_eq!(status, 200);
    server.subscribe(run_id, None).await.collect().await;
    let (status, _) = server.send_json(Method::DELETE, &path, None).await;
    assert_eq!(status, 204);
    server.stop().await;
}

/// Reads a conversation's ThoughtFlow export and its trace's Inspector export twenty times.
async fn read_exports(server: std::sync::Arc<TestServer>, conversation: String, trace: String) {
    for _ in 0..20 {
        let flow = server
            .get_json(&format!("/thoughtflow/{conversation}.json"))
            .await;
        let inspector = server
            .get_json(&format!("/api/traces/{trace}/inspector.json"))
            .await;
        assert_eq!((flow.0, inspector.0), (200, 200), "{flow:?}");
    }
}

/// Deletes while other runs stream (their checkpoints landing in the same writer) and while
/// exports of another conversation are read: every other run keeps each event it streamed, its
/// message and its pieces; every export reads whole.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deletes_during_checkpoints_and_exports_lose_nothing_else() {
    let server = std::sync::Arc::new(TestServer::start().await);
    quick(&server);
    server.scenario(
        "steady",
        json!({"delta_chars": 3, "delta_interval_ms": 4, "steps": [
            {"reasoning": ["steady reasoning about the ledger"]},
            {"tool_calls": [{"name": "grep_search", "args": {"query": "TODO"}}]},
            {"text": "steady answer word ".repeat(20)}
        ]}),
    );
    let (kept, kept_trace) = finished_conversation(&server, "quick", "an export source").await;
    let mut streams = Vec::new();
    for n in 0..4 {
        let started = server
            .start_run("scenario:steady", &format!("steady {n}"))
            .await;
        let events = server
            .subscribe(started["run_id"].as_str().expect("run"), None)
            .await;
        streams.push((started, tokio::spawn(events.collect())));
    }
    let exports = tokio::spawn(read_exports(server.clone(), kept, kept_trace));
    for n in 0..6 {
        let (id, _) = finished_conversation(&server, "quick", &format!("to delete {n}")).await;
        let path = format!("/api/conversations/{id}");
        assert_eq!(server.send_json(Method::DELETE, &path, None).await.0, 204);
    }
    exports.await.expect("exports");
    for (started, events) in streams {
        let streamed = events.await.expect("stream");
        assert_invariants(&streamed);
        let trace = started["trace_id"].as_str().expect("trace");
        let (status, stored) = server.get_json(&format!("/api/traces/{trace}")).await;
        assert_eq!(status, 200);
        let seqs: Vec<u64> = stored["events"]
            .as_array()
            .expect("events")
            .iter()
            .map(|event| event["seq"].as_u64().expect("seq"))
            .collect();
        assert_eq!(seqs, (1..=streamed.len() as u64).collect::<Vec<_>>());
        let conversation = started["conversation_id"].as_str().expect("id");
        let (_, stored) = server
            .get_json(&format!("/api/conversations/{conversation}"))
            .await;
        assert_eq!(stored["messages"][1]["status"], "complete", "{stored}");
    }
    assert_eq!(listed(&server, "/api/conversations").await.len(), 5);
    assert_eq!(
        server
            .count("SELECT COUNT(*) FROM search_docs WHERE kind = 'tool'")
            .await,
        4,
        "each kept run's tool call is indexed once"
    );
    if let Ok(server) = std::sync::Arc::try_unwrap(server) {
        server.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delete_all_removes_every_conversation_of_the_user() {
    let server = TestServer::start().await;
    quick(&server);
    let (first, _) = finished_conversation(&server, "quick", "one").await;
    finished_conversation(&server, "quick", "two").await;
    let (status, _) = server
        .send_json(
            Method::PATCH,
            &format!("/api/conversations/{first}"),
            Some(json!({"archived": true})),
        )
        .await;
    assert_eq!(status, 200);
    let (status, body) = server
        .send_json(Method::DELETE, "/api/conversations", None)
        .await;
    assert_eq!(
        (status, body),
        (200, json!({"deleted": 2})),
        "archived ones too"
    );
    assert!(listed(&server, "/api/conversations").await.is_empty());
    assert!(listed(&server, "/api/conversations?archived=true")
        .await
        .is_empty());
    assert_eq!(server.count("SELECT COUNT(*) FROM messages").await, 0);
    assert_eq!(server.count("SELECT COUNT(*) FROM agent_traces").await, 0);
    let (status, body) = server
        .send_json(Method::DELETE, "/api/conversations", None)
        .await;
    assert_eq!((status, body), (200, json!({"deleted": 0})));
    server.stop().await;
}
