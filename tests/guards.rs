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
