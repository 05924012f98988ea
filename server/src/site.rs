//! The built site: where it is, and the names the build gave its bundle. With `hash-files` (see
//! the workspace's `[package.metadata.leptos]`), cargo-leptos names the JS, wasm and CSS after
//! their content (`glassbox.<hash>.wasm`) and writes the hashes to `hash.txt` beside the binary;
//! those names never change content, so they are cached for a year. Without it (a stand-in site,
//! a test binary elsewhere), the plain names are used and revalidated.

use std::{
    collections::{HashMap, HashSet},
    path::Path,
};

/// The plain name of the bundle's JS: stand-in sites (tests, the load generator) create it.
pub const BUNDLE_FILE: &str = "pkg/glassbox.js";
const OUTPUT_NAME: &str = "glassbox";

/// The bundle found in a site root.
#[derive(Clone, Debug, Default)]
pub struct Bundle {
    /// Whether the pages should name the hashed files.
    pub hashed: bool,
    /// File names under `pkg/` that are content-hashed (cached as immutable).
    pub immutable: HashSet<String>,
}

/// The bundle in `root`, or `None` when it holds no built JS.
pub fn bundle_in(root: &Path) -> Option<Bundle> {
    if let Some(hashes) = read_hashes() {
        let hashed = |extension: &str| {
            hashes
                .get(extension)
                .map(|hash| format!("{OUTPUT_NAME}.{hash}.{extension}"))
        };
        if hashed("js").is_some_and(|js| root.join("pkg").join(js).is_file()) {
            return Some(Bundle {
                hashed: true,
                immutable: ["js", "wasm", "css"]
                    .into_iter()
                    .filter_map(hashed)
                    .collect(),
            });
        }
    }
    root.join(BUNDLE_FILE).is_file().then(Bundle::default)
}

/// `hash.txt` beside the running binary: lines `js: <hash>`, `wasm: <hash>`, `css: <hash>`.
fn read_hashes() -> Option<HashMap<String, String>> {
    let path = std::env::current_exe().ok()?.parent()?.join("hash.txt");
    let text = std::fs::read_to_string(path).ok()?;
    Some(
        text.lines()
            .filter_map(|line| line.split_once(':'))
            .map(|(key, hash)| (key.trim().to_owned(), hash.trim().to_owned()))
            .filter(|(_, hash)| !hash.is_empty())
            .collect(),
    )
}
