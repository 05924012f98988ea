//! Branches (issue 36): regenerate an answer, edit a question, switch between the versions. Real
//! server, real socket, SQLite or PostgreSQL (`GLASSBOX_TEST_STORE=postgres`), and a fake
//! OpenAI-compatible model server that records every request, so the history a rerun sends the
//! model is checked as the model received it.

mod common;

use std::sync::{Arc, Mutex};

use axum::{
    extract::{Json, State},
    response::Response,
    routing::post,
    Router,
};
use common::*;
use reqwest::Method;
use serde_json::{json, Value};

const KEY_VARIABLE: &str = "GLASSBOX_TEST_BRANCHES_KEY";

/// Every request the fake model received, in order.
#[derive(Clone, Default)]
struct Fake(Arc<Mutex<Vec<Value>>>);

impl Fake {
    fn requests(&self) -> Vec<Value> {
        self.0.lock().expect("requests").clone()
    }

    /// The `n`th request's conversation (1-based): each message as `role: text`, the system
    /// prompt left out.
    fn conversation(&self, n: usize) -> Vec<String> {
        let request = &self.requests()[n - 1];
        request["messages"]
            .as_array()
            .expect("messages")
            .iter()
            .filter(|message| message["role"] != "system")
            .map(|message| {
                format!(
                    "{}: {}",
                    message["role"].as_str().unwrap_or(""),
                    text_of(&message["content"])
                )
            })
            .collect()
    }
}

fn text_of(content: &Value) -> String {
    match content {
        Value::String(text) => text.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|part| part["text"].as_str())
            .collect(),
        _ => String::new(),
    }
}

/// The fake model: answers "Answer N by MODEL", N counting its requests.
async fn completions(State(fake): State<Fake>, Json(body): Json<Value>) -> Response {
    let n = {
        let mut requests = fake.0.lock().expect("requests");
        requests.push(body.clone());
        requests.len()
    };
    let model = body["model"].as_str().unwrap_or("?");
    let frames = [
        json!({"choices": [{"index": 0, "delta": {"content": format!("Answer {n} by {model}")}}]}),
        json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
        json!({"choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": 5}}),
    ];
    chat_completions_stream(&frames)
}

/// A server with two fake models (`fake/one`, `fake/two`) and a slow scenario.
async fn start() -> (TestServer, Fake) {
    std::env::set_var(KEY_VARIABLE, "sk-test-branches-0123456789");
    let fake = Fake::default();
    let router = Router::new()
        .route("/v1/chat/completions", post(completions))
        .with_state(fake.clone());
    let base = serve_router(router).await;
    let dir = test_dir();
    let providers = dir.path().join("providers.json");
    let file = json!({"providers": [{"name": "fake", "kind": "openai_chat",
        "base_url": format!("{base}/v1"), "api_key_env": KEY_VARIABLE, "models": ["one", "two"]}]});
    std::fs::write(&providers, file.to_string()).expect("write providers");
    write_scenario(
        &dir,
        "slow",
        json!({"delta_chars": 2, "delta_interval_ms": 100, "steps": [{"text": "a slow answer that takes a while to stream"}]}),
    );
    let server =
        TestServer::start_with(dir, |config| config.providers_file = Some(providers)).await;
    (server, fake)
}

/// `POST /api/chat` with `body`, as JSON; waits for the run's end. The reply.
async fn run(server: &TestServer, body: Value) -> Value {
    let (status, started) = server.chat_json(body).await;
    assert_eq!(status, 201, "{started}");
    let run_id = started["run_id"].as_str().expect("run id");
    server.subscribe(run_id, None).await.collect().await;
    started
}

async fn conversation(server: &TestServer, id: &str) -> Value {
    let (status, body) = server.get_json(&format!("/api/conversations/{id}")).await;
    assert_eq!(status, 200, "{body}");
    body
}

/// Each message of a conversation as `role: text`.
fn texts(conversation: &Value) -> Vec<String> {
    conversation["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .map(|message| {
            let text: String = message["segments"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|segment| segment["type"] == "text")
                .filter_map(|segment| segment["text"].as_str())
                .collect();
            format!("{}: {text}", message["role"].as_str().unwrap_or(""))
        })
        .collect()
}

fn id_at(conversation: &Value, index: usize) -> String {
    conversation["messages"][index]["id"]
        .as_str()
        .expect("id")
        .to_owned()
}

async fn switch(server: &TestServer, id: &str, message_id: &str) -> Value {
    let path = format!("/api/conversations/{id}/branch");
    let (status, body) = server
        .post_json(&path, json!({"message_id": message_id}))
        .await;
    assert_eq!(status, 200, "{body}");
    body
}

/// Two turns, then a regenerate of the second answer with the other model.
async fn two_turns_and_a_regenerate(server: &TestServer, fake: &Fake) -> (String, Value) {
    let first = run(
        server,
        json!({"content": "first question", "model": "fake/one"}),
    )
    .await;
    let id = first["conversation_id"].as_str().expect("id").to_owned();
    run(
        server,
        json!({"content": "second question", "conversation_id": id}),
    )
    .await;
    let before = conversation(server, &id).await;
    let old_answer = id_at(&before, 3);
    let rerun = run(
        server,
        json!({"conversation_id": id, "regenerate": old_answer, "model": "fake/two"}),
    )
    .await;
    assert_eq!(
        rerun["user_message_id"], before["messages"][2]["id"],
        "the same question"
    );
    assert_eq!(
        fake.conversation(3),
        [
            "user: first question",
            "assistant: Answer 1 by one",
            "user: second question"
        ],
        "the model got the path up to the question, not the old answer"
    );
    (id, before)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_regenerate_keeps_the_old_answer_and_its_trace() {
    let (server, fake) = start().await;
    let (id, before) = two_turns_and_a_regenerate(&server, &fake).await;
    let after = conversation(&server, &id).await;
    assert_eq!(
        texts(&after),
        [
            "user: first question",
            "assistant: Answer 1 by one",
            "user: second question",
            "assistant: Answer 3 by two"
        ]
    );
    assert_eq!(
        after["model"], "fake/two",
        "the rerun's model is the conversation's now"
    );
    let old = &before["messages"][3];
    let siblings = &after["messages"][3]["siblings"];
    assert_eq!(
        (siblings["index"].clone(), siblings["count"].clone()),
        (json!(2), json!(2))
    );
    assert_eq!(siblings["previous_id"], old["id"]);
    assert_eq!(siblings["compare_trace_id"], old["trace_id"]);
    assert!(
        after["messages"][2].get("siblings").is_none(),
        "one version of the question"
    );
    // The old answer's trace is whole, and a share link of it reads it.
    let old_trace = old["trace_id"].as_str().expect("trace");
    let (status, trace) = server.get_json(&format!("/api/traces/{old_trace}")).await;
    assert_eq!((status, trace["status"].clone()), (200, json!("completed")));
    let (status, link) = server
        .post_json(&format!("/api/traces/{old_trace}/shares"), json!({}))
        .await;
    assert_eq!(status, 201, "{link}");
    let shared = format!(
        "/api/traces/{old_trace}?share={}",
        link["token"].as_str().expect("token")
    );
    let (status, trace) = server.get_json(&shared).await;
    assert_eq!(status, 200);
    assert!(trace.to_string().contains("Answer 2 by one"), "{trace}");
    // Back to the first answer, and forward again.
    let back = switch(&server, &id, old["id"].as_str().expect("id")).await;
    assert_eq!(texts(&back)[3], "assistant: Answer 2 by one");
    assert_eq!(back["messages"][3]["siblings"]["index"], 1);
    assert_eq!(
        conversation(&server, &id).await,
        back,
        "stored, as GET reads it"
    );
    let next = back["messages"][3]["siblings"]["next_id"]
        .as_str()
        .expect("next")
        .to_owned();
    assert_eq!(
        texts(&switch(&server, &id, &next).await)[3],
        "assistant: Answer 3 by two"
    );
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edit_branches_and_switching_back_restores_what_followed() {
    let (server, fake) = start().await;
    let (id, before) = two_turns_and_a_regenerate(&server, &fake).await;
    run(
        &server,
        json!({"content": "third question", "conversation_id": id}),
    )
    .await;
    let question = id_at(&before, 2);
    let edited = run(
        &server,
        json!({"conversation_id": id, "edit": question, "content": "second, edited"}),
    )
    .await;
    assert_ne!(edited["user_message_id"].as_str(), Some(question.as_str()));
    assert_eq!(
        fake.conversation(5),
        [
            "user: first question",
            "assistant: Answer 1 by one",
            "user: second, edited"
        ]
    );
    let after = conversation(&server, &id).await;
    assert_eq!(
        texts(&after)[2..],
        ["user: second, edited", "assistant: Answer 5 by two"]
    );
    assert_eq!(after["messages"][2]["siblings"]["index"], 2);
    assert!(after["messages"][3].get("siblings").is_none());
    // The page renders the same branch.
    let page = server
        .client
        .get(server.url(&format!("/c/{id}")))
        .send()
        .await
        .expect("page");
    let html = page.text().await.expect("html");
    assert!(html.contains("second, edited") && !html.contains("third question"));
    // Back to the first version of the question: its last answer and the turn after it.
    let back = switch(&server, &id, &question).await;
    assert_eq!(
        texts(&back)[2..],
        [
            "user: second question",
            "assistant: Answer 3 by two",
            "user: third question",
            "assistant: Answer 4 by two"
        ]
    );
    let html = server
        .client
        .get(server.url(&format!("/c/{id}")))
        .send()
        .await
        .expect("page")
        .text()
        .await
        .expect("html");
    assert!(html.contains("third question") && !html.contains("second, edited"));
    // The ThoughtFlow export follows the branch too.
    let (status, export) = server.get_json(&format!("/thoughtflow/{id}.json")).await;
    assert_eq!(status, 200);
    assert!(
        export.to_string().contains("Answer 4 by two") && !export.to_string().contains("Answer 5")
    );
    // A delete removes every version.
    assert_eq!(server.count("SELECT COUNT(*) FROM messages").await, 9);
    let (status, _) = server
        .send_json(Method::DELETE, &format!("/api/conversations/{id}"), None)
        .await;
    assert_eq!(status, 204);
    assert_eq!(server.count("SELECT COUNT(*) FROM messages").await, 0);
    assert_eq!(server.count("SELECT COUNT(*) FROM agent_traces").await, 0);
    server.stop().await;
}

/// `POST path` with `body`: its status and error code.
async fn refused(server: &TestServer, path: &str, body: Value) -> (u16, String) {
    let (status, answer) = match path {
        "/api/chat" => server.chat_json(body).await,
        _ => server.post_json(path, body).await,
    };
    (status, answer["code"].as_str().unwrap_or("").to_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_reruns_and_switches_get_clear_errors() {
    let (server, fake) = start().await;
    let (id, before) = two_turns_and_a_regenerate(&server, &fake).await;
    let (question, old_answer) = (id_at(&before, 2), id_at(&before, 3));
    let branch = format!("/api/conversations/{id}/branch");
    for (path, body, expected) in [
        (
            "/api/chat",
            json!({"conversation_id": id, "regenerate": question}),
            422,
        ),
        (
            "/api/chat",
            json!({"conversation_id": id, "edit": old_answer, "content": "x"}),
            422,
        ),
        (
            "/api/chat",
            json!({"conversation_id": id, "regenerate": old_answer, "content": "x"}),
            422,
        ),
        (
            "/api/chat",
            json!({"conversation_id": id, "regenerate": old_answer, "edit": question, "content": "x"}),
            422,
        ),
        ("/api/chat", json!({"regenerate": old_answer}), 422),
        (
            "/api/chat",
            json!({"conversation_id": id, "edit": question}),
            422,
        ),
        (
            "/api/chat",
            json!({"conversation_id": id, "regenerate": "msg_unknown"}),
            404,
        ),
        (
            "/api/chat",
            json!({"conversation_id": "nope", "regenerate": old_answer}),
            404,
        ),
        (
            "/api/chat",
            json!({"conversation_id": id, "regenerate": old_answer}),
            409,
        ),
        (branch.as_str(), json!({"message_id": "msg_unknown"}), 404),
        (branch.as_str(), json!({"message_id": 7}), 422),
        (branch.as_str(), json!({}), 422),
        (
            "/api/conversations/nope/branch",
            json!({"message_id": old_answer}),
            404,
        ),
    ] {
        let (status, code) = refused(&server, path, body.clone()).await;
        assert_eq!(status, expected, "{path} {body}: {code}");
        assert!(!code.is_empty(), "a JSON error for {body}");
    }
    assert_eq!(fake.requests().len(), 3, "nothing reached the model");
    assert_eq!(
        server.count("SELECT COUNT(*) FROM messages").await,
        5,
        "nothing stored"
    );
    // Another conversation's message is unknown here.
    let other = run(
        &server,
        json!({"content": "elsewhere", "model": "fake/one"}),
    )
    .await;
    let other_id = other["conversation_id"].as_str().expect("id");
    let (status, _) = refused(
        &server,
        "/api/chat",
        json!({"conversation_id": other_id, "regenerate": old_answer}),
    )
    .await;
    assert_eq!(status, 404);
    let (status, _) = refused(
        &server,
        &format!("/api/conversations/{other_id}/branch"),
        json!({"message_id": old_answer}),
    )
    .await;
    assert_eq!(status, 404);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_branches_while_a_run_is_going() {
    let (server, _) = start().await;
    let first = run(&server, json!({"content": "quick", "model": "fake/one"})).await;
    let id = first["conversation_id"].as_str().expect("id").to_owned();
    let (question, answer) = (
        first["user_message_id"].clone(),
        first["message_id"].clone(),
    );
    let (status, slow) = server
        .chat_json(json!({"content": "slowly", "conversation_id": id, "model": "scenario:slow"}))
        .await;
    assert_eq!(status, 201, "{slow}");
    let streaming = slow["message_id"].clone();
    for (path, body) in [
        (
            "/api/chat".to_owned(),
            json!({"conversation_id": id, "regenerate": answer}),
        ),
        (
            "/api/chat".to_owned(),
            json!({"conversation_id": id, "edit": question, "content": "changed"}),
        ),
        (
            "/api/chat".to_owned(),
            json!({"conversation_id": id, "regenerate": streaming}),
        ),
        (
            format!("/api/conversations/{id}/branch"),
            json!({"message_id": answer}),
        ),
    ] {
        let (status, code) = refused(&server, &path, body.clone()).await;
        assert_eq!(status, 409, "{body}: {code}");
    }
    let run_id = slow["run_id"].as_str().expect("run");
    let (status, _) = server
        .post_json(&format!("/api/runs/{run_id}/cancel"), json!({}))
        .await;
    assert_eq!(status, 200);
    server.subscribe(run_id, None).await.collect().await;
    let after = run(
        &server,
        json!({"conversation_id": id, "regenerate": streaming}),
    )
    .await;
    assert_eq!(
        after["user_message_id"], slow["user_message_id"],
        "a stopped answer regenerates"
    );
    server.stop().await;
}

/// The PostgreSQL branches migration on a database with conversations: each message follows the
/// one before it and is active, and one position holds one active message only.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_postgres_branches_migration_keeps_every_message_on_the_active_path() {
    use sqlx::Connection;
    if postgres_only("the PostgreSQL migration") {
        return;
    }
    let dir = test_dir();
    let (url, mut old) = common::migrations::old_postgres(dir.path(), 20261130000001).await;
    let now = "2026-11-22T10:00:00.000Z";
    sqlx::query("INSERT INTO conversations (id, owner_id, title, model, created_at, updated_at) VALUES ('conv_1', 'local', 'Old', 'demo', $1::timestamptz, $1::timestamptz)")
        .bind(now)
        .execute(&mut old)
        .await
        .expect("conversation");
    for position in 0..4_i64 {
        let role = if position % 2 == 0 {
            "user"
        } else {
            "assistant"
        };
        sqlx::query("INSERT INTO messages (id, conversation_id, position, role, status, body, created_at) VALUES ($1, 'conv_1', $2, $3, 'complete', $4::jsonb, $5::timestamptz)")
            .bind(format!("msg_{position}"))
            .bind(position)
            .bind(role)
            .bind(json!({"id": format!("msg_{position}"), "role": role, "status": "complete", "created_at": now}).to_string())
            .bind(now)
            .execute(&mut old)
            .await
            .expect("message");
    }
    old.close().await.expect("close");
    let store = glassbox::store::Store::connect(&url)
        .await
        .expect("upgrade");
    let pool = store.postgres().expect("PostgreSQL").pool();
    let rows: Vec<(Option<String>, bool)> =
        sqlx::query_as("SELECT parent_id, active FROM messages ORDER BY position")
            .fetch_all(pool)
            .await
            .expect("rows");
    let parents: Vec<Option<&str>> = rows.iter().map(|row| row.0.as_deref()).collect();
    assert_eq!(parents, [None, Some("msg_0"), Some("msg_1"), Some("msg_2")]);
    assert!(rows.iter().all(|row| row.1), "every message is active");
    let insert = |id: &str, active: bool| {
        format!("INSERT INTO messages (id, conversation_id, position, role, status, body, created_at, parent_id, active)
                 VALUES ('{id}', 'conv_1', 3, 'assistant', 'complete', '{{}}', now(), 'msg_2', {active})")
    };
    store
        .execute_as_writer(insert("msg_old", false))
        .await
        .expect("an inactive version at a taken position");
    assert!(
        store
            .execute_as_writer(insert("msg_new", true))
            .await
            .is_err(),
        "a second active message at one position is refused"
    );
}

/// `?page=newest` answers a switch with the conversation's newest page only (what the browser
/// asks: a long conversation whole is megabytes to decode), with how many messages are before it;
/// another value of `page` is 422.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_switch_answers_the_newest_page_when_asked() {
    let (server, _fake) = start().await;
    let first = run(&server, json!({"content": "turn 0", "model": "fake/one"})).await;
    let id = first["conversation_id"].as_str().expect("id").to_owned();
    for turn in 1..11 {
        run(
            &server,
            json!({"content": format!("turn {turn}"), "model": "fake/one", "conversation_id": id}),
        )
        .await;
    }
    let whole = conversation(&server, &id).await;
    let last = id_at(&whole, 21);
    run(
        &server,
        json!({"conversation_id": id, "regenerate": last, "model": "fake/one"}),
    )
    .await;
    let path = format!("/api/conversations/{id}/branch?page=newest");
    let (status, page) = server.post_json(&path, json!({"message_id": last})).await;
    assert_eq!(status, 200, "{page}");
    let shown = page["messages"].as_array().map_or(0, Vec::len);
    assert!(shown > 0 && shown <= 20, "{shown} messages");
    assert_eq!(page["earlier"].as_u64().unwrap_or(0) as usize + shown, 22);
    assert_eq!(page["messages"][shown - 1]["id"], json!(last));
    let whole = switch(&server, &id, &last).await;
    assert_eq!(whole["messages"].as_array().map_or(0, Vec::len), 22);
    let (status, error) = server
        .post_json(
            &format!("/api/conversations/{id}/branch?page=oldest"),
            json!({"message_id": last}),
        )
        .await;
    assert_eq!(
        (status, error["code"].as_str()),
        (422, Some("invalid_field")),
        "{error}"
    );
    server.stop().await;
}
