//! ThoughtFlow and inspector exports over HTTP, and owner checks on every export.

mod common;

use common::*;
use serde_json::{json, Value};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_conversation_exports_as_a_thoughtflow_session_with_typed_steps_and_edges() {
    let server = TestServer::start().await;
    server.scenario("search", json!({"delta_interval_ms": 0, "steps": [
        {"reasoning": ["Search first."]},
        {"tool_calls": [{"name": "grep_search", "args": {"query": "TODO"}}, {"name": "read_file", "args": {"path": "missing.txt"}}]},
        {"text": "Found it."}
    ]}));
    let first = server
        .start_run(
            "scenario:search",
            "Find the TODO \"quotes\" {braces}\nnew line ünïcode",
        )
        .await;
    server
        .subscribe(first["run_id"].as_str().expect("run"), None)
        .await
        .collect()
        .await;
    let conversation_id = first["conversation_id"]
        .as_str()
        .expect("conversation")
        .to_owned();
    let (status, _) = server.post_json("/api/chat", json!({"conversation_id": conversation_id, "content": "Again", "model": "scenario:search"})).await;
    assert_eq!(status, 200);
    // The second run streams as the response; wait for it through the conversation.
    for _ in 0..100 {
        let (_, c) = server
            .get_json(&format!("/api/conversations/{conversation_id}"))
            .await;
        if c["active_run"].is_null() && c["messages"].as_array().map(Vec::len) == Some(4) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }

    let (status, flow) = server
        .get_json(&format!("/thoughtflow/{conversation_id}.json"))
        .await;
    assert_eq!(status, 200);
    assert_eq!(flow["session_id"], conversation_id.as_str());
    let runs = flow["runs"].as_array().expect("runs");
    assert_eq!(runs.len(), 2, "one run per user turn");
    let steps = runs[0]["steps"].as_array().expect("steps");
    let labels: Vec<&str> = steps.iter().filter_map(|s| s["label"].as_str()).collect();
    assert_eq!(
        labels,
        [
            "user_message",
            "generic",
            "tool_call",
            "tool_output",
            "tool_call",
            "tool_error",
            "assistant_message"
        ]
    );
    assert_eq!(runs[0]["status"], "completed");
    let id = |i: usize| steps[i]["step_id"].as_str().unwrap_or_default().to_owned();
    assert_eq!(
        steps[3]["depends_on"],
        id(2),
        "a tool output depends on its call"
    );
    assert_eq!(steps[5]["depends_on"], id(4));
    assert_eq!(
        steps[6]["depends_on"],
        json!([id(0), id(3), id(5)]),
        "the answer depends on the question and the tool outputs"
    );
    assert!(steps[0]["payload_started"]["text"]
        .as_str()
        .is_some_and(|t| t.contains("{braces}")));

    let response = server
        .client
        .get(server.url(&format!("/thoughtflow/{conversation_id}.d2")))
        .send()
        .await
        .expect("GET d2");
    assert_eq!(response.status(), 200);
    let d2 = response.text().await.expect("text");
    assert!(
        d2.contains("run1: \"Run 1 · completed") && d2.contains("run2: "),
        "{d2}"
    );
    assert!(d2.contains("r1_s1 -> r1_s2"), "{d2}");
    assert!(
        d2.contains("\\\"quotes\\\" {braces}\\nnew line")
            || d2.contains("\\\"quotes\\\" {braces} new line"),
        "labels are escaped: {d2}"
    );
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exports_of_other_owners_and_unknown_ids_are_not_found() {
    let server = TestServer::start().await;
    server.scenario(
        "short",
        json!({"delta_interval_ms": 0, "steps": [{"text": "mine"}]}),
    );
    let started = server.start_run("scenario:short", "hello").await;
    server
        .subscribe(started["run_id"].as_str().expect("run"), None)
        .await
        .collect()
        .await;
    let conversation_id = started["conversation_id"]
        .as_str()
        .expect("conversation")
        .to_owned();
    let trace_id = started["trace_id"].as_str().expect("trace").to_owned();
    let paths = [
        format!("/api/traces/{trace_id}/inspector.json"),
        format!("/api/traces/{trace_id}/model-turns"),
        format!("/thoughtflow/{conversation_id}.json"),
        format!("/thoughtflow/{conversation_id}.d2"),
    ];
    for path in &paths {
        let (status, _) = server.get_json(path).await;
        assert_eq!(status, 200, "{path} for its owner");
    }
    let (_, inspector) = server.get_json(&paths[0]).await;
    assert_eq!(
        inspector,
        Value::Array(Vec::new()),
        "no model turns and no tools: an empty list"
    );

    server
        .store
        .execute_as_writer(format!(
            "UPDATE conversations SET owner_id = 'someone-else' WHERE id = '{conversation_id}'"
        ))
        .await
        .expect("re-own");
    for path in paths.iter().chain([
        &"/thoughtflow/nope.json".to_owned(),
        &"/thoughtflow/x.svg".to_owned(),
        &"/api/traces/nope/inspector.json".to_owned(),
    ]) {
        let (status, body) = server.get_json(path).await;
        assert_eq!(
            (status, body["code"].as_str()),
            (404, Some("not_found")),
            "{path}"
        );
    }
    server.stop().await;
}
