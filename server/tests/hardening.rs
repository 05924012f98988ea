//! Issue 30's edges, tried as an attacker and an unlucky operator would: the real binary on a real
//! socket. Sign-in under a crowd (counted before verified, a bound on verifications in flight, a
//! delay that does not lock the owner out, the client's address only from a configured proxy),
//! slow and oversized bodies, the `next` redirect, options that overflow, another user's ids.

mod common;

use std::{net::IpAddr, time::Duration};

use common::*;
use reqwest::{header, redirect::Policy, Client, StatusCode};
use serde_json::{json, Value};
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::TcpStream,
};

fn site() -> std::sync::Arc<tempfile::TempDir> {
    let dir = test_dir();
    write_scenario(
        &dir,
        "slow",
        json!({"delta_chars": 2, "delta_interval_ms": 100, "steps": [{"text": "a slow answer that takes a while to stream"}]}),
    );
    dir
}

fn client_from(address: &str) -> Client {
    Client::builder()
        .redirect(Policy::none())
        .local_address(address.parse::<IpAddr>().ok())
        .build()
        .expect("client")
}

/// One sign-in: the status and the session cookie, if any.
async fn sign_in(
    client: &Client,
    base: &str,
    name: &str,
    password: &str,
    forwarded_for: Option<&str>,
) -> (StatusCode, Option<String>) {
    let mut request = client
        .post(format!("{base}/auth/login"))
        .header(header::ACCEPT, "text/html")
        .form(&[("name", name), ("password", password)]);
    if let Some(address) = forwarded_for {
        request = request.header("x-forwarded-for", address);
    }
    let response = request.send().await.expect("POST /auth/login");
    let cookie = response
        .headers()
        .get(header::SET_COOKIE)
        .and_then(|v| v.to_str().ok())
        .map(|v| v.split(';').next().unwrap_or_default().to_owned());
    (response.status(), cookie)
}

/// The peak resident memory of a process, in bytes (Linux).
fn peak_memory(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("/proc status");
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|kb| kb.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map(|kb| kb * 1024)
        .expect("VmHWM")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixty_guesses_at_once_are_counted_before_they_are_verified() {
    let dir = site();
    assert!(add_user(&dir, "alice", "alice-password").status.success());
    let server = launch(&dir, &["--auth", "password"]).await;
    let client = client_from("127.0.0.1");
    let guesses = (0..60).map(|n| {
        let (client, base) = (client.clone(), server.base.clone());
        let password = if n == 59 {
            "alice-password".to_owned()
        } else {
            format!("guess-{n}")
        };
        async move { sign_in(&client, &base, "alice", &password, None).await.0 }
    });
    let statuses = futures::future::join_all(guesses).await;
    let verified = statuses
        .iter()
        .filter(|status| **status != StatusCode::TOO_MANY_REQUESTS)
        .count();
    assert!(
        verified <= 5,
        "at most the five free attempts are verified, not {verified}: {statuses:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crowd_of_failing_sign_ins_does_not_take_the_memory_of_the_process() {
    let dir = site();
    let server = launch(&dir, &["--auth", "password"]).await;
    let pid = server.child.id().expect("pid");
    let before = peak_memory(pid);
    // Each from an address and a name of its own, so only the bound on verifications holds them.
    let crowd = (0..150).map(|n| {
        let base = server.base.clone();
        async move {
            let client = client_from(&format!("127.0.1.{}", n + 1));
            sign_in(&client, &base, &format!("user{n}"), "wrong", None)
                .await
                .0
        }
    });
    let statuses = futures::future::join_all(crowd).await;
    let peak = peak_memory(pid);
    assert!(
        statuses
            .iter()
            .all(|s| *s == StatusCode::UNAUTHORIZED || *s == StatusCode::TOO_MANY_REQUESTS),
        "{statuses:?}"
    );
    assert!(
        peak.saturating_sub(before) < 400 << 20,
        "150 sign-ins at once grew the process by {} MiB (each argon2id check takes 19 MiB)",
        peak.saturating_sub(before) >> 20
    );
    let response = reqwest::get(format!("{}/healthz", server.base))
        .await
        .expect("healthz");
    assert_eq!(response.status(), StatusCode::OK);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failures_from_one_place_delay_that_place_but_never_lock_the_owner_out() {
    let dir = site();
    assert!(add_user(&dir, "alice", "alice-password").status.success());
    let server = launch(&dir, &["--auth", "password"]).await;
    let base = server.base.as_str();
    let attacker = client_from("127.0.0.1");
    for _ in 0..5 {
        let (status, _) = sign_in(&attacker, base, "alice", "guess", None).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
    }
    let response = attacker
        .post(format!("{base}/auth/login"))
        .form(&[("name", "alice"), ("password", "alice-password")])
        .send()
        .await
        .expect("POST");
    assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS);
    let retry: u64 = response
        .headers()
        .get(header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok())
        .expect("Retry-After");
    assert!(
        (1..=15).contains(&retry),
        "the first delay is 15 s: {retry}"
    );
    let owner = client_from("127.0.0.2");
    let (status, cookie) = sign_in(&owner, base, "alice", "alice-password", None).await;
    assert_eq!(
        status,
        StatusCode::SEE_OTHER,
        "the owner from elsewhere signs in"
    );
    assert!(cookie.is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_forwarded_address_counts_only_from_a_configured_proxy() {
    let dir = site();
    assert!(add_user(&dir, "alice", "alice-password").status.success());
    // Behind a proxy: every client connects from the proxy's address.
    let server = launch(&dir, &["--auth", "password", "--real-ip-from", "127.0.0.1"]).await;
    let proxy = client_from("127.0.0.1");
    for n in 0..21 {
        let name = format!("nobody{n}");
        let (status, _) = sign_in(&proxy, &server.base, &name, "x", Some("203.0.113.5")).await;
        let expected = if n < 20 {
            StatusCode::UNAUTHORIZED
        } else {
            StatusCode::TOO_MANY_REQUESTS
        };
        assert_eq!(status, expected, "attempt {n} from the guesser's address");
    }
    let (status, _) = sign_in(
        &proxy,
        &server.base,
        "alice",
        "alice-password",
        Some("203.0.113.5, 198.51.100.7"),
    )
    .await;
    assert_eq!(
        status,
        StatusCode::SEE_OTHER,
        "another client behind the same proxy is not locked out by the guesser"
    );
    drop(server);

    // Without --real-ip-from a client cannot choose the address it is counted by.
    let server = launch(&dir, &["--auth", "password"]).await;
    let mut last = StatusCode::OK;
    for n in 0..21 {
        let forwarded = format!("198.51.100.{n}");
        let name = format!("nobody{n}");
        last = sign_in(&proxy, &server.base, &name, "x", Some(&forwarded))
            .await
            .0;
    }
    assert_eq!(last, StatusCode::TOO_MANY_REQUESTS);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_user_headers_name_no_user() {
    let dir = site();
    let server = launch(&dir, &["--auth", "proxy"]).await;
    let response = client_from("127.0.0.1")
        .get(format!("{}/api/conversations", server.base))
        .header("X-Forwarded-User", "mallory")
        .header("X-Forwarded-User", "alice")
        .send()
        .await
        .expect("GET");
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
}

/// Sends `head` on a new connection and reads what comes back within `wait` (empty: nothing).
async fn raw(address: &str, head: &str, body: &[u8]) -> TcpStream {
    let mut tcp = TcpStream::connect(address).await.expect("connect");
    tcp.write_all(head.as_bytes()).await.expect("head");
    tcp.write_all(body).await.expect("body");
    tcp
}

async fn answer_within(tcp: &mut TcpStream, wait: Duration) -> String {
    let mut answer = Vec::new();
    let mut buffer = [0u8; 4096];
    let read = async {
        loop {
            match tcp.read(&mut buffer).await {
                Ok(0) | Err(_) => break,
                Ok(n) => answer.extend_from_slice(&buffer[..n]),
            }
        }
    };
    let _ = tokio::time::timeout(wait, read).await;
    String::from_utf8_lossy(&answer).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_sent_a_byte_at_a_time_is_cut_off_and_its_connection_comes_back() {
    let dir = site();
    let server = launch(
        &dir,
        &[
            "--auth",
            "password",
            "--max-connections",
            "20",
            "--body-read-timeout-secs",
            "2",
        ],
    )
    .await;
    let head = format!(
        "POST /auth/login HTTP/1.1\r\nHost: {}\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 100000\r\n\r\n",
        server.address
    );
    let mut slow = Vec::new();
    for _ in 0..20 {
        slow.push(raw(&server.address, &head, b"n").await);
    }
    let answers = futures::future::join_all(
        slow.iter_mut()
            .map(|tcp| answer_within(tcp, Duration::from_secs(8))),
    )
    .await;
    for answer in &answers {
        assert!(
            answer.starts_with("HTTP/1.1 408"),
            "a slow body is answered 408: {answer:?}"
        );
        assert!(answer.contains("request_timeout"), "{answer}");
    }
    let health = Client::new()
        .get(format!("{}/healthz", server.base))
        .timeout(Duration::from_secs(5))
        .send()
        .await
        .expect("the server answers once the slow bodies are cut off");
    assert_eq!(health.status(), StatusCode::OK);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_announced_length_over_the_limit_is_refused_before_it_is_read() {
    let dir = site();
    let server = launch(&dir, &["--auth", "password"]).await;
    let head = format!(
        "POST /auth/login HTTP/1.1\r\nHost: {}\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 10737418240\r\n\r\n",
        server.address
    );
    let mut tcp = raw(&server.address, &head, b"").await;
    let answer = answer_within(&mut tcp, Duration::from_secs(3)).await;
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer:?}");
    assert!(answer.contains("payload_too_large"), "{answer}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn next_never_leaves_the_site_and_a_newline_is_no_server_error() {
    let dir = site();
    assert!(add_user(&dir, "alice", "alice-password").status.success());
    let server = launch(&dir, &["--auth", "password"]).await;
    for next in [
        "/\t/evil.example",
        "/ /evil.example",
        "/.//evil.example",
        "/x/..//evil.example",
        "/c/x\nSet-Cookie: a=b",
    ] {
        let response = client_from("127.0.0.1")
            .post(format!("{}/auth/login", server.base))
            .form(&[
                ("name", "alice"),
                ("password", "alice-password"),
                ("next", next),
            ])
            .send()
            .await
            .expect("POST");
        assert_eq!(response.status(), StatusCode::SEE_OTHER, "{next:?}");
        assert_eq!(
            response
                .headers()
                .get(header::LOCATION)
                .and_then(|v| v.to_str().ok()),
            Some("/"),
            "{next:?}"
        );
    }
}

#[tokio::test]
async fn options_that_would_overflow_are_refused_at_start() {
    let dir = site();
    for (option, value) in [
        ("--session-days", "100000000000"),
        ("--header-read-timeout-secs", "18446744073709551615"),
        ("--body-read-timeout-secs", "0"),
    ] {
        let output = tokio::process::Command::new(env!("CARGO_BIN_EXE_glassbox"))
            .args(["--addr", "127.0.0.1:0", "--data-dir"])
            .arg(dir.path().join("data"))
            .args([option, value])
            .output()
            .await
            .expect("run glassbox");
        assert!(!output.status.success(), "{option} {value} starts");
        let error = String::from_utf8_lossy(&output.stderr);
        assert!(error.contains(option), "{option}: {error}");
    }
}

/// Starts the slow scenario as `cookie`'s user (none: the local user): what the start answered.
async fn start_slow_run(client: &Client, base: &str, cookie: &str) -> Value {
    client
        .post(format!("{base}/api/chat"))
        .header(header::COOKIE, cookie)
        .header(header::ACCEPT, "application/json")
        .json(&json!({"content": "go", "model": "scenario:slow"}))
        .send()
        .await
        .expect("POST /api/chat")
        .json()
        .await
        .expect("JSON")
}

async fn cookie_of(dir: &tempfile::TempDir, base: &str, name: &str) -> String {
    assert!(add_user(dir, name, &format!("{name}-password"))
        .status
        .success());
    let (status, cookie) = sign_in(
        &client_from("127.0.0.1"),
        base,
        name,
        &format!("{name}-password"),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    cookie.expect("cookie")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_users_conversation_is_not_found_even_while_it_runs() {
    let dir = site();
    let server = launch(&dir, &["--auth", "password"]).await;
    let base = server.base.as_str();
    let alice = cookie_of(&dir, base, "alice").await;
    let bob = cookie_of(&dir, base, "bob").await;
    let client = client_from("127.0.0.1");
    let started = start_slow_run(&client, base, &alice).await;
    let conversation = started["conversation_id"].as_str().expect("id");
    let response = client
        .post(format!("{base}/api/chat"))
        .header(header::COOKIE, &bob)
        .header(header::ACCEPT, "application/json")
        .json(&json!({"content": "mine now", "conversation_id": conversation}))
        .send()
        .await
        .expect("POST");
    assert_eq!(
        response.status(),
        StatusCode::NOT_FOUND,
        "not 409: the run is Alice's"
    );
    let page = client
        .get(format!("{base}/c/{conversation}"))
        .header(header::COOKIE, &bob)
        .header(header::ACCEPT, "text/html")
        .send()
        .await
        .expect("GET");
    assert_eq!(page.status(), StatusCode::NOT_FOUND);
    let body = page.text().await.unwrap_or_default();
    assert!(!body.contains("a slow answer"), "nothing of Alice's");
}

/// A person's cancel reason is stored with the trace apart from its events: it is cleaned as the
/// events' copy is, so a share link or an export reads no credential in it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_reason_is_stored_without_the_credential_in_it() {
    let dir = site();
    let server = launch(&dir, &[]).await;
    let base = server.base.as_str();
    let client = client_from("127.0.0.1");
    let started = start_slow_run(&client, base, "").await;
    let (run, trace) = (
        started["run_id"].as_str().expect("run"),
        started["trace_id"].as_str().expect("trace"),
    );
    const SECRET: &str = "sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz0123";
    let cancelled = client
        .post(format!("{base}/api/runs/{run}/cancel"))
        .json(&json!({"reason": format!("stop: my key {SECRET} leaked")}))
        .send()
        .await
        .expect("cancel");
    assert!(cancelled.status().is_success());
    let mut stored = String::new();
    for _ in 0..100 {
        stored = client
            .get(format!("{base}/api/traces/{trace}"))
            .send()
            .await
            .expect("GET")
            .text()
            .await
            .unwrap_or_default();
        if stored.contains("\"cancelled\"") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(stored.contains("cancellation_reason"), "{stored}");
    assert!(!stored.contains(SECRET), "the stored reason: {stored}");
}
