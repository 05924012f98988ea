//! The built site: where it is, and the names the build gave its bundle. With `hash-files` (see
//! the workspace's `[package.metadata.leptos]`), cargo-leptos names the JS, wasm and CSS after
//! their content (`glassbox.<hash>.wasm`, and with `--split` the lazily loaded chunks and their
//! loader too) and writes the hashes to `hash.txt` beside the binary;
//! those names never change content, so they are cached for a year. Without it (a stand-in site,
//! a test binary elsewhere), the plain names are used and revalidated.

use std::{
    collections::{HashMap, HashSet},
    path::Path,
};

/// The plain name of the bundle's JS: stand-in sites (tests, the load generator) create it.
pub const BUNDLE_FILE: &str = "pkg/glassbox.js";
const OUTPUT_NAME: &str = "glassbox";
/// With `--split`: the JS that loads the wasm chunks, and the manifest naming them.
const SPLIT_LOADER: &str = "__wasm_split";
const SPLIT_MANIFEST: &str = "__wasm_split_manifest";

/// The bundle found in a site root.
#[derive(Clone, Debug)]
pub struct Bundle {
    /// Whether the pages should name the hashed files.
    pub hashed: bool,
    /// File names under `pkg/` that are content-hashed (cached as immutable).
    pub immutable: HashSet<String>,
    /// The stylesheet's path, for pages rendered outside Leptos (the login page).
    pub stylesheet: String,
}

impl Default for Bundle {
    fn default() -> Self {
        Bundle {
            hashed: false,
            immutable: HashSet::new(),
            stylesheet: format!("/pkg/{OUTPUT_NAME}.css"),
        }
    }
}

/// The bundle in `root`, or `None` when it holds no built JS.
pub fn bundle_in(root: &Path) -> Option<Bundle> {
    if let Some(hashes) = read_hashes() {
        let hashed = |key: &str, prefix: &str, extension: &str| {
            hashes
                .get(key)
                .map(|hash| format!("{prefix}.{hash}.{extension}"))
        };
        let pkg = root.join("pkg");
        if hashed("js", OUTPUT_NAME, "js").is_some_and(|js| pkg.join(js).is_file()) {
            let manifest = hashed("manifest", SPLIT_MANIFEST, "json");
            let chunks = manifest.as_ref().map(|m| split_chunks(&pkg.join(m)));
            let immutable = [
                hashed("js", OUTPUT_NAME, "js"),
                hashed("wasm", OUTPUT_NAME, "wasm"),
                hashed("css", OUTPUT_NAME, "css"),
                hashed("split", SPLIT_LOADER, "js"),
                manifest,
            ]
            .into_iter()
            .flatten()
            .chain(chunks.into_iter().flatten())
            .collect();
            let stylesheet = hashed("css", OUTPUT_NAME, "css")
                .map(|css| format!("/pkg/{css}"))
                .unwrap_or_else(|| Bundle::default().stylesheet);
            return Some(Bundle {
                hashed: true,
                immutable,
                stylesheet,
            });
        }
    }
    root.join(BUNDLE_FILE).is_file().then(Bundle::default)
}

/// The lazily loaded wasm chunks `cargo leptos build --split` wrote, as the split manifest lists
/// them (`{"<split point>": ["<chunk>.<hash>", ...]}`); their names carry their content's hash.
fn split_chunks(manifest: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(manifest).unwrap_or_default();
    let chunks: HashMap<String, Vec<String>> = serde_json::from_str(&text).unwrap_or_default();
    chunks
        .into_values()
        .flatten()
        .map(|chunk| format!("{chunk}.wasm"))
        .collect()
}

/// `hash.txt` beside the running binary: lines `js: <hash>`, `wasm: <hash>`, `css: <hash>`, and
/// with `--split` `manifest: <hash>` and `split: <hash>`.
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
