//! A run's writes: its start (conversation, messages, trace), its checkpoints and its end. Each
//! is one job of the writer, run on the writer's own thread.

use app::protocol::Message;
use rusqlite::{params, Connection, OptionalExtension};

use super::search::{index_answer, insert_docs};
use super::SqliteStore;
use crate::error::{Error, Result};
use crate::store::branches::{check_target, run_messages, target_id, Placement, Target};
use crate::store::search::{question_doc, title_doc};
use crate::store::{
    decode_message, encode_message, one_run_at_a_time, sql_int, title_for, CheckpointChunk, NewRun,
    OwnedFinish, Rerun, StartedRun,
};

impl SqliteStore {
    /// Stores the user's message, creates the conversation when absent, and opens the run's trace
    /// and its assistant message (status `streaming`), all in one write. A conversation with a
    /// run still going refuses another (409): the check and the insert are one transaction.
    pub async fn begin_run(&self, new: NewRun) -> Result<StartedRun> {
        self.write(move |connection| begin_run_in(connection, new))
            .await
    }

    /// Appends checkpoint chunks of many running traces in one write, one row each. A retried
    /// checkpoint starts at the same seq and replaces its row.
    pub async fn append_chunks(&self, chunks: Vec<CheckpointChunk>) -> Result<()> {
        if chunks.is_empty() {
            return Ok(());
        }
        self.write(move |connection| append_chunks_in(connection, chunks))
            .await
    }

    /// Closes a trace: its final status and totals, every event as one JSON array, and the
    /// assistant message as the reducer built it. The checkpoint rows go in the same transaction.
    pub async fn finish_run(&self, owned: OwnedFinish) -> Result<bool> {
        self.write(move |connection| finish_run_in(connection, owned))
            .await
    }
}

fn begin_run_in(tx: &Connection, new: NewRun) -> Result<StartedRun> {
    let (conversation_id, model, place) = conversation_of_run(tx, &new)?;
    if let Some(from) = place.deactivate_from {
        tx.prepare_cached(
            "UPDATE messages SET active = 0 WHERE conversation_id = ? AND active AND position >= ?",
        )?
        .execute(params![conversation_id, from])?;
    }
    let asked = place.question.is_none();
    let (user_message, assistant) = run_messages(&new, &model, place.question);
    let rows = [
        (&user_message, place.position, place.parent_id.clone()),
        (
            &assistant,
            place.position + 1,
            Some(user_message.id.clone()),
        ),
    ];
    // A regenerate's question is stored already: only its new answer goes in.
    let rows = rows.into_iter().skip(usize::from(!asked));
    insert_messages(tx, &conversation_id, rows, &new.now)?;
    insert_trace(tx, &new, &conversation_id, &user_message.id, &model)?;
    if asked {
        let question = question_doc(&user_message, &model);
        insert_docs(tx, &new.owner_id, &conversation_id, &[question])?;
    }
    Ok(StartedRun {
        conversation_id,
        model,
        history: place.history,
        user_message,
    })
}

/// The conversation a run goes in (the one it names, or a new one with its title indexed): its
/// id, its model, and where the run's messages go in it.
fn conversation_of_run(tx: &Connection, new: &NewRun) -> Result<(String, String, Placement)> {
    match &new.conversation_id {
        Some(id) => {
            let model = continue_conversation(tx, new, id)?;
            Ok((id.clone(), model, place_run(tx, new, id)?))
        }
        None => {
            let (id, model) = new_conversation(tx, new)?;
            let title = title_doc(&title_for(&new.content), &new.now);
            insert_docs(tx, &new.owner_id, &id, &[title])?;
            Ok((id, model, Placement::first()))
        }
    }
}

/// Inserts a run's messages on the conversation's active path: each with its position and parent.
fn insert_messages<'a>(
    tx: &Connection,
    conversation_id: &str,
    rows: impl Iterator<Item = (&'a Message, i64, Option<String>)>,
    now: &str,
) -> Result<()> {
    let mut insert_message = tx.prepare_cached(
        "INSERT INTO messages (id, conversation_id, position, role, status, body, created_at, parent_id, active, selected_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, 1, ?)",
    )?;
    for (message, position, parent_id) in rows {
        insert_message.execute(params![
            message.id,
            conversation_id,
            position,
            role_name(message),
            message.status.as_str(),
            encode_message(message)?,
            message.created_at,
            parent_id,
            now
        ])?;
    }
    Ok(())
}

/// Opens the run's trace, `running`, on its assistant message.
fn insert_trace(
    tx: &Connection,
    new: &NewRun,
    conversation_id: &str,
    user_message_id: &str,
    model: &str,
) -> Result<()> {
    tx.prepare_cached(
        "INSERT INTO agent_traces (trace_id, run_id, conversation_id, message_id, user_message_id, model, started_at, status, created_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, 'running', ?)",
    )?
    .execute(params![
        new.trace_id,
        new.run_id,
        conversation_id,
        new.assistant_message_id,
        user_message_id,
        model,
        new.now,
        new.now
    ])?;
    Ok(())
}

/// A new conversation of the user's, titled by the question: its id and model.
fn new_conversation(tx: &Connection, new: &NewRun) -> Result<(String, String)> {
    let (id, model) = new.new_conversation();
    tx.prepare_cached("INSERT INTO conversations (id, owner_id, title, model, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)")?
        .execute(params![
            id,
            new.owner_id,
            title_for(&new.content),
            model,
            new.now,
            new.now
        ])?;
    Ok((id, model))
}

/// An existing conversation of the user's, with no run going: its model (the request's, when
/// given, is stored).
fn continue_conversation(tx: &Connection, new: &NewRun, id: &str) -> Result<String> {
    let stored: String = tx
        .prepare_cached("SELECT model FROM conversations WHERE id = ? AND owner_id = ?")?
        .query_row(params![id, new.owner_id], |row| row.get(0))
        .optional()?
        .ok_or(Error::NotFound("conversation"))?;
    if conversation_busy(tx, id)? {
        return Err(one_run_at_a_time());
    }
    let model = new.model.clone().unwrap_or(stored);
    tx.prepare_cached("UPDATE conversations SET model = ?, updated_at = ? WHERE id = ?")?
        .execute(params![model, new.now, id])?;
    Ok(model)
}

/// Whether a run is going in the conversation.
pub(super) fn conversation_busy(tx: &Connection, id: &str) -> Result<bool> {
    Ok(tx
        .prepare_cached(
            "SELECT 1 FROM agent_traces WHERE conversation_id = ? AND status = 'running' LIMIT 1",
        )?
        .exists(params![id])?)
}

/// Where the run's messages go in the conversation `id`: after its active path, or in place of
/// the message a regenerate or an edit names.
fn place_run(tx: &Connection, new: &NewRun, id: &str) -> Result<Placement> {
    let Some(rerun) = &new.rerun else {
        return Ok(Placement::after(active_path(tx, id, i64::MAX)?));
    };
    let target = target_of(tx, id, target_id(rerun))?.ok_or(Error::NotFound("message"))?;
    check_target(rerun, &target)?;
    match rerun {
        Rerun::Regenerate(_) => {
            let body: String = tx
                .prepare_cached("SELECT body FROM messages WHERE id = ?")?
                .query_row(params![target.question_id()?], |row| row.get(0))?;
            let history = active_path(tx, id, target.position - 1)?;
            Ok(Placement::regenerate(
                &target,
                history,
                decode_message(body)?,
            ))
        }
        Rerun::Edit(_) => {
            let history = active_path(tx, id, target.position)?;
            Ok(Placement::edit(target, history))
        }
    }
}

/// The active path of a conversation before `before` (a position), in order.
fn active_path(tx: &Connection, id: &str, before: i64) -> Result<Vec<Message>> {
    let mut statement = tx.prepare_cached(
        "SELECT body FROM messages WHERE conversation_id = ? AND active AND position < ? ORDER BY position",
    )?;
    let bodies = statement.query_map(params![id, before], |row| row.get::<_, String>(0))?;
    bodies.map(|body| decode_message(body?)).collect()
}

/// A message of the conversation `id`, as a rerun or a switch names it.
pub(super) fn target_of(tx: &Connection, id: &str, message_id: &str) -> Result<Option<Target>> {
    Ok(tx
        .prepare_cached(
            "SELECT position, role, parent_id, active FROM messages WHERE id = ? AND conversation_id = ?",
        )?
        .query_row(params![message_id, id], |row| {
            Ok(Target {
                position: row.get(0)?,
                role: row.get(1)?,
                parent_id: row.get(2)?,
                active: row.get(3)?,
            })
        })
        .optional()?)
}

fn role_name(message: &Message) -> &'static str {
    match message.role {
        app::protocol::Role::User => "user",
        app::protocol::Role::Assistant => "assistant",
    }
}

fn append_chunks_in(tx: &Connection, chunks: Vec<CheckpointChunk>) -> Result<()> {
    // One prepared statement, run per row: on the writer's thread a row costs microseconds. A
    // chunk names its trace by the trace's `chunk_key` (migration 20261201000001).
    let mut insert = tx.prepare_cached(
        "INSERT OR REPLACE INTO trace_event_chunks (trace_key, first_seq, last_seq, events)
         VALUES ((SELECT chunk_key FROM agent_traces WHERE trace_id = ?), ?, ?, ?)",
    )?;
    for chunk in &chunks {
        insert.execute(params![
            chunk.trace_id,
            sql_int(chunk.first_seq),
            sql_int(chunk.last_seq),
            chunk.events_json
        ])?;
    }
    Ok(())
}

fn finish_run_in(tx: &Connection, finished: OwnedFinish) -> Result<bool> {
    let message = &finished.message;
    let usage = message.usage;
    let closed = tx
        .prepare_cached(
            "UPDATE agent_traces SET events = ?, status = ?, completed_at = ?, total_tool_calls = ?,
             input_tokens = ?, output_tokens = ?, reasoning_tokens = ?, total_tokens_used = ?,
             total_duration_ms = ?, cancelled_by = ?, cancellation_reason = ?, error_code = ?,
             cache_read_tokens = ?, cache_write_tokens = ?
         WHERE trace_id = ? AND status = 'running'",
        )?
    .execute(params![
        finished.events_json,
        app::protocol::TraceStatus::from(message.status).as_str(),
        finished.completed_at,
        message.tool_calls().count() as i64,
        usage.map(|u| sql_int(u.input_tokens)),
        usage.map(|u| sql_int(u.output_tokens)),
        usage.and_then(|u| u.reasoning_tokens).map(sql_int),
        usage.map(|u| sql_int(u.input_tokens.saturating_add(u.output_tokens))),
        sql_int(finished.duration_ms),
        finished.cancelled_by,
        finished.reason,
        finished.error_code,
        usage.and_then(|u| u.cache_read_tokens).map(sql_int),
        usage.and_then(|u| u.cache_write_tokens).map(sql_int),
        finished.trace_id
    ])?;
    if closed == 0 {
        // Already closed: a trace ends once, as on PostgreSQL (where another instance may have
        // ended it); its stored end stays.
        tracing::warn!(trace_id = %finished.trace_id, "the trace was already closed; this ending is dropped");
        return Ok(false);
    }
    tx.prepare_cached(
        "DELETE FROM trace_event_chunks WHERE trace_key = (SELECT chunk_key FROM agent_traces WHERE trace_id = ?)",
    )?
        .execute(params![finished.trace_id])?;
    update_message(tx, message)?;
    index_answer(tx, &finished.trace_id, message)?;
    let mut insert_turn = tx.prepare_cached(
        "INSERT OR REPLACE INTO model_turns (trace_id, turn_index, model, format, after_seq, request, response, started_at, completed_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
    )?;
    for (index, turn) in finished.model_turns.iter().enumerate() {
        insert_turn.execute(params![
            finished.trace_id,
            index as i64,
            turn.model,
            turn.format.as_str(),
            sql_int(turn.after_seq),
            turn.request.to_string(),
            turn.response.to_string(),
            turn.started_at,
            turn.completed_at
        ])?;
    }
    Ok(true)
}

fn update_message(tx: &Connection, message: &Message) -> Result<()> {
    tx.prepare_cached("UPDATE messages SET status = ?, body = ? WHERE id = ?")?
        .execute(params![
            message.status.as_str(),
            encode_message(message)?,
            message.id
        ])?;
    Ok(())
}
