//! Server-rendered pages answer every time: the trace page is a lazy route, rendered on one
//! worker thread and possibly dropped on another; nothing in it may be tied to one thread.

mod common;

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
