//! The kernel floor on the real kernel: commands run under a prepared
//! floor, and what they may and may not do to protected paths, their
//! ancestors, their siblings and to processes outside their domain.
//!
//! Every test fails when the kernel lacks Landlock ABI 6, unless
//! `HEARTH_TEST_NO_LANDLOCK=1` says the machine has none.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use hearth_sdk::floor::{self, Grant};
use hearth_sdk::protocol::Floor;

/// Whether the kernel can run these tests (it fails them without
/// Landlock ABI 6; see `required_for_tests`).
fn supported() -> bool {
    hearth_sdk::landlock::required_for_tests(floor::SIGNAL_SCOPE_ABI)
}

fn floor(protect: &[&Path], writable: &[&Path]) -> Floor {
    Floor {
        protect: protect.iter().map(|p| p.display().to_string()).collect(),
        writable: writable.iter().map(|p| p.display().to_string()).collect(),
        hidden: Vec::new(),
    }
}

/// Runs `script` with `sh -c` under `floor`.
fn run(floor: &Floor, script: &str) -> Output {
    let prepared = floor::prepare(floor).expect("prepare the floor");
    let fd = prepared.fd();
    let mut command = Command::new("/bin/sh");
    command.arg("-c").arg(script);
    // SAFETY: restrict_self makes two syscalls; the descriptor stays open
    // (in `prepared`) until the child has started.
    unsafe {
        command.pre_exec(move || hearth_sdk::landlock::restrict_self(fd));
    }
    let output = command.output().expect("run sh");
    drop(prepared);
    output
}

/// Runs each `(script, allowed)` and checks the exit status says so.
fn expect(floor: &Floor, cases: &[(&str, bool)]) {
    for (script, allowed) in cases {
        let out = run(floor, script);
        assert_eq!(
            out.status.success(),
            *allowed,
            "{script}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

struct Tree {
    _dir: tempfile::TempDir,
    root: PathBuf,
}

/// `root/{keys/id, open/notes, db, plain}` in `/tmp`.
fn tree() -> Tree {
    tree_in(&std::env::temp_dir())
}

/// The same tree in `parent`.
/// A directory no other test here writes into, and not under `/tmp`:
/// `/var/tmp`, else the target directory's scratch space.
fn quiet_parent() -> std::path::PathBuf {
    let var_tmp = Path::new("/var/tmp");
    let writable = tempfile::tempdir_in(var_tmp).is_ok();
    if writable {
        var_tmp.to_owned()
    } else {
        Path::new(env!("CARGO_TARGET_TMPDIR")).to_owned()
    }
}

fn tree_in(parent: &Path) -> Tree {
    let dir = tempfile::tempdir_in(parent).unwrap();
    let root = dir.path().canonicalize().unwrap();
    std::fs::create_dir(root.join("keys")).unwrap();
    std::fs::write(root.join("keys/id"), "secret").unwrap();
    std::fs::create_dir(root.join("open")).unwrap();
    std::fs::write(root.join("open/notes"), "n").unwrap();
    std::fs::write(root.join("db"), "rows").unwrap();
    std::fs::write(root.join("plain"), "p").unwrap();
    Tree { _dir: dir, root }
}

#[test]
fn a_protected_directory_is_read_only_and_its_siblings_are_not() {
    if !supported() {
        return;
    }
    let t = tree();
    let keys = t.root.join("keys");
    let f = floor(&[&keys], &[]);
    let r = t.root.display();
    expect(
        &f,
        &[
            (&format!("cat {r}/keys/id"), true),
            (&format!("echo x > {r}/keys/id"), false),
            (&format!("echo x >> {r}/keys/id"), false),
            (&format!("truncate -s 0 {r}/keys/id"), false),
            (&format!("rm {r}/keys/id"), false),
            (&format!("touch {r}/keys/new"), false),
            (&format!("mkdir {r}/keys/sub"), false),
            (&format!("ln -s x {r}/keys/link"), false),
            (&format!("mv {r}/keys/id {r}/keys/id2"), false),
            (&format!("mv {r}/keys {r}/keys2"), false),
            (&format!("rm -r {r}/keys"), false),
            // The ancestor holds a protected directory: nothing is made or
            // removed in it, so `keys` cannot be replaced.
            (&format!("mkdir {r}/fresh"), false),
            (&format!("rm {r}/plain"), false),
            // Its existing entries are writable.
            (&format!("echo x >> {r}/plain"), true),
            (&format!("echo x > {r}/open/notes"), true),
            (
                &format!("mkdir {r}/open/a && echo y > {r}/open/a/b && rm -r {r}/open/a"),
                true,
            ),
            (&format!("mv {r}/open/notes {r}/open/renamed"), true),
            // Elsewhere is untouched by the floor.
            ("echo x > /dev/null", true),
        ],
    );
    assert_eq!(std::fs::read_to_string(keys.join("id")).unwrap(), "secret");
}

#[test]
fn an_ancestor_of_protected_files_only_may_make_entries() {
    if !supported() {
        return;
    }
    let t = tree();
    let db = t.root.join("db");
    let f = floor(&[&db], &[]);
    let r = t.root.display();
    expect(
        &f,
        &[
            (&format!("echo x > {r}/db"), false),
            (&format!("rm {r}/db"), false),
            (&format!("mv {r}/db {r}/db.old"), false),
            (&format!("mv {r}/plain {r}/db"), false),
            (&format!("ln {r}/db {r}/open/db"), false),
            // A hard link beside it is made, but is as read-only as the file.
            (&format!("ln {r}/db {r}/db2 && echo x >> {r}/db2"), false),
            (&format!("mkdir {r}/made"), true),
            // Made in the same command, so not yet listed: not writable.
            (
                &format!("mkdir {r}/fresh && echo x > {r}/fresh/file"),
                false,
            ),
            (&format!("echo x > {r}/plain"), true),
        ],
    );
    // The next command lists the new directory as a sibling.
    expect(&f, &[(&format!("echo x > {r}/made/file"), true)]);
    assert_eq!(std::fs::read_to_string(&db).unwrap(), "rows");
}

#[test]
fn a_missing_protected_path_cannot_be_made() {
    if !supported() {
        return;
    }
    let t = tree();
    let missing = t.root.join("open/.profile");
    let f = floor(&[&missing], &[]);
    let r = t.root.display();
    expect(
        &f,
        &[
            (&format!("echo x > {r}/open/.profile"), false),
            (&format!("ln -s {r}/plain {r}/open/.profile"), false),
            (&format!("ln {r}/open/notes {r}/open/.profile"), false),
            (&format!("mkdir {r}/open/.profile"), false),
            (&format!("echo x > {r}/open/notes"), true),
        ],
    );
    assert!(!missing.exists());
}

#[test]
fn a_writable_place_inside_a_protected_one_stays_writable() {
    if !supported() {
        return;
    }
    let t = tree();
    let open = t.root.join("open");
    let secret = t.root.join("open/secret");
    std::fs::write(&secret, "s").unwrap();
    let f = floor(&[&t.root, &secret], &[&open]);
    let r = t.root.display();
    expect(
        &f,
        &[
            (&format!("echo x > {r}/plain"), false),
            (&format!("echo x > {r}/open/notes"), true),
            (&format!("echo x > {r}/open/secret"), false),
            (&format!("rm {r}/open/secret"), false),
        ],
    );
}

#[test]
fn a_protected_link_protects_what_it_leads_to() {
    if !supported() {
        return;
    }
    let t = tree();
    let link = t.root.join("open/rc");
    std::os::unix::fs::symlink(t.root.join("plain"), &link).unwrap();
    let f = floor(&[&link], &[]);
    let r = t.root.display();
    expect(
        &f,
        &[
            (&format!("echo x > {r}/open/rc"), false),
            (&format!("echo x > {r}/plain"), false),
            (&format!("rm {r}/open/rc"), false),
        ],
    );
}

#[test]
fn signals_to_processes_outside_the_domain_are_refused() {
    if !supported() {
        return;
    }
    let t = tree();
    let mut outside = Command::new("sleep").arg("30").spawn().unwrap();
    let f = floor(&[&t.root.join("keys")], &[]);
    let out = run(&f, &format!("kill {}", outside.id()));
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("Operation not permitted"),
        "kill said {stderr:?}"
    );
    assert!(outside.try_wait().unwrap().is_none(), "sleep was killed");
    // Inside its own domain a command still signals what it started.
    expect(&f, &[("sleep 30 & kill $!; wait $!; [ $? -eq 143 ]", true)]);
    // With no protected path the floor still scopes signals.
    let out = run(&Floor::default(), &format!("kill {}", outside.id()));
    assert!(!out.status.success());
    assert!(outside.try_wait().unwrap().is_none(), "sleep was killed");
    outside.kill().unwrap();
    outside.wait().unwrap();
}

#[test]
fn the_plan_grants_siblings_and_skips_protected_paths_and_links() {
    let t = tree();
    std::os::unix::fs::symlink("/etc", t.root.join("etc-link")).unwrap();
    let keys = t.root.join("keys");
    let rules = floor::plan(&floor(&[&keys], &[])).unwrap();
    let grant = |p: &Path| rules.iter().find(|r| r.path == p).map(|r| r.grant);
    assert_eq!(grant(&t.root.join("open")), Some(Grant::Tree));
    assert_eq!(grant(&t.root.join("plain")), Some(Grant::File));
    assert_eq!(grant(&keys), None);
    assert_eq!(
        grant(&t.root),
        None,
        "an ancestor of a protected directory gets nothing"
    );
    assert_eq!(grant(&t.root.join("etc-link")), None, "links get no rule");
    let rules = floor::plan(&floor(&[&t.root.join("db")], &[])).unwrap();
    assert!(
        rules
            .iter()
            .any(|r| r.path == t.root && r.grant == Grant::Make)
    );
}

#[test]
fn relative_paths_are_refused() {
    let err = floor::plan(&Floor {
        protect: vec!["etc".into()],
        writable: Vec::new(),
        hidden: Vec::new(),
    })
    .unwrap_err();
    assert_eq!(err.to_string(), "floor path \"etc\" is not absolute");
}

#[test]
fn a_kept_floor_is_reused_until_a_directory_it_was_planned_from_changes() {
    if !supported() {
        return;
    }
    // Outside `/tmp`, which the other tests keep changing: the floor
    // depends on every ancestor of its paths. The target directory is no
    // answer when the checkout itself lives under `/tmp` (a CI clone).
    let t = tree_in(&quiet_parent());
    let f = floor(&[&t.root.join("keys")], &[]);
    let cache = floor::Cache::default();
    // Planned right after the tree was made: used once, not kept.
    let first = cache.prepare(&f).unwrap();
    assert!(!std::sync::Arc::ptr_eq(&first, &cache.prepare(&f).unwrap()));
    std::thread::sleep(floor::RECENT * 2);
    let settled = cache.prepare(&f).unwrap();
    assert!(std::sync::Arc::ptr_eq(
        &settled,
        &cache.prepare(&f).unwrap()
    ));
    // A new entry beside the protected directory: planned afresh, and the
    // new entry is writable under the new floor, not under the kept one.
    std::fs::create_dir(t.root.join("later")).unwrap();
    let fresh = cache.prepare(&f).unwrap();
    assert!(!std::sync::Arc::ptr_eq(&settled, &fresh));
    let write = format!("echo x > {}/later/file", t.root.display());
    assert!(!run_prepared(&settled, &write).status.success());
    assert!(run_prepared(&fresh, &write).status.success());
    // Another floor is never served from the cache.
    let other = floor(&[&t.root.join("db")], &[]);
    std::thread::sleep(floor::RECENT * 2);
    let kept = cache.prepare(&other).unwrap();
    assert!(!std::sync::Arc::ptr_eq(&kept, &cache.prepare(&f).unwrap()));
}

/// Runs `script` with `sh -c` under an already prepared floor.
fn run_prepared(prepared: &floor::Prepared, script: &str) -> Output {
    let fd = prepared.fd();
    let mut command = Command::new("/bin/sh");
    command.arg("-c").arg(script);
    // SAFETY: as in `run`; `prepared` outlives the child's start.
    unsafe {
        command.pre_exec(move || hearth_sdk::landlock::restrict_self(fd));
    }
    command.output().expect("run sh")
}

#[test]
fn a_floor_planned_just_after_a_change_of_mode_is_not_kept() {
    if !supported() {
        return;
    }
    use std::os::unix::fs::PermissionsExt;
    // A parent of its own: a tree made in `quiet_parent()` would change
    // the folder the kept-floor test's floor depends on, while it runs.
    let parent = Path::new(env!("CARGO_TARGET_TMPDIR")).join("mode-change");
    std::fs::create_dir_all(&parent).unwrap();
    let t = tree_in(&parent);
    let f = floor(&[&t.root.join("keys")], &[]);
    std::thread::sleep(floor::RECENT * 2);
    // A change of mode moves only the directory's ctime, not its mtime.
    let mode = std::fs::Permissions::from_mode(0o755);
    std::fs::set_permissions(&t.root, mode).unwrap();
    let cache = floor::Cache::default();
    let first = cache.prepare(&f).unwrap();
    assert!(!std::sync::Arc::ptr_eq(&first, &cache.prepare(&f).unwrap()));
}

#[test]
fn a_plugins_own_writes_obey_the_floor() {
    let t = tree();
    let mut f = floor(&[&t.root.join("keys")], &[]);
    f.hidden = vec![t.root.join("db").display().to_string()];
    let cases = [
        (t.root.join("new.txt"), true),
        (t.root.join("open/notes"), true),
        (t.root.join("keys/id"), false),
        (t.root.join("keys"), false),
        // The folder holds a protected one: it cannot go whole.
        (t.root.clone(), false),
        (t.root.join("db"), false),
    ];
    for (path, allowed) in cases {
        assert_eq!(
            floor::allows_write(&f, &path),
            allowed,
            "{}",
            path.display()
        );
    }
    let bad = floor(&[Path::new("relative")], &[]);
    assert!(!floor::allows_write(&bad, &t.root.join("new.txt")));
}

#[test]
fn hidden_files_are_known_by_path_link_and_identity() {
    let t = tree();
    let db = t.root.join("db");
    std::fs::hard_link(&db, t.root.join("open/hard")).unwrap();
    std::os::unix::fs::symlink(&db, t.root.join("open/soft")).unwrap();
    let mut f = floor(&[], &[]);
    assert!(floor::hidden_identities(&f).is_empty());
    f.hidden = vec![
        db.display().to_string(),
        t.root.join("keys").display().to_string(),
    ];
    let hidden = floor::hidden_identities(&f);
    assert!(!hidden.is_empty());
    for path in [
        db.clone(),
        t.root.join("open/hard"),
        t.root.join("open/soft"),
        t.root.join("keys/id"),
    ] {
        assert!(floor::is_hidden(&f, &path), "{}", path.display());
        assert!(hidden.matches(&path), "{}", path.display());
    }
    for path in [t.root.join("plain"), t.root.join("open/notes")] {
        assert!(!floor::is_hidden(&f, &path), "{}", path.display());
    }
}

#[test]
fn a_helper_hides_the_credentials_and_restricts_nothing_else() {
    let helper = floor::helper(&["/h/secrets.json".to_owned()]);
    assert_eq!(helper.hidden, ["/h/secrets.json"]);
    assert!(helper.protect.is_empty() && helper.writable.is_empty());
    assert_eq!(
        format!("{:?}", floor::Cache::default()),
        "Cache { kept: false }"
    );
    if supported() {
        let prepared = floor::prepare(&floor(&[], &[])).unwrap();
        assert!(prepared.abi >= floor::SIGNAL_SCOPE_ABI);
        assert!(prepared.scopes_signals());
    }
}

#[test]
fn a_floor_that_only_hides_keeps_the_hidden_file_unread_and_unwritten() {
    if !supported() {
        return;
    }
    let t = tree();
    let mut f = floor(&[], &[]);
    f.hidden = vec![t.root.join("db").display().to_string()];
    let r = t.root.display();
    expect(
        &f,
        &[
            (&format!("cat {r}/db"), false),
            (&format!("echo x >> {r}/db"), false),
            (&format!("echo x >> {r}/plain"), true),
        ],
    );
}
