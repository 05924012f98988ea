//! What clients can hold open: the real binary, raw sockets.

mod common;

use std::time::{Duration, Instant};

use common::*;
use serde_json::json;
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::TcpStream,
};

/// Reads until the server closes the socket; how long that took, or `None` after `limit`.
async fn closed_within(socket: &mut TcpStream, limit: Duration) -> Option<Duration> {
    let start = Instant::now();
    let mut buffer = [0u8; 1024];
    tokio::time::timeout(limit, async {
        loop {
            match socket.read(&mut buffer).await {
                Ok(0) | Err(_) => return start.elapsed(),
                Ok(_) => {}
            }
        }
    })
    .await
    .ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_sends_no_whole_request_head_is_closed_after_the_header_timeout() {
    let dir = test_dir();
    let binary = launch(&dir, &["--header-read-timeout-secs", "1"]).await;
    let address = binary.address.clone();
    let mut idle = TcpStream::connect(&address).await.expect("connect");
    let mut partial = TcpStream::connect(&address).await.expect("connect");
    partial
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
        .await
        .expect("write");
    for socket in [&mut idle, &mut partial] {
        let waited = closed_within(socket, Duration::from_secs(5)).await;
        assert!(waited.is_some(), "the connection was left open");
    }
    // A keep-alive connection that goes quiet after a request is closed too.
    let mut quiet = TcpStream::connect(&address).await.expect("connect");
    quiet
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .expect("write");
    assert!(closed_within(&mut quiet, Duration::from_secs(5))
        .await
        .is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_the_connection_cap_new_clients_wait_until_one_closes() {
    let dir = test_dir();
    let binary = launch(
        &dir,
        &["--max-connections", "4", "--header-read-timeout-secs", "30"],
    )
    .await;
    let address = binary.address.clone();
    tokio::time::sleep(Duration::from_millis(200)).await; // the start-up probe's socket closes
    let mut held = Vec::new();
    for _ in 0..4 {
        held.push(TcpStream::connect(&address).await.expect("connect"));
    }
    let client = reqwest::Client::new();
    let url = format!("http://{address}/healthz");
    let waiting = client
        .get(&url)
        .timeout(Duration::from_secs(1))
        .send()
        .await;
    assert!(
        waiting.is_err(),
        "a fifth connection was served: {waiting:?}"
    );
    drop(held);
    let served = client
        .get(&url)
        .timeout(Duration::from_secs(3))
        .send()
        .await
        .expect("served once the held connections closed");
    assert_eq!(served.status(), 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_ends_every_stream_and_exits_within_seconds_whatever_clients_hold_open() {
    let dir = test_dir();
    write_scenario(
        &dir,
        "slow",
        json!({"delta_interval_ms": 0, "steps": [
            {"text": "Working."},
            {"tool_calls": [{"name": "sleep", "args": {"seconds": 60}}]}
        ]}),
    );
    let mut binary = launch(&dir, &["--shutdown-drain-secs", "2"]).await;
    let address = binary.address.clone();
    let client = reqwest::Client::new();
    let stream = client
        .post(format!("http://{address}/api/chat"))
        .json(&json!({"content": "go", "model": "scenario:slow"}))
        .send()
        .await
        .expect("POST");
    let mut stream = SseStream::new(stream);
    stream
        .until(|event| is_type(event, "tool_call_started"))
        .await;
    let _idle = TcpStream::connect(&address).await.expect("connect");
    let mut partial = TcpStream::connect(&address).await.expect("connect");
    partial
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
        .await
        .expect("write");
    tokio::time::sleep(Duration::from_millis(200)).await;

    let signalled = Instant::now();
    let pid = binary.child.id().expect("pid").to_string();
    std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .expect("kill -TERM");
    let rest = stream.collect().await;
    let terminal: Vec<_> = rest.iter().filter(|e| e.kind.is_terminal()).collect();
    assert_eq!(terminal.len(), 1, "exactly one terminal event");
    assert!(is_type(terminal[0], "message_cancelled"));
    let status = tokio::time::timeout(Duration::from_secs(10), binary.child.wait())
        .await
        .expect("the server exits although clients hold connections open")
        .expect("status");
    assert!(status.success(), "{status}");
    let took = signalled.elapsed();
    assert!(took < Duration::from_secs(8), "exit took {took:?}");
}

/// Writes a request head announcing `length` body bytes, then (after `pause`) `sent` bytes of
/// body; the response's head and body as text, or why it could not be read.
async fn post_announcing(
    address: &str,
    length: usize,
    pause: Duration,
    sent: usize,
) -> Result<String, std::io::Error> {
    let mut socket = TcpStream::connect(address).await?;
    let head = format!(
        "POST /api/chat HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\n\
         Content-Length: {length}\r\n\r\n"
    );
    socket.write_all(head.as_bytes()).await?;
    tokio::time::sleep(pause).await;
    let chunk = vec![b'a'; 64 * 1024];
    let mut written = 0;
    while written < sent {
        let n = chunk.len().min(sent - written);
        socket.write_all(&chunk[..n]).await?;
        written += n;
    }
    let mut response = Vec::new();
    let mut buffer = [0u8; 4096];
    tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            let n = socket.read(&mut buffer).await?;
            if n == 0 {
                return Ok::<_, std::io::Error>(());
            }
            response.extend_from_slice(&buffer[..n]);
            let text = String::from_utf8_lossy(&response);
            if text.contains("\r\n\r\n") && text.trim_end().ends_with('}') {
                return Ok(());
            }
        }
    })
    .await
    .map_err(|_| std::io::Error::other("no response within 10 s"))??;
    Ok(String::from_utf8_lossy(&response).into_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_sends_an_oversized_body_whole_still_reads_its_413() {
    let dir = test_dir();
    let binary = launch(&dir, &[]).await;
    let address = binary.address.clone();
    // A client that writes the whole body before it reads (reqwest, curl without
    // `Expect: 100-continue`): the server reads the body to its end and answers, instead of
    // closing under the client's writes (a broken pipe, no response at all).
    let two_mib = 2 * 1024 * 1024;
    let response = post_announcing(&address, two_mib, Duration::from_millis(300), two_mib)
        .await
        .expect("the whole body written and the response read");
    assert!(response.starts_with("HTTP/1.1 413"), "{response}");
    assert!(response.contains("\"payload_too_large\""), "{response}");
    // Far past the limit the server does not read that much for nobody: it answers at once,
    // before the body, and closes.
    let response = post_announcing(&address, 1 << 30, Duration::ZERO, 0)
        .await
        .expect("the response read");
    assert!(response.starts_with("HTTP/1.1 413"), "{response}");
    assert!(
        response.to_ascii_lowercase().contains("connection: close"),
        "{response}"
    );
}
