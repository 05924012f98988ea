//! Upgrading a database written by an earlier version keeps what it stored: a run left running,
//! with its events checkpointed in the old one-row-per-event table, is recovered after the
//! checkpoint-chunk migration.

mod common;

use app::protocol::{Event, EventKind, Message, MessageStatus};
use common::migrations::old_sqlite;
use glassbox::store::Store;

#[tokio::test]
async fn checkpointed_events_of_the_old_schema_survive_the_upgrade() {
    let dir = tempfile::tempdir().expect("temporary directory");
    // The database as the version before `trace_event_chunks` left it.
    let (url, mut old) = old_sqlite(dir.path(), 20261122000003).await;
    let now = "2026-11-22T10:00:00.000Z";
    let user_body = serde_json::to_string(&Message::user(
        "msg_user".into(),
        "Where is it?".into(),
        now.into(),
    ))
    .expect("JSON");
    let assistant_body = serde_json::to_string(&Message::assistant(
        "msg_1".into(),
        "demo".into(),
        now.into(),
    ))
    .expect("JSON");
    for statement in [
        "INSERT INTO conversations VALUES ('conv_1', 'owner', 'Old', 'demo', ?1, ?1)",
        "INSERT INTO messages VALUES ('msg_user', 'conv_1', 0, 'user', 'complete', ?2, ?1)",
        "INSERT INTO messages VALUES ('msg_1', 'conv_1', 1, 'assistant', 'streaming', ?3, ?1)",
        "INSERT INTO agent_traces (trace_id, run_id, conversation_id, message_id, user_message_id,
             model, started_at, created_at)
         VALUES ('trace_1', 'run_1', 'conv_1', 'msg_1', 'msg_user', 'demo', ?1, ?1)",
    ] {
        sqlx::query(statement)
            .bind(now)
            .bind(&user_body)
            .bind(&assistant_body)
            .execute(&mut old)
            .await
            .expect("insert");
    }
    let kinds = [
        EventKind::MessageStarted {
            conversation_id: "conv_1".into(),
            user_message_id: "msg_user".into(),
            message_id: "msg_1".into(),
            trace_id: "trace_1".into(),
            model: "demo".into(),
        },
        EventKind::TextDelta {
            segment_id: "txt_1".into(),
            sequence_number: Some(0),
            delta: "Kept ".into(),
        },
        EventKind::TextDelta {
            segment_id: "txt_1".into(),
            sequence_number: None,
            delta: "across the upgrade.".into(),
        },
    ];
    let events: Vec<Event> = kinds
        .into_iter()
        .enumerate()
        .map(|(index, kind)| Event {
            seq: index as u64 + 1,
            run_id: "run_1".into(),
            ts: now.into(),
            kind,
        })
        .collect();
    for event in &events {
        sqlx::query("INSERT INTO trace_events (trace_id, seq, event) VALUES ('trace_1', ?, ?)")
            .bind(event.seq as i64)
            .bind(serde_json::to_string(event).expect("JSON"))
            .execute(&mut old)
            .await
            .expect("insert event");
    }
    drop(old);

    let store = Store::connect(&url).await.expect("upgrade");
    assert_eq!(
        store
            .interrupt_leftover_runs("2026-11-22T10:05:00.000Z")
            .await
            .expect("recover"),
        1
    );
    let trace = store
        .get_trace("owner", "trace_1")
        .await
        .expect("read")
        .expect("the trace");
    assert_eq!(trace.status, app::protocol::TraceStatus::Interrupted);
    assert_eq!(
        trace.events[..events.len()],
        events[..],
        "every checkpointed event is kept"
    );
    let last = trace.events.last().expect("events");
    assert_eq!((last.seq, last.kind.type_name()), (4, "message_error"));
    assert!(
        matches!(&last.kind, app::protocol::EventKind::MessageError { code, .. } if *code == app::protocol::ErrorCode::Interrupted),
        "one terminal event says the run was interrupted"
    );
    let conversation = store
        .get_conversation("owner", "conv_1")
        .await
        .expect("read")
        .expect("the conversation");
    let answer = conversation.messages.last().expect("the assistant message");
    assert_eq!(answer.status, MessageStatus::Interrupted);
    assert_eq!(answer.text(), "Kept across the upgrade.");
}

/// The branches migration (issue 36) on a database with conversations: every message keeps its
/// row, follows the one before it, is active, and one position holds one active message only.
#[tokio::test]
async fn the_branches_migration_keeps_every_message_on_the_active_path() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let (url, mut old) = old_sqlite(dir.path(), 20261130000001).await;
    let now = "2026-11-22T10:00:00.000Z";
    sqlx::query("INSERT INTO conversations (id, owner_id, title, model, created_at, updated_at) VALUES ('conv_1', 'owner', 'Old', 'demo', ?1, ?1)")
        .bind(now)
        .execute(&mut old)
        .await
        .expect("conversation");
    for position in 0..4_i64 {
        let id = format!("msg_{position}");
        let message = match position % 2 {
            0 => Message::user(id.clone(), format!("question {position}"), now.into()),
            _ => Message::assistant(id.clone(), "demo".into(), now.into()),
        };
        sqlx::query("INSERT INTO messages (id, conversation_id, position, role, status, body, created_at) VALUES (?1, 'conv_1', ?2, ?3, 'complete', ?4, ?5)")
            .bind(&id)
            .bind(position)
            .bind(if position % 2 == 0 { "user" } else { "assistant" })
            .bind(serde_json::to_string(&message).expect("JSON"))
            .bind(now)
            .execute(&mut old)
            .await
            .expect("message");
    }
    drop(old);

    let store = Store::connect(&url).await.expect("upgrade");
    let pool = store.sqlite().expect("SQLite").pool();
    let rows: Vec<(String, Option<String>, bool)> =
        sqlx::query_as("SELECT id, parent_id, active FROM messages ORDER BY position")
            .fetch_all(pool)
            .await
            .expect("rows");
    let parents: Vec<Option<&str>> = rows.iter().map(|row| row.1.as_deref()).collect();
    assert_eq!(parents, [None, Some("msg_0"), Some("msg_1"), Some("msg_2")]);
    assert!(rows.iter().all(|row| row.2), "every message is active");
    let conversation = store
        .get_conversation("owner", "conv_1")
        .await
        .expect("read")
        .expect("the conversation");
    assert_eq!(conversation.messages.len(), 4);
    assert!(conversation.messages.iter().all(|m| m.siblings.is_none()));
    let insert = |active: bool| {
        format!("INSERT INTO messages (id, conversation_id, position, role, status, body, created_at, parent_id, active)
                 VALUES ('msg_{active}', 'conv_1', 3, 'assistant', 'complete', '{{}}', '{now}', 'msg_2', {})", i32::from(active))
    };
    store
        .execute_as_writer(insert(false))
        .await
        .expect("an inactive version at a taken position");
    assert!(
        store.execute_as_writer(insert(true)).await.is_err(),
        "a second active message at one position is refused"
    );
}
