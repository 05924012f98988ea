//! `grep_search {query, is_regexp?, include?}`: finds lines in the workspace, streaming each match.

use app::protocol::ToolErrorKind;
use std::path::{Path, PathBuf};

use regex::{Regex, RegexBuilder};
use serde_json::{json, Value};

use super::workspace::{glob_pattern, Workspace};
use super::{string_arg, tool_error, Tool, ToolContext, ToolFuture};

const MAX_MATCHES: usize = 200;
const MAX_FILE_BYTES: u64 = 1024 * 1024;
const MAX_LINE_CHARS: usize = 240;

pub struct GrepSearch;

impl Tool for GrepSearch {
    fn name(&self) -> &'static str {
        "grep_search"
    }

    fn description(&self) -> &'static str {
        "Search the workspace's text files for a string or a regular expression; answers `path:line: text` per match."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "Text to find (case-insensitive), or a regular expression when is_regexp is true."},
                "is_regexp": {"type": "boolean", "default": false},
                "include": {"type": "string", "description": "Glob of files to search, e.g. `*.rs` or `src/**/*.md`."}
            },
            "required": ["query"]
        })
    }

    fn display(&self, args: &Value) -> Option<String> {
        args.get("query")
            .and_then(Value::as_str)
            .map(|query| format!("Searching for '{query}'…"))
    }

    fn call(&self, args: Value, context: ToolContext) -> ToolFuture {
        Box::pin(async move {
            let query = string_arg(&args, "query")?.to_owned();
            if query.is_empty() {
                return Err(tool_error(
                    ToolErrorKind::InvalidArguments,
                    "`query` must not be empty",
                ));
            }
            let is_regexp = args
                .get("is_regexp")
                .and_then(Value::as_bool)
                .unwrap_or(false);
            let pattern = if is_regexp {
                query.clone()
            } else {
                regex::escape(&query)
            };
            let matcher = RegexBuilder::new(&pattern)
                .case_insensitive(true)
                .size_limit(1 << 20)
                .build()
                .map_err(|error| {
                    tool_error(
                        ToolErrorKind::InvalidArguments,
                        format!("Not a valid regular expression: {error}"),
                    )
                })?;
            let include = match args.get("include").and_then(Value::as_str) {
                Some(glob) if !glob.trim().is_empty() => Some(glob_to_regex(glob.trim())?),
                _ => None,
            };
            // Walking the tree is blocking I/O: it runs in one of the tools' blocking slots and
            // checks the cancellation token between files.
            let walker = context.clone();
            context
                .blocking(move || search(&walker, &matcher, include.as_ref()))
                .await?
        })
    }
}

/// Walks the workspace in name order, each directory's files before its subdirectories, and
/// answers every matching line (at most [`MAX_MATCHES`]) under a one-line summary.
fn search(
    context: &ToolContext,
    matcher: &Regex,
    include: Option<&Regex>,
) -> Result<String, app::protocol::ToolError> {
    let workspace = &context.workspace;
    let mut found = Found::default();
    let mut stack = vec![workspace.root().to_path_buf()];
    while let Some(dir) = stack.pop() {
        if context.cancel.is_cancelled() {
            return Err(tool_error(
                ToolErrorKind::Cancelled,
                "The search was cancelled.",
            ));
        }
        let (files, subdirs) = list_dir(workspace, &dir, include);
        for path in files {
            if !search_file(context, &path, matcher, &mut found) {
                return Ok(found.answer());
            }
        }
        // Directories are pushed in reverse so the walk visits them in name order.
        stack.extend(subdirs.into_iter().rev());
    }
    Ok(found.answer())
}

/// The matches so far, each a `path:line: text` line, and how many files they are in.
#[derive(Default)]
struct Found {
    matches: Vec<String>,
    files: usize,
}

impl Found {
    /// The tool's answer: how many matches in how many files, then the matches.
    fn answer(&self) -> String {
        let files = self.files;
        let header = match self.matches.len() {
            0 => "No matches.".to_owned(),
            n if n >= MAX_MATCHES => {
                format!("Found {n}+ matches in {files} files (stopped at {MAX_MATCHES}).")
            }
            n => format!(
                "Found {n} match{} in {files} file{}.",
                if n == 1 { "" } else { "es" },
                if files == 1 { "" } else { "s" }
            ),
        };
        format!("{header}\n{}", self.matches.concat())
    }
}

/// A directory's entries in name order, the denied ones left out: the files to search (those
/// `include` names, when given) and the subdirectories to walk (not the skipped ones).
fn list_dir(
    workspace: &Workspace,
    dir: &Path,
    include: Option<&Regex>,
) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let (mut files, mut subdirs) = (Vec::new(), Vec::new());
    let Ok(entries) = std::fs::read_dir(dir) else {
        return (files, subdirs);
    };
    let mut entries: Vec<_> = entries.flatten().collect();
    entries.sort_by_key(|entry| entry.file_name());
    for entry in entries {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        let path = entry.path();
        if workspace.is_denied(&path) {
            continue;
        }
        if kind.is_dir() {
            if !super::workspace::is_skipped_dir(&name) {
                subdirs.push(path);
            }
        } else if kind.is_file() && included(workspace.display(&path).as_str(), &name, include) {
            files.push(path);
        }
    }
    (files, subdirs)
}

/// Adds the file's matching lines to `found`, writing each to the tool's output as it goes:
/// `false` once there are [`MAX_MATCHES`], where the search stops.
fn search_file(context: &ToolContext, path: &Path, matcher: &Regex, found: &mut Found) -> bool {
    let mut found_here = false;
    for (line_number, line) in matching_lines(path, matcher) {
        let text = context.workspace.display(path);
        let line = crate::sanitize::shorten(line.trim_end(), MAX_LINE_CHARS)
            .map(|cut| format!("{cut}…"))
            .unwrap_or_else(|| line.trim_end().to_owned());
        let entry = format!("{text}:{line_number}: {}\n", line.trim_start());
        context.output.write(&entry);
        found.matches.push(entry);
        found_here = true;
        if found.matches.len() >= MAX_MATCHES {
            found.files += 1;
            return false;
        }
    }
    found.files += usize::from(found_here);
    true
}

fn matching_lines(path: &Path, matcher: &Regex) -> Vec<(usize, String)> {
    let Ok(bytes) = super::workspace::read_regular_file(path, MAX_FILE_BYTES) else {
        return Vec::new();
    };
    if super::workspace::looks_binary(&bytes) {
        return Vec::new();
    }
    let text = String::from_utf8_lossy(&bytes);
    text.lines()
        .enumerate()
        .filter(|(_, line)| matcher.is_match(line))
        .map(|(index, line)| (index + 1, line.to_owned()))
        .collect()
}

fn included(relative: &str, name: &str, include: Option<&Regex>) -> bool {
    match include {
        None => true,
        Some(glob) => glob.is_match(relative) || glob.is_match(name),
    }
}

/// `*` matches within a path segment, `**` across segments, `?` one character.
fn glob_to_regex(glob: &str) -> Result<Regex, app::protocol::ToolError> {
    Regex::new(&glob_pattern(glob)).map_err(|error| {
        tool_error(
            ToolErrorKind::InvalidArguments,
            format!("Not a valid `include` glob: {error}"),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_match_names_and_paths() {
        let rs = glob_to_regex("*.rs").expect("glob");
        assert!(included("src/main.rs", "main.rs", Some(&rs)));
        assert!(!included("src/main.py", "main.py", Some(&rs)));
        let deep = glob_to_regex("src/**/*.md").expect("glob");
        assert!(deep.is_match("src/a/b/c.md"));
        assert!(deep.is_match("src/c.md"));
        assert!(!deep.is_match("docs/c.md"));
    }
}
