//! The demo agent: the embedded default when no model provider is configured. Deterministic and
//! rule-based, no model: it picks the message's key terms, plans aloud as reasoning, searches the
//! workspace with the real tools (in parallel), reads the best hits and answers in markdown with
//! the files and lines it found. Paced so the streaming is visible.

use std::{collections::BTreeMap, time::Duration};

use serde_json::json;

use futures::future::BoxFuture;

use super::{Agent, AgentOutcome, Pacing, RunContext};
use crate::tools::{ToolCallRequest, ToolOutcome};

pub const DEMO_MODEL: &str = "demo";
const MAX_TERMS: usize = 3;
const FILES_TO_READ: usize = 2;

const STOP_WORDS: &[&str] = &[
    "the",
    "and",
    "for",
    "are",
    "but",
    "not",
    "you",
    "all",
    "any",
    "can",
    "had",
    "her",
    "was",
    "one",
    "our",
    "out",
    "has",
    "have",
    "how",
    "its",
    "let",
    "may",
    "who",
    "why",
    "what",
    "when",
    "where",
    "which",
    "with",
    "this",
    "that",
    "these",
    "those",
    "there",
    "their",
    "them",
    "then",
    "than",
    "into",
    "from",
    "about",
    "does",
    "did",
    "doing",
    "done",
    "show",
    "find",
    "tell",
    "give",
    "look",
    "looking",
    "please",
    "could",
    "would",
    "should",
    "some",
    "get",
    "use",
    "used",
    "using",
    "explain",
    "describe",
    "file",
    "files",
    "code",
    "where's",
    "what's",
    "workspace",
    "project",
    "repo",
    "repository",
    "me",
    "is",
    "in",
    "of",
    "to",
    "a",
    "an",
    "it",
    "on",
    "do",
    "be",
    "by",
    "or",
    "as",
    "at",
    "if",
    "so",
    "we",
    "my",
];

pub struct DemoAgent;

const PACING: Pacing = Pacing {
    delta_chars: 6,
    interval: Duration::from_millis(12),
};

impl Agent for DemoAgent {
    fn run<'a>(&'a self, context: &'a RunContext) -> BoxFuture<'a, AgentOutcome> {
        Box::pin(async move {
            let terms = key_terms(&context.user_message.text());
            if terms.is_empty() {
                show_workspace(context).await;
                return AgentOutcome::Completed;
            }
            let quoted: Vec<String> = terms.iter().map(|term| format!("'{term}'")).collect();
            let hits = search(context, &terms, &quoted).await;
            if hits.is_empty() {
                context
                    .stream_reasoning(&["No file mentions any of the terms.".to_owned()], PACING)
                    .await;
                let answer = format!(
                    "*Demo agent (rule-based, no language model).*\n\nI searched the workspace for {} and found **no matches**. \
                     Try another word, or a name that appears in the code.\n",
                    join_words(&quoted)
                );
                context.stream_text(&answer, PACING).await;
                return AgentOutcome::Completed;
            }
            let ranked = rank_files(&hits);
            let read_results = read_best(context, &ranked).await;
            let answer = compose_answer(&quoted, &hits, &ranked, &read_results);
            context.stream_text(&answer, PACING).await;
            AgentOutcome::Completed
        })
    }
}

/// A message with nothing to search for: what the workspace holds.
async fn show_workspace(context: &RunContext) {
    context
        .stream_reasoning(
            &[
                "The message has no searchable terms, so I'll show what the workspace holds."
                    .to_owned(),
            ],
            PACING,
        )
        .await;
    let listing = context
        .run_tools(vec![ToolCallRequest::new("list_dir", json!({"path": "."}))])
        .await;
    let entries = listing
        .first()
        .and_then(|outcome| outcome.result.as_ref().ok())
        .cloned()
        .unwrap_or_default();
    let answer = format!(
        "*I'm the **demo agent**: rule-based, no language model.* Ask me about something in this workspace \
         (a word, a name, `a phrase in backticks`) and I'll search for it.\n\nThe workspace root has:\n\n```\n{}\n```\n",
        entries.lines().skip(1).take(30).collect::<Vec<_>>().join("\n")
    );
    context.stream_text(&answer, PACING).await;
}

/// Searches the workspace for every term at once (and lists its top folder): the hits.
async fn search(context: &RunContext, terms: &[String], quoted: &[String]) -> Vec<Hit> {
    context
        .stream_reasoning(
            &[
                format!(
                    "The question is about {}. I'll search the workspace for each term at once.",
                    join_words(quoted)
                ),
                "I'll also list the top folder, to see how the workspace is laid out.".to_owned(),
            ],
            PACING,
        )
        .await;
    let mut calls: Vec<ToolCallRequest> = terms
        .iter()
        .map(|term| ToolCallRequest::new("grep_search", json!({ "query": term })))
        .collect();
    calls.push(ToolCallRequest::new("list_dir", json!({ "path": "." })));
    let searches = context.run_tools(calls).await;
    collect_hits(&searches)
}

/// Reads around the first match in each of the best files.
async fn read_best(context: &RunContext, ranked: &[FileHits]) -> Vec<ToolOutcome> {
    let best: Vec<&FileHits> = ranked.iter().take(FILES_TO_READ).collect();
    let summary: Vec<String> = best
        .iter()
        .map(|file| format!("`{}` ({} matching lines)", file.path, file.lines.len()))
        .collect();
    context
        .stream_reasoning(
            &[format!(
                "Most matches are in {}. Reading around the first match in each.",
                join_words(&summary)
            )],
            PACING,
        )
        .await;
    let reads: Vec<ToolCallRequest> = best
        .iter()
        .map(|file| {
            let first = file.lines.first().map_or(1, |(line, _)| *line);
            ToolCallRequest::new("read_file", json!({ "path": file.path, "start_line": first.saturating_sub(3).max(1), "end_line": first + 12 }))
        })
        .collect();
    context.run_tools(reads).await
}

/// The words worth searching for: phrases in quotes or backticks first, then the longest other
/// words that are not stop words.
pub fn key_terms(text: &str) -> Vec<String> {
    let mut terms: Vec<String> = Vec::new();
    for delimiter in ['`', '"'] {
        let pieces: Vec<&str> = text.split(delimiter).collect();
        for quoted in pieces
            .iter()
            .skip(1)
            .step_by(2)
            .take(pieces.len().saturating_sub(1) / 2)
        {
            let phrase = quoted.trim();
            if !phrase.is_empty() && phrase.len() <= 80 && !terms.iter().any(|term| term == phrase)
            {
                terms.push(phrase.to_owned());
            }
        }
    }
    let mut words: Vec<String> = text
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|word| word.chars().count() >= 3)
        .filter(|word| !STOP_WORDS.contains(&word.to_lowercase().as_str()))
        .map(str::to_owned)
        .collect();
    // Longer words say more; keep the first occurrence of each.
    let mut seen = std::collections::HashSet::new();
    words.retain(|word| seen.insert(word.to_lowercase()));
    words.sort_by_key(|word| std::cmp::Reverse(word.chars().count()));
    for word in words {
        if terms.len() >= MAX_TERMS {
            break;
        }
        if !terms
            .iter()
            .any(|term| term.to_lowercase().contains(&word.to_lowercase()))
        {
            terms.push(word);
        }
    }
    terms.truncate(MAX_TERMS);
    terms
}

/// One grep hit: term, file, line, text.
struct Hit {
    term: String,
    path: String,
    line: u64,
    text: String,
}

struct FileHits {
    path: String,
    lines: Vec<(u64, String)>,
    terms: usize,
}

fn collect_hits(searches: &[ToolOutcome]) -> Vec<Hit> {
    let mut hits = Vec::new();
    for outcome in searches
        .iter()
        .filter(|outcome| outcome.name == "grep_search")
    {
        let term = outcome
            .args
            .get("query")
            .and_then(|q| q.as_str())
            .unwrap_or_default()
            .to_owned();
        let Ok(output) = &outcome.result else {
            continue;
        };
        for line in output.lines().skip(1) {
            let mut parts = line.splitn(3, ':');
            let (Some(path), Some(number), Some(text)) = (parts.next(), parts.next(), parts.next())
            else {
                continue;
            };
            let Ok(number) = number.parse() else { continue };
            hits.push(Hit {
                term: term.clone(),
                path: path.to_owned(),
                line: number,
                text: text.trim().to_owned(),
            });
        }
    }
    hits
}

/// Per file: its matching lines, and which terms matched it.
type HitsByFile<'a> = BTreeMap<&'a str, (Vec<(u64, String)>, std::collections::BTreeSet<&'a str>)>;

/// Files ordered by how many distinct terms they match, then by how many lines.
fn rank_files(hits: &[Hit]) -> Vec<FileHits> {
    let mut files: HitsByFile = BTreeMap::new();
    for hit in hits {
        let entry = files.entry(&hit.path).or_default();
        if !entry.0.iter().any(|(line, _)| *line == hit.line) {
            entry.0.push((hit.line, hit.text.clone()));
        }
        entry.1.insert(&hit.term);
    }
    let mut ranked: Vec<FileHits> = files
        .into_iter()
        .map(|(path, (mut lines, terms))| {
            lines.sort_by_key(|(line, _)| *line);
            FileHits {
                path: path.to_owned(),
                lines,
                terms: terms.len(),
            }
        })
        .collect();
    ranked.sort_by(|a, b| {
        b.terms
            .cmp(&a.terms)
            .then(b.lines.len().cmp(&a.lines.len()))
            .then(a.path.cmp(&b.path))
    });
    ranked
}

fn compose_answer(
    quoted: &[String],
    hits: &[Hit],
    ranked: &[FileHits],
    reads: &[ToolOutcome],
) -> String {
    let mut answer = format!(
        "*Demo agent (rule-based, no language model).*\n\nI searched for {} and found **{} matching line{}** in **{} file{}**.\n\n",
        join_words(quoted),
        hits.len(),
        if hits.len() == 1 { "" } else { "s" },
        ranked.len(),
        if ranked.len() == 1 { "" } else { "s" },
    );
    answer.push_str("### Where they are\n\n");
    for file in ranked.iter().take(6) {
        answer.push_str(&format!(
            "- `{}`, {} line{}:\n",
            file.path,
            file.lines.len(),
            if file.lines.len() == 1 { "" } else { "s" }
        ));
        for (line, text) in file.lines.iter().take(3) {
            answer.push_str(&format!("  - line {line}: `{}`\n", inline_code(text)));
        }
    }
    if ranked.len() > 6 {
        answer.push_str(&format!("- … and {} more files.\n", ranked.len() - 6));
    }
    let read: Vec<&ToolOutcome> = reads
        .iter()
        .filter(|outcome| outcome.result.is_ok())
        .collect();
    if let Some(first) = read.first() {
        let path = first
            .args
            .get("path")
            .and_then(|p| p.as_str())
            .unwrap_or_default();
        let language = path
            .rsplit('.')
            .next()
            .filter(|ext| ext.len() <= 4 && *ext != path)
            .unwrap_or("");
        let excerpt: Vec<&str> = first
            .result
            .as_ref()
            .map(|text| text.lines().skip(1).collect())
            .unwrap_or_default();
        answer.push_str(&format!(
            "\n### A closer look at `{path}`\n\n```{language}\n{}\n```\n",
            excerpt.join("\n")
        ));
    }
    answer
        .push_str("\nOpen the tool calls above to see every match and the files as I read them.\n");
    answer
}

/// Text that fits inside single backticks.
fn inline_code(text: &str) -> String {
    let clean = text.replace('`', "'");
    match crate::sanitize::shorten(&clean, 100) {
        Some(cut) => format!("{cut}…"),
        None => clean,
    }
}

fn join_words(words: &[String]) -> String {
    match words {
        [] => String::new(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_terms_prefer_quoted_phrases_then_long_words() {
        assert_eq!(
            key_terms("Where is `run_timeout` configured?"),
            ["run_timeout", "configured"]
        );
        assert_eq!(
            key_terms("How does the checkpoint loop handle cancellation?"),
            ["cancellation", "checkpoint", "handle"]
        );
        assert!(key_terms("what is it?").is_empty());
    }
}
