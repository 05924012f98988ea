//! Search over one's conversations (issue 35), the part both backends share: the query's syntax,
//! the pieces of a message that are indexed, and a hit's snippet with its marks. Each backend
//! keeps the pieces in `search_docs` (SQLite: indexed by FTS5's `search_fts`; PostgreSQL: a
//! `tsvector` column under a GIN index), writes them in the transaction that stores their text and
//! reads them with its own full-text match, built from quoted terms, never from the raw query.

use app::models::SearchHit;
use app::protocol::{Message, MessageStatus, Role, Segment, ToolCallStatus};

use crate::error::{Error, Result};

/// The longest query, in bytes; a longer one is 422 `invalid_field`.
pub const MAX_QUERY_BYTES: usize = 1000;
/// The most words and phrases in one query.
pub const MAX_TERMS: usize = 16;
/// The most hits one search answers.
pub const MAX_HITS: i64 = 50;
/// The most characters of one piece that are indexed (a tool's long output: its start).
pub const MAX_INDEXED_CHARS: usize = 32 * 1024;
/// About how many characters a snippet shows.
const SNIPPET_CHARS: usize = 160;

/// A parsed query: words and phrases (all must match; a word is a phrase of one), and filters.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct SearchQuery {
    pub terms: Vec<String>,
    pub tool: Option<String>,
    pub status: Option<String>,
    pub model: Option<String>,
    /// `feedback:up`, `feedback:down` or `feedback:note`: the messages and steps with that
    /// feedback (issue 36).
    pub feedback: Option<String>,
}

impl SearchQuery {
    /// An FTS5 MATCH expression: each term a quoted string (its quotes doubled), all required.
    /// `None` when the query has only filters.
    pub fn fts5_match(&self) -> Option<String> {
        if self.terms.is_empty() {
            return None;
        }
        let quoted: Vec<String> = self
            .terms
            .iter()
            .map(|term| format!("\"{}\"", term.replace('"', "\"\"")))
            .collect();
        Some(quoted.join(" "))
    }
}

/// Parses `raw`: words, `"phrases"` (an unclosed quote runs to the end), and the filters
/// `tool:NAME`, `status:STATUS`, `model:NAME`, `feedback:up|down|note`. Terms with no letter or digit are dropped. Empty,
/// too long, or nothing left to search for: 422.
pub fn parse_query(raw: &str) -> Result<SearchQuery> {
    if raw.len() > MAX_QUERY_BYTES {
        return Err(Error::InvalidField(format!(
            "the query is longer than {MAX_QUERY_BYTES} bytes"
        )));
    }
    let mut query = SearchQuery::default();
    for (token, quoted) in tokens(raw) {
        if !quoted && apply_filter(&mut query, &token) {
            continue;
        }
        let words: Vec<&str> = token.split_whitespace().collect();
        if words
            .iter()
            .any(|word| word.chars().any(char::is_alphanumeric))
        {
            query.terms.push(words.join(" "));
        }
    }
    if query.terms.len() > MAX_TERMS {
        return Err(Error::InvalidField(format!(
            "a query has at most {MAX_TERMS} words and phrases"
        )));
    }
    if let Some(rating) = &query.feedback {
        if !["up", "down", "note"].contains(&rating.as_str()) {
            return Err(Error::InvalidField(
                "feedback: takes up, down or note".into(),
            ));
        }
    }
    let filtered = query.tool.is_some()
        || query.status.is_some()
        || query.model.is_some()
        || query.feedback.is_some();
    if query.terms.is_empty() && !filtered {
        return Err(Error::InvalidField(
            "the query has nothing to search for: give a word, a \"phrase\" or a filter".into(),
        ));
    }
    Ok(query)
}

/// The query's tokens: `(text, quoted)`; whitespace separates, quotes make one token.
fn tokens(raw: &str) -> Vec<(String, bool)> {
    let mut out = Vec::new();
    let (mut current, mut in_quotes) = (String::new(), false);
    for c in raw.chars() {
        if c == '"' {
            if in_quotes || !current.is_empty() {
                out.push((std::mem::take(&mut current), in_quotes));
            }
            in_quotes = !in_quotes;
        } else if c.is_whitespace() && !in_quotes {
            if !current.is_empty() {
                out.push((std::mem::take(&mut current), false));
            }
        } else if !c.is_control() {
            current.push(c);
        }
    }
    if !current.is_empty() {
        out.push((current, in_quotes));
    }
    out
}

/// Takes `token` as a filter when it is one (`tool:`, `status:`, `model:`, `feedback:` with a
/// value; `feedback:`'s lower-cased).
fn apply_filter(query: &mut SearchQuery, token: &str) -> bool {
    let Some((key, value)) = token.split_once(':') else {
        return false;
    };
    let slot = match key.to_ascii_lowercase().as_str() {
        "tool" => &mut query.tool,
        "status" => &mut query.status,
        "model" => &mut query.model,
        "feedback" => &mut query.feedback,
        _ => return false,
    };
    if !value.is_empty() {
        *slot = Some(match key.eq_ignore_ascii_case("feedback") {
            true => value.to_ascii_lowercase(),
            false => value.to_owned(),
        });
    }
    true
}

/// One indexed piece of a conversation.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchDoc {
    pub kind: &'static str,
    pub message_id: Option<String>,
    pub step: Option<String>,
    pub tool: Option<String>,
    pub status: Option<String>,
    pub model: Option<String>,
    pub created_at: String,
    pub body: String,
}

impl SearchDoc {
    fn of(kind: &'static str, message: &Message, body: String) -> Self {
        SearchDoc {
            kind,
            message_id: Some(message.id.clone()),
            step: None,
            tool: None,
            status: Some(message.status.as_str().to_owned()),
            model: Some(message.model.clone()).filter(|model| !model.is_empty()),
            created_at: message.created_at.clone(),
            body: capped(body),
        }
    }
}

/// A conversation's title as a piece.
pub fn title_doc(title: &str, created_at: &str) -> SearchDoc {
    SearchDoc {
        kind: "title",
        message_id: None,
        step: None,
        tool: None,
        status: None,
        model: None,
        created_at: created_at.to_owned(),
        body: capped(title.to_owned()),
    }
}

/// A user's question as a piece, with the model asked.
pub fn question_doc(message: &Message, model: &str) -> SearchDoc {
    let mut doc = SearchDoc::of("question", message, message.text());
    doc.model = Some(model.to_owned());
    doc.status = None;
    doc
}

/// A finished assistant message's pieces: its answer (every text segment), each reasoning block
/// and each tool call (name, arguments, output, error), from the message as stored (redacted).
pub fn answer_docs(message: &Message) -> Vec<SearchDoc> {
    let mut docs: Vec<SearchDoc> = message
        .segments
        .iter()
        .filter_map(|segment| step_doc(message, segment))
        .collect();
    let answer = message.text();
    if !answer.trim().is_empty() {
        docs.push(SearchDoc::of("answer", message, answer));
    }
    docs
}

/// Every piece of a stored conversation, for the backfill of conversations kept before the index
/// existed: its title, each question (with the model its answer used) and each ended answer.
/// Answers still streaming are left to their run's end (and their checkpoints).
pub fn conversation_docs(
    title: &str,
    model: &str,
    messages: &[Message],
    now: &str,
) -> Vec<SearchDoc> {
    let created = messages
        .first()
        .map_or(now, |first| first.created_at.as_str());
    let mut docs = vec![title_doc(title, created)];
    for (index, message) in messages.iter().enumerate() {
        match message.role {
            Role::User => {
                let answered_by = messages
                    .get(index + 1)
                    .filter(|next| next.role == Role::Assistant && !next.model.is_empty())
                    .map_or(model, |next| next.model.as_str());
                docs.push(question_doc(message, answered_by));
            }
            Role::Assistant if message.status != MessageStatus::Streaming => {
                docs.extend(answer_docs(message));
            }
            Role::Assistant => {}
        }
    }
    docs
}

/// The messages that decode; a damaged one is logged and left out of the index, so it cannot
/// stop the backfill (the conversation page reports it as before).
pub(super) fn decodable(
    conversation_id: &str,
    messages: impl Iterator<Item = Result<Message>>,
) -> Vec<Message> {
    messages
        .filter_map(|message| {
            message
                .map_err(|error| {
                    tracing::warn!(conversation_id, %error, "search backfill skips a damaged message")
                })
                .ok()
        })
        .collect()
}

/// Conversations each write of the backfill indexes: a long one is thousands of pieces, and runs'
/// writes wait for the write in flight.
const BACKFILL_PER_WRITE: usize = 4;

/// Indexes, in the background after a start, the conversations kept before the index existed
/// (listed in `search_backfill` by the migration that made it), a few per write, until none is
/// left. On PostgreSQL instances share the list. A failing write is tried again a minute later.
pub async fn backfill(store: super::Store) {
    let mut indexed = 0;
    loop {
        let now = crate::stamps::now_rfc3339();
        match store.backfill_search(BACKFILL_PER_WRITE, &now).await {
            Ok(0) => break,
            Ok(taken) => {
                indexed += taken;
                // Room for the runs' own writes between two of these.
                tokio::time::sleep(std::time::Duration::from_millis(5)).await;
            }
            Err(error) => {
                tracing::warn!(%error, "search backfill failed; trying again in a minute");
                tokio::time::sleep(std::time::Duration::from_secs(60)).await;
            }
        }
    }
    if indexed > 0 {
        tracing::info!(
            indexed,
            "search indexed the conversations kept before its index"
        );
    }
}

/// A piece of a message already in the index, as a run's end reads it back: its row and what
/// decides whether the row can stay.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct IndexedPiece {
    pub id: i64,
    pub kind: String,
    pub step: Option<String>,
    pub tool: Option<String>,
    pub status: Option<String>,
    pub model: Option<String>,
    pub body: String,
}

/// What a message's end changes in the index that its checkpoints wrote.
#[derive(Debug, Default, PartialEq)]
pub struct Reindex {
    /// Rows whose piece is gone or whose text changed.
    pub delete: Vec<i64>,
    /// Rows that stay, with the tool, status and model they take (their text and words stay).
    pub update: Vec<(i64, SearchDoc)>,
    /// Pieces with no row yet.
    pub insert: Vec<SearchDoc>,
}

/// Plans a finished message's pieces (`docs`, [`answer_docs`]) against the rows its checkpoints
/// (or a retried end) wrote (`indexed`). A step's piece whose text is the same keeps its row, so
/// its words are not taken out of the full-text index and put back: at 1,000 finished steps a
/// second, deleting and inserting every step again at its run's end was most of what indexing
/// cost the writer (issue 35). Only a piece's tool, status or model can change at the end (a
/// reasoning block's status is its message's, `streaming` while it runs); its time is its
/// message's.
pub fn plan_reindex(indexed: Vec<IndexedPiece>, docs: Vec<SearchDoc>) -> Reindex {
    let mut plan = Reindex::default();
    let mut rows = std::collections::HashMap::new();
    for piece in indexed {
        // Two rows of one piece (a retried write whose first commit's answer was lost, say):
        // the later (rows come in id order) stays, and is kept or replaced as any.
        if let Some(twin) = rows.insert((piece.kind.clone(), piece.step.clone()), piece) {
            plan.delete.push(twin.id);
        }
    }
    for doc in docs {
        match rows.remove(&(doc.kind.to_owned(), doc.step.clone())) {
            Some(row) if row.body == doc.body => {
                if (&row.tool, &row.status, &row.model) != (&doc.tool, &doc.status, &doc.model) {
                    plan.update.push((row.id, doc));
                }
            }
            Some(row) => {
                plan.delete.push(row.id);
                plan.insert.push(doc);
            }
            None => plan.insert.push(doc),
        }
    }
    plan.delete.extend(rows.into_values().map(|row| row.id));
    plan.delete.sort_unstable();
    plan
}

/// The pieces of a running message's steps that have finished (a reasoning block completed, a
/// tool call with its result) and are not in `indexed`: what a checkpoint adds to the index. The
/// run's end replaces them with [`answer_docs`].
pub fn finished_step_docs(
    message: &Message,
    indexed: &std::collections::HashSet<String>,
) -> Vec<SearchDoc> {
    message
        .segments
        .iter()
        // Which steps are new is read from their ids before any piece is built: a run's
        // checkpoints see every step it has finished, and building the pieces of those already
        // indexed again (their text copied, their arguments written) grew with the run.
        .filter(|segment| match segment {
            Segment::Reasoning(reasoning) => {
                reasoning.completed_at.is_some() && !indexed.contains(&reasoning.id)
            }
            Segment::ToolCall(call) => {
                !matches!(
                    call.status,
                    ToolCallStatus::Running | ToolCallStatus::AwaitingApproval
                ) && !indexed.contains(&call.call_id)
            }
            _ => false,
        })
        .filter_map(|segment| step_doc(message, segment))
        .collect()
}

/// One reasoning block or tool call as a piece (none for other segments or empty reasoning).
fn step_doc(message: &Message, segment: &Segment) -> Option<SearchDoc> {
    match segment {
        Segment::Reasoning(reasoning) if !reasoning.combined_text.trim().is_empty() => {
            let mut doc = SearchDoc::of("reasoning", message, reasoning.combined_text.clone());
            doc.step = Some(reasoning.id.clone());
            Some(doc)
        }
        Segment::ToolCall(call) => {
            let args = match &call.args {
                serde_json::Value::Null => call.args_text.clone(),
                args => args.to_string(),
            };
            let mut body = format!("{}\n{args}\n{}", call.name, call.output);
            if let Some(error) = &call.error {
                body.push('\n');
                body.push_str(&error.message);
            }
            let mut doc = SearchDoc::of("tool", message, body);
            doc.step = Some(call.call_id.clone());
            doc.tool = Some(call.name.clone());
            doc.status = serde_json::to_value(call.status)
                .ok()
                .and_then(|status| status.as_str().map(str::to_owned));
            Some(doc)
        }
        _ => None,
    }
}

fn capped(mut body: String) -> String {
    if let Some((cut, _)) = body.char_indices().nth(MAX_INDEXED_CHARS) {
        body.truncate(cut);
    }
    body
}

/// A row a search reads, the same from either database.
#[derive(sqlx::FromRow)]
pub(super) struct SearchRow {
    conversation_id: String,
    conversation_title: String,
    message_id: Option<String>,
    step: Option<String>,
    kind: String,
    tool: Option<String>,
    status: Option<String>,
    model: Option<String>,
    created_at: String,
    body: String,
}

impl SearchRow {
    pub(super) fn into_hit(self, query: &SearchQuery) -> SearchHit {
        let (snippet, marks) = snippet(&self.body, &query.terms);
        SearchHit {
            conversation_id: self.conversation_id,
            conversation_title: self.conversation_title,
            message_id: self.message_id,
            step: self.step,
            kind: self.kind,
            tool: self.tool,
            status: self.status,
            model: self.model,
            created_at: self.created_at,
            snippet,
            marks,
        }
    }
}

/// About [`SNIPPET_CHARS`] characters of `body` around its first match of a term, on one line,
/// and where each term matches in it (whole words, any case), in characters.
pub fn snippet(body: &str, terms: &[String]) -> (String, Vec<[usize; 2]>) {
    let chars: Vec<char> = body
        .chars()
        .map(|c| {
            if c.is_whitespace() || c.is_control() {
                ' '
            } else {
                c
            }
        })
        .collect();
    let lower: Vec<char> = chars.iter().map(|&c| fold(c)).collect();
    let mut matches = Vec::new();
    for term in terms {
        let needle: Vec<char> = term.chars().map(fold).collect();
        matches.extend(find_words(&lower, &needle));
        if term.contains(' ') {
            for word in term.split(' ') {
                let needle: Vec<char> = word.chars().map(fold).collect();
                matches.extend(find_words(&lower, &needle));
            }
        }
    }
    matches.sort_unstable();
    let first = matches.first().map_or(0, |m| m[0]);
    let mut start = first.saturating_sub(SNIPPET_CHARS / 4);
    while start < first && chars[start] == ' ' {
        start += 1;
    }
    let mut end = (start + SNIPPET_CHARS).min(chars.len());
    while end > start && chars[end - 1] == ' ' {
        end -= 1;
    }
    let snippet: String = chars[start..end].iter().collect();
    let mut marks: Vec<[usize; 2]> = Vec::new();
    for [from, to] in matches {
        if from < start || to > end || marks.last().is_some_and(|last| from < last[1]) {
            continue;
        }
        marks.push([from - start, to - start]);
    }
    (snippet, marks)
}

fn fold(c: char) -> char {
    c.to_lowercase().next().unwrap_or(c)
}

/// Where `needle` occurs in `haystack` as whole words.
fn find_words(haystack: &[char], needle: &[char]) -> Vec<[usize; 2]> {
    let mut found = Vec::new();
    if needle.is_empty() || needle.len() > haystack.len() {
        return found;
    }
    let word = |index: usize| haystack.get(index).is_some_and(|c| c.is_alphanumeric());
    for at in 0..=haystack.len() - needle.len() {
        let end = at + needle.len();
        let bounded = (at == 0 || !word(at - 1)) && !word(end);
        if bounded && haystack[at..end] == *needle {
            found.push([at, end]);
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn piece(id: i64, kind: &str, step: Option<&str>, status: &str, body: &str) -> IndexedPiece {
        IndexedPiece {
            id,
            kind: kind.into(),
            step: step.map(Into::into),
            tool: None,
            status: Some(status.into()),
            model: None,
            body: body.into(),
        }
    }

    fn doc(kind: &'static str, step: Option<&str>, status: &str, body: &str) -> SearchDoc {
        SearchDoc {
            kind,
            message_id: Some("m".into()),
            step: step.map(Into::into),
            tool: None,
            status: Some(status.into()),
            model: None,
            created_at: "2026-11-28T00:00:00Z".into(),
            body: body.into(),
        }
    }

    #[test]
    fn a_run_end_keeps_the_rows_of_unchanged_steps() {
        let indexed = vec![
            piece(1, "reasoning", Some("r1"), "streaming", "thinking"),
            piece(2, "tool", Some("c1"), "success", "grep\n{}\nout"),
            piece(3, "tool", Some("c2"), "success", "old output"),
            piece(4, "reasoning", Some("gone"), "streaming", "dropped"),
            piece(5, "tool", Some("c1"), "success", "a twin"),
        ];
        let docs = vec![
            doc("reasoning", Some("r1"), "complete", "thinking"),
            doc("tool", Some("c1"), "success", "grep\n{}\nout"),
            doc("tool", Some("c2"), "success", "new output"),
            doc("answer", None, "complete", "the answer"),
        ];
        let plan = plan_reindex(indexed, docs.clone());
        // r1 stays with its new status; c1's twin rows (the later kept, its text not the
        // step's) and c2's old text go, and their pieces come anew; "gone" goes.
        assert_eq!(plan.update, vec![(1, docs[0].clone())]);
        assert_eq!(plan.insert, docs[1..].to_vec());
        assert_eq!(plan.delete, vec![2, 3, 4, 5]);
        // A retried end of the same message changes nothing.
        let again = vec![
            piece(1, "reasoning", Some("r1"), "complete", "thinking"),
            piece(6, "answer", None, "complete", "the answer"),
        ];
        let plan = plan_reindex(again, vec![docs[0].clone(), docs[3].clone()]);
        assert_eq!(plan, Reindex::default());
    }

    #[test]
    fn parses_words_phrases_and_filters() {
        let query = parse_query(r#"grep "main function" tool:grep_search status:error x:y"#)
            .expect("parses");
        assert_eq!(query.terms, ["grep", "main function", "x:y"]);
        assert_eq!(query.tool.as_deref(), Some("grep_search"));
        assert_eq!(query.status.as_deref(), Some("error"));
        assert_eq!(
            query.fts5_match().as_deref(),
            Some(r#""grep" "main function" "x:y""#)
        );
    }

    #[test]
    fn refuses_what_has_nothing_to_search() {
        for raw in [
            "",
            "   ",
            "\"\"",
            "AND OR - * ( )",
            "tool: status:",
            "\"!!!",
        ] {
            let parsed = parse_query(raw);
            assert!(
                matches!(
                    parsed,
                    Err(Error::InvalidField(_)) | Ok(SearchQuery { terms: _, .. })
                ),
                "{raw}"
            );
        }
        assert!(parse_query("").is_err());
        assert!(parse_query("\"!!!").is_err());
        assert!(parse_query(&"a".repeat(10_000)).is_err());
        assert_eq!(
            parse_query("\"unclosed phrase").expect("parses").terms,
            ["unclosed phrase"]
        );
        assert_eq!(parse_query("AND OR").expect("words").terms, ["AND", "OR"]);
    }

    #[test]
    fn feedback_filters_take_up_down_or_note() {
        let query = parse_query("feedback:DOWN slow").expect("parses");
        assert_eq!(
            (query.feedback.as_deref(), query.terms.as_slice()),
            (Some("down"), ["slow".to_owned()].as_slice())
        );
        assert!(parse_query("feedback:note").is_ok());
        assert!(matches!(
            parse_query("feedback:sideways"),
            Err(Error::InvalidField(_))
        ));
    }

    #[test]
    fn snippet_marks_whole_words() {
        let (snippet, marks) = snippet("Grepping for grep in GREP.", &["grep".to_owned()]);
        assert_eq!(snippet, "Grepping for grep in GREP.");
        assert_eq!(marks, [[13, 17], [21, 25]]);
        let (trimmed, marks) = super::snippet("    1  the\tkey rotates\n", &["key".to_owned()]);
        assert_eq!(
            (trimmed.as_str(), marks),
            ("1  the key rotates", vec![[7, 10]])
        );
    }
}
