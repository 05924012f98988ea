//! Many requests at once against one server, over a real socket: parallel sends never fail for
//! the database's lock, and a conversation never gets two runs.

mod common;

use common::*;
use futures::future::join_all;
use serde_json::{json, Value};

/// Sends a message with `Accept: application/json`; the status and the reply.
async fn send(server: &TestServer, conversation_id: &str, model: &str) -> (u16, Value) {
    server
        .chat_json(json!({"conversation_id": conversation_id, "content": "again", "model": model}))
        .await
}

async fn wait_for_end(server: &TestServer, reply: &Value) {
    let run_id = reply["run_id"].as_str().expect("run id");
    server.subscribe(run_id, None).await.collect().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parallel_sends_to_existing_conversations_all_start() {
    let server = TestServer::start().await;
    server.scenario(
        "short",
        json!({"delta_interval_ms": 0, "steps": [{"text": "ok"}]}),
    );
    let mut conversations = Vec::new();
    for _ in 0..16 {
        let started = server.start_run("scenario:short", "first").await;
        wait_for_end(&server, &started).await;
        conversations.push(started["conversation_id"].as_str().expect("id").to_owned());
    }
    for trial in 0..3 {
        let replies = join_all(
            conversations
                .iter()
                .map(|id| send(&server, id, "scenario:short")),
        )
        .await;
        let failed: Vec<_> = replies
            .iter()
            .filter(|(status, _)| *status != 201)
            .collect();
        assert!(failed.is_empty(), "trial {trial}: {failed:?}");
        for (_, reply) in &replies {
            wait_for_end(&server, reply).await;
        }
    }
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parallel_sends_to_one_conversation_start_exactly_one_run() {
    let server = TestServer::start().await;
    server.scenario(
        "slow",
        json!({"delta_interval_ms": 0, "steps": [
            {"text": "working"},
            {"tool_calls": [{"name": "sleep", "args": {"seconds": 0.2}}]}
        ]}),
    );
    let started = server.start_run("scenario:slow", "first").await;
    wait_for_end(&server, &started).await;
    let id = started["conversation_id"].as_str().expect("id").to_owned();
    for trial in 0..20 {
        let replies = join_all((0..8).map(|_| send(&server, &id, "scenario:slow"))).await;
        let mut statuses: Vec<u16> = replies.iter().map(|(status, _)| *status).collect();
        statuses.sort_unstable();
        assert_eq!(
            statuses,
            [201, 409, 409, 409, 409, 409, 409, 409],
            "trial {trial}: {replies:?}"
        );
        for (status, reply) in &replies {
            match status {
                201 => wait_for_end(&server, reply).await,
                _ => assert_eq!(reply["code"], "conflict", "{reply}"),
            }
        }
    }
    let (_, conversation) = server.get_json(&format!("/api/conversations/{id}")).await;
    let messages = conversation["messages"].as_array().expect("messages");
    assert_eq!(
        messages.len(),
        2 + 20 * 2,
        "one question and one answer per trial"
    );
    server.stop().await;
}
