//! Every file or folder the prose documents name exists: a path from the workspace's root
//! (`src/...`, `crates/...`, `tests/...`, ...) must be there as written, and a bare file name
//! (`slot.rs`, `table/claim.rs`, whose folder the text gives around it) must be the end of
//! some file's path in the workspace. A file moved or removed then fails here instead of
//! leaving the docs pointing at nothing. Likewise every part of docs/design.md that a comment
//! of the code names (`docs/design.md, section 5, *The ledger*`) must be there.

use std::path::{Path, PathBuf};

/// The documents checked, from the workspace's root.
const DOCUMENTS: &[&str] = &[
    "README.md",
    "CONTRIBUTING.md",
    "BENCHMARKS.md",
    "docs/design.md",
    "crates/cellrate-http/README.md",
    "crates/cellrate-redis/README.md",
    "src/lib.rs",
    "crates/cellrate-http/src/lib.rs",
    "crates/cellrate-redis/src/lib.rs",
];

/// The folders at the workspace's root a path may start with.
const ROOTS: &[&str] = &[
    "src/",
    "crates/",
    "tests/",
    "benches/",
    "examples/",
    "scripts/",
    "docs/",
    ".ci/",
];

/// The endings that make a bare word a file name.
const FILE_ENDINGS: &[&str] = &[".rs", ".sh", ".py"];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every file's path in the workspace, relative to its root, `/`-separated (build output and
/// version control left out).
fn workspace_files(dir: &Path, base: &Path, out: &mut Vec<String>) {
    for entry in std::fs::read_dir(dir).expect("a folder of the workspace") {
        let path = entry.expect("an entry").path();
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        if name == "target" || name == ".git" {
            continue;
        }
        if path.is_dir() {
            workspace_files(&path, base, out);
        } else {
            let relative = path.strip_prefix(base).expect("under the root");
            out.push(relative.to_string_lossy().replace('\\', "/"));
        }
    }
}

/// The path-like words of `text`: runs of letters, digits and `_ - . / *`, with a trailing `.`
/// (the end of a sentence) removed; patterns (`*_tests.rs`) are left out.
fn words(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || "_-./*".contains(c)))
        .map(|w| w.trim_end_matches('.'))
        .filter(|w| !w.is_empty() && !w.contains('*'))
}

/// What `text` names that does not exist: whole paths missing from the tree, bare file names
/// that end no file's path.
fn missing_in(text: &str, root: &Path, files: &[String]) -> Vec<String> {
    let mut missing = Vec::new();
    for word in words(text) {
        if ROOTS.iter().any(|r| word.starts_with(r)) {
            if !root.join(word).exists() {
                missing.push(word.to_owned());
            }
        } else if FILE_ENDINGS.iter().any(|e| word.ends_with(e)) && !word.starts_with('.') {
            let suffix = format!("/{word}");
            if !files.iter().any(|f| f.ends_with(&suffix) || f == word) {
                missing.push(word.to_owned());
            }
        }
    }
    missing
}

#[test]
fn every_path_the_documents_name_exists() {
    let root = root();
    let mut files = Vec::new();
    workspace_files(&root, &root, &mut files);
    let mut missing = Vec::new();
    for document in DOCUMENTS {
        let text = std::fs::read_to_string(root.join(document)).expect("a document");
        for name in missing_in(&text, &root, &files) {
            missing.push(format!("{document}: {name}"));
        }
    }
    assert!(
        missing.is_empty(),
        "named but not in the tree: {missing:#?}"
    );
}

/// The check finds a stale path and a stale bare name, and passes real ones.
#[test]
fn a_path_that_is_not_there_is_found() {
    let root = root();
    let files = vec![
        "src/keyed/table/slot.rs".to_owned(),
        "src/sync.rs".to_owned(),
    ];
    let text = "see `src/sync.rs`, `table/slot.rs` and `slot.rs`. Not `src/engine/sync.rs` \
                or `gone.rs`.";
    assert_eq!(
        missing_in(text, &root, &files),
        ["src/engine/sync.rs", "gone.rs"]
    );
}

/// The comment text of `code`: each line's comment markers and indentation taken off, the lines
/// joined by spaces, so that a reference broken over two lines reads whole.
fn comment_text(code: &str) -> String {
    code.lines()
        .map(|l| {
            let l = l.trim_start();
            l.trim_start_matches("//!")
                .trim_start_matches("///")
                .trim_start_matches("//")
                .trim()
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The parts of docs/design.md that `text` names: an `*emphasised*` or `"quoted"` name in the
/// parenthesis (or clause) after each `design.md`.
fn design_parts_named(text: &str) -> Vec<String> {
    let mut names = Vec::new();
    for (i, _) in text.match_indices("design.md") {
        let rest = &text[i + "design.md".len()..];
        let limit = rest.char_indices().nth(120).map_or(rest.len(), |(j, _)| j);
        let clause = &rest[..rest.find([')', ';']).unwrap_or(rest.len()).min(limit)];
        for mark in ['*', '"'] {
            // n marks cut the clause into n + 1 pieces; the odd ones between pairs are names.
            let pieces: Vec<&str> = clause.split(mark).collect();
            for k in (1..pieces.len().saturating_sub(1)).step_by(2) {
                names.push(pieces[k].trim().to_owned());
            }
        }
    }
    names
}

#[test]
fn every_part_of_the_design_the_code_names_exists() {
    let root = root();
    let design = std::fs::read_to_string(root.join("docs/design.md")).expect("docs/design.md");
    let mut files = Vec::new();
    workspace_files(&root, &root, &mut files);
    let mut missing = Vec::new();
    // This file's own examples are not references.
    for file in files
        .iter()
        .filter(|f| f.ends_with(".rs") && *f != "tests/doc_paths.rs")
    {
        let code = std::fs::read_to_string(root.join(file)).expect("a source file");
        for name in design_parts_named(&comment_text(&code)) {
            if !design.contains(&name) {
                missing.push(format!("{file}: {name}"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "named but not in docs/design.md: {missing:#?}"
    );
}

/// A reference broken over two comment lines is read whole.
#[test]
fn a_reference_to_the_design_is_read_whole() {
    let code = "// see docs/design.md, section 5, *The\n    // ledger*; and design.md (\"Cells\")";
    let text = comment_text(code);
    assert_eq!(design_parts_named(&text), ["The ledger", "Cells"]);
}
