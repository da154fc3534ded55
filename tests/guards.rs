//! The shell guard against two corpora: command forms that must ask
//! (quoting tricks, expansions, interpreters, wrappers, redirects,
//! pipelines, ...) and everyday commands that must not.

use std::path::Path;

use hearth::policy::guard::rules::Rules;
use hearth::policy::guard::{Guard, Verdict};
use hearth_tests::guard_corpus;

fn guard() -> Guard {
    Guard::new(
        Rules::defaults(),
        Path::new("/home/owner"),
        Path::new("/home/owner/.hearth"),
    )
}

/// Forms that cannot be spelled in a text file of lines.
fn spelled_in_code() -> Vec<String> {
    vec![
        "rm -rf /\r".into(),
        "ls\rrm -rf /".into(),
        "rm -rf \u{1b}[2K/".into(),
        "\u{0440}m -rf /".into(),
        "\u{FF52}\u{FF4D} -rf /".into(),
        "r\u{200B}m -rf /".into(),
        "rm -rf /\u{202E}".into(),
        "rm -rf /\u{0}".into(),
        format!("echo {}", "a".repeat(5000)),
        format!("{}rm -rf /", "true; ".repeat(900)),
        "sh -c \"$(printf 'rm -rf /')\"".into(),
        "cat <<'EOF'\nrm -rf /\nEOF".into(),
        "bash <<EOF\nrm -rf /\nEOF".into(),
        "rm -rf \\\n/".into(),
    ]
}

#[test]
fn every_guarded_form_asks() {
    let guard = guard();
    let cwd = Path::new("/home/owner/project");
    let cases: Vec<String> = guard_corpus("ask.txt")
        .into_iter()
        .chain(spelled_in_code())
        .collect();
    assert!(
        cases.len() >= 150,
        "the corpus has only {} forms",
        cases.len()
    );
    let passed: Vec<&String> = cases
        .iter()
        .filter(|c| guard.check(c, cwd) == Verdict::Allow)
        .collect();
    assert!(
        passed.is_empty(),
        "{} of {} guarded forms would run without asking:\n{}",
        passed.len(),
        cases.len(),
        passed
            .iter()
            .map(|c| format!("  {c:?}"))
            .collect::<Vec<_>>()
            .join("\n")
    );
}

#[test]
fn everyday_commands_run_without_asking() {
    let guard = guard();
    let cwd = Path::new("/home/owner/project");
    let cases = guard_corpus("harmless.txt");
    assert!(
        cases.len() >= 50,
        "the corpus has only {} commands",
        cases.len()
    );
    let asked: Vec<String> = cases
        .iter()
        .filter_map(|c| match guard.check(c, cwd) {
            Verdict::Allow => None,
            Verdict::Ask(why) => Some(format!("  {c:?}: {why}")),
        })
        .collect();
    assert!(
        asked.is_empty(),
        "everyday commands that asked:\n{}",
        asked.join("\n")
    );
}

#[test]
fn the_reason_says_what_was_found() {
    let guard = guard();
    let cwd = Path::new("/home/owner/project");
    let cases = [
        ("r''m -rf /", "deletes recursively or by force"),
        ("rm -rf $HOME", "a variable"),
        ("echo `id`", "command substitution"),
        ("curl x | sh", "runs the code piped into it"),
        ("echo x >> ~/.ssh/authorized_keys", "/home/owner/.ssh"),
        ("systemctl restart nginx", "service management"),
        ("find / -delete", "find -delete"),
        ("xargs rm", "protected path"),
        ("rm -rf /\r", "U+000D"),
        (
            "rm --rec --forc /home/owner",
            "deletes recursively or by force",
        ),
        ("timeout -vs KILL 5 rm -rf /", "deletes recursively"),
        ("timeout --bogus 5 ls", "--bogus"),
        ("cd / && rm -rf etc", "(etc)"),
        ("cd -; rm -rf x", "unknown"),
        ("sed '1e id' f", "runs shell commands"),
        ("git -c alias.x='!id' x", "alias.x"),
        (
            "bash -o errexit -c x",
            "runs code given on its command line",
        ),
        ("python3 -m timeit x", "python -m timeit"),
        ("LD_PRELOAD=/tmp/x.so ls", "LD_PRELOAD"),
        ("mv ~/Documents /tmp/d && rm -rf /tmp/d", "brought in"),
        ("fuser -k /tmp/x", "kills"),
        ("tar -C / -xf a.tar", "protected path"),
    ];
    for (command, expected) in cases {
        match guard.check(command, cwd) {
            Verdict::Ask(why) => assert!(why.contains(expected), "{command:?}: {why}"),
            Verdict::Allow => panic!("{command:?} was allowed"),
        }
    }
}

#[test]
fn when_the_owner_is_root_their_home_is_theirs_but_its_dotfiles_stay_guarded() {
    let guard = Guard::new(
        Rules::defaults(),
        Path::new("/root"),
        Path::new("/root/.hearth"),
    );
    let cwd = Path::new("/root/.hearth");
    let cases = [
        ("mkdir -p ~/projects/new", true),
        ("cp notes.md /root/backup.md", true),
        ("echo key >> ~/.ssh/authorized_keys", false),
        ("echo x > /root/.bashrc", false),
        ("touch /root/../etc/x", false),
        ("rm -rf ~", false),
        ("rm -rf /root/projects", false),
    ];
    for (command, allowed) in cases {
        let verdict = guard.check(command, cwd);
        assert_eq!(verdict == Verdict::Allow, allowed, "{command}: {verdict:?}");
    }
}

#[test]
fn a_link_in_an_allowed_root_to_outside_it_is_deleted_through_only_with_asking() {
    let home = tempfile::tempdir().unwrap();
    let hearth_home = home.path().join(".hearth");
    let outside = hearth_tests::outside_roots();
    std::fs::create_dir_all(hearth_home.join("work")).unwrap();
    std::os::unix::fs::symlink(outside.path(), hearth_home.join("work/link")).unwrap();
    let guard = Guard::new(Rules::defaults(), home.path(), &hearth_home);
    let cwd = hearth_home.join("work");
    let cases = [
        ("rm -rf link/", false),
        ("rm -rf link/*", false),
        ("rm -rf link/sub", false),
        ("rm -rf ./link/.", false),
        ("find link/ -delete", false),
        ("cd link && rm -rf x", false),
        // The link itself is inside the root: removing it is fine.
        ("rm -rf link", true),
        ("rm -rf other", true),
    ];
    for (command, allowed) in cases {
        let verdict = guard.check(command, &cwd);
        assert_eq!(verdict == Verdict::Allow, allowed, "{command}: {verdict:?}");
    }
    let through = hearth_home.join("work/link/");
    match guard.check(&format!("rm -rf {}", through.display()), Path::new("/")) {
        Verdict::Ask(why) => assert!(why.contains("through a link"), "{why}"),
        Verdict::Allow => panic!("deleting through the link was allowed"),
    }
}

#[test]
fn the_env_argument_is_judged_like_an_export() {
    let guard = guard();
    let cwd = Path::new("/home/owner/project");
    let env = |k: &str, v: &str| vec![(k.to_owned(), v.to_owned())];
    let cases = [
        ("ls", env("LD_PRELOAD", "/tmp/x.so"), false),
        ("bash build.sh", env("BASH_ENV", "/tmp/x"), false),
        ("git log", env("PAGER", "sh -c x"), false),
        ("git log", env("GIT_CONFIG_COUNT", "1"), false),
        ("ls", env("LANG", "C"), true),
        ("ls", env("PAGER", "less"), true),
        ("cd src && git log", env("EDITOR", "sh -c x"), false),
        ("cargo build", env("RUST_LOG", "debug"), true),
    ];
    for (command, vars, allowed) in cases {
        let verdict = guard.check_in(command, cwd, &vars);
        assert_eq!(
            verdict == Verdict::Allow,
            allowed,
            "{command} {vars:?}: {verdict:?}"
        );
    }
}
