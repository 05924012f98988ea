//! Server-rendered pages answer every time: the trace page is a lazy route, rendered on one
//! worker thread and possibly dropped on another; nothing in it may be tied to one thread.

mod common;

use std::sync::{
    atomic::{AtomicBool, Ordering},
    Arc,
};
use std::time::Duration;

use app::protocol::EventKind;
use common::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_trace_page_renders_every_time_on_any_thread() {
    let server = TestServer::start().await;
    let events = server.chat_stream("demo", "hello").await.collect().await;
    let (trace_id, conversation_id) = events
        .iter()
        .find_map(|event| match &event.kind {
            EventKind::MessageStarted {
                trace_id,
                conversation_id,
                ..
            } => Some((trace_id.clone(), conversation_id.clone())),
            _ => None,
        })
        .expect("message_started");
    for path in [format!("/t/{trace_id}"), format!("/c/{conversation_id}")] {
        for attempt in 0..40 {
            let request = server
                .client
                .get(server.url(&path))
                .header("accept", "text/html");
            let response = tokio::time::timeout(Duration::from_secs(10), async {
                let response = request.send().await?;
                let status = response.status();
                response.text().await.map(|body| (status, body))
            })
            .await
            .unwrap_or_else(|_| panic!("{path}: request {attempt} hung"));
            let (status, body) =
                response.unwrap_or_else(|error| panic!("{path}: request {attempt}: {error}"));
            assert_eq!(status, 200, "{path}: request {attempt}");
            assert!(
                body.contains("</html>"),
                "{path}: request {attempt} is a whole page"
            );
        }
    }
}

/// Leptos's route-list generation sets a process-wide flag under which every resource that first
/// polls never loads (leptos_server's `SuppressResourceLoad`): a page rendered while another
/// server of the same process was being built hung for good. Tests build many servers in one
/// process, and a process may hold several (instances, tests); pages must answer throughout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_answer_while_another_server_of_the_process_is_built() {
    let server = TestServer::start().await;
    server.chat_stream("demo", "hello").await.collect().await;
    let done = Arc::new(AtomicBool::new(false));
    // Readers on their own tasks, so that pages are in flight while a build runs on this one.
    let readers: Vec<_> = (0..4)
        .map(|reader| {
            let (client, url, done) = (server.client.clone(), server.url("/"), done.clone());
            tokio::spawn(async move {
                let mut pages = 0;
                while !done.load(Ordering::Relaxed) {
                    let request = client.get(&url).header("accept", "text/html");
                    let answered = tokio::time::timeout(Duration::from_secs(10), async {
                        request.send().await?.text().await
                    })
                    .await
                    .unwrap_or_else(|_| panic!("reader {reader}: page {pages} hung"));
                    assert!(answered.expect("page").contains("</html>"));
                    pages += 1;
                }
                pages
            })
        })
        .collect();
    for _ in 0..40 {
        TestServer::start().await.stop().await;
    }
    done.store(true, Ordering::Relaxed);
    for reader in readers {
        assert!(reader.await.expect("the reader ends") > 0);
    }
    server.stop().await;
}
