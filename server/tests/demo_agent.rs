//! The built-in demo agent through the HTTP API, on a small workspace made by the test.

mod common;

use app::protocol::{EventKind, Segment, ToolCallStatus};
use common::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_demo_agent_searches_in_parallel_reads_the_best_hit_and_cites_it() {
    let dir = test_dir();
    let workspace = dir.path().join("workspace");
    std::fs::create_dir_all(workspace.join("src")).expect("mkdir");
    std::fs::write(
        workspace.join("src/checkpoint.rs"),
        "// Checkpoints run every 250 ms.\nfn checkpoint() {}\n",
    )
    .expect("write");
    std::fs::write(workspace.join("README.md"), "Nothing relevant here.\n").expect("write");
    let server = TestServer::start_in(dir).await;

    let events = server
        .chat_stream("demo", "How does the checkpoint work?")
        .await
        .collect()
        .await;
    assert_invariants(&events);
    let EventKind::MessageFinal { message, .. } = &events.last().expect("events").kind else {
        panic!("{:?}", events.last())
    };

    // Plans aloud first.
    assert!(
        matches!(message.segments.first(), Some(Segment::Reasoning(r)) if r.combined_text.contains("'checkpoint'"))
    );
    // Searches (grep per term + list_dir) start together, before any of them ends.
    let first_result = events
        .iter()
        .position(|e| is_type(e, "tool_result"))
        .expect("results");
    let started_together: Vec<String> = events[..first_result]
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ToolCallStarted { name, .. } => Some(name.clone()),
            _ => None,
        })
        .collect();
    assert!(
        started_together.contains(&"grep_search".to_owned())
            && started_together.contains(&"list_dir".to_owned()),
        "{started_together:?}"
    );
    // Then reads the best hit.
    let read = message
        .tool_calls()
        .find(|c| c.name == "read_file")
        .expect("read the best hit");
    assert_eq!(read.args["path"], "src/checkpoint.rs");
    assert!(message
        .tool_calls()
        .all(|c| c.status == ToolCallStatus::Success));
    // And cites file and line, labelled as the demo agent.
    let answer = message.text();
    assert!(answer.contains("Demo agent"), "{answer}");
    assert!(
        answer.contains("`src/checkpoint.rs`") && answer.contains("line 1"),
        "{answer}"
    );
    server.stop().await;
}
