//! The store's contract, one suite for both backends: on SQLite under plain `cargo test`, on a
//! real PostgreSQL with `GLASSBOX_TEST_STORE=postgres` (see `common::postgres`). Each test talks
//! to `glassbox::store::Store` only, so what it asserts holds whichever database answers.

mod common;

use std::sync::Arc;

use app::protocol::{
    CancelledBy, ErrorCode, Event, EventKind, Message, MessageStatus, TraceStatus, Usage,
};
use common::*;
use glassbox::error::Error;
use glassbox::store::search::{parse_query, SearchDoc};
use glassbox::store::{
    FinishedTrace, ModelTurn, NewRun, StartedRun, StepDocs, Store, StoredUser, TraceShare,
};
use serde_json::json;
use tempfile::TempDir;

const NOW: &str = "2026-11-25T10:00:00.000Z";
const LATER: &str = "2026-11-25T10:00:05.000Z";

/// A store on a database of its own, and the folder that holds it.
async fn store() -> (Store, Arc<TempDir>) {
    let dir = test_dir();
    (open_store(&dir).await, dir)
}

fn new_run(owner: &str, conversation_id: Option<&str>, content: &str, tag: &str) -> NewRun {
    NewRun {
        owner_id: owner.to_owned(),
        conversation_id: conversation_id.map(str::to_owned),
        new_conversation_id: None,
        content: content.to_owned(),
        model: None,
        default_model: "demo".to_owned(),
        run_id: format!("run_{tag}"),
        trace_id: format!("trace_{tag}"),
        user_message_id: format!("user_{tag}"),
        assistant_message_id: format!("answer_{tag}"),
        now: NOW.to_owned(),
        rerun: None,
    }
}

async fn begin(store: &Store, owner: &str, conversation: Option<&str>, tag: &str) -> StartedRun {
    store
        .begin_run(new_run(owner, conversation, "What is in notes.md?", tag))
        .await
        .expect("begin a run")
}

/// Events `first..=last` of `run`, each as `(seq, JSON)`: `message_started` at seq 1, then text.
fn text_events(run: &str, first: u64, last: u64) -> Vec<(u64, Arc<str>)> {
    let tag = run.trim_start_matches("run_");
    (first..=last)
        .map(|seq| {
            let kind = match seq {
                1 => EventKind::MessageStarted {
                    conversation_id: "conversation".to_owned(),
                    user_message_id: format!("user_{tag}"),
                    message_id: format!("answer_{tag}"),
                    trace_id: format!("trace_{tag}"),
                    model: "demo".to_owned(),
                },
                _ => EventKind::TextDelta {
                    segment_id: "text_1".to_owned(),
                    sequence_number: (seq == 2).then_some(0),
                    delta: format!("part {seq}. "),
                },
            };
            let event = Event {
                seq,
                run_id: run.to_owned(),
                ts: NOW.to_owned(),
                kind,
            };
            let json = serde_json::to_string(&event).expect("JSON");
            (seq, Arc::from(json))
        })
        .collect()
}

fn seqs(events: &[(u64, Arc<str>)]) -> Vec<u64> {
    events.iter().map(|(seq, _)| *seq).collect()
}

/// Closes `tag`'s trace with `status`, its answer text and the events given.
async fn finish(store: &Store, tag: &str, status: MessageStatus, events: &[(u64, Arc<str>)]) {
    let mut message = Message::assistant(format!("answer_{tag}"), "demo".into(), NOW.into());
    message.status = status;
    message.usage = Some(Usage {
        input_tokens: 12,
        output_tokens: 30,
        reasoning_tokens: Some(5),
        ..Usage::default()
    });
    let json: Vec<Arc<str>> = events.iter().map(|(_, json)| json.clone()).collect();
    let (cancelled_by, reason, error_code) = match status {
        MessageStatus::Cancelled => (Some(CancelledBy::User), Some("Stopped."), None),
        MessageStatus::Error => (
            None,
            Some("The model failed."),
            Some(&ErrorCode::ProviderError),
        ),
        _ => (None, None, None),
    };
    store
        .finish_run(FinishedTrace {
            trace_id: &format!("trace_{tag}"),
            message: &message,
            completed_at: LATER,
            duration_ms: 5_000,
            cancelled_by,
            reason,
            error_code,
            events: &json,
            model_turns: &[],
        })
        .await
        .expect("finish the run");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn checkpointed_events_read_back_in_order_from_any_seq_and_a_retry_replaces_its_chunk() {
    let (store, _dir) = store().await;
    begin(&store, "owner", None, "a").await;
    store
        .append_events("trace_a", &text_events("run_a", 1, 3))
        .await
        .expect("first checkpoint");
    store
        .append_events("trace_a", &text_events("run_a", 4, 5))
        .await
        .expect("second checkpoint");
    // A retried checkpoint starts at the same seq, with what arrived since.
    store
        .append_events("trace_a", &text_events("run_a", 4, 6))
        .await
        .expect("the retry");

    let (events, ended) = store
        .events_after("trace_a", 2)
        .await
        .expect("read")
        .expect("the trace");
    assert_eq!((seqs(&events), ended), (vec![3, 4, 5, 6], false));
    assert_eq!(
        events,
        text_events("run_a", 3, 6),
        "the same JSON, byte for byte"
    );
    let (events, _) = store
        .events_after("trace_a", 6)
        .await
        .expect("read")
        .expect("trace");
    assert!(events.is_empty(), "nothing after the last seq");
    let trace = store
        .get_trace("owner", "trace_a")
        .await
        .expect("read")
        .expect("trace");
    let stored: Vec<u64> = trace.events.iter().map(|event| event.seq).collect();
    assert_eq!(
        stored,
        vec![1, 2, 3, 4, 5, 6],
        "a running trace reads its checkpoints"
    );

    finish(
        &store,
        "a",
        MessageStatus::Complete,
        &text_events("run_a", 1, 7),
    )
    .await;
    let (events, ended) = store
        .events_after("trace_a", 5)
        .await
        .expect("read")
        .expect("trace");
    assert_eq!(
        (seqs(&events), ended),
        (vec![6, 7], true),
        "a closed trace's events"
    );
    assert!(store
        .events_after("trace_none", 0)
        .await
        .expect("read")
        .is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trace_row_keeps_its_status_totals_and_reasons() {
    let (store, _dir) = store().await;
    for (tag, status) in [
        ("done", MessageStatus::Complete),
        ("stopped", MessageStatus::Cancelled),
        ("failed", MessageStatus::Error),
    ] {
        begin(&store, "owner", None, tag).await;
        let running = store.trace_by_run("owner", &format!("run_{tag}")).await;
        let running = running.expect("read").expect("the trace by its run");
        assert_eq!(
            (running.status, running.completed_at),
            (TraceStatus::Running, None)
        );
        finish(
            &store,
            tag,
            status,
            &text_events(&format!("run_{tag}"), 1, 2),
        )
        .await;
    }
    let done = store
        .get_trace("owner", "trace_done")
        .await
        .expect("read")
        .expect("trace");
    assert_eq!(done.status, TraceStatus::Completed);
    assert_eq!(done.completed_at.as_deref(), Some(LATER));
    assert_eq!(done.started_at, NOW);
    assert_eq!(
        (
            done.input_tokens,
            done.output_tokens,
            done.reasoning_tokens,
            done.total_tokens_used
        ),
        (Some(12), Some(30), Some(5), Some(42))
    );
    assert_eq!(
        (done.total_duration_ms, done.total_tool_calls),
        (Some(5_000), 0)
    );
    assert_eq!((done.cancelled_by, done.error_code), (None, None));
    assert_eq!(
        (done.message_id.as_str(), done.user_message_id.as_str()),
        ("answer_done", "user_done")
    );

    let stopped = store
        .trace_by_run("owner", "run_stopped")
        .await
        .expect("read")
        .expect("trace");
    assert_eq!(stopped.status, TraceStatus::Cancelled);
    assert_eq!(stopped.cancelled_by, Some(CancelledBy::User));
    assert_eq!(stopped.cancellation_reason.as_deref(), Some("Stopped."));

    let failed = store
        .get_trace("owner", "trace_failed")
        .await
        .expect("read")
        .expect("trace");
    assert_eq!(failed.status, TraceStatus::Error);
    assert_eq!(failed.error_code, Some(ErrorCode::ProviderError));
    assert_eq!(failed.events.len(), 2);

    // Another owner's trace is simply not there.
    assert!(store
        .get_trace("someone", "trace_done")
        .await
        .expect("read")
        .is_none());
    assert!(store
        .trace_by_run("someone", "run_done")
        .await
        .expect("read")
        .is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conversations_list_newest_first_and_read_back_with_their_messages_and_active_run() {
    let (store, _dir) = store().await;
    let first = begin(&store, "owner", None, "one").await;
    assert_eq!((first.model.as_str(), first.history.len()), ("demo", 0));
    finish(
        &store,
        "one",
        MessageStatus::Complete,
        &text_events("run_one", 1, 1),
    )
    .await;
    let mut later = new_run("owner", None, "  A second\n question ", "two");
    later.now = LATER.to_owned();
    let second = store.begin_run(later).await.expect("second conversation");

    let listed = store
        .list_conversations("owner", false)
        .await
        .expect("list");
    let ids: Vec<&str> = listed.iter().map(|summary| summary.id.as_str()).collect();
    assert_eq!(
        ids,
        vec![
            second.conversation_id.as_str(),
            first.conversation_id.as_str()
        ]
    );
    assert_eq!(listed[0].title, "A second question");
    assert!(store
        .list_conversations("someone", false)
        .await
        .expect("list")
        .is_empty());

    let busy = store
        .get_conversation("owner", &second.conversation_id)
        .await;
    let busy = busy.expect("read").expect("the conversation");
    let active = busy.active_run.expect("a run is going");
    assert_eq!(
        (active.run_id.as_str(), active.message_id.as_str()),
        ("run_two", "answer_two")
    );
    let refused = store
        .begin_run(new_run(
            "owner",
            Some(&second.conversation_id),
            "more",
            "three",
        ))
        .await;
    assert!(
        matches!(refused, Err(Error::Conflict(_))),
        "one run at a time: {refused:?}"
    );

    let next = begin(&store, "owner", Some(&first.conversation_id), "four").await;
    assert_eq!(next.history.len(), 2, "the earlier question and answer");
    let read = store
        .get_conversation("owner", &first.conversation_id)
        .await;
    let read = read.expect("read").expect("the conversation");
    let statuses: Vec<MessageStatus> = read.messages.iter().map(|m| m.status).collect();
    use MessageStatus::{Complete, Streaming};
    assert_eq!(statuses, vec![Complete, Complete, Complete, Streaming]);
    assert_eq!(read.messages[2].text(), "What is in notes.md?");
    let traces = store
        .traces_for_conversation("owner", &first.conversation_id)
        .await;
    let traces: Vec<String> = traces
        .expect("read")
        .into_iter()
        .map(|t| t.trace_id)
        .collect();
    assert_eq!(traces, vec!["trace_one", "trace_four"]);
    assert!(store
        .get_conversation("someone", &first.conversation_id)
        .await
        .expect("read")
        .is_none());
    let foreign = store.begin_run(new_run(
        "someone",
        Some(&first.conversation_id),
        "x",
        "five",
    ));
    assert!(matches!(foreign.await, Err(Error::NotFound(_))));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_left_running_is_interrupted_with_its_checkpointed_events_kept() {
    let (store, _dir) = store().await;
    begin(&store, "owner", None, "left").await;
    store
        .append_events("trace_left", &text_events("run_left", 1, 4))
        .await
        .expect("checkpoint");
    assert_eq!(
        store.interrupt_leftover_runs(LATER).await.expect("recover"),
        1
    );
    let trace = store
        .get_trace("owner", "trace_left")
        .await
        .expect("read")
        .expect("trace");
    assert_eq!(trace.status, TraceStatus::Interrupted);
    assert_eq!(trace.error_code, Some(ErrorCode::Interrupted));
    let kinds: Vec<&str> = trace
        .events
        .iter()
        .map(|event| event.kind.type_name())
        .collect();
    assert_eq!(
        kinds,
        [
            "message_started",
            "text_delta",
            "text_delta",
            "text_delta",
            "message_error"
        ]
    );
    let conversation = store
        .list_conversations("owner", false)
        .await
        .expect("list");
    let read = store
        .get_conversation("owner", &conversation[0].id)
        .await
        .expect("read");
    let answer = read
        .expect("conversation")
        .messages
        .pop()
        .expect("the answer");
    assert_eq!(answer.status, MessageStatus::Interrupted);
    assert_eq!(answer.text(), "part 2. part 3. part 4. ");
    assert_eq!(
        store.interrupt_leftover_runs(LATER).await.expect("again"),
        0
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_checkpoint_of_many_runs_is_one_transaction() {
    let (store, _dir) = store().await;
    begin(&store, "owner", None, "a").await;
    begin(&store, "owner", None, "b").await;
    let chunk = |trace: &str, run: &str| {
        glassbox::store::CheckpointChunk::new(trace, &text_events(run, 1, 2)).expect("a chunk")
    };
    // The last chunk names no trace: the database refuses it, and the others go with it.
    let refused = store
        .append_chunks(vec![
            chunk("trace_a", "run_a"),
            chunk("trace_b", "run_b"),
            chunk("trace_x", "run_x"),
        ])
        .await;
    assert!(refused.is_err(), "a chunk of no trace was stored");
    for trace in ["trace_a", "trace_b"] {
        let (events, _) = store
            .events_after(trace, 0)
            .await
            .expect("read")
            .expect("trace");
        assert!(
            events.is_empty(),
            "{trace} kept part of a failed checkpoint"
        );
    }
    store
        .append_chunks(vec![chunk("trace_a", "run_a"), chunk("trace_b", "run_b")])
        .await
        .expect("a whole checkpoint");
    for trace in ["trace_a", "trace_b"] {
        let (events, _) = store
            .events_after(trace, 0)
            .await
            .expect("read")
            .expect("trace");
        assert_eq!(seqs(&events), vec![1, 2], "{trace}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn model_turns_read_back_in_order_with_their_format() {
    let (store, _dir) = store().await;
    begin(&store, "owner", None, "m").await;
    let turn = |index: u64, format| ModelTurn {
        model: "gpt-test".to_owned(),
        format,
        after_seq: index * 10,
        request: json!({ "messages": [{ "role": "user", "content": format!("turn {index}") }] }),
        response: json!({ "choices": [] }),
        started_at: NOW.to_owned(),
        completed_at: LATER.to_owned(),
    };
    use glassbox::records::ProviderKind::{Anthropic, OpenaiChat};
    let turns = vec![turn(0, OpenaiChat), turn(1, Anthropic)];
    let message = Message::assistant("answer_m".into(), "gpt-test".into(), NOW.into());
    let events: Vec<Arc<str>> = text_events("run_m", 1, 1)
        .into_iter()
        .map(|e| e.1)
        .collect();
    store
        .finish_run(FinishedTrace {
            trace_id: "trace_m",
            message: &message,
            completed_at: LATER,
            duration_ms: 1,
            cancelled_by: None,
            reason: None,
            error_code: None,
            events: &events,
            model_turns: &turns,
        })
        .await
        .expect("finish");
    let read = store.model_turns("trace_m").await.expect("read");
    let summary: Vec<_> = read
        .iter()
        .map(|t| (t.after_seq, t.format, t.request.clone()))
        .collect();
    let wanted: Vec<_> = turns
        .iter()
        .map(|t| (t.after_seq, t.format, t.request.clone()))
        .collect();
    assert_eq!(summary, wanted);
    assert_eq!(
        (read[1].started_at.as_str(), read[1].completed_at.as_str()),
        (NOW, LATER)
    );
}

/// A row damaged on disk (cut short in SQLite; in PostgreSQL, whose JSONB holds only valid JSON,
/// the wrong shape) reads back as an error that says what it is, never a panic.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_damaged_row_reads_back_as_a_clear_error() {
    let (store, _dir) = store().await;
    let started = begin(&store, "owner", None, "d").await;
    finish(
        &store,
        "d",
        MessageStatus::Complete,
        &text_events("run_d", 1, 2),
    )
    .await;
    let damage = match store.sqlite() {
        Some(_) => r#"'[{"seq":1,'"#,
        None => r#"'{"seq":1}'"#,
    };
    let sql = |table: &str, column: &str, key: &str, id: &str| {
        format!("UPDATE {table} SET {column} = {damage} WHERE {key} = '{id}'")
    };
    let damaged = store.execute_as_writer(sql("agent_traces", "events", "trace_id", "trace_d"));
    assert_eq!(damaged.await.expect("damage the trace"), 1);
    let read = store.get_trace("owner", "trace_d").await;
    assert!(
        matches!(&read, Err(Error::Internal(why)) if why.starts_with("stored events")),
        "{read:?}"
    );
    let damaged = store.execute_as_writer(sql("messages", "body", "id", "answer_d"));
    assert_eq!(damaged.await.expect("damage the message"), 1);
    let read = store
        .get_conversation("owner", &started.conversation_id)
        .await;
    assert!(
        matches!(&read, Err(Error::Internal(why)) if why.starts_with("stored message")),
        "{read:?}"
    );
    assert!(store.ping().await, "the store still answers");
}

/// A trace's status is TEXT in both databases and a `TraceStatus` once read: a value no version
/// wrote (past the CHECK constraint, here set aside on purpose) is a damaged row, said as such.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_trace_status_reads_back_as_a_damaged_row() {
    let (store, _dir) = store().await;
    begin(&store, "owner", None, "s").await;
    let set_aside = match store.sqlite() {
        Some(_) => "PRAGMA ignore_check_constraints = ON",
        None => "ALTER TABLE agent_traces DROP CONSTRAINT agent_traces_status_check",
    };
    store
        .execute_as_writer(set_aside.into())
        .await
        .expect("set the constraint aside");
    let damaged = store
        .execute_as_writer(
            "UPDATE agent_traces SET status = 'exploded' WHERE trace_id = 'trace_s'".into(),
        )
        .await;
    assert_eq!(damaged.expect("damage the trace"), 1);
    let read = store.get_trace("owner", "trace_s").await;
    assert!(
        matches!(&read, Err(Error::Internal(why)) if why.contains("status \"exploded\"")),
        "{read:?}"
    );
}

/// Links keep their `include_history` flag (BOOLEAN in PostgreSQL, INTEGER in SQLite); accounts
/// and sessions read back as stored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn share_links_users_and_sessions_read_back_as_stored() {
    let (store, _dir) = store().await;
    begin(&store, "owner", None, "l").await;
    let link = |token: &str, owner: &str, include_history| TraceShare {
        token: token.to_owned(),
        trace_id: "trace_l".to_owned(),
        owner_id: owner.to_owned(),
        created_at: NOW.to_owned(),
        include_history,
    };
    store
        .add_share(link("tok_1", "owner", true))
        .await
        .expect("a link");
    store
        .add_share(link("tok_2", "owner", false))
        .await
        .expect("a link");
    let foreign = store.add_share(link("tok_3", "someone", false)).await;
    assert!(matches!(foreign, Err(Error::NotFound(_))), "{foreign:?}");
    let shared = store.share("tok_1").await.expect("read").expect("the link");
    assert_eq!(
        (shared.trace_id.as_str(), shared.include_history),
        ("trace_l", true)
    );
    assert_eq!(shared.created_at, NOW);
    let listed = store.shares_of("owner", "trace_l").await.expect("read");
    let listed: Vec<(String, bool)> = listed
        .expect("the owner's trace")
        .into_iter()
        .map(|share| (share.token, share.include_history))
        .collect();
    assert_eq!(
        listed,
        vec![("tok_1".into(), true), ("tok_2".into(), false)]
    );
    assert!(store
        .shares_of("someone", "trace_l")
        .await
        .expect("read")
        .is_none());
    let revoke = |token: &str| store.delete_share("owner".into(), "trace_l".into(), token.into());
    revoke("tok_1").await.expect("revoke");
    assert!(store.share("tok_1").await.expect("read").is_none());
    assert!(matches!(revoke("tok_1").await, Err(Error::NotFound(_))));

    let user = StoredUser {
        user_id: "user_1".into(),
        name: "alice".into(),
        password_hash: "$argon2id$hash".into(),
    };
    store.add_user(user.clone(), NOW.into()).await.expect("add");
    let again = store.add_user(user, NOW.into()).await;
    assert!(matches!(again, Err(Error::Conflict(_))), "{again:?}");
    let read = store
        .user_by_name("alice")
        .await
        .expect("read")
        .expect("alice");
    assert_eq!(
        (read.user_id.as_str(), read.password_hash.as_str()),
        ("user_1", "$argon2id$hash")
    );
    let session = (
        "hash_1".to_owned(),
        "user_1".to_owned(),
        NOW.to_owned(),
        LATER.to_owned(),
    );
    store
        .create_session(session.0, session.1, session.2, session.3)
        .await
        .expect("a session");
    let who = store.session_user("hash_1", NOW).await.expect("read");
    assert_eq!(who, Some(("user_1".to_owned(), "alice".to_owned())));
    assert_eq!(
        store.session_user("hash_1", LATER).await.expect("read"),
        None,
        "expired"
    );
    store
        .delete_session("hash_1".into())
        .await
        .expect("sign out");
    assert_eq!(store.session_user("hash_1", NOW).await.expect("read"), None);
}

/// A damaged checkpoint row of a running trace ends its events there: those before it read back,
/// the rest (which would leave a gap) are dropped and logged, and reading does not fail.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_damaged_checkpoint_keeps_the_events_before_it() {
    let (store, _dir) = store().await;
    begin(&store, "owner", None, "k").await;
    for (first, last) in [(1, 2), (3, 4), (5, 6)] {
        let events = text_events("run_k", first, last);
        store
            .append_events("trace_k", &events)
            .await
            .expect("checkpoint");
    }
    let damage = match store.sqlite() {
        Some(_) => r#"'[{"seq":3,'"#,
        None => r#"'[{"seq":3}]'"#,
    };
    let damaged = store
        .execute_as_writer(format!(
            "UPDATE trace_event_chunks SET events = {damage} WHERE {} AND first_seq = 3",
            common::chunks_of_traces_in("('trace_k')")
        ))
        .await;
    assert_eq!(damaged.expect("damage a chunk"), 1);
    let trace = store
        .get_trace("owner", "trace_k")
        .await
        .expect("read")
        .expect("trace");
    let seqs: Vec<u64> = trace.events.iter().map(|event| event.seq).collect();
    assert_eq!(seqs, vec![1, 2]);
}

/// A trace ends once: a second ending (on PostgreSQL, two instances ending the same orphaned
/// run) leaves the first one's status, events and message as they were.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trace_ends_once() {
    let (store, _dir) = store().await;
    let started = begin(&store, "owner", None, "once").await;
    finish(
        &store,
        "once",
        MessageStatus::Complete,
        &text_events("run_once", 1, 3),
    )
    .await;
    finish(
        &store,
        "once",
        MessageStatus::Error,
        &text_events("run_once", 1, 1),
    )
    .await;
    let trace = store
        .get_trace("owner", "trace_once")
        .await
        .expect("read")
        .expect("trace");
    assert_eq!(
        (trace.status, trace.events.len()),
        (TraceStatus::Completed, 3)
    );
    assert_eq!(trace.error_code, None);
    let read = store
        .get_conversation("owner", &started.conversation_id)
        .await;
    let answer = read.expect("read").expect("conversation").messages.pop();
    assert_eq!(answer.expect("the answer").status, MessageStatus::Complete);
}

/// A checkpoint's indexing write that reaches the writer after its run's end (a run's end does
/// not wait for it) indexes nothing of the closed trace: the end indexed the answer, and a second
/// copy of its steps would be found twice. The running trace's steps are indexed as before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_steps_of_a_trace_closed_before_their_write_are_not_indexed() {
    let (store, _dir) = store().await;
    begin(&store, "ana", None, "open").await;
    begin(&store, "ana", None, "closed").await;
    finish(
        &store,
        "closed",
        MessageStatus::Complete,
        &text_events("run_closed", 1, 2),
    )
    .await;
    let step = |tag: &str| StepDocs {
        trace_id: format!("trace_{tag}"),
        docs: vec![SearchDoc {
            kind: "tool",
            message_id: Some(format!("answer_{tag}")),
            step: Some("call_1".to_owned()),
            tool: Some("grep_search".to_owned()),
            status: Some("success".to_owned()),
            model: None,
            created_at: NOW.to_owned(),
            body: "zanzibar found in notes.md".to_owned(),
        }],
    };
    store
        .index_steps(vec![step("closed"), step("open")])
        .await
        .expect("index the steps");
    let query = parse_query("zanzibar").expect("a query");
    let hits = store.search("ana", &query).await.expect("search");
    let found: Vec<Option<String>> = hits.into_iter().map(|hit| hit.message_id).collect();
    assert_eq!(found, [Some("answer_open".to_owned())]);
}
