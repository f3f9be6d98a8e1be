//! The modules of each crate of the workspace form no circle: drawn from the `use crate::` and
//! `super::` paths of every file, no top-level module reaches itself again through others. A
//! circle would mean two modules that can only be read, changed or moved together. Test
//! modules inside the crate are left out: they use what they test.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

type Graph = BTreeMap<String, BTreeSet<String>>;

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("a source folder") {
        let path = entry.expect("an entry").path();
        if path.is_dir() {
            files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The top-level module a path of identifiers names, if it is one of `src`'s.
fn module(src: &Path, first: &str) -> Option<String> {
    let exists = src.join(first).is_dir() || src.join(format!("{first}.rs")).is_file();
    (exists && first != "lib").then(|| first.to_owned())
}

/// The identifiers after each occurrence of `prefix` in `code`.
fn after<'a>(code: &'a str, prefix: &'a str) -> impl Iterator<Item = &'a str> + 'a {
    code.match_indices(prefix).filter_map(move |(i, _)| {
        let before = code[..i].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            return None;
        }
        let rest = &code[i + prefix.len()..];
        let end = rest.find(|c: char| !(c.is_alphanumeric() || c == '_'));
        Some(&rest[..end.unwrap_or(rest.len())])
    })
}

fn graph(src: &Path) -> Graph {
    let mut all = Vec::new();
    files(src, &mut all);
    let mut graph = Graph::new();
    for file in all {
        let rel = file.strip_prefix(src).unwrap();
        let parts: Vec<String> = rel
            .iter()
            .map(|p| p.to_string_lossy().trim_end_matches(".rs").to_owned())
            .collect();
        let Some(node) = module(src, &parts[0]) else {
            continue; // lib.rs: the root re-exports every module
        };
        if parts.iter().any(|p| p.contains("test")) {
            continue; // test modules (loom models, stress tests) may reach any module they test
        }
        let text = std::fs::read_to_string(&file).unwrap();
        let code: String = text
            .lines()
            .map(|l| l.split("//").next().unwrap_or(""))
            .collect::<Vec<_>>()
            .join("\n");
        let mut targets: Vec<String> = after(&code, "crate::")
            .filter_map(|first| module(src, first))
            .collect();
        // `super::x` in a top-level module's own file (a.rs, a/mod.rs) names a sibling module.
        let top_file = parts.len() == 1 || (parts.len() == 2 && parts[1] == "mod");
        if top_file {
            targets.extend(after(&code, "super::").filter_map(|first| module(src, first)));
        }
        for target in targets {
            if target != node {
                graph.entry(node.clone()).or_default().insert(target);
            }
        }
    }
    graph
}

/// A circle of `graph`, if it has one.
fn circle(graph: &Graph) -> Option<Vec<String>> {
    fn visit(
        graph: &Graph,
        node: &str,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(start) = path.iter().position(|n| n == node) {
            let mut circle = path[start..].to_vec();
            circle.push(node.to_owned());
            return Some(circle);
        }
        if done.contains(node) {
            return None;
        }
        path.push(node.to_owned());
        for next in graph.get(node).into_iter().flatten() {
            if let Some(c) = visit(graph, next, path, done) {
                return Some(c);
            }
        }
        path.pop();
        done.insert(node.to_owned());
        None
    }
    let mut done = BTreeSet::new();
    graph
        .keys()
        .find_map(|node| visit(graph, node, &mut Vec::new(), &mut done))
}

#[test]
fn the_modules_of_each_crate_form_no_circle() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for src in [
        "src",
        "crates/cellrate-redis/src",
        "crates/cellrate-http/src",
        "crates/cellrate-server/src",
    ] {
        let graph = graph(&root.join(src));
        assert!(graph.len() > 3, "{src}: too few modules read ({graph:?})");
        if let Some(c) = circle(&graph) {
            panic!(
                "{src}: the modules {} use one another in a circle",
                c.join(" -> ")
            );
        }
    }
}

#[test]
fn a_circle_is_found() {
    let mut graph = Graph::new();
    graph.entry("a".into()).or_default().insert("b".into());
    graph.entry("b".into()).or_default().insert("c".into());
    assert_eq!(circle(&graph), None);
    graph.entry("c".into()).or_default().insert("a".into());
    assert_eq!(circle(&graph).map(|c| c.len()), Some(4));
}
