//! Search in PostgreSQL: pieces in `search_docs`, whose `tsv` column (`to_tsvector('simple',
//! body)`) is under a GIN index, written in the writer's transaction that stores their text. Each
//! term becomes `phraseto_tsquery('simple', $n)` of a bound parameter, all joined by `&&`.

use std::collections::HashMap;

use app::models::SearchHit;
use app::protocol::Message;
use sqlx::PgConnection;

use super::{pg_text, PgStore};
use crate::error::Result;
use crate::store::search::{
    answer_docs, conversation_docs, decodable, plan_reindex, IndexedPiece, SearchDoc, SearchQuery,
    SearchRow, MAX_HITS,
};
use crate::store::{decode_message, StepDocs};

impl PgStore {
    /// See [`crate::store::Store::index_steps`]. Committed as the checkpoints are (a piece lost
    /// with the database's machine is written again at its run's end, or by its recovery).
    pub async fn index_steps(&self, steps: Vec<StepDocs>) -> Result<()> {
        self.writer
            .write_background(move |connection| Box::pin(index_steps_in(connection, steps)))
            .await
    }

    /// See [`crate::store::Store::backfill_search`]. Instances sharing the database take
    /// different conversations (`SKIP LOCKED`).
    pub async fn backfill_search(&self, limit: usize, now: String) -> Result<usize> {
        self.writer
            .write(move |connection| Box::pin(backfill_in(connection, limit, now)))
            .await
    }

    /// The owner's pieces matching `query`, newest (last indexed) first.
    pub async fn search(&self, owner_id: &str, query: &SearchQuery) -> Result<Vec<SearchHit>> {
        let mut sql = String::from(
            "SELECT d.conversation_id, c.title AS conversation_title, d.message_id, d.step, d.kind,
                    d.tool, d.status, d.model, rfc3339_millis(d.created_at) AS created_at, d.body
             FROM search_docs d JOIN conversations c ON c.id = d.conversation_id
             WHERE d.owner_id = $1 AND ($2::text IS NULL OR d.tool = $2)
               AND ($3::text IS NULL OR d.status = $3) AND ($4::text IS NULL OR d.model = $4)
               AND ($6::text IS NULL OR (d.kind = 'feedback' AND d.status = $6))",
        );
        if !query.terms.is_empty() {
            let parts: Vec<String> = (0..query.terms.len())
                .map(|index| format!("phraseto_tsquery('simple', ${})", index + 7))
                .collect();
            sql.push_str(&format!(" AND d.tsv @@ ({})", parts.join(" && ")));
        }
        sql.push_str(" ORDER BY d.id DESC LIMIT $5");
        let mut statement = sqlx::query_as::<_, SearchRow>(&sql)
            .bind(owner_id)
            .bind(query.tool.as_deref().map(pg_text))
            .bind(query.status.as_deref().map(pg_text))
            .bind(query.model.as_deref().map(pg_text))
            .bind(MAX_HITS)
            .bind(query.feedback.as_deref());
        for term in &query.terms {
            statement = statement.bind(pg_text(term));
        }
        let rows = statement.fetch_all(&self.pool).await?;
        Ok(rows.into_iter().map(|row| row.into_hit(query)).collect())
    }
}

/// Adds pieces of one conversation of `owner_id`, in one statement.
pub(super) async fn insert_docs(
    tx: &mut PgConnection,
    owner_id: &str,
    conversation_id: &str,
    docs: &[SearchDoc],
) -> Result<()> {
    if docs.is_empty() {
        return Ok(());
    }
    let query = sqlx::query(
        "INSERT INTO search_docs (owner_id, conversation_id, message_id, step, kind, tool, status, model, created_at, body)
         SELECT $1, $2, m, s, k, t, st, mo, c::timestamptz, b
         FROM unnest($3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[], $10::text[])
             AS x(m, s, k, t, st, mo, c, b)",
    )
    .bind(owner_id)
    .bind(conversation_id);
    bind_docs(query, docs).execute(&mut *tx).await?;
    Ok(())
}

/// Binds `docs` as eight arrays, a column each: message, step, kind, tool, status, model,
/// time, body (what `unnest` of eight `text[]` parameters reads back as rows).
pub(super) fn bind_docs<'q>(
    query: sqlx::query::Query<'q, sqlx::Postgres, sqlx::postgres::PgArguments>,
    docs: &[SearchDoc],
) -> sqlx::query::Query<'q, sqlx::Postgres, sqlx::postgres::PgArguments> {
    let text = |value: &Option<String>| value.as_deref().map(|v| pg_text(v).into_owned());
    let messages: Vec<Option<String>> = docs.iter().map(|d| text(&d.message_id)).collect();
    let steps: Vec<Option<String>> = docs.iter().map(|d| text(&d.step)).collect();
    let kinds: Vec<String> = docs.iter().map(|d| d.kind.to_owned()).collect();
    let tools: Vec<Option<String>> = docs.iter().map(|d| text(&d.tool)).collect();
    let statuses: Vec<Option<String>> = docs.iter().map(|d| text(&d.status)).collect();
    let models: Vec<Option<String>> = docs.iter().map(|d| text(&d.model)).collect();
    let times: Vec<String> = docs.iter().map(|d| d.created_at.clone()).collect();
    let bodies: Vec<String> = docs.iter().map(|d| pg_text(&d.body).into_owned()).collect();
    query
        .bind(messages)
        .bind(steps)
        .bind(kinds)
        .bind(tools)
        .bind(statuses)
        .bind(models)
        .bind(times)
        .bind(bodies)
}

/// Indexes a finished assistant message over what its checkpoints or a retried end wrote
/// ([`plan_reindex`]: unchanged steps keep their rows; its feedback's pieces stay).
pub(super) async fn index_answer(
    tx: &mut PgConnection,
    trace_id: &str,
    message: &Message,
) -> Result<()> {
    let Some((owner_id, conversation_id)) = trace_owner(tx, trace_id).await? else {
        return Ok(());
    };
    let indexed: Vec<IndexedPiece> = sqlx::query_as(
        "SELECT id, kind, step, tool, status, model, body FROM search_docs
         WHERE message_id = $1 AND kind <> 'feedback' ORDER BY id",
    )
    .bind(&message.id)
    .fetch_all(&mut *tx)
    .await?;
    // Compared as stored: PostgreSQL's text holds no NUL.
    let docs = answer_docs(message).into_iter().map(|mut doc| {
        for text in [&mut doc.step, &mut doc.tool, &mut doc.model] {
            *text = text.as_deref().map(|t| pg_text(t).into_owned());
        }
        doc.body = pg_text(&doc.body).into_owned();
        doc
    });
    let plan = plan_reindex(indexed, docs.collect());
    apply_reindex(tx, &plan.delete, plan.update).await?;
    insert_docs(tx, &owner_id, &conversation_id, &plan.insert).await
}

/// The deletes and updates [`plan_reindex`] planned, a statement for each kind at most (each is
/// a round trip the store's one writer connection waits for).
async fn apply_reindex(
    tx: &mut PgConnection,
    delete: &[i64],
    update: Vec<(i64, SearchDoc)>,
) -> Result<()> {
    if !delete.is_empty() {
        sqlx::query("DELETE FROM search_docs WHERE id = ANY($1)")
            .bind(delete)
            .execute(&mut *tx)
            .await?;
    }
    if update.is_empty() {
        return Ok(());
    }
    let mut ids = Vec::with_capacity(update.len());
    let (mut tools, mut statuses, mut models) = (Vec::new(), Vec::new(), Vec::new());
    for (id, doc) in update {
        ids.push(id);
        tools.push(doc.tool);
        statuses.push(doc.status);
        models.push(doc.model);
    }
    // Not the body: the words (`tsv`) and their GIN entries stay as they are.
    sqlx::query(
        "UPDATE search_docs d SET tool = x.t, status = x.s, model = x.m
         FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[]) AS x(i, t, s, m)
         WHERE d.id = x.i",
    )
    .bind(ids)
    .bind(tools)
    .bind(statuses)
    .bind(models)
    .execute(&mut *tx)
    .await?;
    Ok(())
}

/// Indexes the steps that running traces finished since the last checkpoint. A trace closed
/// since (its run's end indexed its message, in a write queued after this one was gathered)
/// gets none: its pieces would be a second copy of its message's. The traces read are locked
/// (`FOR SHARE`) until the commit: another instance closing one of them (taking its run for
/// lost) waits, and its end then sees these pieces.
async fn index_steps_in(tx: &mut PgConnection, steps: Vec<StepDocs>) -> Result<()> {
    let steps: Vec<StepDocs> = steps.into_iter().filter(|s| !s.docs.is_empty()).collect();
    let trace_ids: Vec<&str> = steps.iter().map(|s| s.trace_id.as_str()).collect();
    let owners: Vec<(String, String, String)> = sqlx::query_as(
        "SELECT t.trace_id, c.owner_id, c.id FROM agent_traces t
         JOIN conversations c ON c.id = t.conversation_id
         WHERE t.trace_id = ANY($1) AND t.status = 'running'
         FOR SHARE OF t",
    )
    .bind(&trace_ids)
    .fetch_all(&mut *tx)
    .await?;
    let owners: HashMap<String, (String, String)> = owners
        .into_iter()
        .map(|(trace_id, owner_id, conversation_id)| (trace_id, (owner_id, conversation_id)))
        .collect();
    for StepDocs { trace_id, docs } in &steps {
        if let Some((owner_id, conversation_id)) = owners.get(trace_id) {
            insert_docs(tx, owner_id, conversation_id, docs).await?;
        }
    }
    Ok(())
}

/// The owner and conversation of a trace.
async fn trace_owner(tx: &mut PgConnection, trace_id: &str) -> Result<Option<(String, String)>> {
    Ok(sqlx::query_as(
        "SELECT c.owner_id, c.id FROM agent_traces t JOIN conversations c ON c.id = t.conversation_id
         WHERE t.trace_id = $1",
    )
    .bind(trace_id)
    .fetch_optional(&mut *tx)
    .await?)
}

/// A renamed conversation's title piece.
pub(super) async fn retitle(
    tx: &mut PgConnection,
    conversation_id: &str,
    title: &str,
) -> Result<()> {
    sqlx::query("UPDATE search_docs SET body = $1 WHERE conversation_id = $2 AND kind = 'title'")
        .bind(pg_text(title).as_ref())
        .bind(conversation_id)
        .execute(&mut *tx)
        .await?;
    Ok(())
}

/// Takes up to `limit` conversations off the backfill list, indexing each.
async fn backfill_in(tx: &mut PgConnection, limit: usize, now: String) -> Result<usize> {
    let ids: Vec<String> = sqlx::query_scalar(
        "DELETE FROM search_backfill WHERE conversation_id IN
             (SELECT conversation_id FROM search_backfill LIMIT $1 FOR UPDATE SKIP LOCKED)
         RETURNING conversation_id",
    )
    .bind(limit as i64)
    .fetch_all(&mut *tx)
    .await?;
    for id in &ids {
        reindex_conversation(tx, id, &now).await?;
    }
    Ok(ids.len())
}

/// Replaces a conversation's pieces with those of what it stores (a streaming answer's pieces
/// are its run's to write, and feedback's pieces are the feedback's; both stay).
async fn reindex_conversation(tx: &mut PgConnection, id: &str, now: &str) -> Result<()> {
    let conversation: Option<(String, String, String)> =
        sqlx::query_as("SELECT owner_id, title, model FROM conversations WHERE id = $1 FOR UPDATE")
            .bind(id)
            .fetch_optional(&mut *tx)
            .await?;
    let Some((owner_id, title, model)) = conversation else {
        return Ok(());
    };
    let bodies: Vec<String> = sqlx::query_scalar(
        "SELECT body::text AS body FROM messages WHERE conversation_id = $1 ORDER BY position",
    )
    .bind(id)
    .fetch_all(&mut *tx)
    .await?;
    let messages = decodable(id, bodies.into_iter().map(decode_message));
    sqlx::query(
        "DELETE FROM search_docs WHERE conversation_id = $1 AND kind <> 'feedback' AND (message_id IS NULL OR message_id NOT IN
             (SELECT id FROM messages WHERE conversation_id = $1 AND status = 'streaming'))",
    )
    .bind(id)
    .execute(&mut *tx)
    .await?;
    let docs = conversation_docs(&title, &model, &messages, now);
    insert_docs(tx, &owner_id, id, &docs).await
}
