//! The folder the built-in tools may touch. Every path is resolved (symlinks included) and refused
//! when it lands outside.

use app::protocol::ToolErrorKind;
use std::{
    io::Read,
    path::{Path, PathBuf},
};

use app::protocol::ToolError;

use super::tool_error;

/// What the tools never read, list or search by default (`--deny-files` replaces the list):
/// environment files, shell histories, version control, cloud and tool credentials, Terraform
/// state and key material. `*` matches within a name; a pattern with `/` matches consecutive
/// folders and names anywhere in a path (`.config/gh`). Matching ignores case.
pub const DEFAULT_DENY_FILES: &str = ".env*,*.env,.git,.ssh,.aws,.azure,.gnupg,.docker,.kube,\
.config/gcloud,.config/gh,.cargo/credentials*,*.pem,*.key,*.p12,*.pfx,id_*,.npmrc,.netrc,.pypirc,\
.pgpass,.my.cnf,.s3cfg,.htpasswd,.git-credentials,credentials.json,secrets.y*ml,secrets.json,\
secrets.toml,secrets.ini,secrets.env,.vault-token,*.tfstate*,.terraformrc,.*_history,.history";

#[derive(Clone, Debug)]
pub struct Workspace {
    root: PathBuf,
    /// A path with any component matching one of these is refused, hidden and skipped.
    deny_names: regex::RegexSet,
    /// A path with consecutive components matching one of these (each a list of names) too.
    deny_paths: Vec<Vec<regex::Regex>>,
}

impl Workspace {
    /// The workspace at `root`, with the default deny list.
    pub fn open(root: &Path) -> std::io::Result<Self> {
        let deny = DEFAULT_DENY_FILES
            .split(',')
            .map(str::to_owned)
            .collect::<Vec<_>>();
        Self::open_with_deny(root, &deny).map_err(std::io::Error::other)
    }

    /// The workspace at `root`; `deny` holds file name globs (`*` and `?`), `/` between the names
    /// of a path's consecutive parts.
    pub fn open_with_deny(root: &Path, deny: &[String]) -> Result<Self, String> {
        let invalid = |error: regex::Error| format!("not a valid --deny-files glob: {error}");
        let globs = deny
            .iter()
            .map(|glob| glob.trim().trim_matches('/'))
            .filter(|glob| !glob.is_empty());
        let (paths, names): (Vec<&str>, Vec<&str>) = globs.partition(|glob| glob.contains('/'));
        let name_pattern = glob_pattern;
        let deny_names = regex::RegexSetBuilder::new(names.iter().map(|glob| name_pattern(glob)))
            .case_insensitive(true)
            .build()
            .map_err(invalid)?;
        let deny_paths = paths
            .iter()
            .map(|glob| {
                glob.split('/')
                    .filter(|part| !part.is_empty())
                    .map(|part| {
                        regex::RegexBuilder::new(&name_pattern(part))
                            .case_insensitive(true)
                            .build()
                    })
                    .collect::<Result<Vec<_>, _>>()
            })
            .collect::<Result<Vec<_>, _>>()
            .map_err(invalid)?;
        Ok(Workspace {
            root: root.canonicalize().map_err(|error| error.to_string())?,
            deny_names,
            deny_paths,
        })
    }

    /// Whether `path` (relative, or under the root) is on the deny list: one of its parts by
    /// name, or consecutive parts by a pattern with `/`.
    pub fn is_denied(&self, path: &Path) -> bool {
        let relative = path.strip_prefix(&self.root).unwrap_or(path);
        let parts: Vec<String> = relative
            .components()
            .filter_map(|part| match part {
                std::path::Component::Normal(name) => Some(name.to_string_lossy().into_owned()),
                _ => None,
            })
            .collect();
        parts.iter().any(|part| self.deny_names.is_match(part))
            || self.deny_paths.iter().any(|pattern| {
                parts.windows(pattern.len()).any(|window| {
                    window
                        .iter()
                        .zip(pattern)
                        .all(|(part, glob)| glob.is_match(part))
                })
            })
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The real path of `requested` (relative to the root, or absolute), if it exists inside.
    pub fn resolve(&self, requested: &str) -> Result<PathBuf, ToolError> {
        let requested_path = Path::new(requested.trim());
        let candidate = if requested_path.is_absolute() {
            requested_path.to_path_buf()
        } else {
            self.root.join(requested_path)
        };
        let real = candidate
            .canonicalize()
            .map_err(|error| match error.kind() {
                std::io::ErrorKind::NotFound => tool_error(
                    ToolErrorKind::NotFound,
                    format!("'{requested}' does not exist in the workspace."),
                ),
                _ => tool_error(
                    ToolErrorKind::Io,
                    format!("Cannot open '{requested}': {error}"),
                ),
            })?;
        if self.is_denied(requested_path) || self.is_denied(&real) {
            Err(tool_error(
                ToolErrorKind::Denied,
                format!(
                    "'{requested}' is a hidden or secret file (environment, keys, version \
                     control); the tools do not read it."
                ),
            ))
        } else if real.starts_with(&self.root) {
            Ok(real)
        } else {
            Err(tool_error(
                ToolErrorKind::OutsideWorkspace,
                format!("'{requested}' is outside the workspace; only files under it can be read."),
            ))
        }
    }

    /// `path` relative to the root, with `/` separators, for output.
    pub fn display(&self, path: &Path) -> String {
        let relative = path.strip_prefix(&self.root).unwrap_or(path);
        let text = relative.to_string_lossy().replace('\\', "/");
        if text.is_empty() {
            ".".to_owned()
        } else {
            text
        }
    }
}

/// Why [`read_regular_file`] read nothing.
#[derive(Debug)]
pub enum ReadRefusal {
    Directory,
    /// A FIFO, socket or device: reading it could block a thread forever.
    NotRegular,
    TooLarge(u64),
    Io(std::io::Error),
}

/// The bytes of `path` if it is a regular file of at most `max_bytes`. The type is checked on the
/// open handle, and the open itself does not block (`O_NONBLOCK`), so a FIFO put in the file's
/// place cannot hang the thread.
pub fn read_regular_file(path: &Path, max_bytes: u64) -> Result<Vec<u8>, ReadRefusal> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::custom_flags(
        &mut options,
        libc::O_NONBLOCK | libc::O_NOCTTY,
    );
    let file = options.open(path).map_err(ReadRefusal::Io)?;
    let metadata = file.metadata().map_err(ReadRefusal::Io)?;
    if metadata.is_dir() {
        return Err(ReadRefusal::Directory);
    }
    if !metadata.is_file() {
        return Err(ReadRefusal::NotRegular);
    }
    if metadata.len() > max_bytes {
        return Err(ReadRefusal::TooLarge(metadata.len()));
    }
    let mut bytes = Vec::with_capacity(metadata.len() as usize);
    file.take(max_bytes)
        .read_to_end(&mut bytes)
        .map_err(ReadRefusal::Io)?;
    Ok(bytes)
}

/// Whether file content is binary rather than text: a NUL byte in its first 8,000 bytes.
pub fn looks_binary(bytes: &[u8]) -> bool {
    bytes.iter().take(8000).any(|byte| *byte == 0)
}

/// Folders that are never worth searching.
pub fn is_skipped_dir(name: &str) -> bool {
    name.starts_with('.')
        || matches!(
            name,
            "target" | "node_modules" | "__pycache__" | "dist" | "build"
        )
}

/// The regular expression, anchored, that matches what `glob` matches.
pub(super) fn glob_pattern(glob: &str) -> String {
    let mut pattern = String::from("^");
    let mut chars = glob.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '*' if chars.peek() == Some(&'*') => {
                chars.next();
                if chars.peek() == Some(&'/') {
                    chars.next();
                    pattern.push_str("(?:.*/)?");
                } else {
                    pattern.push_str(".*");
                }
            }
            '*' => pattern.push_str("[^/]*"),
            '?' => pattern.push_str("[^/]"),
            other => pattern.push_str(&regex::escape(&other.to_string())),
        }
    }
    pattern.push('$');
    pattern
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_outside_and_symlinks_out_are_refused() {
        let outside = tempfile::tempdir().expect("tempdir");
        std::fs::write(outside.path().join("secret.txt"), "x").expect("write");
        let root = tempfile::tempdir().expect("tempdir");
        std::fs::write(root.path().join("inside.txt"), "y").expect("write");
        #[cfg(unix)]
        std::os::unix::fs::symlink(
            outside.path().join("secret.txt"),
            root.path().join("link.txt"),
        )
        .expect("symlink");
        let workspace = Workspace::open(root.path()).expect("open");

        assert!(workspace.resolve("inside.txt").is_ok());
        assert!(workspace.resolve(".").is_ok());
        for escape in ["../", "/etc/passwd", "link.txt"] {
            let error = workspace.resolve(escape).expect_err(escape);
            assert!(
                error.kind == ToolErrorKind::OutsideWorkspace
                    || error.kind == ToolErrorKind::NotFound,
                "{escape}: {error:?}"
            );
        }
        assert_eq!(
            workspace.resolve("link.txt").map_err(|e| e.kind),
            Err(ToolErrorKind::OutsideWorkspace)
        );
        assert_eq!(
            workspace.resolve("missing").map_err(|e| e.kind),
            Err(ToolErrorKind::NotFound)
        );
    }

    #[test]
    fn secret_files_are_refused_by_name_anywhere_in_the_path() {
        let root = tempfile::tempdir().expect("tempdir");
        for file in [
            ".env",
            ".env.local",
            "id_rsa",
            "certs/site.pem",
            ".git/config",
            "notes.md",
        ] {
            let path = root.path().join(file);
            std::fs::create_dir_all(path.parent().expect("parent")).expect("dir");
            std::fs::write(&path, "x").expect("write");
        }
        let workspace = Workspace::open(root.path()).expect("open");
        for file in [
            ".env",
            "./.env.local",
            "id_rsa",
            "certs/site.pem",
            ".git/config",
            ".git",
        ] {
            let refused = workspace.resolve(file).map_err(|e| e.kind);
            assert_eq!(refused, Err(ToolErrorKind::Denied), "{file}");
        }
        assert!(workspace.resolve("notes.md").is_ok());
        assert!(workspace.resolve("certs").is_ok());
        // A pattern with `/` needs its folders in that order; names match in any case.
        for (file, denied) in [
            (".config/gh/hosts.yml", true),
            ("tools/gh/readme.txt", false),
            (".config/app.txt", false),
            ("Deploy/.ENV.Production", true),
            // Ordinary sources and folders that only look alike are read.
            ("src/secrets.rs", false),
            ("app/chat_history/index.md", false),
            ("config/Secrets.YML", true),
            (".python_history", true),
        ] {
            let path = root.path().join(file);
            std::fs::create_dir_all(path.parent().expect("parent")).expect("dir");
            std::fs::write(&path, "x").expect("write");
            assert_eq!(workspace.resolve(file).is_err(), denied, "{file}");
        }
        let custom = Workspace::open_with_deny(root.path(), &["*.md".to_owned()]).expect("open");
        assert!(
            custom.resolve(".env").is_ok(),
            "the list replaces the default"
        );
        assert!(custom.resolve("notes.md").is_err());
    }
}
