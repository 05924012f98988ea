//! `list_dir {path}`: a folder's entries, folders first, each folder with a trailing `/`.

use app::protocol::ToolErrorKind;
use std::path::PathBuf;

use app::protocol::ToolError;
use serde_json::{json, Value};

use super::{string_arg, tool_error, Tool, ToolContext, ToolFuture, Workspace};

const MAX_ENTRIES: usize = 500;

pub struct ListDir;

impl Tool for ListDir {
    fn name(&self) -> &'static str {
        "list_dir"
    }

    fn description(&self) -> &'static str {
        "List the entries of a workspace folder; folders end with `/`."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {"path": {"type": "string", "description": "Folder relative to the workspace root; `.` for the root."}},
            "required": ["path"]
        })
    }

    fn display(&self, args: &Value) -> Option<String> {
        args.get("path")
            .and_then(Value::as_str)
            .map(|path| format!("Listing {path}"))
    }

    fn call(&self, args: Value, context: ToolContext) -> ToolFuture {
        Box::pin(async move {
            let requested = string_arg(&args, "path")?;
            let (path, mut folders, mut files) = context.in_workspace(requested, entries).await?;
            folders.sort();
            files.sort();
            let total = folders.len() + files.len();
            let mut lines: Vec<String> =
                folders.into_iter().chain(files).take(MAX_ENTRIES).collect();
            if total > MAX_ENTRIES {
                lines.push(format!("… and {} more", total - MAX_ENTRIES));
            }
            Ok(format!(
                "{} ({total} entries)\n{}",
                context.workspace.display(&path),
                lines.join("\n")
            ))
        })
    }
}

/// The folder's real path, its subfolders (with `/`) and its other entries, unsorted.
fn entries(
    workspace: &Workspace,
    requested: &str,
) -> Result<(PathBuf, Vec<String>, Vec<String>), ToolError> {
    let path = workspace.resolve(requested)?;
    let reader = std::fs::read_dir(&path).map_err(|error| {
        tool_error(
            ToolErrorKind::Io,
            format!("Cannot list '{requested}': {error}"),
        )
    })?;
    let mut folders = Vec::new();
    let mut files = Vec::new();
    for entry in reader {
        let entry = entry.map_err(|error| tool_error(ToolErrorKind::Io, error.to_string()))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if workspace.is_denied(&entry.path()) {
            continue;
        }
        match entry.file_type() {
            Ok(kind) if kind.is_dir() => folders.push(format!("{name}/")),
            _ => files.push(name),
        }
    }
    Ok((path, folders, files))
}
