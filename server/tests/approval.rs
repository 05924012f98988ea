//! A person's approval before a tool runs: the policy per tool from the providers file, the
//! request and the answer as events of the run, the first answer winning, Stop and the timeout.

mod common;

use std::time::Duration;

use app::protocol::{
    ApprovalDecision, Event, EventKind, ResolvedBy, ToolCallStatus, ToolResultStatus,
};
use common::*;
use serde_json::{json, Value};

/// A server where `list_dir` asks, `grep_search` is denied, and the rest runs at once.
async fn start(timeout_secs: Option<u64>) -> TestServer {
    start_configured(timeout_secs, |_| {}).await
}

async fn start_configured(
    timeout_secs: Option<u64>,
    change: impl FnOnce(&mut glassbox::config::Config),
) -> TestServer {
    let dir = test_dir();
    let file = dir.path().join("providers.json");
    let approval = json!({
        "tools": {"list_dir": "ask", "grep_search": "deny"},
        "timeout_secs": timeout_secs,
    });
    std::fs::write(&file, json!({ "approval": approval }).to_string()).expect("write");
    let server = TestServer::start_with(dir, |config| {
        config.providers_file = Some(file);
        change(config);
    })
    .await;
    server.scenario(
        "ask",
        json!({"delta_interval_ms": 1, "steps": [
            {"tool_calls": [{"name": "list_dir", "args": {"path": "."}}]},
            {"text": "Done."}
        ]}),
    );
    server
}

/// Starts the `ask` scenario and reads until its approval request; returns the run id, the
/// call id and the stream.
async fn until_asked(server: &TestServer) -> (String, String, SseStream) {
    let run = server.start_run("scenario:ask", "list").await;
    let run_id = run["run_id"].as_str().expect("run id").to_owned();
    let mut stream = server.subscribe(&run_id, None).await;
    let events = stream
        .until(|event| is_type(event, "tool_approval_requested"))
        .await;
    let Some(EventKind::ToolApprovalRequested {
        call_id,
        name,
        args,
        ..
    }) = events.last().map(|event| &event.kind)
    else {
        unreachable!()
    };
    assert_eq!(name, "list_dir");
    assert_eq!(args["path"], ".");
    (run_id, call_id.clone(), stream)
}

async fn answer(server: &TestServer, run_id: &str, call_id: &str, body: Value) -> (u16, Value) {
    server
        .post_json(&format!("/api/runs/{run_id}/approvals/{call_id}"), body)
        .await
}

fn result_of(events: &[Event]) -> (ToolResultStatus, Option<String>) {
    events
        .iter()
        .find_map(|event| match &event.kind {
            EventKind::ToolResult { status, error, .. } => {
                Some((*status, error.as_ref().map(|e| e.message.clone())))
            }
            _ => None,
        })
        .expect("a tool_result")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approved_call_runs_and_a_second_answer_gets_409() {
    let server = start(None).await;
    let (run_id, call_id, mut stream) = until_asked(&server).await;
    // Nothing runs while it waits.
    let waiting = tokio::time::timeout(Duration::from_millis(300), stream.next_event()).await;
    assert!(waiting.is_err(), "no event while waiting: {waiting:?}");

    let (status, reply) = answer(&server, &run_id, &call_id, json!({"decision": "approve"})).await;
    assert_eq!(status, 200, "{reply}");
    let (status, reply) = answer(&server, &run_id, &call_id, json!({"decision": "deny"})).await;
    assert_eq!(status, 409, "{reply}");
    assert_eq!(reply["code"], "conflict");

    let rest = stream.collect().await;
    assert!(rest.iter().any(|event| matches!(&event.kind,
        EventKind::ToolApprovalResolved { decision: ApprovalDecision::Approve, by, .. } if *by == ResolvedBy::User("local".into()))));
    assert_eq!(result_of(&rest).0, ToolResultStatus::Success);
    let all = server.subscribe(&run_id, None).await.collect().await;
    assert_invariants(&all);
    let Some(EventKind::MessageFinal { message, trace_id }) = all.last().map(|e| &e.kind) else {
        panic!("the run completes: {:?}", all.last());
    };
    let app::protocol::Segment::ToolCall(call) = &message.segments[0] else {
        panic!("a tool call first");
    };
    assert_eq!(call.status, ToolCallStatus::Success);
    let approval = call.approval.as_ref().expect("the approval is kept");
    assert_eq!(approval.decision, Some(ApprovalDecision::Approve));
    assert!(approval.resolved_at.is_some());

    // The stored trace keeps it too.
    let (_, trace) = server.get_json(&format!("/api/traces/{trace_id}")).await;
    let last = trace["events"].as_array().and_then(|events| events.last());
    let stored = &last.expect("stored events")["message"]["segments"][0]["approval"];
    assert_eq!(stored["decision"], "approve", "{trace}");

    // The inspector entry carries it; in ThoughtFlow the call depends on an `approval` step.
    let inspector = server.inspector(trace_id).await;
    assert_eq!(inspector[0]["approval"]["by"], "local", "{inspector}");
    let conversation_id = trace["conversation_id"].as_str().expect("conversation");
    let (_, flow) = server
        .get_json(&format!("/thoughtflow/{conversation_id}.json"))
        .await;
    let steps = flow["runs"][0]["steps"].as_array().expect("steps");
    let approval = steps
        .iter()
        .find(|s| s["label"] == "approval")
        .expect("approval step");
    assert_eq!(approval["payload_completed"]["decision"], "approve");
    let call = steps
        .iter()
        .find(|s| s["label"] == "tool_call")
        .expect("tool step");
    assert_eq!(call["depends_on"], approval["step_id"], "{flow}");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_denied_call_ends_denied_with_its_reason_and_the_run_goes_on() {
    let server = start(None).await;
    let (run_id, call_id, stream) = until_asked(&server).await;
    let body = json!({"decision": "deny", "reason": "not that folder"});
    let (status, _) = answer(&server, &run_id, &call_id, body).await;
    assert_eq!(status, 200);
    let rest = stream.collect().await;
    let (status, message) = result_of(&rest);
    assert_eq!(status, ToolResultStatus::Denied);
    assert!(message.unwrap_or_default().contains("not that folder"));
    assert!(matches!(
        rest.last().map(|e| &e.kind),
        Some(EventKind::MessageFinal { .. })
    ));
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deny_policy_refuses_at_once_and_bad_answers_get_clear_errors() {
    let server = start(None).await;
    server.scenario(
        "grep",
        json!({"steps": [{"tool_calls": [{"name": "grep_search", "args": {"query": "TODO"}}]}]}),
    );
    let events = server
        .chat_stream("scenario:grep", "grep")
        .await
        .collect()
        .await;
    assert!(!events.iter().any(|e| is_type(e, "tool_approval_requested")));
    assert_eq!(result_of(&events).0, ToolResultStatus::Denied);

    let (run_id, call_id, _stream) = until_asked(&server).await;
    let (status, reply) = answer(&server, &run_id, &call_id, json!({"decision": "maybe"})).await;
    assert_eq!(status, 422, "{reply}");
    assert_eq!(reply["code"], "invalid_field");
    let (status, _) = answer(
        &server,
        &run_id,
        "call_nope",
        json!({"decision": "approve"}),
    )
    .await;
    assert_eq!(status, 404);
    let (status, _) = answer(
        &server,
        "run_nope",
        &call_id,
        json!({"decision": "approve"}),
    )
    .await;
    assert_eq!(status, 404);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_while_waiting_ends_the_run_cancelled() {
    let server = start(None).await;
    let (run_id, call_id, stream) = until_asked(&server).await;
    let (status, _) = server
        .post_json(&format!("/api/runs/{run_id}/cancel"), json!({}))
        .await;
    assert_eq!(status, 200);
    let rest = stream.collect().await;
    assert_eq!(result_of(&rest).0, ToolResultStatus::Cancelled);
    assert!(matches!(
        rest.last().map(|e| &e.kind),
        Some(EventKind::MessageCancelled { .. })
    ));
    let (status, _) = answer(&server, &run_id, &call_id, json!({"decision": "approve"})).await;
    assert_eq!(status, 409, "the run has ended");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_optional_timeout_denies_a_call_nobody_answered() {
    let server = start(Some(1)).await;
    let (_run_id, _call_id, stream) = until_asked(&server).await;
    let rest = stream.collect().await;
    assert!(rest.iter().any(|event| matches!(&event.kind,
        EventKind::ToolApprovalResolved { decision: ApprovalDecision::Deny, by, reason, .. }
            if *by == ResolvedBy::Timeout && reason.as_deref() == Some("timeout"))));
    assert_eq!(result_of(&rest).0, ToolResultStatus::Denied);
    server.stop().await;
}

/// The run's time limit does not count the time a person takes to answer: with a 1 s limit, a
/// call approved after 2 s still runs and the run completes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_run_time_limit_does_not_count_the_wait_for_a_person() {
    let server = start_configured(None, |config| config.run_timeout_secs = 1).await;
    let (run_id, call_id, stream) = until_asked(&server).await;
    tokio::time::sleep(Duration::from_millis(2000)).await;
    let (status, body) = answer(&server, &run_id, &call_id, json!({"decision": "approve"})).await;
    assert_eq!(status, 200, "{body}");
    let events = stream.collect().await;
    let Some(EventKind::MessageFinal { message, .. }) = events.last().map(|e| &e.kind) else {
        panic!("the run did not complete: {:?}", events.last())
    };
    assert_eq!(message.text(), "Done.");

    // Outside a wait, the limit still ends a run.
    server.scenario(
        "slow",
        json!({"steps": [{"tool_calls": [{"name": "sleep", "args": {"seconds": 10}}]}]}),
    );
    let started = std::time::Instant::now();
    let events = server
        .chat_stream("scenario:slow", "sleep")
        .await
        .collect()
        .await;
    assert!(
        matches!(
            events.last().map(|e| &e.kind),
            Some(EventKind::MessageCancelled {
                cancelled_by: app::protocol::CancelledBy::Timeout,
                ..
            })
        ),
        "{:?}",
        events.last()
    );
    assert!(started.elapsed() < Duration::from_secs(5));
    server.stop().await;
}

/// A request carries its arguments sanitized like `tool_call_started`'s (secret-named keys, a
/// `Bearer` token and an `sk-` key redacted, a 6,000-character string cut), and the person's
/// reason is redacted too: none of it reaches the stream, the stored trace, a share link or the
/// database.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secrets_in_an_approval_request_and_its_reason_reach_nothing() {
    const NAMED: &str = "plain-value-under-a-secret-name";
    const BEARER: &str = "abcdefghijklmnop0123456789";
    const SK: &str = "sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz0123";
    const IN_REASON: &str = "sk-ant-api03-ReasonReasonReasonReason0123";
    let server = start(None).await;
    let args = json!({
        "path": ".",
        "api_key": NAMED,
        "headers": format!("Authorization: Bearer {BEARER}"),
        "note": format!("use {SK} here"),
        "long": "x".repeat(6000),
    });
    server.scenario(
        "leaky",
        json!({"delta_interval_ms": 1, "steps": [
            {"tool_calls": [{"name": "list_dir", "args": args}]}, {"text": "Done."}
        ]}),
    );
    let run = server.start_run("scenario:leaky", "list").await;
    let run_id = run["run_id"].as_str().expect("run id").to_owned();
    let trace_id = run["trace_id"].as_str().expect("trace id").to_owned();
    let mut stream = server.subscribe(&run_id, None).await;
    let asked = stream
        .until(|event| is_type(event, "tool_approval_requested"))
        .await;
    let Some(EventKind::ToolApprovalRequested { call_id, args, .. }) =
        asked.last().map(|event| event.kind.clone())
    else {
        unreachable!()
    };
    assert_eq!(args["api_key"], "[redacted]", "{}", args["headers"]);
    let long = args["long"].as_str().unwrap_or_default();
    assert!(long.chars().count() < 4200, "not cut: {}", long.len());
    assert!(
        long.ends_with("[1904 more characters]"),
        "{}",
        &long[4000..]
    );

    let reason = format!("never with {IN_REASON} please");
    let body = json!({"decision": "deny", "reason": reason});
    let (status, _) = answer(&server, &run_id, &call_id, body).await;
    assert_eq!(status, 200);
    let rest = stream.collect().await;
    let resolved = rest
        .iter()
        .find_map(|event| match &event.kind {
            EventKind::ToolApprovalResolved { reason, .. } => reason.clone(),
            _ => None,
        })
        .expect("a reason");
    assert_eq!(resolved, "never with [redacted] please");

    let (status, link) = server
        .post_json(&format!("/api/traces/{trace_id}/shares"), json!({}))
        .await;
    assert_eq!(status, 201, "{link}");
    let share = format!("share={}", link["token"].as_str().expect("token"));
    let mut seen = Vec::new();
    let events = server.subscribe(&run_id, None).await.collect().await;
    seen.push(("stream", serde_json::to_string(&events).expect("JSON")));
    for path in [
        format!("/api/traces/{trace_id}"),
        format!("/api/traces/{trace_id}?{share}"),
        format!("/t/{trace_id}?{share}"),
        format!("/api/traces/{trace_id}/inspector.json?{share}"),
    ] {
        let response = server.client.get(server.url(&path)).send().await;
        let text = response.expect("GET").text().await.expect("body");
        seen.push(("a read", format!("{path}: {text}")));
    }
    let dir = server.dir.clone();
    server.stop().await;
    let stored = String::from_utf8_lossy(&stored_bytes(&dir).await).into_owned();
    seen.push(("the database", stored));
    for (place, text) in &seen {
        for secret in [NAMED, BEARER, SK, IN_REASON, &"x".repeat(4200)] {
            let short = &secret[..secret.len().min(40)];
            assert!(!text.contains(secret), "{short} reached {place}");
        }
    }
}
