//! Rules every source file follows, checked over the whole workspace:
//! each starts with a `//!` comment, no crate's modules import each other
//! in a circle, no crate grows past its share of lines, and every
//! integration test file is compiled into the suite.

use std::path::{Path, PathBuf};

use crate::module_graph;

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap().map(Result::unwrap) {
        let path = entry.path();
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if path.is_dir() {
            if !matches!(name.as_ref(), "target" | "node_modules") && !name.starts_with('.') {
                rust_files(&path, out);
            }
        } else if name.ends_with(".rs") {
            out.push(path);
        }
    }
}

#[test]
fn every_rust_file_starts_with_a_module_doc_comment() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = Vec::new();
    rust_files(&root, &mut files);
    assert!(files.len() > 20, "found only {} files", files.len());
    let missing: Vec<String> = files
        .iter()
        .filter(|f| {
            let text = std::fs::read_to_string(f).unwrap();
            !text.trim_start().starts_with("//!")
        })
        .map(|f| f.strip_prefix(&root).unwrap_or(f).display().to_string())
        .collect();
    assert!(
        missing.is_empty(),
        "files without a leading //! comment: {missing:#?}"
    );
}

/// `tests/Cargo.toml` turns off cargo's discovery of test files, so a file
/// `suite.rs` does not name would never be compiled, and its tests would
/// pass by never running.
#[test]
fn every_test_file_is_a_module_of_the_suite() {
    let tests = Path::new(env!("CARGO_MANIFEST_DIR"));
    let suite = std::fs::read_to_string(tests.join("suite.rs")).unwrap();
    let manifest = std::fs::read_to_string(tests.join("Cargo.toml")).unwrap();
    let mut loose = Vec::new();
    for entry in std::fs::read_dir(tests).unwrap().map(Result::unwrap) {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(module) = name.strip_suffix(".rs") else {
            continue;
        };
        let declared = suite.lines().any(|l| l == format!("mod {module};"));
        let own_target = manifest.contains(&format!("\"{name}\""));
        if !declared && !own_target && module != "suite" {
            loose.push(name);
        }
    }
    assert!(
        loose.is_empty(),
        "test files neither in tests/suite.rs (`mod NAME;`) nor a target of \
         tests/Cargo.toml, so never compiled: {loose:?}"
    );
}

/// Every crate's `src`, beside the test suite's own (tests may import what
/// they like; the rule is for the product).
fn crate_sources(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut dirs = vec![root.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().map(Result::unwrap) {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            if !path.is_dir() || name.starts_with('.') {
                continue;
            }
            if matches!(name.as_str(), "target" | "node_modules" | "tests") && dir == root {
                continue;
            }
            if name == "src" && dir.join("Cargo.toml").exists() {
                out.push(path);
            } else if !matches!(name.as_str(), "target" | "node_modules") {
                dirs.push(path);
            }
        }
    }
    out.sort();
    out
}

#[test]
fn no_module_of_any_crate_imports_another_in_a_circle() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let crates = crate_sources(&root);
    assert!(crates.len() > 10, "found only {} crates", crates.len());
    let mut found = Vec::new();
    for src in &crates {
        let graph = module_graph::Graph::read(src);
        let name = src.strip_prefix(&root).unwrap_or(src).display().to_string();
        for circle in graph.circles() {
            let shown: Vec<String> = circle
                .iter()
                .map(|(file, imports)| {
                    let imports: Vec<String> =
                        imports.iter().map(|f| f.display().to_string()).collect();
                    format!("  {} imports {}", file.display(), imports.join(", "))
                })
                .collect();
            found.push(format!("in {name}:\n{}", shown.join("\n")));
        }
    }
    assert!(
        found.is_empty(),
        "import circles (break each at its root: move what both sides need \
         down, or make the call upward a trait the lower side owns; \
         docs/ARCHITECTURE.md, Layers):\n{}",
        found.join("\n")
    );
}

/// The most lines of Rust one crate's `src` may hold: past it a one-line
/// change rebuilds too much, and the crate has more than one job
/// (docs/ARCHITECTURE.md, The crate split).
const MOST_LINES_PER_CRATE: usize = 15_000;

#[test]
fn no_crate_holds_more_than_its_share_of_lines() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut over = Vec::new();
    for src in crate_sources(&root) {
        let mut files = Vec::new();
        rust_files(&src, &mut files);
        let lines: usize = files
            .iter()
            .map(|f| std::fs::read_to_string(f).unwrap().lines().count())
            .sum();
        if lines > MOST_LINES_PER_CRATE {
            let name = src
                .strip_prefix(&root)
                .unwrap_or(&src)
                .display()
                .to_string();
            over.push(format!("{name}: {lines} lines"));
        }
    }
    assert!(
        over.is_empty(),
        "crates over {MOST_LINES_PER_CRATE} lines (split by job, as the \
         crate table does): {over:?}"
    );
}

/// A case of the reader's test: its name, its files (path and text), and
/// the circles (their files, sorted) it must find.
type Case = (
    &'static str,
    &'static [(&'static str, &'static str)],
    &'static [&'static [&'static str]],
);

/// The reader itself, on small crates whose circles are known: each case
/// is a set of files and the circles the graph must find in them.
#[test]
fn the_import_graph_finds_circles_and_only_circles() {
    let cases: &[Case] = &[
        (
            "a direct use each way",
            &[
                ("lib.rs", "mod a;\nmod b;\n"),
                ("a.rs", "use crate::b::f;\npub fn g() {}\n"),
                ("b.rs", "pub fn f() { crate::a::g() }\n"),
            ],
            &[&["a.rs", "b.rs"]],
        ),
        (
            "through a re-export at the root",
            &[
                ("lib.rs", "mod a;\nmod b;\npub use a::Thing;\n"),
                (
                    "a.rs",
                    "pub struct Thing;\nuse crate::b::{self as other, f};\n",
                ),
                ("b.rs", "use crate::Thing;\npub fn f() {}\n"),
            ],
            &[&["a.rs", "b.rs"]],
        ),
        (
            "two children through super and a bare child path",
            &[
                ("lib.rs", "mod r;\n"),
                ("r/mod.rs", "mod c;\nmod d;\n"),
                ("r/c.rs", "pub const Y: u8 = super::d::X;\n"),
                (
                    "r/d.rs",
                    "pub const X: u8 = 1;\nfn f() -> u8 { super::super::r::c::Y }\n",
                ),
            ],
            &[&["r/c.rs", "r/d.rs"]],
        ),
        (
            "a module's parts may use what it defines",
            &[
                ("lib.rs", "mod r;\npub struct Top;\nfn f() { r::go() }\n"),
                (
                    "r/mod.rs",
                    "mod c;\npub fn go() { c::run(crate::Top) }\npub const X: u8 = 1;\n",
                ),
                ("r/c.rs", "use super::X;\npub fn run(_: crate::Top) {}\n"),
            ],
            &[],
        ),
        (
            "a layered crate, with a re-export, comments, strings and tests",
            &[
                ("lib.rs", "mod low;\nmod high;\npub use low::Base;\n"),
                (
                    "low.rs",
                    "// crate::high::Top\npub struct Base;\nconst S: &str = \"crate::high::Top\";\n#[cfg(test)]\nmod tests { use crate::high::Top; }\n",
                ),
                ("high.rs", "use crate::Base;\npub struct Top(Base);\n"),
            ],
            &[],
        ),
    ];
    for (name, files, expected) in cases {
        let dir = tempfile::tempdir().unwrap();
        for (path, text) in *files {
            let path = dir.path().join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        let got: Vec<Vec<String>> = module_graph::Graph::read(dir.path())
            .circles()
            .into_iter()
            .map(|c| {
                let mut c: Vec<String> = c.iter().map(|(f, _)| f.display().to_string()).collect();
                c.sort();
                c
            })
            .collect();
        let want: Vec<Vec<String>> = expected
            .iter()
            .map(|c| c.iter().map(|f| f.to_string()).collect())
            .collect();
        assert_eq!(got, want, "{name}");
    }
}
