//! The check each crate's integration binary runs on its own `tests/` folder: every `.rs` file
//! directly in it is a module of `tests/integration.rs` (a `mod` line, or a `#[path]` naming
//! it) or a `[[test]]` of the crate's Cargo.toml. With `autotests = false`, Cargo would not
//! notice a file that is neither, and its tests would never run.

use std::path::Path;

/// Fails, naming them, if files of `<crate_dir>/tests` are compiled by no test target.
pub fn assert_every_file_compiled(crate_dir: &str) {
    let crate_dir = Path::new(crate_dir);
    let read = |path: &Path| {
        std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    };
    let binary = read(&crate_dir.join("tests/integration.rs"));
    let manifest = read(&crate_dir.join("Cargo.toml"));
    let dir = crate_dir.join("tests");
    let mut missing = Vec::new();
    for entry in std::fs::read_dir(&dir).expect("the crate's tests/") {
        let name = entry.expect("an entry of tests/").file_name();
        let name = name.to_string_lossy();
        let Some(stem) = name.strip_suffix(".rs") else {
            continue;
        };
        let included = binary
            .lines()
            .any(|l| l == format!("mod {stem};") || l == format!("#[path = \"{name}\"]"));
        let own_binary = manifest.contains(&format!("path = \"tests/{name}\""));
        if !included && !own_binary && stem != "integration" {
            missing.push(name.into_owned());
        }
    }
    missing.sort();
    assert!(
        missing.is_empty(),
        "not compiled by any test target: {missing:?}"
    );
}
