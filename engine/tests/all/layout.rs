//! The layout rules of docs/design.md ("Where things live"), checked on the source tree:
//!
//! - **one way inside every folder**: in every folder of the library (`engine/src`), the
//!   binary (`engine/src/bin/weir`), the store crate (`engine/store/src`) and the guest SDK
//!   (`guest-sdk/src`), the folder's entries import each other without a cycle (an entry is a
//!   file `x.rs` together with its folder `x/`; the folder's own `mod.rs`/`lib.rs` is not one);
//! - the crate root holds `lib.rs`, module folders and single-noun files only;
//! - no source or test file over 800 lines unless it says why;
//! - the map in docs/design.md names every folder and root file of `engine/src`, and every
//!   path it names exists.
//!
//! Imports are read as text, comments left out: every path that starts with `crate::`,
//! `$crate::`, `super::` or `self::` is resolved against the file's own module (`use` lists,
//! nested ones too, are expanded), and a path that leaves the file's entry of a folder for
//! another entry of the same folder is an edge between the two.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

const MAX_LINES: usize = 800;
/// A file longer than [`MAX_LINES`] must carry this marker with its reason.
const LONG_FILE_MARKER: &str = "long file:";

fn engine() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn repo() -> PathBuf {
    engine().parent().unwrap().to_path_buf()
}

fn src() -> PathBuf {
    engine().join("src")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Strips `//` comments (docs cite paths in prose).
fn code(text: &str) -> String {
    text.lines().map(|l| l.split("//").next().unwrap_or("")).collect::<Vec<_>>().join("\n")
}

fn is_ident_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// Reads a use tree at `*i` (after a path segment and its `::`): identifiers joined by
/// `::`, ending in a name, a glob or a `{…}` list of trees. Pushes every full path.
fn use_tree(text: &[u8], i: &mut usize, prefix: Vec<String>, out: &mut Vec<Vec<String>>) {
    let skip_space = |i: &mut usize| {
        while *i < text.len() && text[*i].is_ascii_whitespace() {
            *i += 1;
        }
    };
    let mut path = prefix;
    loop {
        skip_space(i);
        if *i < text.len() && text[*i] == b'{' {
            *i += 1;
            loop {
                skip_space(i);
                if *i >= text.len() {
                    return;
                }
                if text[*i] == b'}' {
                    *i += 1;
                    return;
                }
                if text[*i] == b',' {
                    *i += 1;
                    continue;
                }
                let before = *i;
                use_tree(text, i, path.clone(), out);
                if *i == before {
                    // Not a tree (`*`, `self as x`): step over the character.
                    *i += 1;
                }
            }
        }
        let start = *i;
        while *i < text.len() && is_ident_char(text[*i]) {
            *i += 1;
        }
        if *i == start {
            out.push(path);
            return;
        }
        path.push(String::from_utf8_lossy(&text[start..*i]).into_owned());
        if text[*i..].starts_with(b"::") {
            *i += 2;
        } else {
            out.push(path);
            // A rename (`x as y`): the new name is no path.
            let mut j = *i;
            skip_space(&mut j);
            if text[j..].starts_with(b"as") && text.get(j + 2).is_some_and(|c| c.is_ascii_whitespace()) {
                j += 2;
                skip_space(&mut j);
                while j < text.len() && is_ident_char(text[j]) {
                    j += 1;
                }
                *i = j;
            }
            return;
        }
    }
}

/// Every path in `text` that starts at `crate`, `$crate`, `super` or `self`, resolved to a
/// path from the crate root for a file whose module is `module`.
fn resolved_paths(text: &str, module: &[String]) -> Vec<Vec<String>> {
    let bytes = text.as_bytes();
    let mut found = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        // A path's first segment: not the tail of another path or identifier. (One scan from
        // left to right, so the `super::` inside `use super::{a, super::b}` is read as part of
        // its list.)
        let starts = ["crate::", "super::", "self::"].iter().any(|w| bytes[at..].starts_with(w.as_bytes()));
        let before = bytes[..at].iter().rev().find(|c| !c.is_ascii_whitespace());
        if !starts || (at > 0 && is_ident_char(bytes[at - 1])) || before == Some(&b':') {
            at += 1;
            continue;
        }
        let mut raw = Vec::new();
        use_tree(bytes, &mut at, Vec::new(), &mut raw);
        for path in raw {
            let mut resolved: Vec<String> = Vec::new();
            let mut segments = path.into_iter().peekable();
            match segments.next().as_deref() {
                Some("crate") => {}
                Some("self") => resolved.extend_from_slice(module),
                Some("super") => {
                    resolved.extend_from_slice(&module[..module.len().saturating_sub(1)]);
                    while segments.peek().is_some_and(|s| s == "super") {
                        segments.next();
                        resolved.pop();
                    }
                }
                _ => continue,
            }
            resolved.extend(segments.filter(|s| s != "self"));
            found.push(resolved);
        }
    }
    found
}

/// A crate's sources: the folder of its root file and the root file's name.
struct CrateTree {
    /// How findings name it (`engine/src`).
    name: String,
    root: PathBuf,
    /// Folders below `root` that belong to another crate (the binary's).
    exclude: Vec<PathBuf>,
}

impl CrateTree {
    fn new(name: &str, root: PathBuf) -> Self {
        CrateTree { name: name.to_string(), root, exclude: Vec::new() }
    }

    fn files(&self) -> Vec<PathBuf> {
        let mut files = Vec::new();
        rust_files(&self.root, &mut files);
        files.retain(|f| !self.exclude.iter().any(|e| f.starts_with(e)));
        files
    }

    /// The module path of a file (`cluster/deploy.rs` → `[cluster, deploy]`).
    fn module_of(&self, file: &Path) -> Vec<String> {
        let rel = file.strip_prefix(&self.root).unwrap();
        let mut module: Vec<String> =
            rel.components().map(|c| c.as_os_str().to_str().unwrap().to_string()).collect();
        let last = module.pop().unwrap();
        let stem = last.trim_end_matches(".rs");
        let is_root = module.is_empty() && ["lib", "main"].contains(&stem);
        if stem != "mod" && !is_root {
            module.push(stem.to_string());
        }
        module
    }
}

/// Per folder (its module path): the graph between its entries.
type FolderGraphs = BTreeMap<Vec<String>, BTreeMap<String, BTreeSet<String>>>;

/// The import graph inside every folder of a crate.
fn folder_graphs(tree: &CrateTree) -> FolderGraphs {
    let files = tree.files();
    let modules: Vec<Vec<String>> = files.iter().map(|f| tree.module_of(f)).collect();
    let mut graphs: FolderGraphs = BTreeMap::new();
    // Nodes: every entry of every folder.
    for module in &modules {
        for depth in 0..module.len() {
            graphs.entry(module[..depth].to_vec()).or_default().entry(module[depth].clone()).or_default();
        }
    }
    for (file, module) in files.iter().zip(&modules) {
        let text = code(&std::fs::read_to_string(file).unwrap());
        for path in resolved_paths(&text, module) {
            for depth in 0..module.len() {
                let folder = &module[..depth];
                if path.len() <= depth || path[..depth] != *folder || path[depth] == module[depth] {
                    continue;
                }
                let graph = graphs.get_mut(folder).unwrap();
                if graph.contains_key(&path[depth]) {
                    graph.get_mut(&module[depth]).unwrap().insert(path[depth].clone());
                }
            }
        }
    }
    graphs
}

/// A cycle in `graph`, if any (as the list of nodes on it).
fn find_cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        state: &mut BTreeMap<String, u8>,
        stack: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        state.insert(node.to_string(), 1);
        stack.push(node.to_string());
        for next in graph.get(node).into_iter().flatten() {
            match state.get(next.as_str()) {
                Some(1) => {
                    let start = stack.iter().position(|n| n == next).unwrap();
                    let mut cycle = stack[start..].to_vec();
                    cycle.push(next.clone());
                    return Some(cycle);
                }
                Some(_) => {}
                None => {
                    if let Some(c) = visit(next, graph, state, stack) {
                        return Some(c);
                    }
                }
            }
        }
        stack.pop();
        state.insert(node.to_string(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for node in graph.keys() {
        if !state.contains_key(node.as_str())
            && let Some(c) = visit(node, graph, &mut state, &mut Vec::new())
        {
            return Some(c);
        }
    }
    None
}

/// Every folder's cycle, as `engine/src/cluster/: executor -> protocol -> executor`.
fn cycles(tree: &CrateTree) -> Vec<String> {
    folder_graphs(tree)
        .iter()
        .filter_map(|(folder, graph)| {
            let cycle = find_cycle(graph)?;
            let mut at = tree.name.clone();
            for part in folder {
                at.push('/');
                at.push_str(part);
            }
            Some(format!("{at}/: {}", cycle.join(" -> ")))
        })
        .collect()
}

fn workspace_crates() -> Vec<CrateTree> {
    let mut library = CrateTree::new("engine/src", src());
    library.exclude.push(src().join("bin"));
    vec![
        library,
        CrateTree::new("engine/src/bin/weir", src().join("bin/weir")),
        CrateTree::new("engine/store/src", engine().join("store/src")),
        CrateTree::new("guest-sdk/src", repo().join("guest-sdk/src")),
    ]
}

#[test]
fn every_folder_of_every_crate_imports_one_way() {
    let mut found = Vec::new();
    for tree in workspace_crates() {
        let graphs = folder_graphs(&tree);
        let edges: usize = graphs.values().flat_map(|g| g.values()).map(|e| e.len()).sum();
        assert!(edges > 5, "{}: the import graph was not read: {graphs:?}", tree.name);
        found.extend(cycles(&tree));
    }
    assert!(found.is_empty(), "import cycles inside folders:\n  {}", found.join("\n  "));
}

#[test]
fn the_crate_root_holds_lib_rs_module_folders_and_single_noun_files() {
    for entry in std::fs::read_dir(src()).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_str().unwrap().to_string();
        if path.is_dir() {
            continue;
        }
        // Single-noun files: no grab bags and no second noun tacked on (`checkpoint_bench`).
        let stem = name.trim_end_matches(".rs");
        let grab_bag = ["bench", "util", "helper", "misc", "common", "main", "client"];
        assert!(
            name.ends_with(".rs") && !grab_bag.iter().any(|g| stem.contains(g)),
            "engine/src/{name}: the crate root holds lib.rs, module folders and single-noun files"
        );
    }
    let lib = std::fs::read_to_string(src().join("lib.rs")).unwrap();
    for cli_only in ["client", "bench"] {
        assert!(
            !lib.contains(&format!("mod {cli_only}")),
            "lib.rs exports `{cli_only}`: it belongs to the binary"
        );
    }
}

#[test]
fn no_source_or_test_file_is_over_800_lines_without_saying_why() {
    let mut files = Vec::new();
    for dir in ["engine/src", "engine/tests", "engine/store/src", "engine/store/tests", "guest-sdk"] {
        let dir = repo().join(dir);
        if dir.exists() {
            rust_files(&dir, &mut files);
        }
    }
    assert!(files.len() > 100, "the sources were not read: {} files", files.len());
    let long: Vec<String> = files
        .iter()
        .filter_map(|f| {
            let text = std::fs::read_to_string(f).unwrap();
            let lines = text.lines().count();
            (lines > MAX_LINES && !text.contains(LONG_FILE_MARKER))
                .then(|| format!("{} ({lines})", f.strip_prefix(repo()).unwrap().display()))
        })
        .collect();
    assert!(long.is_empty(), "over {MAX_LINES} lines without a `{LONG_FILE_MARKER}` comment: {long:?}");
}

/// The paths in backquotes in the "Where things live" table of docs/design.md, with one
/// level of `{a,b}` expanded, each resolved from where its row says: the repository root when
/// it starts at a top-level folder, else the source folder of the row's module (`weir-store`:
/// `engine/store/src`, `weir-guest`: `guest-sdk/src`, otherwise `engine/src`).
fn mapped_paths(design: &str) -> Vec<(String, PathBuf)> {
    let section =
        design.split("\n## Where things live").nth(1).expect("design.md has a \"Where things live\"");
    let section = &section[..section.find("\n## ").unwrap_or(section.len())];
    let top_level = ["engine/", "guest-sdk/", "examples/", "web-ui/", "wit/", "docs/", "deploy/", ".ci/"];
    let mut paths = Vec::new();
    for row in section.lines().filter(|l| l.starts_with('|') && !l.starts_with("|---")) {
        let module = row.split('|').nth(2).unwrap_or("");
        let base = if module.contains("weir-store") {
            "engine/store/src"
        } else if module.contains("weir-guest") {
            "guest-sdk/src"
        } else {
            "engine/src"
        };
        for (n, quoted) in row.split('`').enumerate() {
            if n % 2 == 0
                || !(quoted.contains('/') || quoted.ends_with(".rs"))
                || quoted.contains(' ')
                || quoted.starts_with('/')
            {
                continue;
            }
            let expanded: Vec<String> = match (quoted.find('{'), quoted.find('}')) {
                (Some(open), Some(close)) => quoted[open + 1..close]
                    .split(',')
                    .map(|item| format!("{}{}{}", &quoted[..open], item.trim(), &quoted[close + 1..]))
                    .collect(),
                _ => vec![quoted.to_string()],
            };
            for path in expanded {
                let from_root = top_level.iter().any(|t| path.starts_with(t));
                let full = if from_root { repo().join(&path) } else { repo().join(base).join(&path) };
                paths.push((path, full));
            }
        }
    }
    paths
}

#[test]
fn the_map_in_design_md_names_every_folder_and_root_file_and_nothing_that_is_gone() {
    let design = std::fs::read_to_string(repo().join("docs/design.md")).unwrap();
    let paths = mapped_paths(&design);
    assert!(paths.len() > 40, "the map was not read: {paths:?}");
    let missing: Vec<&String> = paths.iter().filter(|(_, full)| !full.exists()).map(|(p, _)| p).collect();
    assert!(
        missing.is_empty(),
        "docs/design.md \"Where things live\" names paths that do not exist: {missing:?}"
    );

    // Every folder of engine/src (at any depth) and every file at its root is named, or
    // something inside it is.
    let mut wanted = Vec::new();
    fn folders(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                out.push(path.clone());
                folders(&path, out);
            }
        }
    }
    folders(&src(), &mut wanted);
    for entry in std::fs::read_dir(src()).unwrap() {
        let path = entry.unwrap().path();
        if path.is_file() && path.file_name().unwrap() != "lib.rs" {
            wanted.push(path);
        }
    }
    let unnamed: Vec<String> = wanted
        .iter()
        .filter(|w| !paths.iter().any(|(_, full)| full.starts_with(w)))
        .map(|w| w.strip_prefix(repo()).unwrap().display().to_string())
        .collect();
    assert!(unnamed.is_empty(), "docs/design.md \"Where things live\" does not name: {unnamed:?}");
}

/// The checker itself, on a synthetic tree.
mod checker {
    use super::*;

    fn tree(files: &[(&str, &str)]) -> (tempfile::TempDir, CrateTree) {
        let dir = tempfile::tempdir().unwrap();
        for (path, text) in files {
            let path = dir.path().join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        let tree = CrateTree::new("synthetic", dir.path().to_path_buf());
        (dir, tree)
    }

    #[test]
    fn a_cycle_inside_a_folder_is_found_and_named() {
        let (_dir, tree) = tree(&[
            ("lib.rs", "pub mod a;\npub mod b;"),
            ("a/mod.rs", "mod x;\nmod y;\nmod z;\npub use x::X;"),
            ("a/x.rs", "use super::y::Y;\npub struct X;"),
            ("a/y.rs", "pub struct Y(crate::a::z::Z);"),
            ("a/z.rs", "use crate::{a::{x::X, w}};\npub struct Z;"),
            ("b.rs", "use crate::a::X; // crate::a is below b"),
        ]);
        assert_eq!(cycles(&tree), vec!["synthetic/a/: x -> y -> z -> x".to_string()]);
    }

    #[test]
    fn imports_that_go_one_way_pass_and_comments_do_not_count() {
        let (_dir, tree) = tree(&[
            ("lib.rs", "pub mod a;\npub mod b;\nuse a::X;"),
            ("a/mod.rs", "mod x;\nmod y;\npub use x::X;"),
            ("a/x.rs", "use super::y::Y;\npub struct X(Y);\n#[cfg(test)]\nmod tests {\n    use super::*;\n}"),
            ("a/y.rs", "// see super::x::X, which uses this\npub struct Y;\npub(super) fn f() {}"),
            ("b/mod.rs", "mod deep;"),
            ("b/deep/mod.rs", "use super::super::a::X;\nuse self::inner::I;\nmod inner;"),
            ("b/deep/inner.rs", "pub struct I;"),
        ]);
        assert_eq!(cycles(&tree), Vec::<String>::new());
        let graphs = folder_graphs(&tree);
        assert_eq!(graphs[&vec!["a".to_string()]]["x"], ["y".to_string()].into_iter().collect());
        assert_eq!(graphs[&vec![]]["b"], ["a".to_string()].into_iter().collect());
    }

    #[test]
    fn super_resolves_from_the_files_own_module() {
        let module = ["runtime".to_string(), "task".to_string()];
        let paths =
            resolved_paths("use super::{channel::Sender, super::plan};\nlet x = self::inner::f();", &module);
        let paths: Vec<String> = paths.iter().map(|p| p.join("::")).collect();
        assert_eq!(paths, ["runtime::channel::Sender", "plan", "runtime::task::inner::f"]);
    }
}

/// Every invariant docs/design.md numbers (`**C4**`, `**T2**`, …) is cited in a comment of
/// the code that keeps it.
#[test]
fn every_numbered_invariant_is_cited_where_the_code_keeps_it() {
    let design = std::fs::read_to_string(repo().join("docs/design.md")).unwrap();
    let mut ids = BTreeSet::new();
    for (at, _) in design.match_indices("- **") {
        let rest = &design[at + 4..];
        let id = &rest[..rest.find("**").unwrap_or(0)];
        let mut chars = id.chars();
        if chars.next().is_some_and(|c| c.is_ascii_uppercase())
            && !id.is_empty()
            && chars.all(|c| c.is_ascii_digit())
            && id.len() > 1
        {
            ids.insert(id.to_string());
        }
    }
    assert!(ids.len() >= 30, "the invariants were not read: {ids:?}");
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    rust_files(&engine().join("store/src"), &mut files);
    let mut comments = String::new();
    for file in files {
        for line in std::fs::read_to_string(file).unwrap().lines() {
            if let Some((_, comment)) = line.split_once("//") {
                comments.push_str(comment);
                comments.push('\n');
            }
        }
    }
    let cited = |id: &str| {
        comments.match_indices(id).any(|(at, _)| {
            let before = comments[..at].chars().next_back();
            let after = comments[at + id.len()..].chars().next();
            !before.is_some_and(|c| c.is_ascii_alphanumeric())
                && !after.is_some_and(|c| c.is_ascii_alphanumeric())
        })
    };
    let uncited: Vec<&String> = ids.iter().filter(|id| !cited(id)).collect();
    assert!(uncited.is_empty(), "invariants of docs/design.md cited nowhere in the code: {uncited:?}");
}

/// No two error types of the workspace's crates share a name (a reader of a message or a
/// signature knows which one it is).
#[test]
fn no_two_error_types_share_a_name() {
    let mut seen: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for tree in workspace_crates() {
        for file in tree.files() {
            let text = code(&std::fs::read_to_string(&file).unwrap());
            for keyword in ["enum ", "struct "] {
                for (at, _) in text.match_indices(keyword) {
                    if at > 0 && is_ident_char(text.as_bytes()[at - 1]) {
                        continue;
                    }
                    let name: String = text[at + keyword.len()..]
                        .chars()
                        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                        .collect();
                    if name.ends_with("Error") {
                        seen.entry(name)
                            .or_default()
                            .push(file.strip_prefix(repo()).unwrap().display().to_string());
                    }
                }
            }
        }
    }
    assert!(seen.len() > 20, "the error types were not read: {seen:?}");
    let shared: Vec<String> = seen
        .iter()
        .filter(|(_, at)| at.len() > 1)
        .map(|(name, at)| format!("{name} in {}", at.join(", ")))
        .collect();
    assert!(shared.is_empty(), "error types that share a name: {shared:?}");
}
