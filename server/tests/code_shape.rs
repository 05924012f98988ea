//! The shape of the code, computed from the code: no module cycles and no long functions.
//!
//! - **Module graph.** Each crate's module tree is read from its `mod` items (files and inline
//!   modules, `#[cfg(test)]` modules left out). A module uses another when it names a path into it
//!   (`crate::…`, `super::…`, `self::…`, in `use` items, in code, or in a macro's tokens). Uses are
//!   lifted to siblings: when `agents::model_loop` names `providers::http`, `agents` uses
//!   `providers`; when `tools::grep_search` names `tools::workspace`, `grep_search` uses
//!   `workspace`. A parent and its own submodules are not siblings, so `mod.rs` may use what it
//!   declares and a submodule may use its parent. Among the children of every module, the uses
//!   must form no cycle.
//! - **Function length.** No function outside tests has a body over 70 code lines (lines that are
//!   neither blank nor only a comment), Leptos components included (clippy's `too_many_lines`
//!   counts the same way but does not see inside `#[component]`).
//!
//! docs/architecture.md draws the graph this test computes: `cargo test -p server --test
//! code_shape -- --nocapture print_module_graph` prints it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use petgraph::algo::tarjan_scc;
use petgraph::graph::DiGraph;
use proc_macro2::{TokenStream, TokenTree};
use syn::visit::Visit;

const MAX_FUNCTION_LINES: usize = 70;

/// The crates whose shape is checked: (name, root file).
const CRATES: &[(&str, &str)] = &[
    ("app", "app/src/lib.rs"),
    ("server", "server/src/lib.rs"),
    ("server bin", "server/src/main.rs"),
    ("frontend", "frontend/src/lib.rs"),
    ("bench", "bench/src/lib.rs"),
    ("loadgen", "bench/src/bin/loadgen/main.rs"),
];

type ModPath = Vec<String>;

/// One crate's modules and the uses between them.
#[derive(Default)]
struct Crate {
    modules: BTreeSet<ModPath>,
    /// (user, used) as named in the code, before lifting to siblings.
    uses: BTreeSet<(ModPath, ModPath)>,
    /// Functions over the limit: "file:line name (N lines)".
    long_functions: Vec<String>,
}

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace")
        .to_path_buf()
}

/// `#[test]`, `#[cfg(test)]`, `#[tokio::test]`: code that only tests build.
fn is_cfg_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|attr| {
        let path = attr.path();
        path.segments
            .last()
            .is_some_and(|last| last.ident == "test")
            || (path.is_ident("cfg")
                && attr
                    .meta
                    .require_list()
                    .is_ok_and(|list| list.tokens.to_string() == "test"))
    })
}

/// Reads a crate: its module tree from the root file, then every module's uses and functions.
fn read_crate(root_file: &Path) -> Crate {
    let mut krate = Crate::default();
    let mut files = Vec::new();
    collect_modules(root_file, Vec::new(), true, &mut krate, &mut files);
    for (module, file, items) in files {
        let source = std::fs::read_to_string(&file).expect("read");
        let mut visitor = ModuleVisitor {
            krate: &mut krate,
            module,
            file: &file,
            source: &source,
        };
        for item in &items {
            visitor.visit_item(item);
        }
    }
    krate
}

/// Registers `module` (declared in `file`) and its submodules; keeps each module's own items.
fn collect_modules(
    file: &Path,
    module: ModPath,
    owns_dir: bool,
    krate: &mut Crate,
    files: &mut Vec<(ModPath, PathBuf, Vec<syn::Item>)>,
) {
    let source = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{file:?}: {e}"));
    let parsed = syn::parse_file(&source).unwrap_or_else(|e| panic!("{file:?}: {e}"));
    // Submodule files of `a/mod.rs`, `lib.rs` or `main.rs` are beside it; of `a.rs`, in `a/`.
    let dir = if owns_dir {
        file.parent().expect("dir").to_path_buf()
    } else {
        file.with_extension("")
    };
    collect_items(parsed.items, module, &dir, file, krate, files);
}

fn collect_items(
    items: Vec<syn::Item>,
    module: ModPath,
    dir: &Path,
    file: &Path,
    krate: &mut Crate,
    files: &mut Vec<(ModPath, PathBuf, Vec<syn::Item>)>,
) {
    krate.modules.insert(module.clone());
    let mut own = Vec::new();
    for item in items {
        let syn::Item::Mod(declared) = item else {
            own.push(item);
            continue;
        };
        if is_cfg_test(&declared.attrs) {
            continue;
        }
        let name = declared.ident.to_string();
        let mut child = module.clone();
        child.push(name.clone());
        match declared.content {
            Some((_, inner)) => collect_items(inner, child, &dir.join(&name), file, krate, files),
            None => {
                let flat = dir.join(format!("{name}.rs"));
                if flat.exists() {
                    collect_modules(&flat, child, false, krate, files);
                } else {
                    collect_modules(&dir.join(&name).join("mod.rs"), child, true, krate, files);
                }
            }
        }
    }
    files.push((module, file.to_path_buf(), own));
}

struct ModuleVisitor<'a> {
    krate: &'a mut Crate,
    module: ModPath,
    file: &'a Path,
    source: &'a str,
}

impl ModuleVisitor<'_> {
    /// Records a use of the module a path leads into, if it leads into this crate.
    fn path(&mut self, segments: &[String]) {
        let Some(first) = segments.first() else {
            return;
        };
        let mut absolute: ModPath = match first.as_str() {
            "crate" => Vec::new(),
            "self" => self.module.clone(),
            "super" => {
                let mut base = self.module.clone();
                let mut rest = segments;
                while rest.first().map(String::as_str) == Some("super") {
                    base.pop();
                    rest = &rest[1..];
                }
                base.extend(rest.iter().cloned());
                return self.record(base);
            }
            _ => {
                let mut child = self.module.clone();
                child.push(first.clone());
                if !self.krate.modules.contains(&child) {
                    return;
                }
                self.module.clone()
            }
        };
        let skip = usize::from(matches!(first.as_str(), "crate" | "self"));
        absolute.extend(segments[skip..].iter().cloned());
        self.record(absolute);
    }

    fn record(&mut self, mut absolute: ModPath) {
        while !absolute.is_empty() && !self.krate.modules.contains(&absolute) {
            absolute.pop();
        }
        if absolute != self.module {
            self.krate.uses.insert((self.module.clone(), absolute));
        }
    }

    fn use_tree(&mut self, prefix: &mut Vec<String>, tree: &syn::UseTree) {
        match tree {
            syn::UseTree::Path(path) => {
                prefix.push(path.ident.to_string());
                self.use_tree(prefix, &path.tree);
                prefix.pop();
            }
            syn::UseTree::Name(name) => self.use_leaf(prefix, &name.ident),
            syn::UseTree::Rename(rename) => self.use_leaf(prefix, &rename.ident),
            syn::UseTree::Glob(_) => self.path(&prefix.clone()),
            syn::UseTree::Group(group) => {
                for tree in &group.items {
                    self.use_tree(prefix, tree);
                }
            }
        }
    }

    fn use_leaf(&mut self, prefix: &[String], ident: &syn::Ident) {
        let mut path = prefix.to_vec();
        if ident != "self" {
            path.push(ident.to_string());
        }
        self.path(&path);
    }

    /// Paths inside a macro's tokens (`view! { … }`, `on_backend!(…)`), as `a :: b :: c` runs.
    fn tokens(&mut self, tokens: TokenStream) {
        let mut run: Vec<String> = Vec::new();
        let mut colons = 0;
        for token in tokens {
            match token {
                TokenTree::Ident(ident) => {
                    if colons != 2 && !run.is_empty() {
                        self.path(&std::mem::take(&mut run));
                    }
                    if colons != 2 {
                        run.clear();
                    }
                    run.push(ident.to_string());
                    colons = 0;
                }
                TokenTree::Punct(punct) if punct.as_char() == ':' => colons += 1,
                TokenTree::Group(group) => {
                    self.path(&std::mem::take(&mut run));
                    colons = 0;
                    self.tokens(group.stream());
                }
                _ => {
                    self.path(&std::mem::take(&mut run));
                    colons = 0;
                }
            }
        }
        self.path(&run);
    }

    fn function(&mut self, name: &syn::Ident, attrs: &[syn::Attribute], block: &syn::Block) {
        if is_cfg_test(attrs) {
            return;
        }
        let start = block.brace_token.span.open().start().line;
        let end = block.brace_token.span.close().end().line;
        let lines = self
            .source
            .lines()
            .skip(start)
            .take(end.saturating_sub(start + 1))
            .filter(|line| {
                let line = line.trim();
                !line.is_empty() && !line.starts_with("//")
            })
            .count();
        if lines > MAX_FUNCTION_LINES {
            self.krate.long_functions.push(format!(
                "{}:{start} {name} ({lines} lines)",
                self.file
                    .strip_prefix(workspace_root())
                    .unwrap_or(self.file)
                    .display()
            ));
        }
    }
}

impl<'ast> Visit<'ast> for ModuleVisitor<'_> {
    fn visit_item_use(&mut self, item: &'ast syn::ItemUse) {
        self.use_tree(&mut Vec::new(), &item.tree);
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        let segments: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
        self.path(&segments);
        syn::visit::visit_path(self, path);
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        self.tokens(mac.tokens.clone());
        syn::visit::visit_macro(self, mac);
    }

    fn visit_item_fn(&mut self, item: &'ast syn::ItemFn) {
        if is_cfg_test(&item.attrs) {
            return;
        }
        self.function(&item.sig.ident, &item.attrs, &item.block);
        syn::visit::visit_item_fn(self, item);
    }

    fn visit_impl_item_fn(&mut self, item: &'ast syn::ImplItemFn) {
        if is_cfg_test(&item.attrs) {
            return;
        }
        self.function(&item.sig.ident, &item.attrs, &item.block);
        syn::visit::visit_impl_item_fn(self, item);
    }

    fn visit_trait_item_fn(&mut self, item: &'ast syn::TraitItemFn) {
        if let Some(block) = &item.default {
            self.function(&item.sig.ident, &item.attrs, block);
        }
        syn::visit::visit_trait_item_fn(self, item);
    }

    fn visit_item_impl(&mut self, item: &'ast syn::ItemImpl) {
        if !is_cfg_test(&item.attrs) {
            syn::visit::visit_item_impl(self, item);
        }
    }
}

/// The uses lifted to siblings: for each parent module, its children's graph.
fn sibling_graphs(krate: &Crate) -> BTreeMap<ModPath, BTreeSet<(String, String)>> {
    let mut graphs: BTreeMap<ModPath, BTreeSet<(String, String)>> = BTreeMap::new();
    for (user, used) in &krate.uses {
        let common = user.iter().zip(used).take_while(|(a, b)| a == b).count();
        if let (Some(from), Some(to)) = (user.get(common), used.get(common)) {
            graphs
                .entry(user[..common].to_vec())
                .or_default()
                .insert((from.clone(), to.clone()));
        }
    }
    graphs
}

/// Every cycle among the children of a module, as "parent: a -> b -> a" lines.
fn cycles(krate: &Crate) -> Vec<String> {
    let mut found = Vec::new();
    for (parent, edges) in sibling_graphs(krate) {
        let mut graph = DiGraph::<&str, ()>::new();
        let mut nodes = BTreeMap::new();
        for (from, to) in &edges {
            for name in [from, to] {
                nodes
                    .entry(name.as_str())
                    .or_insert_with(|| graph.add_node(name.as_str()));
            }
            graph.add_edge(nodes[from.as_str()], nodes[to.as_str()], ());
        }
        for component in tarjan_scc(&graph) {
            if component.len() > 1 {
                let mut names: Vec<&str> = component.iter().map(|&node| graph[node]).collect();
                names.sort_unstable();
                let inside: Vec<String> = edges
                    .iter()
                    .filter(|(a, b)| names.contains(&a.as_str()) && names.contains(&b.as_str()))
                    .map(|(a, b)| format!("{a} -> {b}"))
                    .collect();
                let parent = if parent.is_empty() {
                    "crate".to_owned()
                } else {
                    parent.join("::")
                };
                found.push(format!(
                    "{parent}: {{{}}} via {}",
                    names.join(", "),
                    inside.join(", ")
                ));
            }
        }
    }
    found
}

fn crates() -> Vec<(&'static str, Crate)> {
    let root = workspace_root();
    CRATES
        .iter()
        .map(|(name, file)| (*name, read_crate(&root.join(file))))
        .collect()
}

#[test]
fn no_module_uses_a_module_that_uses_it_back() {
    let mut all = Vec::new();
    for (name, krate) in crates() {
        assert!(!krate.modules.is_empty(), "{name}: no modules read");
        all.extend(
            cycles(&krate)
                .into_iter()
                .map(|cycle| format!("{name}: {cycle}")),
        );
    }
    assert!(all.is_empty(), "module cycles:\n{}", all.join("\n"));
}

#[test]
fn no_function_outside_tests_is_over_70_code_lines() {
    let mut all = Vec::new();
    for (_, krate) in crates() {
        all.extend(krate.long_functions);
    }
    assert!(
        all.is_empty(),
        "{} functions over {MAX_FUNCTION_LINES} code lines:\n{}",
        all.len(),
        all.join("\n")
    );
}

/// Prints each crate's module graph among siblings (for docs/architecture.md).
#[test]
fn print_module_graph() {
    for (name, krate) in crates() {
        println!("# {name}");
        for (parent, edges) in sibling_graphs(&krate) {
            let parent = if parent.is_empty() {
                "crate".to_owned()
            } else {
                parent.join("::")
            };
            let mut by_user: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
            for (from, to) in &edges {
                by_user.entry(from).or_default().push(to);
            }
            for (from, to) in by_user {
                println!("{parent}: {from} -> {}", to.join(", "));
            }
        }
    }
}

/// The graph must see what it claims to: a cycle written into a module tree is found.
#[test]
fn a_cycle_between_two_modules_is_found() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    std::fs::write(root.join("lib.rs"), "mod a;\nmod b;\nmod c;\n").expect("write");
    std::fs::write(root.join("a.rs"), "use crate::b::B;\npub struct A;\n").expect("write");
    std::fs::write(
        root.join("b.rs"),
        "pub struct B;\nfn f() { let _ = crate::c::inner::C; }\n",
    )
    .expect("write");
    std::fs::create_dir(root.join("c")).expect("dir");
    std::fs::write(root.join("c.rs"), "pub mod inner;\n").expect("write");
    std::fs::write(
        root.join("c").join("inner.rs"),
        "pub struct C;\nfn g() { println!(\"{:?}\", crate::a::A); }\n",
    )
    .expect("write");
    let krate = read_crate(&root.join("lib.rs"));
    let found = cycles(&krate);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].starts_with("crate: {a, b, c}"), "{found:?}");
}
