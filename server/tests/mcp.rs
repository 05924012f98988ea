//! MCP tools through a real MCP server from npm, `@modelcontextprotocol/server-everything`
//! (installed in `tools/mcp/` by `scripts/test.sh`), started over stdio by the server under test.

mod common;

use std::time::{Duration, Instant};

use app::protocol::{EventKind, ToolResultStatus};
use common::*;
use serde_json::{json, Value};

/// A server whose providers file configures `everything` and, with `broken`, a server that
/// cannot start.
async fn start(broken: bool) -> TestServer {
    let dir = test_dir();
    let mut servers = json!({
        "everything": {"command": "node", "args": [everything_mcp_server(), "stdio"]}
    });
    if broken {
        servers["broken"] = json!({"command": dir.path().join("no-such-program")});
    }
    start_with_servers(dir, servers).await
}

async fn start_with_servers(dir: std::sync::Arc<tempfile::TempDir>, servers: Value) -> TestServer {
    let file = dir.path().join("providers.json");
    // MCP tools ask for approval unless told otherwise (tests/approval.rs covers asking).
    let providers = json!({ "mcp_servers": servers, "approval": {"mcp": "auto"} });
    std::fs::write(&file, providers.to_string()).expect("write");
    let server = TestServer::start_with(dir, |config| config.providers_file = Some(file)).await;
    until_mcp_started(&server.client, &server.base).await;
    server
}

fn tool_result(
    events: &[app::protocol::Event],
) -> (ToolResultStatus, Option<String>, Option<String>) {
    events
        .iter()
        .find_map(|event| match &event.kind {
            EventKind::ToolResult {
                status,
                output,
                error,
                ..
            } => Some((
                *status,
                output.clone(),
                error.as_ref().map(|e| e.kind.to_string()),
            )),
            _ => None,
        })
        .expect("a tool_result")
}

/// A call of `everything__echo` succeeds.
async fn echo_works(server: &TestServer, message: &str) {
    one_call(
        server,
        "echo",
        "everything__echo",
        json!({ "message": message }),
    );
    let events = server
        .chat_stream("scenario:echo", "echo")
        .await
        .collect()
        .await;
    assert_eq!(tool_result(&events).0, ToolResultStatus::Success);
}

fn one_call(server: &TestServer, name: &str, tool: &str, args: Value) {
    server.scenario(
        name,
        json!({"steps": [{"tool_calls": [{"name": tool, "args": args}]}, {"text": "done"}]}),
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn its_tools_are_listed_beside_the_built_in_ones_and_a_broken_server_does_not_stop_the_rest()
{
    let server = start(true).await;
    let (status, listed) = server.get_json("/api/tools").await;
    assert_eq!(status, 200);
    let names: Vec<&str> = listed["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|tool| tool["name"].as_str())
        .collect();
    assert!(names.contains(&"read_file"), "{names:?}");
    assert!(names.contains(&"everything__echo"), "{names:?}");
    let echo = listed["tools"]
        .as_array()
        .and_then(|tools| tools.iter().find(|t| t["name"] == "everything__echo"))
        .expect("echo");
    assert_eq!(echo["source"], "mcp");
    assert_eq!(echo["server"], "everything");
    let servers = listed["mcp_servers"].as_array().expect("servers");
    let state = |name: &str| {
        servers
            .iter()
            .find(|s| s["name"] == name)
            .map(|s| s["state"].clone())
    };
    assert_eq!(state("everything"), Some(json!("running")));
    assert_eq!(state("broken"), Some(json!("failed")), "{servers:?}");

    // The model sees the tool's JSON schema.
    let tools = server.engine.tools().all();
    let echo = tools
        .iter()
        .find(|tool| tool.name() == "everything__echo")
        .expect("echo");
    assert_eq!(echo.parameters()["properties"]["message"]["type"], "string");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_returns_its_text_and_a_readable_line_for_an_image() {
    let server = start(false).await;
    one_call(
        &server,
        "echo",
        "everything__echo",
        json!({"message": "hello there"}),
    );
    let events = server
        .chat_stream("scenario:echo", "echo")
        .await
        .collect()
        .await;
    assert_invariants(&events);
    let (status, output, _) = tool_result(&events);
    assert_eq!(status, ToolResultStatus::Success);
    assert!(
        output
            .as_deref()
            .unwrap_or_default()
            .contains("hello there"),
        "{output:?}"
    );

    one_call(&server, "image", "everything__get-tiny-image", json!({}));
    let events = server
        .chat_stream("scenario:image", "image")
        .await
        .collect()
        .await;
    let (status, output, _) = tool_result(&events);
    assert_eq!(status, ToolResultStatus::Success);
    let output = output.unwrap_or_default();
    assert!(output.contains("[image: image/png,"), "{output}");
    assert!(
        !output.contains("iVBOR"),
        "no image bytes in the output: {output}"
    );

    one_call(&server, "bad", "everything__get-sum", json!({"a": "one"}));
    let events = server
        .chat_stream("scenario:bad", "bad")
        .await
        .collect()
        .await;
    let (status, _, error) = tool_result(&events);
    assert_eq!(status, ToolResultStatus::Error, "{error:?}");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_streams_into_the_call_and_stop_ends_it_at_once() {
    let server = start(false).await;
    one_call(
        &server,
        "long",
        "everything__trigger-long-running-operation",
        json!({"duration": 30, "steps": 60}),
    );
    let run = server.start_run("scenario:long", "go").await;
    let run_id = run["run_id"].as_str().expect("run id").to_owned();
    let mut stream = server.subscribe(&run_id, None).await;
    let progress = stream
        .until(|event| {
            matches!(&event.kind, EventKind::ToolCallUpdate { progress: Some(p), .. }
                if p["progress"].as_f64() >= Some(2.0))
        })
        .await;
    let last = progress.last().expect("an update");
    let EventKind::ToolCallUpdate {
        progress: Some(report),
        ..
    } = &last.kind
    else {
        unreachable!()
    };
    assert_eq!(report["total"], json!(60.0));

    let stopped = Instant::now();
    let (status, _) = server
        .post_json(&format!("/api/runs/{run_id}/cancel"), json!({}))
        .await;
    assert_eq!(status, 200);
    let rest = stream.until(|event| event.kind.is_terminal()).await;
    let waited = stopped.elapsed();
    assert!(
        matches!(
            rest.last().map(|e| &e.kind),
            Some(EventKind::MessageCancelled { .. })
        ),
        "{:?}",
        rest.last()
    );
    let (status, _, _) = tool_result(&rest);
    assert_eq!(status, ToolResultStatus::Cancelled);
    // The server keeps sleeping through its 30 s; the run does not wait for it.
    assert!(waited < Duration::from_secs(5), "Stop took {waited:?}");

    // The inspector export has it as an `mcp` entry, with its progress and the cancel.
    let trace_id = run["trace_id"].as_str().expect("trace id");
    let inspector = server.inspector(trace_id).await;
    let entry = &inspector[0];
    assert_eq!(entry["type"], "mcp", "{inspector}");
    assert_eq!(entry["server"], "everything");
    assert_eq!(entry["tool"], "trigger-long-running-operation");
    assert_eq!(entry["cancelled"], true);
    assert!(
        entry["progress"].as_array().is_some_and(|p| p.len() >= 2),
        "{entry}"
    );

    // The server still answers afterwards.
    echo_works(&server, "still here").await;
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_dies_is_restarted_and_its_tools_come_back() {
    let server = start(false).await;
    let pid = |listed: &Value| listed["mcp_servers"][0]["pid"].as_u64();
    let (_, listed) = server.get_json("/api/tools").await;
    let first = pid(&listed).expect("a pid");
    let killed = std::process::Command::new("kill")
        .args(["-9", &first.to_string()])
        .status()
        .expect("kill");
    assert!(killed.success());

    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (_, listed) = server.get_json("/api/tools").await;
        if listed["mcp_servers"][0]["state"] == "running" && pid(&listed) != Some(first) {
            break;
        }
        assert!(Instant::now() < deadline, "not restarted: {listed}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    echo_works(&server, "back").await;
    server.stop().await;
}

/// The everything server over streamable HTTP, and its port. A port found free can be taken by
/// another test's server before node binds it (node then exits): each try takes another port.
async fn everything_over_http() -> (tokio::process::Child, u16) {
    let mut exits = Vec::new();
    for _ in 0..3 {
        let port = free_port();
        let mut child = tokio::process::Command::new("node")
            .args([
                everything_mcp_server().as_os_str(),
                "streamableHttp".as_ref(),
            ])
            .env("PORT", port.to_string())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("start the everything server over HTTP");
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if tokio::net::TcpStream::connect(("127.0.0.1", port))
                .await
                .is_ok()
            {
                return (child, port);
            }
            if let Ok(Some(status)) = child.try_wait() {
                exits.push(format!("port {port}: {status}"));
                break;
            }
            assert!(
                Instant::now() < deadline,
                "the HTTP MCP server did not start on port {port}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    panic!("the HTTP MCP server exited on each try: {exits:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streamable_http_server_is_reached_by_its_url() {
    let (mut everything_http, port) = everything_over_http().await;
    let servers = json!({"remote": {
        "url": format!("http://127.0.0.1:{port}/mcp"),
        "headers": {"X-Team": "glassbox"}
    }});
    let server = start_with_servers(test_dir(), servers).await;
    let (_, listed) = server.get_json("/api/tools").await;
    assert_eq!(listed["mcp_servers"][0]["state"], "running", "{listed}");
    one_call(
        &server,
        "echo",
        "remote__echo",
        json!({"message": "over http"}),
    );
    let events = server
        .chat_stream("scenario:echo", "echo")
        .await
        .collect()
        .await;
    let (status, output, _) = tool_result(&events);
    assert_eq!(status, ToolResultStatus::Success);
    assert!(output.unwrap_or_default().contains("over http"));
    server.stop().await;
    let _ = everything_http.kill().await;
}

/// The configured headers of an HTTP server, `${VAR}` read from the environment, reach the
/// server with every request; a server that refuses them is reported as failed, and the error
/// does not repeat the secret.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http_server_gets_its_configured_headers_and_a_refusal_is_reported() {
    use axum::{http::HeaderMap, routing::any, Router};
    use std::sync::{Arc, Mutex};

    const TOKEN: &str = "mcp-test-token-0123456789";
    std::env::set_var("GLASSBOX_TEST_MCP_TOKEN", TOKEN);
    let seen: Arc<Mutex<Vec<HeaderMap>>> = Arc::default();
    let recorder = {
        let seen = seen.clone();
        Router::new().route(
            "/mcp",
            any(move |headers: HeaderMap| {
                let seen = seen.clone();
                async move {
                    seen.lock().unwrap_or_else(|p| p.into_inner()).push(headers);
                    (
                        axum::http::StatusCode::UNAUTHORIZED,
                        axum::Json(json!({"error": "invalid token"})),
                    )
                }
            }),
        )
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("http://{}/mcp", listener.local_addr().expect("address"));
    tokio::spawn(async move {
        let _ = axum::serve(listener, recorder).await;
    });

    let servers = json!({"guarded": {
        "url": url,
        "headers": {"Authorization": "Bearer ${GLASSBOX_TEST_MCP_TOKEN}", "X-Team": "glassbox"}
    }});
    let server = start_with_servers(test_dir(), servers).await;
    let (_, listed) = server.get_json("/api/tools").await;
    assert_eq!(listed["mcp_servers"][0]["state"], "failed", "{listed}");
    assert!(!listed.to_string().contains(TOKEN), "{listed}");

    let seen = seen.lock().unwrap_or_else(|p| p.into_inner()).clone();
    let first = seen.first().expect("the server was asked");
    let header = |name: &str| first.get(name).and_then(|v| v.to_str().ok());
    assert_eq!(
        header("authorization"),
        Some(format!("Bearer {TOKEN}").as_str())
    );
    assert_eq!(header("x-team"), Some("glassbox"));
    server.stop().await;
}

/// The reported leak: a stdio server inherited Glassbox's whole environment, provider keys
/// included, and a tool that prints its environment put them into the events. It now gets only
/// the safe base set (`PATH`, `HOME`, ...) and what its `env` names. A failed server's status,
/// which every signed-in user reads, names no command line, URL or library type; the log keeps
/// the detail without the URL's path.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stdio_server_gets_a_safe_environment_and_failures_show_no_internals() {
    const PROVIDER_KEY: &str = "provider-key-value-0123456789";
    const UNRELATED: &str = "unrelated-value-that-stays-home";
    const GIVEN: &str = "given-to-the-server-on-purpose";
    let dir = test_dir();
    let providers = json!({
        "providers": [{"name": "remote", "kind": "openai_chat", "base_url": "http://127.0.0.1:9/v1",
                       "api_key_env": "GLASSBOX_TEST_PROVIDER_KEY", "models": ["m"]}],
        "mcp_servers": {
            "everything": {"command": "node", "args": [everything_mcp_server(), "stdio"],
                           "env": {"GIVEN_TO_SERVER": "${GLASSBOX_TEST_GIVEN}"}},
            "broken": {"command": dir.path().join("no-such-program"),
                       "args": ["--token", "command-line-secret"]},
            "hosted": {"url": "http://127.0.0.1:9/mcp/path-token-0123456789"}
        },
        "approval": {"mcp": "auto"},
    });
    let file = dir.path().join("providers.json");
    std::fs::write(&file, providers.to_string()).expect("write");
    write_scenario(
        &dir,
        "env",
        json!({"steps": [{"tool_calls": [{"name": "everything__get-env", "args": {}}]},
                         {"text": "done"}]}),
    );
    let log_path = dir.path().join("glassbox.log");
    let log = std::fs::File::create(&log_path).expect("log file");
    let binary = launch_with(
        &dir,
        &["--providers-file", file.to_str().expect("path")],
        &[
            ("GLASSBOX_TEST_PROVIDER_KEY", PROVIDER_KEY),
            ("GLASSBOX_TEST_UNRELATED", UNRELATED),
            ("GLASSBOX_TEST_GIVEN", GIVEN),
        ],
        log.into(),
    )
    .await;
    let client = reqwest::Client::new();
    until_mcp_started(&client, &binary.base).await;
    let response = client
        .post(format!("{}/api/chat", binary.base))
        .json(&json!({"model": "scenario:env", "content": "env"}))
        .send()
        .await
        .expect("POST /api/chat");
    let events = SseStream::new(response).collect().await;
    let (status, output, _) = tool_result(&events);
    assert_eq!(status, ToolResultStatus::Success);
    let output = output.unwrap_or_default();
    assert!(output.contains("\"PATH\""), "{output}");
    assert!(
        output.contains("GIVEN_TO_SERVER") && output.contains(GIVEN),
        "{output}"
    );
    for never in [
        "GLASSBOX_TEST_PROVIDER_KEY",
        PROVIDER_KEY,
        "GLASSBOX_TEST_UNRELATED",
        UNRELATED,
        "CARGO_MANIFEST_DIR",
    ] {
        assert!(
            !output.contains(never),
            "{never} reached the server: {output}"
        );
    }
    let listed = get_json_at(&client, format!("{}/api/tools", binary.base)).await;
    let servers = listed["mcp_servers"].as_array().expect("servers").clone();
    let state = |name: &str| servers.iter().find(|s| s["name"] == name).cloned();
    assert_eq!(state("everything").expect("everything")["state"], "running");
    for name in ["broken", "hosted"] {
        let server = state(name).expect("a failed server");
        assert_eq!(server["state"], "failed", "{server}");
        let error = server["error"].as_str().unwrap_or_default();
        assert!(!error.is_empty(), "{server}");
        for never in [
            "no-such-program",
            "command-line-secret",
            "127.0.0.1",
            "path-token",
            "::",
            "os error",
            "Transport",
            "Error",
        ] {
            assert!(!error.contains(never), "{never} in {server}");
        }
    }

    drop(binary);
    let log = std::fs::read_to_string(&log_path).expect("read the log");
    assert!(log.contains("no-such-program"), "the log keeps the detail");
    for never in [PROVIDER_KEY, "path-token-0123456789", "command-line-secret"] {
        assert!(!log.contains(never), "{never} reached the log: {log}");
    }
}

/// A server that is down keeps its tools: a call to one ends with `mcp_unavailable`, not
/// `unknown_tool` (the model saw the tool; the server is what is missing). This server starts
/// once, then fails every restart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_to_a_server_that_is_down_is_mcp_unavailable() {
    let dir = test_dir();
    let mark = dir.path().join("started-once");
    let servers = json!({"flaky": {
        "command": "sh",
        "args": ["-c", "if [ -e \"$MARK\" ]; then exit 1; fi; : > \"$MARK\"; exec node \"$0\" stdio",
                 everything_mcp_server()],
        "env": {"MARK": mark},
    }});
    let server = start_with_servers(dir, servers).await;
    let (_, listed) = server.get_json("/api/tools").await;
    assert_eq!(listed["mcp_servers"][0]["state"], "running", "{listed}");
    let pid = listed["mcp_servers"][0]["pid"].as_u64().expect("a pid");
    let killed = std::process::Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .expect("kill");
    assert!(killed.success());
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let (_, listed) = server.get_json("/api/tools").await;
        if listed["mcp_servers"][0]["state"] == "failed" {
            break;
        }
        assert!(Instant::now() < deadline, "still running: {listed}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    one_call(&server, "echo", "flaky__echo", json!({"message": "hi"}));
    let events = server
        .chat_stream("scenario:echo", "echo")
        .await
        .collect()
        .await;
    let (status, _, kind) = tool_result(&events);
    assert_eq!(status, ToolResultStatus::Error);
    assert_eq!(kind.as_deref(), Some("mcp_unavailable"));
    server.stop().await;
}

/// A call's last progress notification arrives before its result, however close they are: seven
/// calls at once, each with three quick steps, each report all three before its `tool_result`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_last_progress_notification_of_every_call_arrives_before_its_result() {
    let server = start(false).await;
    let call = json!({"name": "everything__trigger-long-running-operation",
                      "args": {"duration": 0.15, "steps": 3}});
    server.scenario(
        "steps",
        json!({"steps": [{"tool_calls": vec![call; 7]}, {"text": "done"}]}),
    );
    for _ in 0..2 {
        let events = server
            .chat_stream("scenario:steps", "go")
            .await
            .collect()
            .await;
        let mut last_progress = std::collections::HashMap::new();
        let mut lost = Vec::new();
        for event in &events {
            match &event.kind {
                EventKind::ToolCallUpdate {
                    call_id,
                    progress: Some(progress),
                    ..
                } => {
                    last_progress.insert(call_id.clone(), progress["progress"].clone());
                }
                EventKind::ToolResult {
                    call_id, status, ..
                } => {
                    assert_eq!(*status, ToolResultStatus::Success);
                    if last_progress.get(call_id) != Some(&json!(3.0)) {
                        lost.push(last_progress.get(call_id).cloned());
                    }
                }
                _ => {}
            }
        }
        assert!(
            lost.is_empty(),
            "{} of 7 calls lost their last report: {lost:?}",
            lost.len()
        );
    }
    server.stop().await;
}

/// A fixture server of `tools/mcp/fixtures`, on the official SDK.
fn fixture(name: &str) -> std::path::PathBuf {
    let server = everything_mcp_server();
    let tools_mcp = server.ancestors().nth(5).expect("tools/mcp").to_path_buf();
    tools_mcp.join("fixtures").join(name)
}

/// Waits until `/api/tools` says the server `name` runs.
async fn until_running(server: &TestServer, name: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (_, listed) = server.get_json("/api/tools").await;
        let state = listed["mcp_servers"]
            .as_array()
            .and_then(|servers| servers.iter().find(|s| s["name"] == name))
            .map(|s| s["state"].clone());
        if state == Some(json!("running")) {
            return listed;
        }
        assert!(Instant::now() < deadline, "{name} is not running: {listed}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// `notifications/tools/list_changed` refreshes a server's tools: a tool it adds while running is
/// listed and can be called, without a restart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_list_change_is_picked_up_without_a_restart() {
    let servers = json!({"changing": {"command": "node", "args": [fixture("list-changed.mjs")]}});
    let server = start_with_servers(test_dir(), servers).await;
    let listed = until_running(&server, "changing").await;
    assert_eq!(listed["mcp_servers"][0]["tools"], 1, "{listed}");
    one_call(&server, "add", "changing__add-tool", json!({}));
    let events = server
        .chat_stream("scenario:add", "add")
        .await
        .collect()
        .await;
    assert_eq!(tool_result(&events).0, ToolResultStatus::Success);

    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let (_, listed) = server.get_json("/api/tools").await;
        if listed["mcp_servers"][0]["tools"] == 2 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the new tool is not listed: {listed}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    one_call(&server, "added", "changing__added", json!({}));
    let events = server
        .chat_stream("scenario:added", "added")
        .await
        .collect()
        .await;
    let (status, output, _) = tool_result(&events);
    assert_eq!(status, ToolResultStatus::Success);
    assert_eq!(output.as_deref(), Some("added works"));
    server.stop().await;
}

/// Start-up does not wait for a server that never answers `initialize`: the server listens at
/// once, says the silent one is starting, and one that answers joins when it is ready.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn start_up_does_not_wait_for_a_server_that_never_answers() {
    let dir = test_dir();
    let file = dir.path().join("providers.json");
    let providers = json!({
        "mcp_servers": {
            "silent": {"command": "sleep", "args": ["600"]},
            "everything": {"command": "node", "args": [everything_mcp_server(), "stdio"]}
        },
        "approval": {"mcp": "auto"},
    });
    std::fs::write(&file, providers.to_string()).expect("write");
    let started = Instant::now();
    let server = TestServer::start_with(dir, |config| config.providers_file = Some(file)).await;
    let waited = started.elapsed();
    assert!(
        waited < Duration::from_secs(5),
        "start-up waited {waited:?}"
    );
    let (status, _) = server.get_json("/healthz").await;
    assert_eq!(status, 200);
    let listed = until_running(&server, "everything").await;
    let silent = listed["mcp_servers"]
        .as_array()
        .and_then(|servers| servers.iter().find(|s| s["name"] == "silent"))
        .cloned();
    assert_eq!(silent.map(|s| s["state"].clone()), Some(json!("starting")));
    echo_works(&server, "joined").await;
    server.stop().await;
}

/// A result larger than the 16 MiB one message may have ends the call at once with an error,
/// instead of being dropped while the call waits for the tool timeout; the server stays usable.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_result_over_16_mib_is_an_error_at_once() {
    let servers = json!({"big": {"command": "node", "args": [fixture("huge-result.mjs")]}});
    let server = start_with_servers(test_dir(), servers).await;
    one_call(&server, "huge", "big__huge", json!({}));
    let started = Instant::now();
    let events = server
        .chat_stream("scenario:huge", "huge")
        .await
        .collect()
        .await;
    let waited = started.elapsed();
    let error = events
        .iter()
        .find_map(|event| match &event.kind {
            EventKind::ToolResult { error, .. } => error.clone(),
            _ => None,
        })
        .expect("an error");
    assert_eq!(error.kind.as_str(), "mcp_error", "{error:?}");
    assert!(error.message.contains("16 MiB"), "{error:?}");
    assert!(
        waited < Duration::from_secs(10),
        "the call waited {waited:?}"
    );
    one_call(&server, "small", "big__small", json!({}));
    let events = server
        .chat_stream("scenario:small", "small")
        .await
        .collect()
        .await;
    let (status, output, _) = tool_result(&events);
    assert_eq!(status, ToolResultStatus::Success);
    assert_eq!(output.as_deref(), Some("small works"));
    server.stop().await;
}
