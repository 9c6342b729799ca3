//! The layout rules of docs/design.md ("Where things live"), checked on the source tree:
//! no import cycle between the top-level modules of `engine/src`, nor between the files of
//! `engine/src/runtime`; the crate root holds `lib.rs`, module folders and single-noun
//! files only; no source file over 800 lines unless it says why.
//!
//! Imports are read as text: every `crate::<module>` path (and, inside `runtime/`,
//! `super::<file>`) in a file is an edge from the file's module to that module. `use`
//! lists spanning lines and paths inside expressions count alike.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

const MAX_LINES: usize = 800;
/// A file longer than [`MAX_LINES`] must carry this marker with its reason.
const LONG_FILE_MARKER: &str = "long file:";

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
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

/// Every `<prefix><ident>` in `text` (identifiers of lower-case modules).
fn references(text: &str, prefix: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    for (i, _) in text.match_indices(prefix) {
        // Not the tail of a longer path (`weir::crate::` cannot happen; `self::super::` can).
        let rest = &text[i + prefix.len()..];
        let name: String = rest.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
        if !name.is_empty() && name.chars().next().is_some_and(|c| c.is_ascii_lowercase()) {
            found.insert(name);
        }
    }
    // `use crate::{a, b::c}` lists.
    for (i, _) in text.match_indices(&format!("{prefix}{{")) {
        let rest = &text[i + prefix.len() + 1..];
        let list = &rest[..rest.find('}').unwrap_or(rest.len())];
        for item in list.split(',') {
            let name: String =
                item.trim().chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
            if !name.is_empty() {
                found.insert(name);
            }
        }
    }
    found
}

/// Strips `//` comments (docs cite paths in prose).
fn code(text: &str) -> String {
    text.lines().map(|l| l.split("//").next().unwrap_or("")).collect::<Vec<_>>().join("\n")
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

/// The module graph: `module_of(file)` → the modules its code names through `prefixes`.
fn graph(
    files: &[PathBuf],
    module_of: impl Fn(&Path) -> Option<String>,
    prefixes: &[&str],
) -> BTreeMap<String, BTreeSet<String>> {
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in files {
        let Some(module) = module_of(file) else { continue };
        let text = code(&std::fs::read_to_string(file).unwrap());
        let edges = graph.entry(module.clone()).or_default();
        for prefix in prefixes {
            for target in references(&text, prefix) {
                if target != module {
                    edges.insert(target);
                }
            }
        }
    }
    let known: BTreeSet<String> = graph.keys().cloned().collect();
    for edges in graph.values_mut() {
        edges.retain(|t| known.contains(t));
    }
    graph
}

fn library_files() -> Vec<PathBuf> {
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    // The binary is not part of the library's module graph.
    files.retain(|f| !f.starts_with(src().join("bin")));
    files
}

#[test]
fn the_top_level_modules_of_the_library_import_each_other_in_one_direction() {
    let root = src();
    let graph = graph(
        &library_files(),
        |f| {
            let rel = f.strip_prefix(&root).ok()?;
            let first = rel.components().next()?.as_os_str().to_str()?;
            (first != "lib.rs").then(|| first.trim_end_matches(".rs").to_string())
        },
        &["crate::"],
    );
    assert!(graph.len() > 5, "the module graph was not read: {graph:?}");
    if let Some(cycle) = find_cycle(&graph) {
        panic!("import cycle between top-level modules: {}", cycle.join(" -> "));
    }
}

#[test]
fn the_files_of_the_runtime_import_each_other_in_one_direction() {
    let runtime = src().join("runtime");
    let graph = graph(
        &library_files(),
        |f| {
            let rel = f.strip_prefix(&runtime).ok()?;
            let first = rel.components().next()?.as_os_str().to_str()?;
            (first != "mod.rs").then(|| first.trim_end_matches(".rs").to_string())
        },
        &["super::", "crate::runtime::"],
    );
    assert!(graph.contains_key("coordinator") && graph.contains_key("task"), "{graph:?}");
    if let Some(cycle) = find_cycle(&graph) {
        panic!("import cycle inside runtime/: {}", cycle.join(" -> "));
    }
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
fn no_source_file_is_over_800_lines_without_saying_why() {
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    rust_files(&Path::new(env!("CARGO_MANIFEST_DIR")).join("store/src"), &mut files);
    let long: Vec<String> = files
        .iter()
        .filter_map(|f| {
            let text = std::fs::read_to_string(f).unwrap();
            let lines = text.lines().count();
            (lines > MAX_LINES && !text.contains(LONG_FILE_MARKER))
                .then(|| format!("{} ({lines})", f.display()))
        })
        .collect();
    assert!(long.is_empty(), "over {MAX_LINES} lines without a `{LONG_FILE_MARKER}` comment: {long:?}");
}

#[test]
fn the_cycle_finder_finds_cycles() {
    let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    g.entry("a".into()).or_default().insert("b".into());
    g.entry("b".into()).or_default().insert("c".into());
    g.entry("c".into()).or_default();
    assert_eq!(find_cycle(&g), None);
    g.entry("c".into()).or_default().insert("a".into());
    assert_eq!(find_cycle(&g), Some(vec!["a".into(), "b".into(), "c".into(), "a".into()]));
    assert_eq!(
        references("use crate::{plan::Plan, runtime};\nlet x = crate::guest::f();", "crate::"),
        ["guest", "plan", "runtime"].map(String::from).into_iter().collect()
    );
}
