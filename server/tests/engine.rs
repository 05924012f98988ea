//! The run engine through its HTTP API: real socket, real SSE client, real SQLite file.

mod common;

use std::time::{Duration, Instant};

use app::protocol::{EventKind, MessageStatus, ToolCallStatus, ToolResultStatus};
use common::*;
use serde_json::json;

fn full_scenario() -> serde_json::Value {
    json!({
        "delta_chars": 5,
        "delta_interval_ms": 1,
        "steps": [
            {"reasoning": ["Look for TODO notes.", "Then read the file."]},
            {"tool_calls": [
                {"name": "grep_search", "args": {"query": "TODO"}},
                {"name": "list_dir", "args": {"path": "."}}
            ]},
            {"reasoning": ["Found one."]},
            {"usage": {"input_tokens": 12, "output_tokens": 34}},
            {"text": "There is **one** TODO in `notes.md`."}
        ]
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_streams_reasoning_tools_and_text_in_order_and_stores_the_same_message() {
    let server = TestServer::start().await;
    server.scenario("full", full_scenario());
    let events = server
        .chat_stream("scenario:full", "Find the TODOs")
        .await
        .collect()
        .await;
    assert_invariants(&events);

    let EventKind::MessageFinal { message, trace_id } = &events.last().expect("events").kind else {
        panic!("the run completes: {:?}", events.last());
    };
    assert_eq!(message.status, MessageStatus::Complete);
    assert_eq!(message.text(), "There is **one** TODO in `notes.md`.");
    let kinds: Vec<&str> = message
        .segments
        .iter()
        .map(|segment| match segment {
            app::protocol::Segment::Reasoning(_) => "reasoning",
            app::protocol::Segment::ToolCall(_) => "tool",
            app::protocol::Segment::Text(_) => "text",
        })
        .collect();
    assert_eq!(kinds, ["reasoning", "tool", "tool", "reasoning", "text"]);
    let grep = message
        .tool_calls()
        .find(|call| call.name == "grep_search")
        .expect("grep ran");
    assert_eq!(grep.status, ToolCallStatus::Success);
    assert!(
        grep.output.contains("notes.md:2: TODO: write the docs"),
        "{}",
        grep.output
    );
    assert_eq!(grep.display.as_deref(), Some("Searching for 'TODO'…"));
    assert_eq!(message.usage.map(|usage| usage.output_tokens), Some(34));
    assert!(events.iter().any(|event| matches!(&event.kind, EventKind::ToolCallUpdate { output_delta: Some(delta), .. } if delta.contains("notes.md:2"))), "grep streams its matches");

    // The stored trace and conversation say the same.
    let (status, trace) = server.get_json(&format!("/api/traces/{trace_id}")).await;
    assert_eq!(status, 200);
    assert_eq!(trace["status"], "completed");
    assert_eq!(trace["total_tool_calls"], 2);
    assert_eq!(trace["events"].as_array().map(Vec::len), Some(events.len()));
    let stored: Vec<app::protocol::Event> =
        serde_json::from_value(trace["events"].clone()).expect("stored events parse");
    assert_eq!(stored, events);
    let conversation_id = match &events[0].kind {
        EventKind::MessageStarted {
            conversation_id, ..
        } => conversation_id.clone(),
        _ => unreachable!(),
    };
    let (status, conversation) = server
        .get_json(&format!("/api/conversations/{conversation_id}"))
        .await;
    assert_eq!(status, 200);
    let messages: Vec<app::protocol::Message> =
        serde_json::from_value(conversation["messages"].clone()).expect("messages");
    assert_eq!(messages.len(), 2);
    assert_eq!(messages[0].text(), "Find the TODOs");
    assert_eq!(
        &messages[1], message,
        "the stored message is the streamed one"
    );
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tool_call_started_arrives_while_a_blocking_tool_still_runs() {
    let server = TestServer::start().await;
    server.scenario(
        "blocking",
        json!({"steps": [
            {"tool_calls": [{"name": "sleep", "args": {"seconds": 2, "blocking": true}}]},
            {"text": "done"}
        ]}),
    );
    let mut stream = server.chat_stream("scenario:blocking", "block").await;
    stream
        .until(|event| is_type(event, "tool_call_started"))
        .await;
    let seen_start = Instant::now();
    let rest = stream.until(|event| is_type(event, "tool_result")).await;
    let waited = seen_start.elapsed();
    assert!(
        waited >= Duration::from_millis(1500),
        "the start arrived {waited:?} before the 2 s tool ended"
    );
    assert!(matches!(
        rest.last().map(|e| &e.kind),
        Some(EventKind::ToolResult {
            status: ToolResultStatus::Success,
            ..
        })
    ));
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_of_one_turn_run_concurrently() {
    let server = TestServer::start().await;
    server.scenario(
        "parallel",
        json!({"steps": [
            {"tool_calls": [
                {"name": "sleep", "args": {"seconds": 1}},
                {"name": "sleep", "args": {"seconds": 1, "blocking": true}},
                {"name": "grep_search", "args": {"query": "nothing"}}
            ]}
        ]}),
    );
    let events = server
        .chat_stream("scenario:parallel", "parallel")
        .await
        .collect()
        .await;
    assert_invariants(&events);
    let first_result = events
        .iter()
        .position(|e| is_type(e, "tool_result"))
        .expect("results");
    let starts_before = events[..first_result]
        .iter()
        .filter(|e| is_type(e, "tool_call_started"))
        .count();
    assert_eq!(starts_before, 3, "every call started before any finished");
    let EventKind::MessageFinal { message, .. } = &events.last().expect("events").kind else {
        panic!()
    };
    assert!(message
        .tool_calls()
        .all(|call| call.status == ToolCallStatus::Success));
    let trace_ms = message
        .tool_calls()
        .filter_map(|call| call.duration_ms)
        .max()
        .unwrap_or(0);
    assert!(trace_ms >= 1000, "the sleeps really slept");
    // Two 1 s sleeps in sequence would take 2 s; together they end within 1.9 s of the first start.
    let first_start = events
        .iter()
        .find(|e| is_type(e, "tool_call_started"))
        .and_then(|e| app::protocol::parse_rfc3339_millis(&e.ts))
        .unwrap_or(0);
    let last_result = events
        .iter()
        .filter(|e| is_type(e, "tool_result"))
        .filter_map(|e| app::protocol::parse_rfc3339_millis(&e.ts))
        .max()
        .unwrap_or(0);
    assert!(
        last_result - first_start < 1900,
        "ran concurrently: {} ms",
        last_result - first_start
    );
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_or_panicking_tool_ends_in_an_error_result_and_the_run_goes_on() {
    let server = TestServer::start().await;
    server.scenario(
        "failing",
        json!({"steps": [
            {"tool_calls": [
                {"name": "fail", "args": {"message": "the disk is on fire"}},
                {"name": "fail", "args": {"message": "boom", "panic": true}},
                {"name": "read_file", "args": {"path": "../../etc/passwd"}},
                {"name": "no_such_tool", "args": {}}
            ]},
            {"text": "Recovered."}
        ]}),
    );
    let events = server
        .chat_stream("scenario:failing", "fail")
        .await
        .collect()
        .await;
    assert_invariants(&events);
    let EventKind::MessageFinal { message, .. } = &events.last().expect("events").kind else {
        panic!("completes")
    };
    let errors: Vec<(String, String)> = message
        .tool_calls()
        .map(|call| {
            assert_eq!(call.status, ToolCallStatus::Error);
            let error = call.error.clone().expect("error details");
            (error.kind.to_string(), error.message)
        })
        .collect();
    assert_eq!(
        errors[0],
        ("failed".to_owned(), "the disk is on fire".to_owned())
    );
    assert_eq!(errors[1].0, "panic");
    assert!(errors[1].1.contains("boom"));
    assert!(
        errors[2].0 == "outside_workspace" || errors[2].0 == "not_found",
        "{:?}",
        errors[2]
    );
    assert_eq!(errors[3].0, "unknown_tool");
    assert_eq!(message.text(), "Recovered.");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scenario_error_ends_the_run_with_message_error_and_keeps_the_partial_message() {
    let server = TestServer::start().await;
    server.scenario(
        "broken",
        json!({"delta_interval_ms": 0, "steps": [
            {"text": "Partial answer"},
            {"error": {"code": "model_error", "message": "The model went away."}}
        ]}),
    );
    let events = server
        .chat_stream("scenario:broken", "x")
        .await
        .collect()
        .await;
    assert_invariants(&events);
    let EventKind::MessageError {
        code,
        error,
        message,
    } = &events.last().expect("events").kind
    else {
        panic!()
    };
    assert_eq!(code.as_str(), "model_error");
    assert_eq!(error, "The model went away.");
    assert_eq!(message.text(), "Partial answer");
    assert_eq!(message.status, MessageStatus::Error);
    server.stop().await;
}

/// Stop during a tool call: the tool sees the cancellation at once and returns, and the agent
/// must say nothing more. Its next step could run before the run's watcher aborted it, so "never
/// shown" reached the stream and the stored answer now and then (a browser test saw it once in
/// several hundred runs). Thirty stops look for it; the race did not show here in 400 before the
/// fix either, so this guards the promise more than it reproduces the race.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_stop_the_agent_says_nothing_more_once_its_tools_return() {
    let server = TestServer::start().await;
    server.scenario(
        "sleepy",
        json!({"delta_interval_ms": 0, "steps": [
            {"text": "Working on it."},
            {"tool_calls": [{"name": "sleep", "args": {"seconds": 30}}]},
            {"text": "never shown"}
        ]}),
    );
    for trial in 0..30 {
        let started = server.start_run("scenario:sleepy", "take your time").await;
        let run_id = started["run_id"].as_str().expect("run id").to_owned();
        let mut stream = server.subscribe(&run_id, None).await;
        let mut seen = stream
            .until(|event| matches!(event.kind, EventKind::ToolCallStarted { .. }))
            .await;
        let (status, body) = server
            .post_json(&format!("/api/runs/{run_id}/cancel"), json!({}))
            .await;
        assert_eq!(status, 200, "{body}");
        seen.extend(stream.collect().await);
        assert_invariants(&seen);
        let EventKind::MessageCancelled { message, .. } = &seen.last().expect("events").kind else {
            panic!("trial {trial}: {:?}", seen.last())
        };
        assert_eq!(message.text(), "Working on it.", "trial {trial}");
        assert!(
            !seen
                .iter()
                .any(|event| matches!(&event.kind, EventKind::TextDelta { delta, .. } if delta.contains("never"))),
            "trial {trial}: text after the stop"
        );
    }
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_during_a_tool_stops_the_run_promptly_and_stores_the_partial_trace() {
    let server = TestServer::start().await;
    server.scenario(
        "long",
        json!({"delta_interval_ms": 0, "steps": [
            {"text": "Working on it."},
            {"tool_calls": [
                {"name": "sleep", "args": {"seconds": 30}},
                {"name": "sleep", "args": {"seconds": 3, "blocking": true}},
                {"name": "sleep", "args": {"seconds": 30, "subprocess": true}}
            ]},
            {"text": "never"}
        ]}),
    );
    let started = server.start_run("scenario:long", "take your time").await;
    let run_id = started["run_id"].as_str().expect("run id").to_owned();
    let mut stream = server.subscribe(&run_id, None).await;
    let mut pid = None;
    let mut seen = stream
        .until(|event| {
            if let EventKind::ToolCallUpdate {
                output_delta: Some(delta),
                ..
            } = &event.kind
            {
                pid = delta
                    .strip_prefix("started process ")
                    .map(|p| p.trim().to_owned());
            }
            pid.is_some()
        })
        .await;
    let pid = pid.expect("the subprocess started");
    assert!(std::path::Path::new(&format!("/proc/{pid}")).exists());

    let asked = Instant::now();
    let (status, body) = server
        .post_json(&format!("/api/runs/{run_id}/cancel"), json!({}))
        .await;
    let answered = asked.elapsed();
    assert_eq!(status, 200, "{body}");
    assert!(
        answered < Duration::from_secs(2),
        "cancel took {answered:?}"
    );
    seen.extend(stream.collect().await);
    assert_invariants(&seen);
    let EventKind::MessageCancelled {
        cancelled_by,
        message,
        ..
    } = &seen.last().expect("events").kind
    else {
        panic!("{:?}", seen.last())
    };
    assert_eq!(*cancelled_by, app::protocol::CancelledBy::User);
    assert_eq!(message.text(), "Working on it.");
    assert!(
        message
            .tool_calls()
            .all(|call| call.status == ToolCallStatus::Cancelled),
        "running tools end cancelled"
    );

    // The child process is gone (give the kernel a moment to reap it).
    let deadline = Instant::now() + Duration::from_secs(3);
    while process_alive(&pid) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(!process_alive(&pid), "the subprocess was killed");

    let trace_id = started["trace_id"].as_str().expect("trace id");
    let (_, trace) = server.get_json(&format!("/api/traces/{trace_id}")).await;
    assert_eq!(trace["status"], "cancelled");
    assert_eq!(trace["cancelled_by"], "user");
    assert_eq!(
        trace["events"].as_array().map(Vec::len),
        Some(seen.len()),
        "partial events kept"
    );

    let (status, body) = server
        .post_json(&format!("/api/runs/{run_id}/cancel"), json!({}))
        .await;
    assert_eq!(status, 409, "cancelling a finished run: {body}");
    assert_eq!(body["code"], "conflict");
    server.stop().await;
}

fn process_alive(pid: &str) -> bool {
    // A killed child that nobody has reaped yet shows as a zombie: it is not running.
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .split_whitespace()
            .nth(2)
            .is_none_or(|state| state != "Z"),
        Err(_) => false,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reconnecting_with_last_event_id_gives_no_duplicate_and_no_gap() {
    let server = TestServer::start().await;
    server.scenario(
        "chatty",
        json!({"delta_chars": 3, "delta_interval_ms": 5, "steps": [
            {"reasoning": ["Thinking about it for a little while."]},
            {"text": "A reasonably long answer that arrives in many small pieces."}
        ]}),
    );
    let started = server.start_run("scenario:chatty", "talk").await;
    let run_id = started["run_id"].as_str().expect("run id").to_owned();

    // During the run: read a few events, drop the connection, resume from the last id.
    let mut first = server.subscribe(&run_id, None).await;
    let mut events = Vec::new();
    for _ in 0..5 {
        events.push(first.next_event().await.expect("event"));
    }
    drop(first);
    let last = events.last().map(|e| e.seq).expect("seq");
    let resumed = server.subscribe(&run_id, Some(last)).await.collect().await;
    assert_eq!(
        resumed.first().map(|e| e.seq),
        Some(last + 1),
        "resumes right after the last id"
    );
    events.extend(resumed);
    assert_invariants(&events);

    // After the run: `?after=N` works as well.
    let after = server
        .client
        .get(server.url(&format!("/api/runs/{run_id}/events?after=3")))
        .send()
        .await
        .expect("GET");
    let tail = SseStream::new(after).collect().await;
    assert_eq!(tail, events[3..].to_vec());
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_restart_a_finished_run_replays_from_the_stored_trace() {
    let dir = test_dir();
    let server = TestServer::start_in(dir.clone()).await;
    server.scenario(
        "short",
        json!({"delta_interval_ms": 0, "steps": [{"text": "stored answer"}]}),
    );
    let started = server.start_run("scenario:short", "hi").await;
    let run_id = started["run_id"].as_str().expect("run id").to_owned();
    let live = server.subscribe(&run_id, None).await.collect().await;
    server.stop().await;

    let restarted = TestServer::start_in(dir).await;
    assert!(
        restarted.engine.get(&run_id).is_none(),
        "not in memory any more"
    );
    let replay = restarted.subscribe(&run_id, Some(2)).await.collect().await;
    assert_eq!(replay, live[2..].to_vec());
    restarted.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_subscribers_see_the_same_events() {
    let server = TestServer::start().await;
    server.scenario("full", full_scenario());
    let started = server.start_run("scenario:full", "twice").await;
    let run_id = started["run_id"].as_str().expect("run id");
    let (a, b) = tokio::join!(
        async { server.subscribe(run_id, None).await.collect().await },
        async { server.subscribe(run_id, None).await.collect().await }
    );
    assert_invariants(&a);
    assert_eq!(a, b);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscriber_that_stops_reading_delays_nobody() {
    let server = TestServer::start().await;
    // About 6 MB of events, far beyond what socket buffers hold for the stalled reader.
    server.scenario(
        "flood",
        json!({"delta_chars": 8000, "delta_interval_ms": 0, "steps": [
            {"text": "x".repeat(6_000_000)}
        ]}),
    );
    let started = server.start_run("scenario:flood", "flood").await;
    let run_id = started["run_id"].as_str().expect("run id").to_owned();
    let stalled = server
        .client
        .get(server.url(&format!("/api/runs/{run_id}/events")))
        .send()
        .await
        .expect("GET");
    let reader = tokio::time::timeout(
        Duration::from_secs(30),
        server.subscribe(&run_id, None).await.collect(),
    )
    .await
    .expect("the reading subscriber finished while the other stalled");
    assert_invariants(&reader);
    let EventKind::MessageFinal { message, .. } = &reader.last().expect("events").kind else {
        panic!()
    };
    assert_eq!(message.text().len(), 6_000_000);
    drop(stalled);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_secret_in_tool_arguments_never_reaches_the_stream_or_the_database() {
    let dir = test_dir();
    let server = TestServer::start_in(dir.clone()).await;
    let secret = "sk-live-5ecret-d0-not-leak-4242";
    server.scenario("secret", json!({"steps": [
        {"tool_calls": [{"name": "grep_search", "args": {"query": "TODO", "api_key": secret, "headers": {"Authorization": format!("Bearer {secret}")}}}]},
        {"text": "ok"}
    ]}));
    let mut stream_text = String::new();
    let mut stream = server.chat_stream("scenario:secret", "search").await;
    while let Some(frame) = stream.next_frame().await {
        stream_text.push_str(&frame.data);
    }
    assert!(
        stream_text.contains("[redacted]"),
        "the key is shown as redacted"
    );
    assert!(!stream_text.contains(secret));
    server.stop().await;

    let stored = stored_bytes(&dir).await;
    assert!(!stored.is_empty());
    let needle = secret.as_bytes();
    assert!(
        !stored.windows(needle.len()).any(|window| window == needle),
        "the secret is in a database file"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn long_tool_output_is_truncated_with_its_full_length() {
    let server = TestServer::start().await;
    let line = "0123456789".repeat(10);
    let big: String = (0..300).map(|_| format!("{line}\n")).collect();
    std::fs::write(server.dir.path().join("workspace/big.txt"), big).expect("write big file");
    server.scenario(
        "big",
        json!({"steps": [{"tool_calls": [{"name": "read_file", "args": {"path": "big.txt"}}]}]}),
    );
    let events = server
        .chat_stream("scenario:big", "read")
        .await
        .collect()
        .await;
    let result = events.iter().find_map(|event| match &event.kind {
        EventKind::ToolResult {
            output,
            truncated,
            full_length,
            ..
        } => Some((output.clone(), *truncated, *full_length)),
        _ => None,
    });
    let (output, truncated, full_length) = result.expect("a tool result");
    assert!(truncated);
    assert_eq!(
        output.map(|o| o.chars().count()),
        Some(glassbox::sanitize::MAX_TOOL_OUTPUT_CHARS)
    );
    assert!(full_length.unwrap_or(0) > 30_000, "{full_length:?}");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_requests_get_clear_json_errors() {
    let server = TestServer::start().await;
    server.scenario("short", json!({"steps": [{"text": "hi"}]}));
    let post_raw = |body: &'static str, content_type: &'static str| {
        let request = server
            .client
            .post(server.url("/api/chat"))
            .header("content-type", content_type)
            .body(body);
        async move {
            let response = request.send().await.expect("POST");
            let status = response.status().as_u16();
            (
                status,
                response
                    .json::<serde_json::Value>()
                    .await
                    .unwrap_or_default(),
            )
        }
    };
    let cases = [
        (
            post_raw("{not json", "application/json").await,
            400,
            "malformed_body",
        ),
        (
            post_raw("{}", "application/json").await,
            422,
            "invalid_field",
        ),
        (
            post_raw(r#"{"content": 5}"#, "application/json").await,
            422,
            "invalid_field",
        ),
        (
            post_raw(r#"{"content": "   "}"#, "application/json").await,
            422,
            "invalid_field",
        ),
        (
            post_raw(
                r#"{"content": "hi", "model": "gpt-nonexistent"}"#,
                "application/json",
            )
            .await,
            422,
            "invalid_field",
        ),
        (
            post_raw(
                r#"{"content": "hi", "model": "scenario:../../etc/passwd"}"#,
                "application/json",
            )
            .await,
            422,
            "invalid_field",
        ),
        (
            post_raw(r#"{"content": "hi"}"#, "text/plain").await,
            415,
            "unsupported_media_type",
        ),
        (
            post_raw(
                r#"{"content": "hi", "conversation_id": "nope", "model": "scenario:short"}"#,
                "application/json",
            )
            .await,
            404,
            "not_found",
        ),
    ];
    for ((status, body), expected_status, expected_code) in cases {
        assert_eq!(status, expected_status, "{body}");
        assert_eq!(body["code"], expected_code, "{body}");
        assert!(
            body["message"].as_str().is_some_and(|m| !m.is_empty()),
            "{body}"
        );
    }

    let huge = format!(r#"{{"content": "{}"}}"#, "a".repeat(2 * 1024 * 1024));
    // The server reads a refused body of up to 8 MiB to its end before the 413, so a client that
    // writes it whole gets the answer (it used to close under the writes: a broken pipe now and
    // then). Its own client all the same: the connection is not the shared pool's business.
    let response = reqwest::Client::new()
        .post(server.url("/api/chat"))
        .header("content-type", "application/json")
        .body(huge)
        .send()
        .await
        .expect("POST");
    assert_eq!(response.status(), 413);
    let body: serde_json::Value = response.json().await.expect("JSON");
    assert_eq!(body["code"], "payload_too_large");

    for path in [
        "/api/traces/nope",
        "/api/conversations/nope",
        "/api/runs/nope/events",
        "/api/nothing-here",
    ] {
        let (status, body) = server.get_json(path).await;
        assert_eq!(
            (status, body["code"].as_str()),
            (404, Some("not_found")),
            "{path}"
        );
    }
    let (status, _) = server.post_json("/api/runs/nope/cancel", json!({})).await;
    assert_eq!(status, 404);
    let response = server
        .client
        .post(server.url("/api/runs/nope/cancel"))
        .body("{oops")
        .send()
        .await
        .expect("POST");
    assert_eq!(response.status(), 400);
    let response = server
        .client
        .get(server.url("/api/runs/nope/events"))
        .header("last-event-id", "abc")
        .send()
        .await
        .expect("GET");
    assert_eq!(response.status(), 400);

    // Nothing stored was lost: the server still works.
    let events = server
        .chat_stream("scenario:short", "still fine?")
        .await
        .collect()
        .await;
    assert_invariants(&events);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn other_owners_conversations_and_traces_are_not_found() {
    let server = TestServer::start().await;
    server.scenario(
        "short",
        json!({"delta_interval_ms": 0, "steps": [{"text": "mine"}]}),
    );
    let started = server.start_run("scenario:short", "hello").await;
    let run_id = started["run_id"].as_str().expect("run").to_owned();
    server.subscribe(&run_id, None).await.collect().await;
    let conversation_id = started["conversation_id"]
        .as_str()
        .expect("conversation")
        .to_owned();
    let trace_id = started["trace_id"].as_str().expect("trace").to_owned();

    server
        .store
        .execute_as_writer(format!(
            "UPDATE conversations SET owner_id = 'someone-else' WHERE id = '{conversation_id}'"
        ))
        .await
        .expect("re-own");
    for path in [
        format!("/api/conversations/{conversation_id}"),
        format!("/api/traces/{trace_id}"),
    ] {
        let (status, _) = server.get_json(&path).await;
        assert_eq!(status, 404, "{path}");
    }
    let (_, list) = server.get_json("/api/conversations").await;
    assert_eq!(list.as_array().map(Vec::len), Some(0));
    let (status, _) = server
        .post_json("/api/chat", json!({"conversation_id": conversation_id, "content": "sneaky", "model": "scenario:short"}))
        .await;
    assert_eq!(status, 404);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conversations_list_newest_first_and_health_reports_the_database() {
    let server = TestServer::start().await;
    server.scenario(
        "short",
        json!({"delta_interval_ms": 0, "steps": [{"text": "ok"}]}),
    );
    for content in ["first", "second"] {
        let started = server.start_run("scenario:short", content).await;
        server
            .subscribe(started["run_id"].as_str().expect("run"), None)
            .await
            .collect()
            .await;
    }
    let (_, list) = server.get_json("/api/conversations").await;
    let titles: Vec<&str> = list
        .as_array()
        .expect("list")
        .iter()
        .filter_map(|c| c["title"].as_str())
        .collect();
    assert_eq!(titles, ["second", "first"]);

    let (status, health) = server.get_json("/healthz").await;
    assert_eq!(status, 200);
    assert_eq!(health["database"], true);
    assert_eq!(health["version"], env!("CARGO_PKG_VERSION"));
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sse_responses_are_uncached_unbuffered_and_send_heartbeats() {
    let server = TestServer::start().await;
    // Quiet for longer than the heartbeat interval (15 s), then done.
    server.scenario(
        "short",
        json!({"steps": [{"text": "ok"}, {"pause_ms": 16_000}, {"text": "done"}]}),
    );
    let response = server.post_chat("scenario:short", "hi", false).await;
    let headers = response.headers().clone();
    assert_eq!(
        headers.get("cache-control").and_then(|v| v.to_str().ok()),
        Some("private, no-store")
    );
    assert_eq!(
        headers
            .get("x-accel-buffering")
            .and_then(|v| v.to_str().ok()),
        Some("no")
    );
    assert!(headers.get("content-encoding").is_none());
    let mut stream = SseStream::new(response);
    let mut events = Vec::new();
    while let Some(event) = stream.next_event().await {
        events.push(event);
    }
    assert_invariants(&events);
    assert!(
        stream.comments.iter().any(|comment| comment == "heartbeat"),
        "a quiet stream sends a heartbeat comment: {:?}",
        stream.comments
    );
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn huge_reasoning_stays_under_the_event_cap_and_extreme_numbers_are_kept_in_range() {
    let server = TestServer::start().await;
    let thought: String = "think ".repeat(50_000); // 300,000 characters
    server.scenario(
        "extremes",
        json!({"delta_chars": 1_000_000, "delta_interval_ms": 0, "steps": [
            {"reasoning": [thought]},
            {"tool_calls": [{"name": "read_file", "args": {"path": "notes.md", "start_line": u64::MAX}}]},
            {"usage": {"input_tokens": u64::MAX, "output_tokens": u64::MAX}},
            {"text": "done"}
        ]}),
    );
    let response = server.post_chat("scenario:extremes", "go", false).await;
    let body = response.text().await.expect("stream");
    let frames: Vec<&str> = body
        .lines()
        .filter_map(|line| line.strip_prefix("data: "))
        .collect();
    let (terminal, rest) = frames.split_last().expect("events");
    assert!(terminal.contains("\"message_final\""), "{terminal:.200}");
    for frame in rest {
        assert!(
            frame.len() <= 64 * 1024,
            "an event of {} bytes",
            frame.len()
        );
    }
    let last: app::protocol::Event = serde_json::from_str(terminal).expect("terminal event");
    let EventKind::MessageFinal { message, trace_id } = last.kind else {
        panic!("not final");
    };
    let reasoning = message
        .segments
        .iter()
        .find_map(|segment| match segment {
            app::protocol::Segment::Reasoning(r) => Some(r.combined_text.clone()),
            _ => None,
        })
        .expect("reasoning");
    assert_eq!(reasoning, thought, "the whole reasoning arrives");
    let tool = message
        .segments
        .iter()
        .find_map(|segment| match segment {
            app::protocol::Segment::ToolCall(call) => Some(call.clone()),
            _ => None,
        })
        .expect("tool call");
    assert_eq!(tool.status, ToolCallStatus::Success, "{tool:?}");
    let (status, trace) = server.get_json(&format!("/api/traces/{trace_id}")).await;
    assert_eq!(status, 200);
    assert!(
        trace["input_tokens"].as_i64().is_some_and(|n| n > 0),
        "{}",
        trace["input_tokens"]
    );
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn control_characters_in_a_message_and_in_tool_output_are_stored_and_read_back() {
    // PostgreSQL refuses NUL in TEXT and in JSONB: the store must not turn it into a failed run.
    let server = TestServer::start().await;
    server.scenario(
        "nul",
        json!({"steps": [{"text": "before\u{0}after \\u0000 stays"}]}),
    );
    let started = server.start_run("scenario:nul", "a\u{0}b\u{1}c").await;
    let run_id = started["run_id"].as_str().expect("run");
    let events = server.subscribe(run_id, None).await.collect().await;
    assert!(events.last().is_some_and(|e| is_type(e, "message_final")));
    let conversation_id = started["conversation_id"].as_str().expect("conversation");
    let (status, conversation) = server
        .get_json(&format!("/api/conversations/{conversation_id}"))
        .await;
    assert_eq!(status, 200, "{conversation}");
    let answer = conversation["messages"][1].to_string();
    assert!(answer.contains("after"), "{answer}");
    assert!(
        answer.contains("\\\\u0000 stays"),
        "an escaped backslash is text: {answer}"
    );
    assert_eq!(conversation["messages"][1]["status"], "complete");
    let (status, _) = server
        .get_json(&format!(
            "/api/traces/{}",
            started["trace_id"].as_str().expect("trace")
        ))
        .await;
    assert_eq!(status, 200);
    server.stop().await;
}
