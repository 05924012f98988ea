//! `read_file {path, start_line?, end_line?}`: a file's lines, numbered.

use app::protocol::ToolErrorKind;
use serde_json::{json, Value};

use std::path::PathBuf;

use app::protocol::ToolError;

use super::{
    optional_u64, string_arg, tool_error,
    workspace::{looks_binary, read_regular_file, ReadRefusal},
    Tool, ToolContext, ToolFuture, Workspace,
};

const MAX_LINES: u64 = 400;
const MAX_FILE_BYTES: u64 = 4 * 1024 * 1024;

pub struct ReadFile;

impl Tool for ReadFile {
    fn name(&self) -> &'static str {
        "read_file"
    }

    fn description(&self) -> &'static str {
        "Read a text file of the workspace, optionally a range of lines (1-based, inclusive); lines come numbered."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "Path relative to the workspace root."},
                "start_line": {"type": "integer", "minimum": 1},
                "end_line": {"type": "integer", "minimum": 1}
            },
            "required": ["path"]
        })
    }

    fn display(&self, args: &Value) -> Option<String> {
        let path = args.get("path").and_then(Value::as_str)?;
        let range = match (
            args.get("start_line").and_then(Value::as_u64),
            args.get("end_line").and_then(Value::as_u64),
        ) {
            (Some(start), Some(end)) => format!(" (lines {start}–{end})"),
            (Some(start), None) => format!(" (from line {start})"),
            _ => String::new(),
        };
        Some(format!("Reading {path}{range}"))
    }

    fn call(&self, args: Value, context: ToolContext) -> ToolFuture {
        Box::pin(async move {
            let requested = string_arg(&args, "path")?;
            let start = optional_u64(&args, "start_line")?.unwrap_or(1).max(1);
            let end =
                optional_u64(&args, "end_line")?.unwrap_or(start.saturating_add(MAX_LINES - 1));
            if end < start {
                return Err(tool_error(
                    ToolErrorKind::InvalidArguments,
                    "`end_line` is before `start_line`",
                ));
            }
            let (path, bytes) = context.in_workspace(requested, read_text).await?;
            let text = String::from_utf8_lossy(&bytes);
            let total = text.lines().count() as u64;
            let end = end
                .min(start.saturating_add(MAX_LINES - 1))
                .min(total.max(1));
            let mut out = String::new();
            for (index, line) in text.lines().enumerate() {
                let number = index as u64 + 1;
                if number < start {
                    continue;
                }
                if number > end {
                    break;
                }
                out.push_str(&format!("{number:>5}  {line}\n"));
            }
            let shown = context.workspace.display(&path);
            Ok(format!("{shown} (lines {start}–{end} of {total})\n{out}"))
        })
    }
}

/// Resolves `requested` in the workspace and reads it, refusing what is not a text file.
fn read_text(workspace: &Workspace, requested: &str) -> Result<(PathBuf, Vec<u8>), ToolError> {
    let path = workspace.resolve(requested)?;
    let bytes = read_regular_file(&path, MAX_FILE_BYTES).map_err(|refusal| match refusal {
        ReadRefusal::Directory => tool_error(
            ToolErrorKind::InvalidArguments,
            format!("'{requested}' is a directory; use list_dir."),
        ),
        ReadRefusal::NotRegular => tool_error(
            ToolErrorKind::NotAFile,
            format!("'{requested}' is not a regular file (a pipe, socket or device); only files can be read."),
        ),
        ReadRefusal::TooLarge(len) => tool_error(
            ToolErrorKind::TooLarge,
            format!("'{requested}' is {len} bytes; the limit is {MAX_FILE_BYTES}."),
        ),
        ReadRefusal::Io(error) => tool_error(ToolErrorKind::Io, error.to_string()),
    })?;
    if looks_binary(&bytes) {
        return Err(tool_error(
            ToolErrorKind::BinaryFile,
            format!("'{requested}' is not a text file."),
        ));
    }
    Ok((path, bytes))
}
