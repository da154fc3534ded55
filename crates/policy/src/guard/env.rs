//! Environment variables that change what a command runs: a library
//! preloaded into every program, a startup file an interpreter runs, a
//! config git reads, an editor or pager a program starts.
//!
//! They ask however they are set: before a command (`X=1 cmd`), through
//! `env X=1 cmd`, by `export X=1; cmd`, and through a tool's `env`
//! argument.

/// Why setting `name` to `value` for `command` (a base name; `None` for
/// an export that every later command inherits) asks, if it does.
pub fn injection(name: &str, value: &str, command: Option<&str>) -> Option<String> {
    if always(name) {
        if name == "PATH" && standard_path(value) {
            return None;
        }
        return Some(format!(
            "it sets {name}, which changes what programs run or load"
        ));
    }
    if PROGRAM_VARIABLES.contains(&name) && command.is_none_or(runs_program_variables) {
        return Some(format!(
            "it sets {name}, a program that {} may start",
            command.unwrap_or("a later command")
        ));
    }
    if COMMAND_LINE_VARIABLES.contains(&name) && value.contains(SHELL_SPECIAL) {
        return Some(format!(
            "it sets {name} to a shell command line ({value:?}), which builds run"
        ));
    }
    None
}

/// Why setting `name` to `value` asks whatever command it is set for, if
/// it does (editor and pager variables ask only for the commands that
/// start them, so they are left to `injection` per command).
pub fn anywhere(name: &str, value: &str) -> Option<String> {
    if PROGRAM_VARIABLES.contains(&name) {
        return None;
    }
    injection(name, value, None)
}

/// Whether `name` asks whatever command it is set for.
fn always(name: &str) -> bool {
    ALWAYS.contains(&name)
        || ALWAYS_PREFIXES.iter().any(|p| name.starts_with(p))
        || (name.starts_with("GIT_") && GIT_RUNNING.iter().any(|g| name.starts_with(g)))
}

/// Variables that always ask.
const ALWAYS: &[&str] = &[
    "PATH",
    "BASH_ENV",
    "ENV",
    "BASHOPTS",
    "SHELLOPTS",
    "IFS",
    "PS4",
    "PROMPT_COMMAND",
    "HOME",
    "CDPATH",
    "ZDOTDIR",
    "XDG_CONFIG_HOME",
    "PERL5OPT",
    "PERL5LIB",
    "PERLLIB",
    "PERL5DB",
    "PYTHONSTARTUP",
    "PYTHONPATH",
    "PYTHONHOME",
    "PYTHONINSPECT",
    "PYTHONWARNINGS",
    "PYTHONUSERBASE",
    "PYTHONSAFEPATH",
    "NODE_OPTIONS",
    "NODE_PATH",
    "RUBYOPT",
    "RUBYLIB",
    "LUA_INIT",
    "LUA_PATH",
    "LUA_CPATH",
    "PHPRC",
    "PHP_INI_SCAN_DIR",
    "JAVA_TOOL_OPTIONS",
    "_JAVA_OPTIONS",
    "JDK_JAVA_OPTIONS",
    "DOTNET_STARTUP_HOOKS",
    "TCLLIBPATH",
    "GCONV_PATH",
    "GLIBC_TUNABLES",
    "SSH_ASKPASS",
    "SUDO_ASKPASS",
    "LESSOPEN",
    "LESSCLOSE",
    "BROWSER",
    "MAKEFLAGS",
    "MFLAGS",
    "MAKEFILES",
    "RUSTC_WRAPPER",
    "RUSTC_WORKSPACE_WRAPPER",
    "RUSTC",
    "CARGO_BUILD_RUSTC_WRAPPER",
];

/// Name prefixes that always ask: the dynamic loader's variables, and
/// versions of Lua's startup code.
const ALWAYS_PREFIXES: &[&str] = &["LD_", "LUA_INIT_", "CARGO_TARGET_"];

/// git variables that make git run a program or read other config.
const GIT_RUNNING: &[&str] = &[
    "GIT_CONFIG",
    "GIT_SSH",
    "GIT_PROXY_COMMAND",
    "GIT_EXTERNAL_DIFF",
    "GIT_EDITOR",
    "GIT_SEQUENCE_EDITOR",
    "GIT_PAGER",
    "GIT_ASKPASS",
    "GIT_EXEC_PATH",
    "GIT_TEMPLATE_DIR",
    "GIT_DIR",
    "GIT_WORK_TREE",
];

/// Variables naming a program (an editor, a pager) that some commands
/// start.
const PROGRAM_VARIABLES: &[&str] = &[
    "EDITOR",
    "VISUAL",
    "PAGER",
    "MANPAGER",
    "SYSTEMD_PAGER",
    "SYSTEMD_EDITOR",
    "SUDO_EDITOR",
    "FCEDIT",
    "PSQL_PAGER",
    "LESS",
    "GH_EDITOR",
    "GH_PAGER",
    "KUBE_EDITOR",
    "SHELL",
];

/// Whether `command` may start the program an editor or pager variable
/// names (shells and interpreters may start anything).
fn runs_program_variables(command: &str) -> bool {
    matches!(
        command,
        "git"
            | "man"
            | "less"
            | "more"
            | "most"
            | "psql"
            | "mysql"
            | "journalctl"
            | "systemctl"
            | "loginctl"
            | "crontab"
            | "visudo"
            | "vipw"
            | "vigr"
            | "sudoedit"
            | "fc"
            | "hg"
            | "svn"
            | "editor"
            | "sensible-editor"
            | "sensible-pager"
            | "pager"
            | "xdg-open"
            | "mutt"
            | "gh"
            | "kubectl"
            | "make"
            | "script"
            | "vim"
            | "vi"
            | "nvim"
            | "ex"
            | "npm"
            | "apt"
            | "sh"
            | "bash"
            | "dash"
            | "zsh"
            | "ksh"
            | "python"
            | "python3"
            | "perl"
            | "ruby"
            | "node"
    )
}

/// Variables that builds put into shell command lines.
const COMMAND_LINE_VARIABLES: &[&str] = &[
    "CC",
    "CXX",
    "CPP",
    "LD",
    "AR",
    "AS",
    "NM",
    "RANLIB",
    "STRIP",
    "OBJCOPY",
    "FC",
    "YACC",
    "LEX",
    "MAKE",
    "CFLAGS",
    "CXXFLAGS",
    "CPPFLAGS",
    "LDFLAGS",
    "RUSTFLAGS",
];

/// Characters that make a value more than one program's name.
const SHELL_SPECIAL: &[char] = &[
    ';', '&', '|', '<', '>', '`', '$', '(', ')', '\n', '{', '}', '\\',
];

/// Whether `value` is a `PATH` of only the standard system directories.
fn standard_path(value: &str) -> bool {
    value.split(':').all(|dir| {
        matches!(
            dir,
            "/usr/local/sbin" | "/usr/local/bin" | "/usr/sbin" | "/usr/bin" | "/sbin" | "/bin"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn which_settings_ask() {
        let cases = [
            ("LD_PRELOAD", "/tmp/x.so", Some("ls"), true),
            ("LD_DEBUG", "all", Some("ls"), true),
            ("GIT_CONFIG_COUNT", "1", Some("ls"), true),
            ("GIT_SSH_COMMAND", "x", None, true),
            ("PATH", "/usr/bin:/bin", Some("ls"), false),
            ("PATH", "/tmp/evil:/usr/bin", Some("ls"), true),
            ("EDITOR", "vim", Some("ls"), false),
            ("EDITOR", "rm -rf /", Some("git"), true),
            ("PAGER", "cat", None, true),
            ("CC", "clang", Some("make"), false),
            ("CC", "sh -c 'x;y'", Some("make"), true),
            ("LANG", "C", Some("ls"), false),
            ("RUST_LOG", "debug", None, false),
        ];
        for (name, value, command, asks) in cases {
            assert_eq!(
                injection(name, value, command).is_some(),
                asks,
                "{name}={value} for {command:?}"
            );
        }
    }
}
