//! Accounts and isolation (`--auth password | proxy | none`): the real binary on a real socket.
//! Two users; every endpoint tried with the other user's ids answers 404 (server functions answer
//! nothing); sign-in throttling; sign-out; per-user run limits; the proxy's header trusted only
//! from its address; no open server on a public address without `--insecure-no-auth`.

mod common;

use std::time::Duration;

use common::*;
use reqwest::{header, redirect::Policy, Client, StatusCode};
use serde_json::{json, Value};

fn site() -> std::sync::Arc<tempfile::TempDir> {
    let dir = test_dir();
    std::fs::write(
        dir.path().join("scenarios/quick.json"),
        json!({"delta_interval_ms": 0, "steps": [{"text": "Alice's private answer"}]}).to_string(),
    )
    .expect("scenario");
    std::fs::write(
        dir.path().join("scenarios/slow.json"),
        json!({"delta_chars": 2, "delta_interval_ms": 100, "steps": [{"text": "a slow answer that takes a while to stream"}]})
            .to_string(),
    )
    .expect("scenario");
    dir
}

fn client() -> Client {
    Client::builder()
        .redirect(Policy::none())
        .build()
        .expect("client")
}

/// Signs in; answers the session cookie (`name=value`).
async fn sign_in(base: &str, name: &str, password: &str) -> Result<String, (StatusCode, String)> {
    let response = client()
        .post(format!("{base}/auth/login"))
        .header(header::ACCEPT, "text/html")
        .form(&[("name", name), ("password", password), ("next", "/c/x")])
        .send()
        .await
        .expect("POST /auth/login");
    let status = response.status();
    if status != StatusCode::SEE_OTHER {
        return Err((status, response.text().await.unwrap_or_default()));
    }
    assert_eq!(
        response
            .headers()
            .get(header::LOCATION)
            .and_then(|v| v.to_str().ok()),
        Some("/c/x")
    );
    let cookie = response
        .headers()
        .get(header::SET_COOKIE)
        .and_then(|v| v.to_str().ok())
        .expect("a session cookie")
        .to_owned();
    assert!(
        cookie.contains("HttpOnly") && cookie.contains("SameSite=Lax"),
        "{cookie}"
    );
    Ok(cookie.split(';').next().unwrap_or_default().to_owned())
}

async fn get(base: &str, cookie: &str, path: &str) -> (StatusCode, String) {
    let response = client()
        .get(format!("{base}{path}"))
        .header(header::COOKIE, cookie)
        .send()
        .await
        .expect("GET");
    (response.status(), response.text().await.unwrap_or_default())
}

async fn post(base: &str, cookie: &str, path: &str, body: Value) -> (StatusCode, Value) {
    let response = client()
        .post(format!("{base}{path}"))
        .header(header::COOKIE, cookie)
        .header(header::ACCEPT, "application/json")
        .json(&body)
        .send()
        .await
        .expect("POST");
    let status = response.status();
    (status, response.json().await.unwrap_or(Value::Null))
}

/// A request of any method with a JSON body, as JSON.
async fn send_json(
    base: &str,
    cookie: &str,
    method: reqwest::Method,
    path: &str,
    body: Value,
) -> (StatusCode, Value) {
    let response = client()
        .request(method, format!("{base}{path}"))
        .header(header::COOKIE, cookie)
        .json(&body)
        .send()
        .await
        .expect("request");
    let status = response.status();
    (status, response.json().await.unwrap_or(Value::Null))
}

/// A server function, as the pages call it (a form-encoded POST).
async fn server_fn(
    base: &str,
    cookie: &str,
    name: &str,
    args: &[(&str, &str)],
) -> (StatusCode, String) {
    let response = client()
        .post(format!("{base}/api/fn/{name}"))
        .header(header::COOKIE, cookie)
        .form(args)
        .send()
        .await
        .expect("server function");
    (response.status(), response.text().await.unwrap_or_default())
}

/// Waits for a run to end (its stream closes).
async fn wait_for_end(base: &str, cookie: &str, run_id: &str) {
    let response = client()
        .get(format!("{base}/api/runs/{run_id}/events"))
        .header(header::COOKIE, cookie)
        .send()
        .await
        .expect("events");
    assert_eq!(response.status(), StatusCode::OK);
    let events = SseStream::new(response).collect().await;
    assert_invariants(&events);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_users_never_see_each_others_conversations_traces_runs_or_exports() {
    let dir = site();
    for name in ["alice", "bob"] {
        let added = add_user(&dir, name, &format!("{name}-password"));
        assert!(added.status.success(), "{added:?}");
    }
    let again = add_user(&dir, "alice", "another-password");
    assert!(!again.status.success(), "a taken name is refused");
    let short = add_user(&dir, "carol", "short");
    assert!(!short.status.success(), "a short password is refused");
    let server = launch(&dir, &["--auth", "password"]).await;
    let base = server.base.as_str();
    signed_out_gets_nothing(base).await;

    let (status, _) = sign_in(base, "alice", "wrong-password")
        .await
        .expect_err("wrong password");
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let alice = sign_in(base, "alice", "alice-password")
        .await
        .expect("alice signs in");
    let bob = sign_in(base, "bob", "bob-password")
        .await
        .expect("bob signs in");

    let (status, started) = post(
        base,
        &alice,
        "/api/chat",
        json!({"content": "hi", "model": "scenario:quick"}),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{started}");
    let field = |name: &str| started[name].as_str().expect("id").to_owned();
    let (conversation, run, trace) = (field("conversation_id"), field("run_id"), field("trace_id"));
    wait_for_end(base, &alice, &run).await;

    // Alice sees her own.
    let (status, body) = get(base, &alice, &format!("/api/conversations/{conversation}")).await;
    assert_eq!(status, StatusCode::OK);
    assert!(body.contains("Alice's private answer"));

    let alices = Alices {
        conversation: &conversation,
        run: &run,
        trace: &trace,
    };
    reads_are_the_owners_only(base, &bob, &alices).await;
    managing_is_the_owners_only(base, &alice, &bob, &conversation).await;
    search_is_the_owners_only(base, &alice, &bob, &conversation).await;
    feedback_is_the_owners_only(base, &alice, &bob, &field("message_id")).await;
    server_functions_and_pages_are_the_owners_only(base, &alice, &bob, &alices).await;
    compare_is_isolated(base, &alice, &bob, &trace).await;
    // Last, as Bob gets a conversation of his own here.
    branching_is_the_owners_only(base, &alice, &bob, &conversation).await;
    signing_out_ends_the_session(base, &bob).await;
}

/// Alice's ids, which Bob tries.
struct Alices<'a> {
    conversation: &'a str,
    run: &'a str,
    trace: &'a str,
}

/// Without a session: 401 JSON from the API, the sign-in page for a browser, health for all.
async fn signed_out_gets_nothing(base: &str) {
    let (status, body) = get(base, "", "/api/conversations").await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert!(body.contains(r#""code":"unauthenticated""#), "{body}");
    let page = client()
        .get(format!("{base}/c/abc"))
        .header(header::ACCEPT, "text/html")
        .send()
        .await
        .expect("page");
    assert_eq!(page.status(), StatusCode::SEE_OTHER);
    assert_eq!(
        page.headers()
            .get(header::LOCATION)
            .and_then(|v| v.to_str().ok()),
        Some("/login?next=/c/abc")
    );
    assert_eq!(get(base, "", "/healthz").await.0, StatusCode::OK);
    let (status, login) = get(base, "", "/login?next=/c/abc").await;
    assert_eq!(status, StatusCode::OK);
    assert!(login.contains(r#"action="/auth/login""#) && login.contains(r#"value="/c/abc""#));
    let (status, _) = server_fn(base, "", "conversations", &[]).await;
    assert!(
        !status.is_success(),
        "server functions need a user too: {status}"
    );
}

/// Bob, with Alice's ids: 404 everywhere, nothing in lists; he cannot stop or write into her run.
async fn reads_are_the_owners_only(base: &str, bob: &str, alices: &Alices<'_>) {
    let Alices {
        conversation,
        run,
        trace,
    } = alices;
    for path in [
        format!("/api/conversations/{conversation}"),
        format!("/api/traces/{trace}"),
        format!("/api/traces/{trace}/inspector.json"),
        format!("/api/traces/{trace}/model-turns"),
        format!("/api/runs/{run}/events"),
        format!("/thoughtflow/{conversation}.json"),
        format!("/thoughtflow/{conversation}.d2"),
    ] {
        let (status, body) = get(base, bob, &path).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{path}: {body}");
        assert!(!body.contains("private answer"), "{path}");
    }
    let (status, body) = post(base, bob, &format!("/api/runs/{run}/cancel"), json!({})).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "cancel: {body}");
    let (status, body) = post(
        base,
        bob,
        "/api/chat",
        json!({"content": "mine now", "conversation_id": conversation, "model": "scenario:quick"}),
    )
    .await;
    assert_eq!(
        status,
        StatusCode::NOT_FOUND,
        "writing into Alice's conversation: {body}"
    );
    let (status, list) = get(base, bob, "/api/conversations").await;
    assert_eq!((status, list.as_str()), (StatusCode::OK, "[]"));
    let (status, list) = get(base, bob, "/api/conversations?archived=true").await;
    assert_eq!((status, list.as_str()), (StatusCode::OK, "[]"));
}

/// Bob can neither rename, archive nor delete Alice's conversation (404), nor delete it among
/// "all of his".
async fn managing_is_the_owners_only(base: &str, alice: &str, bob: &str, conversation: &str) {
    let alices = format!("/api/conversations/{conversation}");
    for (method, body) in [
        (reqwest::Method::PATCH, json!({"title": "Bob's now"})),
        (reqwest::Method::PATCH, json!({"archived": true})),
        (reqwest::Method::DELETE, json!({})),
    ] {
        let (status, answer) = send_json(base, bob, method.clone(), &alices, body).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{method} {alices}: {answer}");
    }
    let (status, answer) = send_json(
        base,
        bob,
        reqwest::Method::DELETE,
        "/api/conversations",
        json!({}),
    )
    .await;
    assert_eq!((status, answer), (StatusCode::OK, json!({"deleted": 0})));
    let (status, body) = get(base, alice, &alices).await;
    assert_eq!(status, StatusCode::OK);
    assert!(body.contains("Alice's private answer") && !body.contains("Bob's now"));
    let (_, list) = get(base, alice, "/api/conversations").await;
    assert!(
        list.contains(conversation),
        "still listed, not archived: {list}"
    );
}

/// Bob finds nothing of Alice's by search, by a word or by filters alone; Alice does.
async fn search_is_the_owners_only(base: &str, alice: &str, bob: &str, conversation: &str) {
    for q in [
        "private",
        "answer",
        "status:complete",
        "model:scenario:quick",
        "\"private answer\"",
    ] {
        let path = format!(
            "/api/search?q={}",
            q.replace(' ', "%20").replace('"', "%22")
        );
        let (status, body) = get(base, bob, &path).await;
        assert_eq!(
            (status, body.as_str()),
            (StatusCode::OK, r#"{"results":[]}"#),
            "{q}"
        );
        let (status, body) = get(base, alice, &path).await;
        assert_eq!(status, StatusCode::OK, "{q}: {body}");
        assert!(body.contains(conversation), "Alice's {q}: {body}");
    }
    assert_eq!(
        get(base, "", "/api/search?q=private").await.0,
        StatusCode::UNAUTHORIZED
    );
}

/// Bob gets nothing of Alice's from the server functions or the pages.
async fn server_functions_and_pages_are_the_owners_only(
    base: &str,
    alice: &str,
    bob: &str,
    alices: &Alices<'_>,
) {
    let (conversation, trace) = (alices.conversation, alices.trace);
    for (name, args) in [
        ("conversations", vec![]),
        ("conversation", vec![("id", conversation)]),
        ("trace", vec![("trace_id", trace)]),
        ("trace-overview", vec![("trace_id", trace)]),
        ("inspector", vec![("trace_id", trace)]),
        ("model_turns", vec![("trace_id", trace)]),
    ] {
        let (status, body) = server_fn(base, bob, name, &args).await;
        assert_eq!(status, StatusCode::OK, "{name}: {body}");
        assert!(
            matches!(body.as_str(), "null" | "[]"),
            "{name} gave Bob: {body}"
        );
    }
    let (_, page) = get(base, bob, &format!("/c/{conversation}")).await;
    assert!(
        !page.contains("private answer"),
        "the page showed Bob Alice's answer"
    );
    let (_, page) = get(base, alice, &format!("/c/{conversation}")).await;
    assert!(
        page.contains("private answer"),
        "the page shows Alice her answer"
    );
    let (_, whoami) = server_fn(base, alice, "whoami", &[]).await;
    assert_eq!(whoami, r#""alice""#);
}

/// Signing out ends the session.
async fn signing_out_ends_the_session(base: &str, bob: &str) {
    let out = client()
        .post(format!("{base}/auth/logout"))
        .header(header::COOKIE, bob)
        .send()
        .await
        .expect("logout");
    assert_eq!(out.status(), StatusCode::SEE_OTHER);
    assert!(out
        .headers()
        .get(header::SET_COOKIE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|cookie| cookie.contains("Max-Age=0")));
    assert_eq!(
        get(base, bob, "/api/conversations").await.0,
        StatusCode::UNAUTHORIZED
    );
}

/// Bob can neither regenerate, edit nor switch a version of Alice's messages, in her
/// conversation or in his own (issue 36): 404, and her conversation is unchanged.
async fn branching_is_the_owners_only(base: &str, alice: &str, bob: &str, conversation: &str) {
    let path = format!("/api/conversations/{conversation}");
    let (_, before) = get(base, alice, &path).await;
    let messages: Value = serde_json::from_str(&before).expect("JSON");
    let (question, answer) = (
        &messages["messages"][0]["id"],
        &messages["messages"][1]["id"],
    );
    let [own, ..] = quick_run(base, bob, None).await;
    for target in [conversation, own.as_str()] {
        for (path, body) in [
            (
                "/api/chat".to_owned(),
                json!({"conversation_id": target, "regenerate": answer}),
            ),
            (
                "/api/chat".to_owned(),
                json!({"conversation_id": target, "edit": question, "content": "Bob's"}),
            ),
            (
                format!("/api/conversations/{target}/branch"),
                json!({"message_id": answer}),
            ),
            (
                format!("/api/conversations/{target}/branch"),
                json!({"message_id": question}),
            ),
        ] {
            let (status, body) = post(base, bob, &path, body).await;
            assert_eq!(status, StatusCode::NOT_FOUND, "{path}: {body}");
        }
    }
    assert_eq!(
        get(base, alice, &path).await.1,
        before,
        "Alice's conversation is unchanged"
    );
}

/// Feedback (issue 36): Bob can neither set, edit nor remove feedback or notes on Alice's answer
/// (404, as for an unknown message), nor find hers by search; Alice's stays as she left it.
async fn feedback_is_the_owners_only(base: &str, alice: &str, bob: &str, message: &str) {
    let feedback = format!("/api/messages/{message}/feedback");
    let note = format!("/api/messages/{message}/steps/any-step/note");
    let body = json!({"rating": "down", "comment": "Alice's private verdict"});
    let (status, answer) =
        send_json(base, alice, reqwest::Method::PUT, &feedback, body.clone()).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    for (method, path, body) in [
        (reqwest::Method::PUT, &feedback, json!({"rating": "up"})),
        (reqwest::Method::DELETE, &feedback, json!({})),
        (reqwest::Method::PUT, &note, json!({"comment": "Bob's"})),
        (reqwest::Method::DELETE, &note, json!({})),
    ] {
        let (status, answer) = send_json(base, bob, method.clone(), path, body).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{method} {path}: {answer}");
        assert_eq!(answer["code"], "not_found");
    }
    for q in ["feedback:down", "verdict"] {
        let path = format!("/api/search?q={q}");
        let (status, body) = get(base, bob, &path).await;
        assert_eq!(
            (status, body.as_str()),
            (StatusCode::OK, r#"{"results":[]}"#)
        );
        let (_, body) = get(base, alice, &path).await;
        assert!(body.contains(message), "Alice's {q}: {body}");
    }
    let (_, conversation) = get(base, bob, "/api/conversations").await;
    assert!(!conversation.contains("verdict"));
    let (status, body) = get(base, alice, "/api/conversations").await;
    assert_eq!(status, StatusCode::OK);
    assert!(!body.contains("verdict"), "the list carries no feedback");
    let (status, answer) =
        send_json(base, alice, reqwest::Method::DELETE, &feedback, json!({})).await;
    assert_eq!((status, answer), (StatusCode::NO_CONTENT, Value::Null));
}

/// Comparing runs (issue 36): Bob compares nothing of Alice's, whichever side her trace is on,
/// through the API, the server functions or the page; nor does "Compare with…" list her runs.
async fn compare_is_isolated(base: &str, alice: &str, bob: &str, alices_trace: &str) {
    let [_, _, bobs_trace] = quick_run(base, bob, None).await;
    for (a, b) in [
        (alices_trace, bobs_trace.as_str()),
        (&bobs_trace, alices_trace),
    ] {
        let path = format!("/api/compare/{a}/{b}");
        let (status, body) = get(base, bob, &path).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{path}: {body}");
        assert!(!body.contains("private answer"), "{path}");
        let response = client()
            .get(format!("{base}/compare/{a}/{b}"))
            .header(header::COOKIE, bob)
            .header(header::ACCEPT, "text/html")
            .send()
            .await
            .expect("the compare page");
        let status = response.status();
        let page = response.text().await.unwrap_or_default();
        assert_eq!(status, StatusCode::NOT_FOUND, "the page {path}");
        assert!(
            !page.contains("private answer") && page.contains("does not exist"),
            "{page}"
        );
        let (status, body) = server_fn(base, bob, "compare", &[("a", a), ("b", b)]).await;
        assert_eq!((status, body.as_str()), (StatusCode::OK, "null"), "compare");
    }
    let (_, choices) = server_fn(base, bob, "compare-choices", &[("trace_id", alices_trace)]).await;
    assert_eq!(choices, "[]", "Alice's trace's choices, for Bob");
    let (_, choices) = server_fn(base, bob, "compare-choices", &[("trace_id", &bobs_trace)]).await;
    assert_eq!(choices, "[]", "Bob's choices list none of Alice's runs");
    let (_, choices) = server_fn(
        base,
        alice,
        "compare-choices",
        &[("trace_id", alices_trace)],
    )
    .await;
    assert_eq!(choices, "[]", "nor Alice's Bob's");
    let (status, body) = get(
        base,
        alice,
        &format!("/api/compare/{alices_trace}/{bobs_trace}"),
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND, "Alice with Bob's: {body}");
    assert_eq!(
        get(
            base,
            "",
            &format!("/api/compare/{alices_trace}/{bobs_trace}")
        )
        .await
        .0,
        StatusCode::UNAUTHORIZED
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_sign_ins_are_throttled_and_a_user_has_a_run_limit() {
    let dir = site();
    assert!(add_user(&dir, "alice", "alice-password").status.success());
    let server = launch(&dir, &["--auth", "password", "--user-max-runs", "2"]).await;
    let base = server.base.as_str();
    for _ in 0..5 {
        let (status, _) = sign_in(base, "alice", "guess").await.expect_err("wrong");
        assert_eq!(status, StatusCode::UNAUTHORIZED);
    }
    let response = client()
        .post(format!("{base}/auth/login"))
        .header(header::ACCEPT, "text/html")
        .form(&[("name", "alice"), ("password", "alice-password")])
        .send()
        .await
        .expect("POST");
    assert_eq!(
        response.status(),
        StatusCode::TOO_MANY_REQUESTS,
        "even the right password waits"
    );
    assert!(response.headers().contains_key(header::RETRY_AFTER));
    let page = response.text().await.unwrap_or_default();
    assert!(
        page.contains("too many failed sign-ins"),
        "the form says why: {page}"
    );
    drop(server);

    // A fresh process forgets the failures; the run limit is per user.
    let server = launch(&dir, &["--auth", "password", "--user-max-runs", "2"]).await;
    let base = server.base.as_str();
    let alice = sign_in(base, "alice", "alice-password")
        .await
        .expect("sign in");
    let chat = json!({"content": "go", "model": "scenario:slow"});
    let mut runs = Vec::new();
    for _ in 0..2 {
        let (status, started) = post(base, &alice, "/api/chat", chat.clone()).await;
        assert_eq!(status, StatusCode::CREATED, "{started}");
        runs.push(started["run_id"].as_str().expect("run").to_owned());
    }
    let third = client()
        .post(format!("{base}/api/chat"))
        .header(header::COOKIE, &alice)
        .header(header::ACCEPT, "application/json")
        .json(&chat)
        .send()
        .await
        .expect("POST");
    assert_eq!(third.status(), StatusCode::TOO_MANY_REQUESTS);
    assert!(third.headers().contains_key(header::RETRY_AFTER));
    let body: Value = third.json().await.expect("JSON");
    assert_eq!(body["code"], "user_limit");
    for run in &runs {
        let (status, _) = post(base, &alice, &format!("/api/runs/{run}/cancel"), json!({})).await;
        assert!(status.is_success(), "cancel: {status}");
        wait_for_end(base, &alice, run).await;
    }
    // The slots come back once the runs are stored.
    let mut started = StatusCode::TOO_MANY_REQUESTS;
    for _ in 0..50 {
        started = post(base, &alice, "/api/chat", chat.clone()).await.0;
        if started == StatusCode::CREATED {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(started, StatusCode::CREATED);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_proxy_names_the_user_only_from_a_trusted_address() {
    let dir = site();
    let server = launch(&dir, &["--auth", "proxy"]).await;
    let base = server.base.as_str();
    let as_user = |name: &'static str| {
        client()
            .get(format!("{base}/api/conversations"))
            .header("X-Forwarded-User", name)
    };
    assert_eq!(
        as_user("dana").send().await.expect("GET").status(),
        StatusCode::OK
    );
    assert_eq!(
        get(base, "", "/api/conversations").await.0,
        StatusCode::UNAUTHORIZED,
        "no header, no user"
    );
    drop(server);
    let server = launch(&dir, &["--auth", "proxy", "--trusted-proxies", "10.9.8.7"]).await;
    let response = client()
        .get(format!("{}/api/conversations", server.base))
        .header("X-Forwarded-User", "dana")
        .send()
        .await
        .expect("GET");
    assert_eq!(
        response.status(),
        StatusCode::UNAUTHORIZED,
        "the header from an untrusted address"
    );
}

#[tokio::test]
async fn without_auth_the_server_refuses_a_public_address() {
    let dir = site();
    let output = tokio::process::Command::new(env!("CARGO_BIN_EXE_glassbox"))
        .args(["--addr", "0.0.0.0:0", "--data-dir"])
        .arg(dir.path().join("data"))
        .arg("--site-root")
        .arg(dir.path().join("site"))
        .output()
        .await
        .expect("run glassbox");
    assert!(!output.status.success());
    let said = String::from_utf8_lossy(&output.stderr);
    assert!(said.contains("--insecure-no-auth"), "{said}");
}

/// A request with the owner's session, or none, on any method.
async fn send(
    base: &str,
    cookie: &str,
    method: reqwest::Method,
    path: &str,
) -> (StatusCode, String) {
    let response = client()
        .request(method, format!("{base}{path}"))
        .header(header::COOKIE, cookie)
        .header(header::ACCEPT, "application/json")
        .send()
        .await
        .expect("request");
    (response.status(), response.text().await.unwrap_or_default())
}

/// Revokes the share link `token` of `trace` as `cookie`: the answer's status.
async fn revoke(base: &str, cookie: &str, trace: &str, token: &str) -> StatusCode {
    let path = format!("/api/traces/{trace}/shares/{token}");
    send(base, cookie, reqwest::Method::DELETE, &path).await.0
}

/// Starts a `scenario:quick` run for `cookie` and waits for its end: (conversation, run, trace).
async fn quick_run(base: &str, cookie: &str, conversation: Option<&str>) -> [String; 3] {
    let mut chat = json!({"content": "hi", "model": "scenario:quick"});
    if let Some(id) = conversation {
        chat["conversation_id"] = json!(id);
    }
    let (status, started) = post(base, cookie, "/api/chat", chat).await;
    assert_eq!(status, StatusCode::CREATED, "{started}");
    let field = |name: &str| started[name].as_str().expect("id").to_owned();
    let ids = [field("conversation_id"), field("run_id"), field("trace_id")];
    wait_for_end(base, cookie, &ids[1]).await;
    ids
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_share_link_reads_its_one_trace_without_an_account_until_revoked() {
    let dir = site();
    for name in ["alice", "bob"] {
        assert!(add_user(&dir, name, &format!("{name}-password"))
            .status
            .success());
    }
    let server = launch(&dir, &["--auth", "password"]).await;
    let base = server.base.as_str();
    let alice = sign_in(base, "alice", "alice-password")
        .await
        .expect("alice");
    let bob = sign_in(base, "bob", "bob-password").await.expect("bob");
    let [conversation, run, trace] = quick_run(base, &alice, None).await;
    let [_, other_run, other_trace] = quick_run(base, &alice, Some(&conversation)).await;
    let token = only_the_owner_shares(base, &alice, &bob, &trace).await;
    let q = format!("share={token}");
    a_link_reads_its_trace(base, &run, &trace, &token).await;
    let shared = Shared {
        conversation: &conversation,
        run: &run,
        trace: &trace,
        token: &token,
    };
    a_link_reads_nothing_else(base, &shared, &other_run, &other_trace).await;
    // A signed-in stranger with the link reads it too (the link, not the account, decides).
    let (status, body) = get(base, &bob, &format!("/api/traces/{trace}?{q}")).await;
    assert_eq!(status, StatusCode::OK, "{body}");

    // Revoked: every read with it is 404, and the page says so.
    let status = revoke(base, &alice, &trace, &token).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    for path in [
        format!("/api/traces/{trace}?{q}"),
        format!("/api/traces/{trace}/inspector.json?{q}"),
        format!("/api/runs/{run}/events?{q}"),
    ] {
        let (status, body) = get(base, "", &path).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{path}: {body}");
    }
    let response = client()
        .get(format!("{base}/t/{trace}?{q}"))
        .header(header::ACCEPT, "text/html")
        .send()
        .await
        .expect("GET");
    assert_eq!(
        response.status(),
        StatusCode::NOT_FOUND,
        "a revoked link's page"
    );
    let page = response.text().await.unwrap_or_default();
    assert!(!page.contains("private answer"), "{page}");
    assert!(page.contains("revoked"), "the page says why: {page}");
    let (_, body) = server_fn(
        base,
        "",
        "trace",
        &[("trace_id", trace.as_str()), ("share", token.as_str())],
    )
    .await;
    assert_eq!(body, "null");
    let (status, list) = get(base, &alice, &format!("/api/traces/{trace}/shares")).await;
    assert_eq!((status, list.as_str()), (StatusCode::OK, "[]"));
    // The owner still reads it.
    assert_eq!(
        get(base, &alice, &format!("/api/traces/{trace}")).await.0,
        StatusCode::OK
    );
}

/// A trace shared by a link, and the link's token.
struct Shared<'a> {
    conversation: &'a str,
    run: &'a str,
    trace: &'a str,
    token: &'a str,
}

/// Only the owner makes, lists and revokes links: Alice's new link's token.
async fn only_the_owner_shares(base: &str, alice: &str, bob: &str, trace: &str) -> String {
    let (status, body) = send(
        base,
        "",
        reqwest::Method::POST,
        &format!("/api/traces/{trace}/shares"),
    )
    .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{body}");
    let (status, body) = send(
        base,
        bob,
        reqwest::Method::POST,
        &format!("/api/traces/{trace}/shares"),
    )
    .await;
    assert_eq!(
        status,
        StatusCode::NOT_FOUND,
        "Bob shares Alice's trace: {body}"
    );
    let (status, body) = send(
        base,
        alice,
        reqwest::Method::POST,
        &format!("/api/traces/{trace}/shares"),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let link: Value = serde_json::from_str(&body).expect("JSON");
    let token = link["token"].as_str().expect("token").to_owned();
    assert!(token.len() >= 32, "an unguessable token: {token}");
    assert_eq!(link["path"], format!("/t/{trace}?share={token}"));
    let (status, list) = get(base, alice, &format!("/api/traces/{trace}/shares")).await;
    assert_eq!(status, StatusCode::OK);
    assert!(list.contains(&token), "{list}");
    let (status, list) = get(base, bob, &format!("/api/traces/{trace}/shares")).await;
    assert_eq!(
        status,
        StatusCode::NOT_FOUND,
        "Bob lists Alice's links: {list}"
    );
    let status = revoke(base, bob, trace, &token).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "Bob revokes Alice's link");

    token
}

/// Without an account, the link reads its trace: the page, the trace, its stream, its exports.
async fn a_link_reads_its_trace(base: &str, run: &str, trace: &str, token: &str) {
    let q = format!("share={token}");
    for path in [
        format!("/t/{trace}?{q}"),
        format!("/api/traces/{trace}?{q}"),
        format!("/api/runs/{run}/events?{q}"),
    ] {
        let (status, body) = get(base, "", &path).await;
        assert_eq!(status, StatusCode::OK, "{path}: {body}");
        assert!(body.contains("private answer"), "{path}: {body}");
    }
    // (A scenario run makes no model requests and no tool calls: these are empty lists.)
    for path in [
        format!("/api/traces/{trace}/model-turns?{q}"),
        format!("/api/traces/{trace}/inspector.json?{q}"),
    ] {
        let (status, body) = get(base, "", &path).await;
        assert_eq!((status, body.as_str()), (StatusCode::OK, "[]"), "{path}");
    }
    for (name, id) in [
        ("trace", trace),
        ("trace-overview", trace),
        ("inspector", trace),
    ] {
        let (status, body) = server_fn(base, "", name, &[("trace_id", id), ("share", token)]).await;
        assert_eq!(status, StatusCode::OK, "{name}: {body}");
        assert!(
            body.contains("private answer") || name == "inspector",
            "{name}: {body}"
        );
    }
}

/// A link reads nothing else: not the other trace of the same conversation, not the
/// conversation, not a write, not a list.
async fn a_link_reads_nothing_else(
    base: &str,
    shared: &Shared<'_>,
    other_run: &str,
    other_trace: &str,
) {
    let Shared {
        conversation,
        run,
        trace,
        token,
    } = *shared;
    let q = format!("share={token}");
    for path in [
        format!("/t/{other_trace}?{q}"),
        format!("/api/traces/{other_trace}?{q}"),
        format!("/api/traces/{other_trace}/inspector.json?{q}"),
        format!("/api/traces/{other_trace}/model-turns?{q}"),
        format!("/api/runs/{other_run}/events?{q}"),
    ] {
        let (status, body) = get(base, "", &path).await;
        assert!(!body.contains("private answer"), "{path}: {body}");
        if path.starts_with("/api/") {
            assert_eq!(status, StatusCode::NOT_FOUND, "{path}: {body}");
        }
    }
    for (name, args) in [
        ("trace", vec![("trace_id", other_trace), ("share", token)]),
        (
            "inspector",
            vec![("trace_id", other_trace), ("share", token)],
        ),
        ("trace", vec![("trace_id", trace)]),
    ] {
        let (status, body) = server_fn(base, "", name, &args).await;
        assert!(!body.contains("private answer"), "{name} {args:?}: {body}");
        assert!(
            status == StatusCode::OK || status == StatusCode::UNAUTHORIZED,
            "{name}: {status}"
        );
    }
    for path in [
        format!("/api/conversations/{conversation}?{q}"),
        format!("/api/conversations?{q}"),
        format!("/thoughtflow/{conversation}.json?{q}"),
        format!("/api/traces/{trace}/shares?{q}"),
    ] {
        let (status, body) = get(base, "", &path).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{path}: {body}");
    }
    let (status, _) = send(
        base,
        "",
        reqwest::Method::POST,
        &format!("/api/runs/{run}/cancel?{q}"),
    )
    .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let (status, _) = get(base, "", &format!("/c/{conversation}?{q}")).await;
    assert_ne!(status, StatusCode::OK, "the conversation page");
}

/// Revoking a link ends the streams opened through it (within the 2 s recheck), while the owner's
/// own stream of the same run goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn revoking_a_share_link_ends_the_streams_opened_through_it() {
    let server = common::TestServer::start().await;
    server.scenario(
        "slow",
        json!({"steps": [{"text": "Working. "}, {"tool_calls": [{"name": "sleep", "args": {"seconds": 20}}]}, {"text": "Done."}]}),
    );
    let started = server.start_run("scenario:slow", "go").await;
    let run = started["run_id"].as_str().expect("run").to_owned();
    let trace = started["trace_id"].as_str().expect("trace").to_owned();
    let (status, link) = server
        .post_json(&format!("/api/traces/{trace}/shares"), json!({}))
        .await;
    assert_eq!(status, 201, "{link}");
    let token = link["token"].as_str().expect("token").to_owned();

    let shared = client()
        .get(server.url(&format!("/api/runs/{run}/events?share={token}")))
        .send()
        .await
        .expect("open the shared stream");
    assert_eq!(shared.status(), StatusCode::OK);
    let mut shared = common::SseStream::new(shared);
    shared
        .until(|event| common::is_type(event, "tool_call_started"))
        .await;
    let mut own = server.subscribe(&run, None).await;

    let response = client()
        .delete(server.url(&format!("/api/traces/{trace}/shares/{token}")))
        .send()
        .await
        .expect("revoke");
    assert_eq!(response.status(), StatusCode::NO_CONTENT);
    let revoked = std::time::Instant::now();
    let rest = tokio::time::timeout(Duration::from_secs(5), shared.collect())
        .await
        .expect("the shared stream ended");
    assert!(
        rest.iter()
            .all(|event| !common::is_type(event, "message_final")),
        "it ended before the run did"
    );
    assert!(revoked.elapsed() < Duration::from_secs(4));
    let reopened = client()
        .get(server.url(&format!("/api/runs/{run}/events?share={token}")))
        .send()
        .await
        .expect("reopen");
    assert_eq!(reopened.status(), StatusCode::NOT_FOUND);
    let still = tokio::time::timeout(Duration::from_millis(500), own.next_event()).await;
    assert!(
        !matches!(still, Ok(None)),
        "the owner's stream goes on: {still:?}"
    );
    server.stop().await;
}

/// Each trace read answers the same through the REST API, the pages' server functions and the
/// trace page, for every reader: the owner, a stranger, nobody, a share link (alone or with a
/// stranger's session), an unknown link, and the link once revoked; for the shared trace, another
/// trace of the same owner and a trace that does not exist. Both paths call `reads`; this catches
/// them parting.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trace_reads_the_same_through_the_api_and_the_pages() {
    let dir = site();
    write_scenario(
        &dir,
        "tooled",
        json!({"delta_interval_ms": 0, "steps": [
            {"tool_calls": [{"name": "grep_search", "args": {"query": "TODO"}}]},
            {"text": "Alice's private answer"}
        ]}),
    );
    for name in ["alice", "bob"] {
        assert!(add_user(&dir, name, &format!("{name}-password"))
            .status
            .success());
    }
    let server = launch(&dir, &["--auth", "password"]).await;
    let base = server.base.as_str();
    let alice = sign_in(base, "alice", "alice-password")
        .await
        .expect("alice");
    let bob = sign_in(base, "bob", "bob-password").await.expect("bob");
    let (status, started) = post(
        base,
        &alice,
        "/api/chat",
        json!({"content": "hi", "model": "scenario:tooled"}),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{started}");
    let (run, trace) = (
        started["run_id"].as_str().expect("run").to_owned(),
        started["trace_id"].as_str().expect("trace").to_owned(),
    );
    wait_for_end(base, &alice, &run).await;
    let [_, _, other_trace] = quick_run(base, &alice, None).await;
    let path = format!("/api/traces/{trace}/shares");
    let (status, link) = send(base, &alice, reqwest::Method::POST, &path).await;
    assert_eq!(status, StatusCode::CREATED, "{link}");
    let link: Value = serde_json::from_str(&link).expect("JSON");
    let token = link["token"].as_str().expect("token").to_owned();

    let readers = [
        ("the owner", alice.as_str(), None),
        ("a stranger", bob.as_str(), None),
        ("nobody", "", None),
        ("the link", "", Some(token.as_str())),
        (
            "a stranger with the link",
            bob.as_str(),
            Some(token.as_str()),
        ),
        ("an unknown link", "", Some("no-such-link")),
    ];
    let mut answered = 0;
    for (who, cookie, share) in readers {
        for id in [&trace, &other_trace, &"nope".to_owned()] {
            answered += same_through_both(base, who, cookie, id, share).await;
        }
    }
    assert_eq!(
        answered, 4,
        "the owner reads two traces; the link one, whoever holds it"
    );
    let status = revoke(base, &alice, &trace, &token).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    for cookie in ["", bob.as_str()] {
        let answered =
            same_through_both(base, "a revoked link", cookie, &trace, Some(&token)).await;
        assert_eq!(answered, 0, "a revoked link reads nothing");
    }
}

/// Reads the trace `id` as `cookie` with `share` through the REST API, the server functions and the
/// page, asserts they agree, and answers how many paths read it (0 or 1).
async fn same_through_both(
    base: &str,
    who: &str,
    cookie: &str,
    id: &str,
    share: Option<&str>,
) -> usize {
    let query = share
        .map(|token| format!("?share={token}"))
        .unwrap_or_default();
    let mut args = vec![("trace_id", id)];
    args.extend(share.map(|token| ("share", token)));
    let mut read = 0;
    for (suffix, function) in [
        ("", "trace"),
        ("/inspector.json", "inspector"),
        ("/model-turns", "model_turns"),
    ] {
        let (status, rest) = get(base, cookie, &format!("/api/traces/{id}{suffix}{query}")).await;
        let (page_status, page) = server_fn(base, cookie, function, &args).await;
        let cut = |body: &str| body.chars().take(200).collect::<String>();
        let what = format!(
            "{who} reads {id} through {function}: REST {status} {}; page {page_status} {}",
            cut(&rest),
            cut(&page)
        );
        match status {
            StatusCode::OK => {
                assert_eq!(page_status, StatusCode::OK, "{what}");
                let (rest, page): (Value, Value) = (
                    serde_json::from_str(&rest).expect("JSON"),
                    serde_json::from_str(&page).expect("JSON"),
                );
                if function == "model_turns" {
                    let models = |turns: &Value| -> Vec<Value> {
                        turns
                            .as_array()
                            .expect("a list")
                            .iter()
                            .map(|turn| turn["model"].clone())
                            .collect()
                    };
                    assert_eq!(models(&rest), models(&page), "{what}");
                } else {
                    assert_eq!(rest, page, "{what}");
                }
                if function == "inspector" && id != "nope" && share.is_some() {
                    assert!(!rest.as_array().expect("a list").is_empty(), "{what}");
                }
                read += usize::from(function == "trace");
            }
            StatusCode::NOT_FOUND => {
                assert_eq!(page_status, StatusCode::OK, "{what}");
                assert!(matches!(page.as_str(), "null" | "[]"), "{what}");
            }
            other => assert_eq!(page_status, other, "{what}"),
        }
    }
    let response = client()
        .get(format!("{base}/t/{id}{query}"))
        .header(header::ACCEPT, "text/html")
        .header(header::COOKIE, cookie)
        .send()
        .await
        .expect("the trace page");
    let page_status = response.status();
    let html = response.text().await.unwrap_or_default();
    assert_eq!(
        page_status == StatusCode::OK && html.contains("private answer"),
        read == 1,
        "{who} reads the page of {id}: {page_status}"
    );
    read
}
