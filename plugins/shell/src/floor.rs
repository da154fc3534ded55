//! The confinement of the commands this plugin starts: the host sends it
//! with every `shell_exec` and `process_start` call the owner did not
//! approve ([`hearth_sdk::protocol::Floor`]), in either mode, and the
//! command runs under it or not at all.
//!
//! The ruleset is built in the parent ([`hearth_sdk::floor`]) from the
//! entries beside each protected path as they are now, and kept until one
//! of the directories it was planned from changes
//! ([`hearth_sdk::floor::Cache`]); the child only restricts itself with
//! the descriptor.

use hearth_sdk::PluginError;
use std::sync::Arc;

use hearth_sdk::floor::{self, Cache, FloorError, Prepared};
use hearth_sdk::protocol::Floor;

/// Prepares `floor` for one call: `None` when the call carries none, or
/// when the kernel has no Landlock at all (the command then runs
/// unconfined, as the daemon said at start). Any other failure refuses the
/// call: a floor the host asked for is never silently dropped.
pub fn prepare(cache: &Cache, floor: Option<&Floor>) -> Result<Option<Arc<Prepared>>, PluginError> {
    let Some(floor) = floor else {
        return Ok(None);
    };
    match cache.prepare(floor) {
        Ok(prepared) => Ok(Some(prepared)),
        Err(FloorError::Unavailable(why)) => {
            tracing::warn!("the command runs without the kernel floor: {why}");
            Ok(None)
        }
        Err(e) => Err(PluginError::failed(format!(
            "the command was not run: it must run under the kernel floor, which cannot be \
             applied ({e})"
        ))),
    }
}

/// The `floor` field of results: what the command ran under.
pub fn describe(prepared: &Prepared) -> String {
    if prepared.scopes_signals() {
        format!(
            "landlock ABI {}: writes only in the writable roots, credentials hidden, signals \
             scoped",
            prepared.abi
        )
    } else {
        format!(
            "landlock ABI {}: writes only in the writable roots, credentials hidden (signals not \
             scoped before ABI {})",
            prepared.abi,
            floor::SIGNAL_SCOPE_ABI
        )
    }
}

/// What a confined command that failed for lack of access is told, when
/// its standard error shows the kernel refused it: which path, and how to
/// ask the owner. `None` when nothing in `stderr` looks like a refusal.
pub fn refusal_note(stderr: &str) -> Option<String> {
    const REFUSALS: [&str; 3] = [
        "Permission denied",
        "Operation not permitted",
        "Read-only file system",
    ];
    let line = stderr
        .lines()
        .find(|line| REFUSALS.iter().any(|r| line.contains(r)))?;
    let path = quoted_path(line);
    let what = match &path {
        Some(path) => format!("access to {path} was refused"),
        None => format!("the kernel refused an action ({})", line.trim()),
    };
    Some(format!(
        "{what}: the command ran confined, so it may change files only inside the writable \
         roots, and never hearth's credentials. New entries cannot be made directly in a folder \
         that holds protected paths ($HEARTH_HOME, ~): use a subfolder. If it must change \
         something outside the roots, call it again with `outside_roots` set to the reason; the \
         owner is asked to approve that exact command."
    ))
}

/// The first path quoted in `line` (`'/etc/x'`, `"/etc/x"`, `` `/etc/x' ``,
/// `‘/etc/x’`, or `/etc/x:`).
fn quoted_path(line: &str) -> Option<String> {
    const QUOTES: [(char, char); 4] = [
        ('\'', '\''),
        ('"', '"'),
        ('`', '\''),
        ('\u{2018}', '\u{2019}'),
    ];
    for (quote, close) in QUOTES {
        let mut parts = line.split(quote);
        while let Some(_) = parts.next() {
            let Some(inside) = parts.next() else { break };
            let inside = inside.split(close).next().unwrap_or(inside);
            if inside.starts_with('/') || inside.starts_with('~') || inside.starts_with('.') {
                return Some(inside.to_owned());
            }
        }
    }
    line.split(|c: char| c.is_whitespace() || c == ':')
        .find(|word| word.starts_with('/'))
        .map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_name_the_path() {
        let cases = [
            (
                "touch: cannot touch '/etc/x': Permission denied",
                Some("/etc/x"),
            ),
            (
                "cp: cannot create regular file \"~/y\": Permission denied",
                Some("~/y"),
            ),
            ("mv: 'a' to `./b': Operation not permitted", Some("./b")),
            (
                "bash: /usr/local/y: Read-only file system",
                Some("/usr/local/y"),
            ),
            (
                "rm: cannot remove \u{2018}/opt/z\u{2019}: Operation not permitted",
                Some("/opt/z"),
            ),
            ("bash: line 1: kill: (1) - Operation not permitted", None),
        ];
        for (stderr, path) in cases {
            let note = refusal_note(stderr).unwrap();
            match path {
                Some(path) => assert!(
                    note.starts_with(&format!("access to {path} was refused:")),
                    "{stderr}: {note}"
                ),
                None => assert!(
                    note.starts_with(&format!("the kernel refused an action ({stderr})")),
                    "{stderr}: {note}"
                ),
            }
        }
        assert_eq!(refusal_note("all good"), None);
    }
}
