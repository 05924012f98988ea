//! A run's writes: its start (conversation, messages, trace in one statement), its checkpoints
//! and its end. Each is one job of the writer.

use sqlx::PgConnection;

use super::search::{bind_docs, index_answer};
use super::{conversations::messages_of, jsonb_text, pg_text, PgStore};
use crate::error::{Error, Result};
use crate::store::branches::{check_target, run_messages, target_id, Placement, Target};
use crate::store::search::{question_doc, title_doc};
use crate::store::{
    decode_message, encode_message, one_run_at_a_time, sql_int, title_for, CheckpointChunk, NewRun,
    OwnedFinish, Rerun, StartedRun,
};

impl PgStore {
    pub async fn begin_run(&self, new: NewRun) -> Result<StartedRun> {
        let instance_id = self.instance_id.to_string();
        self.writer
            .write_relaxed(move |connection| {
                Box::pin(async move { begin_run_in(connection, new, &instance_id).await })
            })
            .await
    }

    pub async fn append_chunks(&self, chunks: Vec<CheckpointChunk>) -> Result<()> {
        self.writer
            .write_relaxed(move |connection| Box::pin(append_chunks_in(connection, chunks)))
            .await
    }

    pub async fn finish_run(&self, owned: OwnedFinish) -> Result<bool> {
        self.writer
            .write(move |connection| Box::pin(finish_run_in(connection, owned)))
            .await
    }
}

async fn begin_run_in(tx: &mut PgConnection, new: NewRun, instance_id: &str) -> Result<StartedRun> {
    let (conversation_id, model, place) = match &new.conversation_id {
        Some(id) => {
            let model = continue_conversation(tx, &new, id).await?;
            (id.clone(), model, place_run(tx, &new, id).await?)
        }
        None => {
            let (id, model) = new.new_conversation();
            (id, model, Placement::first())
        }
    };
    if let Some(from) = place.deactivate_from {
        sqlx::query(
            "UPDATE messages SET active = FALSE WHERE conversation_id = $1 AND active AND position >= $2",
        )
        .bind(&conversation_id)
        .bind(from)
        .execute(&mut *tx)
        .await?;
    }
    let asked = place.question.is_none();
    let (user_message, assistant) = run_messages(&new, &model, place.question);
    let (user_body, assistant_body) = (encode_message(&user_message)?, encode_message(&assistant)?);
    let mut docs = Vec::new();
    if asked {
        docs.push(question_doc(&user_message, &model));
    }
    if new.conversation_id.is_none() {
        docs.push(title_doc(&title_for(&new.content), &new.now));
    }
    // One statement for every row of the start, its search documents included: each statement
    // is a round trip, and the writer makes them one after another (a new conversation took
    // five, with the history it did not have). The foreign keys are checked at the end of the
    // statement, after every row is in.
    bind_docs(
        sqlx::query(BEGIN_RUN_ROWS)
            .bind(&conversation_id)
            .bind(&new.owner_id)
            .bind(pg_text(&title_for(&new.content)).as_ref())
            .bind(pg_text(&model).as_ref())
            .bind(&new.now)
            .bind(new.conversation_id.is_none())
            .bind(&user_message.id)
            .bind(place.position)
            .bind(user_message.status.as_str())
            .bind(jsonb_text(&user_body).as_ref())
            .bind(&assistant.id)
            .bind(assistant.status.as_str())
            .bind(jsonb_text(&assistant_body).as_ref())
            .bind(&new.trace_id)
            .bind(&new.run_id)
            .bind(instance_id)
            .bind(place.parent_id.as_deref())
            .bind(asked),
        &docs,
    )
    .execute(&mut *tx)
    .await?;
    Ok(StartedRun {
        conversation_id,
        model,
        history: place.history,
        user_message,
    })
}

/// A run start's rows: the conversation when it is new ($6), the user's message when it is new
/// ($18; a regenerate answers a stored one) after $17, the assistant's, the trace, and the
/// search documents of the question and the title ($19-$26, as [`bind_docs`] binds them).
const BEGIN_RUN_ROWS: &str = "WITH conversation AS (
        INSERT INTO conversations (id, owner_id, title, model, created_at, updated_at)
        SELECT $1, $2, $3, $4, $5::timestamptz, $5::timestamptz WHERE $6::boolean
    ), question_row AS (
        INSERT INTO messages (id, conversation_id, position, role, status, body, created_at, parent_id, active, selected_at)
        SELECT $7, $1, $8, 'user', $9, $10::jsonb, $5::timestamptz, $17, TRUE, $5::timestamptz
        WHERE $18::boolean
    ), answer_row AS (
        INSERT INTO messages (id, conversation_id, position, role, status, body, created_at, parent_id, active, selected_at)
        VALUES ($11, $1, $8 + 1, 'assistant', $12, $13::jsonb, $5::timestamptz, $7, TRUE, $5::timestamptz)
    ), search_rows AS (
        INSERT INTO search_docs (owner_id, conversation_id, message_id, step, kind, tool, status, model, created_at, body)
        SELECT $2, $1, m, s, k, t, st, mo, c::timestamptz, b
        FROM unnest($19::text[], $20::text[], $21::text[], $22::text[], $23::text[], $24::text[], $25::text[], $26::text[])
            AS x(m, s, k, t, st, mo, c, b)
    )
    INSERT INTO agent_traces (trace_id, run_id, conversation_id, message_id, user_message_id, model, started_at, status, created_at, instance_id)
    VALUES ($14, $15, $1, $11, $7, $4, $5::timestamptz, 'running', $5::timestamptz, $16)";

/// An existing conversation of the user's, with no run going: its model (the request's, when
/// given, is stored). One statement: the update, the model and whether a run is going (on
/// `Err` the writer rolls the job's savepoint back, the update with it).
async fn continue_conversation(tx: &mut PgConnection, new: &NewRun, id: &str) -> Result<String> {
    let (stored, busy): (String, bool) = sqlx::query_as(
        "UPDATE conversations SET model = COALESCE($1, model), updated_at = $2::timestamptz
         WHERE id = $3 AND owner_id = $4
         RETURNING model, EXISTS (
             SELECT 1 FROM agent_traces WHERE conversation_id = $3 AND status = 'running'
         )",
    )
    .bind(new.model.as_deref().map(pg_text).as_deref())
    .bind(&new.now)
    .bind(id)
    .bind(&new.owner_id)
    .fetch_optional(&mut *tx)
    .await?
    .ok_or(Error::NotFound("conversation"))?;
    // Checked here for a clear answer; the unique index on running traces is what holds when two
    // instances start a run in the same conversation at once.
    if busy {
        return Err(one_run_at_a_time());
    }
    Ok(new.model.clone().unwrap_or(stored))
}

/// Whether a run is going in the conversation.
pub(super) async fn conversation_busy(tx: &mut PgConnection, id: &str) -> Result<bool> {
    let busy = sqlx::query(
        "SELECT 1 FROM agent_traces WHERE conversation_id = $1 AND status = 'running' LIMIT 1",
    )
    .bind(id)
    .fetch_optional(&mut *tx)
    .await?;
    Ok(busy.is_some())
}

/// Where the run's messages go in the conversation `id`: after its active path, or in place of
/// the message a regenerate or an edit names.
async fn place_run(tx: &mut PgConnection, new: &NewRun, id: &str) -> Result<Placement> {
    let Some(rerun) = &new.rerun else {
        return Ok(Placement::after(messages_of(tx, id, i64::MAX).await?));
    };
    let target = target_of(tx, id, target_id(rerun))
        .await?
        .ok_or(Error::NotFound("message"))?;
    check_target(rerun, &target)?;
    match rerun {
        Rerun::Regenerate(_) => {
            let body: String = sqlx::query_scalar("SELECT body::text FROM messages WHERE id = $1")
                .bind(target.question_id()?)
                .fetch_one(&mut *tx)
                .await?;
            let history = messages_of(tx, id, target.position - 1).await?;
            Ok(Placement::regenerate(
                &target,
                history,
                decode_message(body)?,
            ))
        }
        Rerun::Edit(_) => {
            let history = messages_of(tx, id, target.position).await?;
            Ok(Placement::edit(target, history))
        }
    }
}

/// A message of the conversation `id`, as a rerun or a switch names it.
pub(super) async fn target_of(
    tx: &mut PgConnection,
    id: &str,
    message_id: &str,
) -> Result<Option<Target>> {
    let row: Option<(i64, String, Option<String>, bool)> = sqlx::query_as(
        "SELECT position, role, parent_id, active FROM messages WHERE id = $1 AND conversation_id = $2",
    )
    .bind(pg_text(message_id).as_ref())
    .bind(id)
    .fetch_optional(&mut *tx)
    .await?;
    Ok(row.map(|(position, role, parent_id, active)| Target {
        position,
        role,
        parent_id,
        active,
    }))
}

async fn append_chunks_in(tx: &mut PgConnection, chunks: Vec<CheckpointChunk>) -> Result<()> {
    // One statement over arrays, whatever the number of rows: the same text each time, so
    // PostgreSQL parses and plans it once per connection (a VALUES list of n rows was a new
    // statement for each n, parsed and planned at every checkpoint).
    let mut columns = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for chunk in &chunks {
        columns.0.push(chunk.trace_id.as_str());
        columns.1.push(sql_int(chunk.first_seq));
        columns.2.push(sql_int(chunk.last_seq));
        columns.3.push(jsonb_text(&chunk.events_json));
    }
    sqlx::query(
        "INSERT INTO trace_event_chunks (trace_id, first_seq, last_seq, events)
         SELECT t, f, l, e::jsonb FROM unnest($1::text[], $2::bigint[], $3::bigint[], $4::text[]) AS x(t, f, l, e)
         ON CONFLICT (trace_id, first_seq) DO UPDATE
         SET last_seq = EXCLUDED.last_seq, events = EXCLUDED.events",
    )
    .bind(columns.0)
    .bind(columns.1)
    .bind(columns.2)
    .bind(columns.3.iter().map(AsRef::as_ref).collect::<Vec<&str>>())
    .execute(&mut *tx)
    .await?;
    // Readers on other instances learn of new events when this transaction commits.
    let (traces, seqs): (Vec<String>, Vec<i64>) = chunks
        .iter()
        .map(|chunk| (chunk.trace_id.clone(), sql_int(chunk.last_seq)))
        .unzip();
    sqlx::query(
        "SELECT pg_notify('glassbox_events', x.t || ' ' || x.s)
         FROM unnest($1::text[], $2::bigint[]) AS x(t, s)",
    )
    .bind(traces)
    .bind(seqs)
    .execute(&mut *tx)
    .await?;
    Ok(())
}

async fn finish_run_in(tx: &mut PgConnection, finished: OwnedFinish) -> Result<bool> {
    let message = &finished.message;
    let usage = message.usage;
    let closed = sqlx::query(
        "UPDATE agent_traces SET events = $1::jsonb, status = $2, completed_at = $3::timestamptz,
             total_tool_calls = $4, input_tokens = $5, output_tokens = $6, reasoning_tokens = $7,
             total_tokens_used = $8, total_duration_ms = $9, cancelled_by = $10,
             cancellation_reason = $11, error_code = $12, cache_read_tokens = $13,
             cache_write_tokens = $14
         WHERE trace_id = $15 AND status = 'running'",
    )
    .bind(jsonb_text(&finished.events_json).as_ref())
    .bind(app::protocol::TraceStatus::from(message.status).as_str())
    .bind(&finished.completed_at)
    .bind(message.tool_calls().count() as i64)
    .bind(usage.map(|u| sql_int(u.input_tokens)))
    .bind(usage.map(|u| sql_int(u.output_tokens)))
    .bind(usage.and_then(|u| u.reasoning_tokens).map(sql_int))
    .bind(usage.map(|u| sql_int(u.input_tokens.saturating_add(u.output_tokens))))
    .bind(sql_int(finished.duration_ms))
    .bind(finished.cancelled_by)
    .bind(finished.reason.as_deref().map(pg_text).as_deref())
    .bind(finished.error_code.as_deref().map(pg_text).as_deref())
    .bind(usage.and_then(|u| u.cache_read_tokens).map(sql_int))
    .bind(usage.and_then(|u| u.cache_write_tokens).map(sql_int))
    .bind(&finished.trace_id)
    .execute(&mut *tx)
    .await?;
    if closed.rows_affected() == 0 {
        // Already closed: another instance took this run for lost and ended it (see the lease).
        tracing::warn!(trace_id = %finished.trace_id, "the trace was already closed; this ending is dropped");
        return Ok(false);
    }
    sqlx::query("SELECT pg_notify('glassbox_events', $1 || ' end')")
        .bind(&finished.trace_id)
        .execute(&mut *tx)
        .await?;
    sqlx::query("DELETE FROM trace_event_chunks WHERE trace_id = $1")
        .bind(&finished.trace_id)
        .execute(&mut *tx)
        .await?;
    let body = encode_message(message)?;
    sqlx::query("UPDATE messages SET status = $1, body = $2::jsonb WHERE id = $3")
        .bind(message.status.as_str())
        .bind(jsonb_text(&body).as_ref())
        .bind(&message.id)
        .execute(&mut *tx)
        .await?;
    index_answer(tx, &finished.trace_id, message).await?;
    insert_model_turns(tx, &finished).await?;
    Ok(true)
}

/// A finished run's model turns; a retried end replaces what an earlier attempt wrote.
async fn insert_model_turns(tx: &mut PgConnection, finished: &OwnedFinish) -> Result<()> {
    for (index, turn) in finished.model_turns.iter().enumerate() {
        sqlx::query(
            "INSERT INTO model_turns (trace_id, turn_index, model, after_seq, request, response, started_at, completed_at, format)
             VALUES ($1, $2, $3, $4, $5::jsonb, $6::jsonb, $7::timestamptz, $8::timestamptz, $9)
             ON CONFLICT (trace_id, turn_index) DO UPDATE SET model = EXCLUDED.model, format = EXCLUDED.format,
                 after_seq = EXCLUDED.after_seq, request = EXCLUDED.request,
                 response = EXCLUDED.response, started_at = EXCLUDED.started_at,
                 completed_at = EXCLUDED.completed_at",
        )
        .bind(&finished.trace_id)
        .bind(index as i64)
        .bind(pg_text(&turn.model).as_ref())
        .bind(sql_int(turn.after_seq))
        .bind(jsonb_text(&turn.request.to_string()).as_ref())
        .bind(jsonb_text(&turn.response.to_string()).as_ref())
        .bind(&turn.started_at)
        .bind(&turn.completed_at)
        .bind(turn.format.as_str())
        .execute(&mut *tx)
        .await?;
    }
    Ok(())
}
