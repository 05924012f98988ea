//! Comparing two runs step by step (issue 36, part 2): two real runs of a fake OpenAI-compatible
//! model server (the real streaming wire format) with different tool calls, compared through
//! `GET /api/compare/{a}/{b}`, the `compare` and `compare-choices` server functions and the
//! server-rendered page `/compare/{a}/{b}`; and the bad requests: a run with itself (400), a
//! missing or deleted one (404), never a 500. Another user's runs are in `accounts.rs`.

mod common;

use app::protocol::EventKind;
use axum::{body::Body, http::StatusCode, response::Response, routing::post, Json, Router};
use common::*;
use serde_json::{json, Value};

/// One frame of a Chat Completions stream.
fn frame(delta: Value, finish: Option<&str>) -> String {
    let body = json!({"id": "c", "object": "chat.completion.chunk",
                      "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
    format!("data: {body}\n\n")
}

/// `fake/one` reads a file, `fake/two` reads it and lists the folder (two calls in one turn);
/// each then answers. Every turn reports its tokens.
async fn completions(Json(body): Json<Value>) -> Response {
    let two = body["model"] == "two";
    let answered = body["messages"]
        .as_array()
        .is_some_and(|messages| messages.iter().any(|m| m["role"] == "tool"));
    let call = |index: u64, name: &str, args: &str| {
        frame(
            json!({"tool_calls": [{"index": index, "id": format!("call_{index}"), "type": "function",
                                   "function": {"name": name, "arguments": args}}]}),
            None,
        )
    };
    let mut frames = match (answered, two) {
        (false, _) => {
            let mut calls = vec![call(0, "read_file", r#"{"path": "notes.md"}"#)];
            if two {
                calls.push(call(1, "list_dir", r#"{"path": "."}"#));
            }
            calls.push(frame(json!({}), Some("tool_calls")));
            calls
        }
        (true, false) => vec![frame(json!({"content": "The notes have one TODO."}), None)],
        (true, true) => vec![frame(
            json!({"content": "The notes have two TODO items."}),
            None,
        )],
    };
    if answered {
        frames.push(frame(json!({}), Some("stop")));
    }
    let usage = json!({"id": "c", "object": "chat.completion.chunk", "choices": [],
                       "usage": {"prompt_tokens": 50, "completion_tokens": if two { 12 } else { 7 }}});
    frames.push(format!("data: {usage}\n\ndata: [DONE]\n\n"));
    Response::builder()
        .header("content-type", "text/event-stream")
        .body(Body::from(frames.concat()))
        .unwrap_or_default()
}

async fn start() -> TestServer {
    let router = Router::new().route("/v1/chat/completions", post(completions));
    let base = format!("{}/v1", serve_router(router).await);
    let dir = test_dir();
    let providers = dir.path().join("providers.json");
    let file = json!({"providers": [{"name": "fake", "kind": "openai_chat", "base_url": base,
                                     "models": ["one", "two"]}]});
    std::fs::write(&providers, file.to_string()).expect("write providers file");
    TestServer::start_with(dir, |config| config.providers_file = Some(providers)).await
}

/// Runs `model` on `question` to its end; its trace id and conversation id.
async fn run(server: &TestServer, model: &str, question: &str) -> (String, String) {
    let events = server.chat_stream(model, question).await.collect().await;
    assert_invariants(&events);
    assert!(
        matches!(
            events.last().map(|e| &e.kind),
            Some(EventKind::MessageFinal { .. })
        ),
        "{model} ended: {events:?}"
    );
    match &events[0].kind {
        EventKind::MessageStarted {
            trace_id,
            conversation_id,
            ..
        } => (trace_id.clone(), conversation_id.clone()),
        other => panic!("the first event: {other:?}"),
    }
}

/// Each row as (change, a's tool or kind, b's tool or kind).
fn rows(comparison: &Value) -> Vec<(String, String, String)> {
    let name = |side: &str, index: &Value| {
        index.as_u64().map_or(String::new(), |i| {
            let step = &comparison[side]["steps"][i as usize];
            match step["kind"].as_str() {
                Some("tool_call") => step["name"].as_str().unwrap_or_default().to_owned(),
                other => other.unwrap_or_default().to_owned(),
            }
        })
    };
    let rows = comparison["rows"].as_array().cloned().unwrap_or_default();
    rows.iter()
        .map(|row| {
            let change = row["change"].as_str().unwrap_or_default().to_owned();
            (change, name("a", &row["a"]), name("b", &row["b"]))
        })
        .collect()
}

fn owned(rows: &[(&str, &str, &str)]) -> Vec<(String, String, String)> {
    let owned = |(c, a, b): &(&str, &str, &str)| (c.to_string(), a.to_string(), b.to_string());
    rows.iter().map(owned).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_runs_with_different_tool_calls_compare_step_by_step() {
    let server = start().await;
    let (a, _) = run(&server, "fake/one", "How many TODOs are in the notes?").await;
    let (b, _) = run(
        &server,
        "fake/two",
        "How many TODOs, and what else is here?",
    )
    .await;
    let (status, comparison) = server.get_json(&format!("/api/compare/{a}/{b}")).await;
    assert_eq!(status, 200, "{comparison}");
    assert_eq!(
        rows(&comparison),
        owned(&[
            ("same", "read_file", "read_file"),
            ("inserted", "", "list_dir"),
            ("changed", "answer", "answer"),
        ])
    );
    assert_eq!(
        comparison["a"]["question"],
        "How many TODOs are in the notes?"
    );
    assert_eq!(comparison["b"]["model"], "fake/two");
    let totals = |side: &str| {
        let t = &comparison[side]["totals"];
        (
            t["tool_calls"].clone(),
            t["errors"].clone(),
            t["output_tokens"].clone(),
        )
    };
    assert_eq!(totals("a"), (json!(1), json!(0), json!(14)));
    assert_eq!(totals("b"), (json!(2), json!(0), json!(24)));
    // The first turn's tokens are on its first step; the answer's on the answer.
    assert_eq!(comparison["b"]["steps"][0]["tokens"], 12);
    assert_eq!(comparison["b"]["steps"][2]["tokens"], 12);
    let diff = comparison["answer_diff"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let ops: Vec<(&str, &str)> = diff
        .iter()
        .map(|c| {
            (
                c["op"].as_str().unwrap_or(""),
                c["text"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(ops[0], ("equal", "The notes have "), "{ops:?}");
    assert_eq!(
        &ops[1..3],
        &[("delete", "one"), ("insert", "two TODO")],
        "{ops:?}"
    );
    // The other way round, the extra call is one A does not make.
    let (_, reversed) = server.get_json(&format!("/api/compare/{b}/{a}")).await;
    assert_eq!(
        rows(&reversed)[1],
        ("deleted".into(), "list_dir".into(), String::new())
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_with_itself_is_400_and_a_missing_or_deleted_one_404_never_500() {
    let server = start().await;
    let (a, _) = run(&server, "fake/one", "first question").await;
    let (b, conversation) = run(&server, "fake/two", "second question").await;
    let (status, body) = server.get_json(&format!("/api/compare/{a}/{a}")).await;
    assert_eq!(
        (status, &body["code"]),
        (400, &json!("same_trace")),
        "{body}"
    );
    assert!(body["message"]
        .as_str()
        .is_some_and(|m| m.contains("itself")));
    let (status, body) = server
        .get_json(&format!("/api/compare/{a}/no-such-trace"))
        .await;
    assert_eq!(
        (status, &body["code"]),
        (404, &json!("not_found")),
        "{body}"
    );
    let (status, html) = server_page(&server.base, &format!("/compare/{a}/{a}")).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(html.contains("cannot be compared with itself"), "{html}");
    let path = format!("/api/conversations/{conversation}");
    let deleted = server
        .client
        .delete(server.url(&path))
        .send()
        .await
        .expect("DELETE");
    assert!(deleted.status().is_success(), "{}", deleted.status());
    let (status, body) = server.get_json(&format!("/api/compare/{a}/{b}")).await;
    assert_eq!(
        (status, &body["code"]),
        (404, &json!("not_found")),
        "{body}"
    );
    let (status, html) = server_page(&server.base, &format!("/compare/{a}/{b}")).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert!(html.contains("does not exist") && !html.contains("two TODO items"));
}

async fn server_page(base: &str, path: &str) -> (StatusCode, String) {
    let response = reqwest::Client::new()
        .get(format!("{base}{path}"))
        .header("accept", "text/html")
        .send()
        .await
        .expect("GET page");
    let status = response.status();
    (status, response.text().await.unwrap_or_default())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_compare_page_renders_on_the_server_and_lists_what_to_compare_with() {
    let server = start().await;
    let (a, _) = run(&server, "fake/one", "How many TODOs are in the notes?").await;
    let (b, _) = run(&server, "fake/two", "And what else is in the folder?").await;
    let (status, html) = server_page(&server.base, &format!("/compare/{a}/{b}")).await;
    assert_eq!(status, StatusCode::OK);
    for expected in [
        "Compare two runs",
        "How many TODOs are in the notes?",
        "<del>one</del>",
        "<ins>two TODO</ins>",
        "+ only in B",
        "list_dir",
        "Timeline of run B",
    ] {
        assert!(
            html.contains(expected),
            "the page lacks {expected:?}: {html}"
        );
    }
    // "Compare with…" on the trace page lists the other run, with its question.
    let choices = server
        .client
        .post(server.url("/api/fn/compare-choices"))
        .form(&[("trace_id", a.as_str())])
        .send()
        .await
        .expect("compare-choices");
    assert_eq!(choices.status(), 200);
    let choices: Value = choices.json().await.expect("JSON");
    assert_eq!(choices.as_array().map(Vec::len), Some(1), "{choices}");
    assert_eq!(choices[0]["trace_id"], json!(b));
    assert_eq!(choices[0]["question"], "And what else is in the folder?");
    let (status, html) = server_page(&server.base, &format!("/t/{a}")).await;
    assert_eq!(status, StatusCode::OK);
    assert!(html.contains("Compare with…"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_run_is_compared_as_far_as_it_is_stored() {
    let server = start().await;
    server.scenario(
        "long",
        json!({"delta_interval_ms": 0, "steps": [
            {"text": "Partial."},
            {"tool_calls": [{"name": "sleep", "args": {"seconds": 30}}]}
        ]}),
    );
    let (a, _) = run(&server, "fake/one", "How many TODOs are in the notes?").await;
    let started = server.start_run("scenario:long", "wait").await;
    let b = started["trace_id"].as_str().expect("trace id").to_owned();
    let (status, comparison) = server.get_json(&format!("/api/compare/{a}/{b}")).await;
    assert_eq!(status, 200, "{comparison}");
    assert_eq!(comparison["b"]["status"], "running");
    assert_eq!(comparison["b"]["totals"]["duration_ms"], Value::Null);
    let run_id = started["run_id"].as_str().expect("run id");
    let (status, _) = server
        .post_json(&format!("/api/runs/{run_id}/cancel"), json!({}))
        .await;
    assert_eq!(status, 200);
}

/// The owner's feedback shows in the comparison (issue 36): the thumbs and comment on a run's
/// answer on its side, a note on the step it was left on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn feedback_shows_in_the_comparison() {
    let server = start().await;
    let (a, conversation) = run(&server, "fake/one", "How many TODOs are in the notes?").await;
    let (b, _) = run(&server, "fake/two", "And what else is here?").await;
    let (_, stored) = server
        .get_json(&format!("/api/conversations/{conversation}"))
        .await;
    let answer = &stored["messages"][1];
    let message = answer["id"].as_str().expect("answer id");
    let call = answer["segments"]
        .as_array()
        .and_then(|segments| segments.iter().find(|s| s["type"] == "tool_call"))
        .and_then(|call| call["call_id"].as_str())
        .expect("a tool call");
    let feedback = json!({"rating": "down", "comment": "missed the list"});
    let (status, body) = server
        .send_json(
            reqwest::Method::PUT,
            &format!("/api/messages/{message}/feedback"),
            Some(feedback),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let note = json!({"comment": "should have listed the folder"});
    let path = format!("/api/messages/{message}/steps/{call}/note");
    let (status, body) = server
        .send_json(reqwest::Method::PUT, &path, Some(note))
        .await;
    assert_eq!(status, 200, "{body}");

    let (status, comparison) = server.get_json(&format!("/api/compare/{a}/{b}")).await;
    assert_eq!(status, 200, "{comparison}");
    let side = &comparison["a"]["feedback"];
    assert_eq!(
        (&side["rating"], &side["comment"]),
        (&json!("down"), &json!("missed the list"))
    );
    assert_eq!(
        comparison["a"]["steps"][0]["note"],
        "should have listed the folder"
    );
    assert!(comparison["b"].get("feedback").is_none(), "{comparison}");
    let (status, page) = server_page(&server.base, &format!("/compare/{a}/{b}")).await;
    assert_eq!(status, StatusCode::OK);
    assert!(page.contains("Rated down: missed the list"), "{page}");
    assert!(page.contains("should have listed the folder"), "{page}");
}
