//! The fs plugin through the real `.so` and the host's tool registry: every
//! tool's results, and hostile or malformed input (missing fields, wrong
//! types, huge ranges, patches that do not apply, traversal names, binary
//! and over-cap files) refused with the field or file named.

use std::path::{Path, PathBuf};
use std::time::Duration;

use hearth::runtime::Runtime;
use hearth_tests::{Hearth, call_err as fails, call_ok as ok, plugin};
use serde_json::{Value, json};

fn start(extra: &str) -> (Hearth, Runtime, PathBuf) {
    let h = Hearth::with_plugins(&[plugin("fs")], extra);
    let rt = h.runtime();
    let home = h.home().canonicalize().expect("canonical home");
    (h, rt, home)
}

fn shown(path: &Path) -> String {
    path.display().to_string()
}

#[test]
fn read_file_returns_text_line_ranges_and_base64() {
    let (h, rt, home) = start("");
    h.write("notes/a.txt", "one\ntwo\nthree\n");
    let path = shown(&home.join("notes/a.txt"));
    let cases = [
        (
            json!({"path": "notes/a.txt"}),
            json!({"path": path, "content": "one\ntwo\nthree\n", "encoding": "text",
                   "size": 14, "lines": 3, "truncated": false}),
        ),
        (
            json!({"path": "notes/a.txt", "offset_line": 2, "limit_lines": 1}),
            json!({"path": path, "content": "two\n", "encoding": "text", "size": 14,
                   "lines": 3, "truncated": false, "start_line": 2, "end_line": 2}),
        ),
        (
            json!({"path": "notes/a.txt", "offset_line": 3, "limit_lines": u64::MAX}),
            json!({"path": path, "content": "three\n", "encoding": "text", "size": 14,
                   "lines": 3, "truncated": false, "start_line": 3, "end_line": 3}),
        ),
        (
            json!({"path": path.clone(), "encoding": "base64"}),
            json!({"path": path, "content": "b25lCnR3bwp0aHJlZQo=", "encoding": "base64",
                   "size": 14, "truncated": false}),
        ),
    ];
    for (args, expected) in cases {
        assert_eq!(ok(&rt, "read_file", args.clone()), expected, "{args}");
    }
    rt.stop(Duration::from_secs(5)).unwrap();
}

#[test]
fn read_file_names_an_image_for_the_host_to_show() {
    let (h, rt, home) = start("");
    let png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR rest of a picture";
    std::fs::write(home.join("chart.png"), png).unwrap();
    h.write("fake.png", "a text file wearing an image's name");
    let chart = shown(&home.join("chart.png"));
    let cases = [
        (
            json!({"path": "chart.png"}),
            json!({"path": chart, "encoding": "image", "mime": "image/png", "size": png.len(),
                   "image": {"path": chart, "mime": "image/png"}}),
        ),
        (
            json!({"path": "fake.png"}),
            json!({"path": shown(&home.join("fake.png")), "encoding": "text",
                   "content": "a text file wearing an image's name", "size": 35, "lines": 1,
                   "truncated": false}),
        ),
    ];
    for (args, expected) in cases {
        assert_eq!(ok(&rt, "read_file", args.clone()), expected, "{args}");
    }
    // Its bytes are still there for the asking.
    let bytes = ok(
        &rt,
        "read_file",
        json!({"path": "chart.png", "encoding": "base64"}),
    );
    assert_eq!(bytes["encoding"], "base64");
    assert_eq!(
        bytes["content"].as_str().map(str::len),
        Some(png.len().div_ceil(3) * 4)
    );
    rt.stop(Duration::from_secs(5)).unwrap();
}

#[test]
fn read_file_refuses_bad_input_with_the_field_or_file_named() {
    let (h, rt, home) = start("");
    h.write("a.txt", "one\ntwo\n");
    std::fs::write(
        home.join("blob.bin"),
        [0x89, b'P', b'N', b'G', 0xff, 0xfe, 0],
    )
    .unwrap();
    let cases = [
        (json!({}), "args.path"),
        (json!({"path": 5}), "args.path: expected string"),
        (json!({"path": ""}), "args.path"),
        (
            json!({"path": "a.txt", "offset_line": 0}),
            "args.offset_line",
        ),
        (
            json!({"path": "a.txt", "offset_line": "2"}),
            "args.offset_line",
        ),
        (
            json!({"path": "a.txt", "limit_lines": -1}),
            "args.limit_lines",
        ),
        (
            json!({"path": "a.txt", "offset_line": 1.5}),
            "args.offset_line",
        ),
        (
            json!({"path": "a.txt", "offset_line": 99}),
            "field `offset_line`: line 99 is past the end",
        ),
        (
            json!({"path": "a.txt", "offset_line": u64::MAX}),
            "field `offset_line`",
        ),
        (
            json!({"path": "a.txt", "encoding": "utf16"}),
            "args.encoding",
        ),
        (
            json!({"path": "a.txt", "encoding": "base64", "limit_lines": 1}),
            "field `limit_lines`",
        ),
        (
            json!({"path": "a.txt", "extra": 1}),
            "args.extra: unknown field",
        ),
        (
            json!({"path": "blob.bin"}),
            "not valid UTF-8 text (a binary file?); read it with encoding \"base64\"",
        ),
        (
            json!({"path": "missing.txt"}),
            "missing.txt: no such file or directory",
        ),
        (json!({"path": "."}), "is a directory; use list_directory"),
        (
            json!({"path": "a\u{0}b"}),
            "field `path`: must not contain a NUL",
        ),
    ];
    for (args, expected) in cases {
        let err = fails(&rt, "read_file", args.clone());
        assert!(
            err.contains(expected),
            "{args}: expected {expected:?} in {err}"
        );
    }
    // The binary file is readable as base64.
    let blob = ok(
        &rt,
        "read_file",
        json!({"path": "blob.bin", "encoding": "base64"}),
    );
    assert_eq!(blob["content"], "iVBOR//+AA==");
    rt.stop(Duration::from_secs(5)).unwrap();
}

#[test]
fn read_file_returns_the_head_of_an_over_cap_file() {
    let (h, rt, _) = start("[plugins.fs]\nmax_read_bytes = 10\n");
    h.write("big.txt", "0123456789abcdef\nsecond\n");
    // 'é' is two bytes: the cap falls inside it, which is not "binary".
    h.write("accent.txt", "123456789é tail");
    let cases = [
        (json!({"path": "big.txt"}), "0123456789", 24),
        (json!({"path": "big.txt", "offset_line": 2}), "second\n", 24),
        (
            json!({"path": "big.txt", "encoding": "base64"}),
            "MDEyMzQ1Njc4OQ==",
            24,
        ),
        (json!({"path": "accent.txt"}), "123456789", 16),
    ];
    for (args, content, size) in cases {
        let got = ok(&rt, "read_file", args.clone());
        assert_eq!(got["content"], content, "{args}");
        assert_eq!(got["size"], size, "{args}");
        // Over the cap the total line count is not read, so it is absent.
        assert_eq!(got.get("lines"), None, "{args}");
        let cut = args.get("offset_line").is_none();
        assert_eq!(got["truncated"], cut, "{args}");
    }
    rt.stop(Duration::from_secs(5)).unwrap();
}

#[test]
fn write_file_replaces_atomically_and_creates_folders_on_request() {
    let (h, rt, home) = start("");
    let written = ok(
        &rt,
        "write_file",
        json!({"path": "w.txt", "content": "héllo"}),
    );
    assert_eq!(
        written,
        json!({"path": shown(&home.join("w.txt")), "bytes_written": 6, "created": true})
    );
    let again = ok(
        &rt,
        "write_file",
        json!({"path": "w.txt", "content": "bye"}),
    );
    assert_eq!(again["created"], false);
    assert_eq!(std::fs::read_to_string(home.join("w.txt")).unwrap(), "bye");
    ok(
        &rt,
        "write_file",
        json!({"path": "bin/x", "content": "AAH/", "encoding": "base64", "create_dirs": true}),
    );
    assert_eq!(std::fs::read(home.join("bin/x")).unwrap(), [0, 1, 255]);
    // Traversal inside the name resolves to the file really written.
    let up = ok(
        &rt,
        "write_file",
        json!({"path": "bin/../up.txt", "content": ""}),
    );
    assert_eq!(up["path"], shown(&home.join("up.txt")));
    // No temp files are left behind.
    let names: Vec<String> = std::fs::read_dir(&home)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(names.iter().all(|n| !n.ends_with(".tmp")), "{names:?}");
    let cases = [
        (json!({"path": "x.txt"}), "args.content"),
        (
            json!({"path": "x.txt", "content": 5}),
            "args.content: expected string",
        ),
        (
            json!({"path": "x.txt", "content": "", "create_dirs": "yes"}),
            "args.create_dirs",
        ),
        (
            json!({"path": "x.txt", "content": "!!", "encoding": "base64"}),
            "field `content`: is not valid base64",
        ),
        (
            json!({"path": "no/such/x.txt", "content": ""}),
            "field `create_dirs`: the folder",
        ),
        (json!({"path": "bin", "content": ""}), "is a directory"),
        (
            json!({"path": "w.txt/inner", "content": "", "create_dirs": true}),
            "w.txt",
        ),
    ];
    for (args, expected) in cases {
        let err = fails(&rt, "write_file", args.clone());
        assert!(
            err.contains(expected),
            "{args}: expected {expected:?} in {err}"
        );
    }
    assert!(!h.home().join("no").exists());
    rt.stop(Duration::from_secs(5)).unwrap();
}

#[test]
fn list_directory_lists_entries_and_bounds_recursion() {
    let (h, rt, home) = start("");
    h.write("d/b.txt", "12345");
    h.write("d/sub/c.txt", "");
    h.write("d/1/2/3/4/5/6/deep.txt", "");
    std::os::unix::fs::symlink(home.join("d/sub"), home.join("d/link")).unwrap();
    let flat = ok(&rt, "list_directory", json!({"path": "d"}));
    let names: Vec<(&str, &str)> = flat["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["name"].as_str().unwrap(), e["type"].as_str().unwrap()))
        .collect();
    assert_eq!(
        names,
        [
            ("1", "dir"),
            ("b.txt", "file"),
            ("link", "symlink"),
            ("sub", "dir")
        ]
    );
    assert_eq!(flat["entries"][1]["size"], 5);
    assert!(flat["entries"][1]["modified"].as_u64().unwrap() > 1_600_000_000_000);
    assert_eq!(flat["truncated"], false);
    let deep = ok(
        &rt,
        "list_directory",
        json!({"path": "d", "recursive": true}),
    );
    let names: Vec<&str> = deep["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"sub/c.txt") && names.contains(&"1/2/3/4/5"),
        "{names:?}"
    );
    assert!(!names.iter().any(|n| n.contains("deep")), "{names:?}");
    assert_eq!(deep["truncated"], true);
    // The symlink is listed, not followed.
    assert!(!names.contains(&"link/c.txt"), "{names:?}");
    for i in 0..1005 {
        std::fs::write(home.join(format!("many{i:04}")), "").unwrap();
    }
    let many = ok(&rt, "list_directory", json!({"path": "."}));
    assert_eq!(many["entries"].as_array().unwrap().len(), 1000);
    assert_eq!(many["truncated"], true);
    assert!(many["note"].as_str().unwrap().contains("1000"));
    let cases = [
        (json!({}), "args.path"),
        (json!({"path": "d", "recursive": 1}), "args.recursive"),
        (json!({"path": "d/b.txt"}), "is not a directory"),
        (
            json!({"path": "nowhere"}),
            "nowhere: no such file or directory",
        ),
    ];
    for (args, expected) in cases {
        let err = fails(&rt, "list_directory", args.clone());
        assert!(
            err.contains(expected),
            "{args}: expected {expected:?} in {err}"
        );
    }
    rt.stop(Duration::from_secs(5)).unwrap();
}

#[test]
fn delete_path_deletes_and_refuses_roots_and_homes() {
    let (h, rt, home) = start("");
    h.write("f.txt", "x");
    h.write("full/inner.txt", "x");
    std::fs::create_dir(home.join("empty")).unwrap();
    std::os::unix::fs::symlink(home.join("full"), home.join("link")).unwrap();
    let cases = [
        (json!({"path": "f.txt"}), "file"),
        (json!({"path": "empty"}), "dir"),
        (json!({"path": "link"}), "symlink"),
    ];
    for (args, kind) in cases {
        assert_eq!(
            ok(&rt, "delete_path", args.clone())["deleted"],
            kind,
            "{args}"
        );
    }
    // The link went, its target stayed.
    assert!(home.join("full/inner.txt").exists());
    let refusals = [
        (json!({"path": "full"}), "field `recursive`"),
        (json!({"path": "/"}), "refusing to delete /"),
        (json!({"path": "/.."}), "refusing to delete /"),
        (json!({"path": "~"}), "refusing to delete"),
        (json!({"path": "~/"}), "refusing to delete"),
        (json!({"path": "~/.."}), "refusing to delete"),
        (
            json!({"path": ".", "recursive": true}),
            "refusing to delete",
        ),
        (
            json!({"path": "full/..", "recursive": true}),
            "refusing to delete",
        ),
        (
            json!({"path": "..", "recursive": true}),
            "refusing to delete",
        ),
        (
            json!({"path": "gone.txt"}),
            "gone.txt: no such file or directory",
        ),
        (
            json!({"path": "f.txt", "recursive": "yes"}),
            "args.recursive",
        ),
    ];
    for (args, expected) in refusals {
        // The owner granted each call, as if they had said "always allow":
        // where $HOME is a protected path (root's /root), the policy would
        // otherwise ask first, and this test is about the plugin's own
        // refusal, which holds even for an approved call.
        h.grant("delete_path", &args);
        let err = fails(&rt, "delete_path", args.clone());
        assert!(
            err.contains(expected),
            "{args}: expected {expected:?} in {err}"
        );
    }
    assert!(home.join("hearth.toml").exists());
    assert_eq!(
        ok(
            &rt,
            "delete_path",
            json!({"path": "full", "recursive": true})
        )["deleted"],
        "dir"
    );
    assert!(!home.join("full").exists());
    rt.stop(Duration::from_secs(5)).unwrap();
}

#[test]
fn apply_patch_modifies_creates_and_deletes_files() {
    let (h, rt, home) = start("");
    h.write("src/main.rs", "fn main() {\n    println!(\"hi\");\n}\n");
    h.write("old.txt", "bye\n");
    let patch = "diff --git a/src/main.rs b/src/main.rs\n\
        --- a/src/main.rs\n+++ b/src/main.rs\n@@ -1,3 +1,4 @@\n fn main() {\n-    println!(\"hi\");\n+    println!(\"hello\");\n+    println!(\"world\");\n }\n\
        --- /dev/null\n+++ b/new/dir/made.txt\n@@ -0,0 +1,2 @@\n+first\n+second\n\
        --- a/old.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-bye\n";
    let got = ok(&rt, "apply_patch", json!({"patch": patch}));
    assert_eq!(
        got,
        json!({"files": [
            {"path": shown(&home.join("src/main.rs")), "action": "modified", "hunks": 1},
            {"path": shown(&home.join("new/dir/made.txt")), "action": "created", "hunks": 1},
            {"path": shown(&home.join("old.txt")), "action": "deleted", "hunks": 1},
        ]})
    );
    assert_eq!(
        std::fs::read_to_string(home.join("src/main.rs")).unwrap(),
        "fn main() {\n    println!(\"hello\");\n    println!(\"world\");\n}\n"
    );
    assert_eq!(
        std::fs::read_to_string(home.join("new/dir/made.txt")).unwrap(),
        "first\nsecond\n"
    );
    assert!(!home.join("old.txt").exists());
    // `root` makes the patch's paths relative to another folder.
    let rooted = "--- a/made.txt\n+++ b/made.txt\n@@ -2 +2 @@\n-second\n+2nd\n";
    ok(
        &rt,
        "apply_patch",
        json!({"patch": rooted, "root": "new/dir"}),
    );
    assert_eq!(
        std::fs::read_to_string(home.join("new/dir/made.txt")).unwrap(),
        "first\n2nd\n"
    );
    rt.stop(Duration::from_secs(5)).unwrap();
}

#[test]
fn a_patch_that_does_not_apply_changes_nothing_and_says_where() {
    let (h, rt, home) = start("");
    h.write("a.txt", "one\ntwo\nthree\n");
    h.write("b.txt", "alpha\nbeta\n");
    std::fs::write(home.join("bin.dat"), [0xff, 0xfe, b'\n']).unwrap();
    let good_a = "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-one\n+ONE\n";
    let cases = [
        (
            format!("{good_a}--- a/b.txt\n+++ b/b.txt\n@@ -1,2 +1,2 @@\n alpha\n-BETA\n+gamma\n"),
            "b.txt, hunk 1 (@@ -1,2 +1,2 @@): line 2 of the file is \"beta\" but the patch expects \"BETA\"",
        ),
        (
            format!("{good_a}--- /dev/null\n+++ b/b.txt\n@@ -0,0 +1 @@\n+x\n"),
            "the patch creates",
        ),
        (
            "--- a/b.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-alpha\n".into(),
            "the file has lines the patch does not remove",
        ),
        (
            "--- a/missing.txt\n+++ b/missing.txt\n@@ -1 +1 @@\n-a\n+b\n".into(),
            "missing.txt, which does not exist",
        ),
        (
            "--- a/bin.dat\n+++ b/bin.dat\n@@ -1 +1 @@\n-a\n+b\n".into(),
            "bin.dat is not UTF-8 text",
        ),
        (
            "--- a/a.txt\n+++ b/a.txt\n@@ -1,3 +1,3 @@\n one\n".into(),
            "field `patch`: file a.txt, hunk 1: the patch ends",
        ),
        (
            "--- a/a.txt\n+++ b/a.txt\n@@ one @@\n".into(),
            "field `patch`: file a.txt, hunk 1: malformed header",
        ),
        ("just some text".into(), "field `patch`: no file headers"),
        (
            "--- a/a.txt\n+++ b/a.txt\nBinary files differ\n".into(),
            "no @@ hunks",
        ),
    ];
    for (patch, expected) in cases {
        let err = fails(&rt, "apply_patch", json!({"patch": patch}));
        assert!(
            err.contains(expected),
            "{patch}\nexpected {expected:?} in {err}"
        );
        assert_eq!(
            std::fs::read_to_string(home.join("a.txt")).unwrap(),
            "one\ntwo\nthree\n"
        );
        assert_eq!(
            std::fs::read_to_string(home.join("b.txt")).unwrap(),
            "alpha\nbeta\n"
        );
    }
    for (args, expected) in [
        (json!({}), "args.patch"),
        (json!({"patch": 3}), "args.patch: expected string"),
        (json!({"patch": ""}), "args.patch"),
    ] {
        let err = fails(&rt, "apply_patch", args.clone());
        assert!(
            err.contains(expected),
            "{args}: expected {expected:?} in {err}"
        );
    }
    rt.stop(Duration::from_secs(5)).unwrap();
}

#[test]
fn search_files_finds_names_and_lines_within_bounds() {
    let (h, rt, home) = start("");
    h.write("proj/src/lib.rs", "//! Lib.\nfn alpha() {}\nfn Beta() {}\n");
    h.write("proj/src/deep/mod.rs", "fn alpha_two() {}\n");
    h.write("proj/README.md", "alpha in docs\n");
    h.write("proj/.git/config", "alpha\n");
    h.write("proj/long.txt", &format!("alpha{}\n", "x".repeat(1000)));
    std::fs::write(home.join("proj/bin.dat"), b"alpha\0\xff").unwrap();
    std::fs::write(home.join("proj/huge.txt"), "alpha\n".repeat(200_000)).unwrap();
    let src = home.join("proj/src");
    let files = |v: &Value| -> Vec<(String, Value)> {
        v["matches"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| (m["file"].as_str().unwrap().to_owned(), m["line"].clone()))
            .collect()
    };
    let cases = [
        (
            json!({"path": "proj", "glob": "*.rs", "pattern": "alpha"}),
            vec![
                (shown(&src.join("deep/mod.rs")), json!(1)),
                (shown(&src.join("lib.rs")), json!(2)),
            ],
        ),
        (
            json!({"path": "proj", "glob": "src/*.rs"}),
            vec![(shown(&src.join("lib.rs")), Value::Null)],
        ),
        (
            json!({"path": "proj/src", "pattern": "^fn [A-Z]", "regex": true}),
            vec![(shown(&src.join("lib.rs")), json!(3))],
        ),
        (
            json!({"path": "proj/src/lib.rs", "pattern": "beta", "case_insensitive": true}),
            vec![(shown(&src.join("lib.rs")), json!(3))],
        ),
        (
            json!({"path": "proj", "pattern": "nothing matches this"}),
            vec![],
        ),
    ];
    for (args, expected) in cases {
        assert_eq!(
            files(&ok(&rt, "search_files", args.clone())),
            expected,
            "{args}"
        );
    }
    let all = ok(
        &rt,
        "search_files",
        json!({"path": "proj", "pattern": "alpha"}),
    );
    assert_eq!(all["skipped_binary"], 1);
    assert_eq!(all["skipped_large"], 1);
    let texts: Vec<&str> = all["matches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["text"].as_str().unwrap())
        .collect();
    assert!(texts.iter().all(|t| t.chars().count() <= 300), "{texts:?}");
    assert!(!all.to_string().contains(".git"), "{all}");
    let capped = ok(
        &rt,
        "search_files",
        json!({"path": "proj", "pattern": "alpha", "max_results": 2}),
    );
    assert_eq!(capped["matches"].as_array().unwrap().len(), 2);
    assert_eq!(capped["truncated"], true);
    let cases = [
        (json!({"glob": "*"}), "args.path"),
        (
            json!({"path": "proj", "max_results": 5000}),
            "args.max_results",
        ),
        (
            json!({"path": "proj", "max_results": 0}),
            "args.max_results",
        ),
        (
            json!({"path": "proj", "pattern": "(", "regex": true}),
            "field `pattern`: is not a valid regex",
        ),
        (
            json!({"path": "proj", "glob": "a[", "pattern": "x"}),
            "field `glob`: is not a valid glob",
        ),
        (json!({"path": "proj", "regex": "yes"}), "args.regex"),
        (
            json!({"path": "nowhere"}),
            "nowhere: no such file or directory",
        ),
    ];
    for (args, expected) in cases {
        let err = fails(&rt, "search_files", args.clone());
        assert!(
            err.contains(expected),
            "{args}: expected {expected:?} in {err}"
        );
    }
    rt.stop(Duration::from_secs(5)).unwrap();
}

#[test]
fn paths_resolve_from_the_hearth_home_and_tilde_and_traversal_is_reported() {
    let (h, rt, home) = start("");
    h.write("in/x.txt", "x");
    let cases = [
        ("in/x.txt", home.join("in/x.txt")),
        ("./in/../in/x.txt", home.join("in/x.txt")),
        (&*shown(&home.join("in/x.txt")), home.join("in/x.txt")),
    ];
    for (raw, real) in cases {
        let got = ok(&rt, "read_file", json!({"path": raw}));
        assert_eq!(got["path"], shown(&real), "{raw}");
    }
    // `..` past the home is resolved and reported, not confined: that is the
    // policy's job.
    let parent = home.parent().unwrap();
    let listed = ok(&rt, "list_directory", json!({"path": ".."}));
    assert_eq!(listed["path"], shown(parent));
    if let Some(user_home) = std::env::var_os("HOME").filter(|h| !h.is_empty()) {
        let err = fails(
            &rt,
            "read_file",
            json!({"path": "~/hearth-fs-test-no-such-file"}),
        );
        let real = Path::new(&user_home).canonicalize().unwrap();
        assert!(
            err.contains(&shown(&real.join("hearth-fs-test-no-such-file"))),
            "{err}"
        );
    }
    rt.stop(Duration::from_secs(5)).unwrap();
}
