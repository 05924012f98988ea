//! A model answer of pathologically nested markdown must not take the server down (issue 30,
//! item 1). The answer is stored, so every page that draws it (the conversation, the trace, a
//! share link anyone may open) is drawn on a worker thread; with recursion as deep as the nesting,
//! a 2 KB answer overflowed that thread's stack and aborted the whole process. The real binary
//! serves these pages here, and must still answer `/healthz` afterwards.

mod common;

use std::time::Duration;

use common::*;
use serde_json::{json, Value};

/// Answers that nest as deep as their length allows, each kind of nesting on its own.
fn hostile_answers() -> Vec<(&'static str, String)> {
    vec![
        ("quotes", format!("{}deep", ">".repeat(2_000))),
        ("spaced-quotes", format!("{}deep", "> ".repeat(2_000))),
        ("lists", format!("{}deep", "- ".repeat(1_000))),
        ("quoted-lists", format!("{}deep", "> - ".repeat(1_000))),
        ("stars", "*".repeat(10_000)),
        (
            "emphasis",
            format!("{}deep{}", "*".repeat(5_000), "*".repeat(5_000)),
        ),
        (
            "links",
            format!("{}deep{}", "[".repeat(2_000), "](u)".repeat(2_000)),
        ),
        (
            "ordered",
            (0..1_000).map(|_| "1. ").collect::<String>() + "deep",
        ),
    ]
}

async fn send(request: reqwest::RequestBuilder) -> (u16, String) {
    let response = tokio::time::timeout(Duration::from_secs(30), request.send())
        .await
        .expect("the server answers in time")
        .expect("the server is still there");
    let status = response.status().as_u16();
    (status, response.text().await.unwrap_or_default())
}

/// Plays `name` to its end and answers its conversation and trace ids.
async fn play(client: &reqwest::Client, base: &str, name: &str) -> (String, String) {
    let (status, body) = send(
        client
            .post(format!("{base}/api/chat"))
            .header("accept", "application/json")
            .json(&json!({ "content": "go", "model": format!("scenario:{name}") })),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    let started: Value = serde_json::from_str(&body).expect("JSON");
    let field = |name: &str| started[name].as_str().expect("id").to_owned();
    let response = client
        .get(format!("{base}/api/runs/{}/events", field("run_id")))
        .send()
        .await
        .expect("subscribe");
    let events = tokio::time::timeout(Duration::from_secs(30), SseStream::new(response).collect())
        .await
        .expect("the run ends");
    assert!(
        events.last().is_some_and(|e| e.kind.is_terminal()),
        "{name}: the run ended"
    );
    (field("conversation_id"), field("trace_id"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deeply_nested_markdown_in_a_stored_answer_does_not_take_the_server_down() {
    let dir = test_dir();
    let answers = hostile_answers();
    for (name, text) in &answers {
        write_scenario(
            &dir,
            name,
            json!({ "delta_chars": 4096, "delta_interval_ms": 0, "steps": [{ "text": text }] }),
        );
    }
    let server = launch(&dir, &[]).await;
    let client = reqwest::Client::new();
    let base = server.base.as_str();
    for (name, text) in &answers {
        assert!(text.len() <= 12_000, "{name}: a small answer");
        let (conversation, trace) = play(&client, base, name).await;
        let (status, body) = send(
            client
                .post(format!("{base}/api/traces/{trace}/shares"))
                .header("content-type", "application/json")
                .body("{}"),
        )
        .await;
        assert_eq!(status, 201, "{name}: share: {body}");
        let share: Value = serde_json::from_str(&body).expect("JSON");
        let share_path = share["path"].as_str().expect("share path").to_owned();
        for path in [
            format!("/c/{conversation}"),
            format!("/t/{trace}"),
            share_path,
        ] {
            let request = client
                .get(format!("{base}{path}"))
                .header("accept", "text/html");
            let (status, body) = send(request).await;
            assert_eq!(status, 200, "{name}: {path}");
            assert!(body.contains("</html>"), "{name}: {path} is a whole page");
            assert!(
                body.contains("deep") || *name == "stars",
                "{name}: {path} shows the text"
            );
            let (status, _) = send(client.get(format!("{base}/healthz"))).await;
            assert_eq!(status, 200, "{name}: the server is up after {path}");
        }
    }
}
