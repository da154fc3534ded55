//! Shell command lines for the guard's targets: every way to spell a
//! delete the guard must catch (quoting and escapes of `rm`, its path,
//! wrappers, `sh -c`, `eval`, `xargs`, and the shell's compound forms
//! around it). The host's guard test and the policy test through the
//! registry share it.

use crate::Rng;

/// A command line that deletes a protected path, spelled at random, for
/// an owner whose home is `home`. Some spellings run `$RM`: the caller
/// sets `RM=rm` where the tool's `env` would.
pub fn deleting_rm(rng: &mut Rng, home: &str) -> String {
    const NAMES: &[&str] = &[
        "rm",
        "\\rm",
        "r\\m",
        "'rm'",
        "\"rm\"",
        "r''m",
        "r\"\"m",
        "'r'm",
        "\"r\"m",
        "r'm'",
        "$'rm'",
        "$'\\x72m'",
        "$'\\162m'",
        "$'\\x72\\x6d'",
        "$'\\u0072m'",
        "/bin/rm",
        "/usr/bin/rm",
        "\"/bin/rm\"",
        "//bin//rm",
        "/bin/../bin/rm",
        "/usr/bin/../../bin/rm",
        "$RM",
        "${RM}",
        "\"$RM\"",
    ];
    const WRAPPERS: &[&str] = &[
        "",
        "",
        "",
        "command ",
        "exec ",
        "env ",
        "env -i ",
        "env X=1 ",
        "X=1 ",
        "nice ",
        "nice -n 5 ",
        "nohup ",
        "timeout 5 ",
        "time ",
        "sudo ",
        "stdbuf -o0 ",
        "ionice -c3 ",
        "command -p ",
        "builtin command ",
        "env -- ",
        "sudo -u root ",
        "setsid ",
        "chrt -i 0 ",
    ];
    // Each deletes: recursively, by force, or both.
    const FLAGS: &[&str] = &[
        "-r",
        "-f",
        "-rf",
        "-fr",
        "-Rf",
        "-r -f",
        "--recursive",
        "--force",
        "-v -rf",
        "--no-preserve-root -rf",
        "-rfv",
        "-rf --",
        "-I -r",
        "--interactive=never -r",
        "-rf -i",
        "--recursive --force --",
        "-dr",
        "-f -d",
        "--recur",
        "--forc",
    ];
    const PATHS: &[&str] = &[
        "/",
        "/*",
        "/etc",
        "/etc/passwd",
        "/usr",
        "/home/owner",
        "~",
        "~/",
        "~/Documents",
        "$HOME",
        "\"$HOME\"",
        "${HOME}",
        "/home/owner/.ssh",
        "~/.bashrc",
        "~/.ssh/id_ed25519",
        "/home/owner/.hearth/../Documents",
        "/tmp/../etc",
        "../..",
        "..",
        "'/'",
        "\"/\"",
        "\\/",
        "/.",
        "//",
        "/etc/",
        "/home/owner/.",
        "/boot",
        "/var",
        "/home/*",
        "/home/owner/project/../../owner",
        "~/.config",
        "/e't'c",
    ];
    // Protected files: deleting one asks even without a flag.
    const FILES: &[&str] = &[
        "/etc/passwd",
        "~/.bashrc",
        "~/.ssh/id_ed25519",
        "/home/owner/.ssh/authorized_keys",
        "'/etc/shadow'",
        "~/.profile",
        "/home/owner/.hearth/../.bashrc",
    ];
    let name = rng.choose(NAMES);
    let wrapper = rng.choose(WRAPPERS);
    let (flags, path) = match rng.one_in(4) {
        true => (rng.choose(&["", "-v", "-i", "--"]), rng.choose(FILES)),
        false => (rng.choose(FLAGS), rng.choose(PATHS)),
    };
    let gap = rng.choose(&[" ", "  ", "\t", " \\\n"]);
    let mut rm = format!("{wrapper}{name}{gap}{flags}{gap}{path}").replace("  ", " ");
    if rng.one_in(3) {
        rm = format!(
            "{rm} {}",
            rng.choose(&["/tmp/x", "a.txt", "/home/owner/.hearth/x"])
        );
    }
    if !rm.contains('\'') && rng.one_in(4) {
        let shell = rng.choose(&[
            "sh -c",
            "bash -c",
            "eval",
            "bash -lc",
            "dash -c",
            "env sh -c",
        ]);
        rm = format!("{shell} '{rm}'");
    }
    if rng.one_in(6) {
        rm = format!("echo {path} | xargs {name} {flags}");
    }
    let context = rng.choose(&[
        "{}",
        "{}",
        "true; {}",
        "true && {}",
        "false || {}",
        "ls | {}",
        "({})",
        "{ {}; }",
        "if true; then {}; fi",
        "for i in 1; do {}; done",
        "while false; do :; done; {}",
        "echo hi\n{}",
        "{} &",
        "{} 2>/dev/null",
        "{} # bye",
        "cd /tmp && {}",
        "! {}",
        "{} | cat",
        "x=$({})",
        "echo $({})",
        "echo \"$({})\"",
        "{} > /dev/null 2>&1",
        "case a in a) {};; esac",
        "until {}; do :; done",
        "cat <(  {} )",
        "( ( {} ) )",
        "f() { {}; }; f",
        "export A=1; {}",
        "{}; echo done",
        "[ -d / ] && {}",
    ]);
    context.replace("{}", &rm).replace("/home/owner", home)
}
