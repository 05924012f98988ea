//! Feedback (issue 36), on the store the tests run against (SQLite, or PostgreSQL with
//! `GLASSBOX_TEST_STORE=postgres`): a thumbs up or down with a comment on an answer and notes on
//! its steps are set, edited and removed; the conversation and trace reads carry them (a share
//! link's reader does not); `feedback:down` and a comment's words find them; the Inspector and
//! ThoughtFlow exports include them; bad input answers a clear JSON error. The two-user isolation
//! is in `accounts.rs`; a conversation's delete removing them is in `manage.rs`.

mod common;

use common::*;
use reqwest::Method;
use serde_json::{json, Value};

/// A finished run of reasoning, a tool call and an answer: (conversation, trace, message) ids.
async fn finished(server: &TestServer, content: &str) -> (String, String, String) {
    server.scenario(
        "work",
        json!({"delta_interval_ms": 0, "steps": [
            {"reasoning": ["thinking about pelicans"]},
            {"tool_calls": [{"name": "grep_search", "args": {"query": "TODO"}}]},
            {"text": "The answer mentions walrus tusks."}
        ]}),
    );
    let started = server.start_run("scenario:work", content).await;
    let run_id = started["run_id"].as_str().expect("run id");
    server.subscribe(run_id, None).await.collect().await;
    let field = |name: &str| started[name].as_str().expect(name).to_owned();
    (
        field("conversation_id"),
        field("trace_id"),
        field("message_id"),
    )
}

/// The (reasoning id, tool call id) of the message `message_id` of conversation `id`.
async fn steps_of(server: &TestServer, id: &str, message_id: &str) -> (String, String) {
    let message = server.message_of(id, message_id).await;
    let segments = message["segments"].as_array().expect("segments").clone();
    let of = |kind: &str, field: &str| {
        segments
            .iter()
            .find(|segment| segment["type"] == kind)
            .and_then(|segment| segment[field].as_str())
            .expect(kind)
            .to_owned()
    };
    (of("reasoning", "id"), of("tool_call", "call_id"))
}

async fn put(server: &TestServer, path: &str, body: Value) -> (u16, Value) {
    server.send_json(Method::PUT, path, Some(body)).await
}

/// The hits of a search that must succeed.
async fn hits(server: &TestServer, q: &str) -> Vec<Value> {
    let path = format!("/api/search?q={}", urlencode(q));
    let (status, body) = server.get_json(&path).await;
    assert_eq!(status, 200, "{q}: {body}");
    body["results"].as_array().expect("results").clone()
}

fn urlencode(text: &str) -> String {
    text.bytes()
        .map(|byte| match byte {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'_' | b'.' => {
                (byte as char).to_string()
            }
            other => format!("%{other:02X}"),
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn feedback_is_set_edited_read_searched_and_removed() {
    let server = TestServer::start().await;
    let (id, trace, message) = finished(&server, "a question about otters").await;
    let (reasoning, call) = steps_of(&server, &id, &message).await;
    let feedback = format!("/api/messages/{message}/feedback");
    let note = format!("/api/messages/{message}/steps/{call}/note");

    // Thumbs down with a comment; the answer is the stored feedback.
    let (status, body) = put(
        &server,
        &feedback,
        json!({"rating": "down", "comment": "  misses the narwhal  "}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        (&body["rating"], &body["comment"], &body["message_id"]),
        (
            &json!("down"),
            &json!("misses the narwhal"),
            &json!(message)
        )
    );
    assert!(body.get("step_id").is_none(), "{body}");
    // A note on the tool call and one on the reasoning.
    let (status, body) = put(&server, &note, json!({"comment": "wrong directory"})).await;
    assert_eq!((status, &body["step_id"]), (200, &json!(call)), "{body}");
    let reasoning_note = format!("/api/messages/{message}/steps/{reasoning}/note");
    let (status, _) = put(&server, &reasoning_note, json!({"comment": "good plan"})).await;
    assert_eq!(status, 200);

    // The conversation and the trace reads carry all three.
    let (_, conversation) = server.get_json(&format!("/api/conversations/{id}")).await;
    assert_eq!(conversation["feedback"].as_array().map(Vec::len), Some(3));
    let (_, read) = server.get_json(&format!("/api/traces/{trace}")).await;
    let items = read["feedback"].as_array().expect("the trace's feedback");
    assert_eq!(items.len(), 3, "{items:?}");
    assert!(items
        .iter()
        .any(|item| item["rating"] == "down" && item["step_id"].is_null()));

    // Search: the filter, the comment's words, and both together.
    let found = hits(&server, "feedback:down").await;
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(
        (&found[0]["kind"], &found[0]["message_id"]),
        (&json!("feedback"), &json!(message))
    );
    assert_eq!(hits(&server, "narwhal").await.len(), 1);
    assert_eq!(hits(&server, "feedback:down narwhal").await.len(), 1);
    assert!(hits(&server, "feedback:up").await.is_empty());
    let notes = hits(&server, "feedback:note directory").await;
    assert_eq!((notes.len(), &notes[0]["step"]), (1, &json!(call)));

    // Edit: thumbs up, a new comment; the old words leave the index.
    let (status, body) = put(
        &server,
        &feedback,
        json!({"rating": "up", "comment": "fine after all"}),
    )
    .await;
    assert_eq!((status, &body["rating"]), (200, &json!("up")), "{body}");
    assert!(hits(&server, "feedback:down").await.is_empty());
    assert!(hits(&server, "narwhal").await.is_empty());
    assert_eq!(hits(&server, "feedback:up").await.len(), 1);
    let (status, _) = put(&server, &note, json!({"comment": "right directory"})).await;
    assert_eq!(status, 200);
    assert_eq!(hits(&server, "\"right directory\"").await.len(), 1);

    // Remove: gone from the reads, the index and the table.
    for path in [&feedback, &note, &reasoning_note] {
        let (status, body) = server.send_json(Method::DELETE, path, None).await;
        assert_eq!((status, &body), (204, &Value::Null), "{path}");
        let (status, body) = server.send_json(Method::DELETE, path, None).await;
        assert_eq!((status, body["code"].as_str()), (404, Some("not_found")));
    }
    let (_, conversation) = server.get_json(&format!("/api/conversations/{id}")).await;
    assert!(conversation.get("feedback").is_none(), "{conversation}");
    assert!(hits(&server, "feedback:up").await.is_empty());
    assert!(hits(&server, "directory").await.is_empty());
    let indexed = "SELECT COUNT(*) FROM search_docs WHERE kind = 'feedback'";
    assert_eq!(server.count(indexed).await, 0);
    assert_eq!(server.count("SELECT COUNT(*) FROM feedback").await, 0);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exports_include_feedback_and_a_share_link_shows_none() {
    let server = TestServer::start().await;
    let (id, trace, message) = finished(&server, "a question about seals").await;
    let (reasoning, call) = steps_of(&server, &id, &message).await;
    let feedback = format!("/api/messages/{message}/feedback");
    let (status, _) = put(
        &server,
        &feedback,
        json!({"rating": "down", "comment": "too slow"}),
    )
    .await;
    assert_eq!(status, 200);
    for (step, comment) in [(&call, "bad query"), (&reasoning, "nice")] {
        let path = format!("/api/messages/{message}/steps/{step}/note");
        assert_eq!(
            put(&server, &path, json!({"comment": comment})).await.0,
            200
        );
    }

    // Inspector: the answer's on the last turn (none recorded by the scenario model here, so
    // only the call's note may be checked), the call's on its entry.
    let inspector = server.inspector(&trace).await;
    let entries = inspector.as_array().expect("entries");
    let tool = entries
        .iter()
        .find(|entry| entry["type"] == "tool_call")
        .expect("the tool call's entry");
    assert_eq!(tool["feedback"]["comment"], "bad query", "{tool}");
    if let Some(turn) = entries
        .iter()
        .rev()
        .find(|entry| entry["type"] == "llm_request")
    {
        assert_eq!(turn["feedback"]["rating"], "down", "{turn}");
    }

    // ThoughtFlow: the run's and the steps'.
    let (status, flow) = server.get_json(&format!("/thoughtflow/{id}.json")).await;
    assert_eq!(status, 200, "{flow}");
    let run = &flow["runs"][0];
    assert_eq!(
        (&run["feedback"]["rating"], &run["feedback"]["comment"]),
        (&json!("down"), &json!("too slow"))
    );
    let steps = run["steps"].as_array().expect("steps");
    let noted: Vec<(&Value, &Value)> = steps
        .iter()
        .filter(|step| step.get("feedback").is_some())
        .map(|step| (&step["label"], &step["feedback"]["comment"]))
        .collect();
    assert_eq!(
        noted,
        [
            (&json!("generic"), &json!("nice")),
            (&json!("tool_call"), &json!("bad query"))
        ]
    );

    // A share link's reader sees the run, not its owner's feedback.
    let (status, share) = server
        .post_json(&format!("/api/traces/{trace}/shares"), json!({}))
        .await;
    assert_eq!(status, 201, "{share}");
    let token = share["token"].as_str().expect("token");
    let (status, shared) = server
        .get_json(&format!("/api/traces/{trace}?share={token}"))
        .await;
    assert_eq!(status, 200, "{shared}");
    assert!(shared.get("feedback").is_none(), "{shared}");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_feedback_answers_a_clear_json_error() {
    let server = TestServer::start().await;
    let (id, _, message) = finished(&server, "a question about puffins").await;
    let feedback = format!("/api/messages/{message}/feedback");
    let expect = |(status, body): (u16, Value), want: (u16, &str)| {
        assert_eq!(
            (status, body["code"].as_str()),
            (want.0, Some(want.1)),
            "{body}"
        );
        assert!(body["message"].as_str().is_some_and(|m| !m.is_empty()));
    };
    // A rating other than up or down, an unknown field, nothing at all, a body that is not JSON.
    expect(
        put(&server, &feedback, json!({"rating": "meh"})).await,
        (422, "invalid_field"),
    );
    expect(
        put(&server, &feedback, json!({"rating": "up", "stars": 5})).await,
        (422, "invalid_field"),
    );
    expect(
        put(&server, &feedback, json!({"rating": null, "comment": "  "})).await,
        (422, "invalid_field"),
    );
    let response = server
        .client
        .put(server.url(&feedback))
        .header("content-type", "application/json")
        .body("{not json")
        .send()
        .await
        .expect("PUT");
    let status = response.status().as_u16();
    expect(
        (status, response.json().await.expect("JSON")),
        (400, "malformed_body"),
    );
    // A 100 KB comment, and one character over the limit.
    let long = "x".repeat(100 * 1024);
    expect(
        put(&server, &feedback, json!({"rating": "up", "comment": long})).await,
        (413, "payload_too_large"),
    );
    let over = "é".repeat(4_001);
    expect(
        put(&server, &feedback, json!({"comment": over})).await,
        (413, "payload_too_large"),
    );
    assert_eq!(
        put(&server, &feedback, json!({"comment": "é".repeat(4_000)}))
            .await
            .0,
        200
    );
    // An unknown message, an unknown step, a question, an empty note.
    expect(
        put(
            &server,
            "/api/messages/nope/feedback",
            json!({"rating": "up"}),
        )
        .await,
        (404, "not_found"),
    );
    let unknown_step = format!("/api/messages/{message}/steps/nope/note");
    expect(
        put(&server, &unknown_step, json!({"comment": "hi"})).await,
        (404, "not_found"),
    );
    let (_, conversation) = server.get_json(&format!("/api/conversations/{id}")).await;
    let question = conversation["messages"][0]["id"]
        .as_str()
        .expect("question");
    expect(
        put(
            &server,
            &format!("/api/messages/{question}/feedback"),
            json!({"rating": "up"}),
        )
        .await,
        (422, "invalid_field"),
    );
    let (reasoning, _) = steps_of(&server, &id, &message).await;
    let note = format!("/api/messages/{message}/steps/{reasoning}/note");
    expect(
        put(&server, &note, json!({"comment": ""})).await,
        (422, "invalid_field"),
    );
    expect(
        server.get_json("/api/search?q=feedback:sideways").await,
        (422, "invalid_field"),
    );

    // A message whose run is going: 409, and nothing stored.
    server.scenario(
        "slow",
        json!({"delta_chars": 1, "delta_interval_ms": 100, "steps": [{"text": "a slow answer that takes a while"}]}),
    );
    let started = server.start_run("scenario:slow", "go slowly").await;
    let running = started["message_id"].as_str().expect("message");
    expect(
        put(
            &server,
            &format!("/api/messages/{running}/feedback"),
            json!({"rating": "down"}),
        )
        .await,
        (409, "run_in_progress"),
    );
    let stored = format!("SELECT COUNT(*) FROM feedback WHERE message_id = '{running}'");
    assert_eq!(server.count(&stored).await, 0);
    let run_id = started["run_id"].as_str().expect("run");
    let (status, _) = server
        .post_json(&format!("/api/runs/{run_id}/cancel"), json!({}))
        .await;
    assert!(status < 300, "{status}");
    server.stop().await;
}
