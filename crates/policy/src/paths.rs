//! Where a tool's path arguments lead, for the writable roots.
//!
//! Paths are resolved the way the bundled plugins resolve them: relative to
//! `$HEARTH_HOME`, `~/` under `$HOME`. Then `.` and `..` are taken out and
//! symbolic links in the part that exists are followed, so neither
//! `tmp/../../etc` nor a link inside `$HEARTH_HOME` that points at `/etc`
//! counts as inside.

use std::path::{Path, PathBuf};

use hearth_sdk::paths::{follow_links, lexical};

/// `text` as an absolute path with links followed as far as it exists.
pub fn resolve(text: &str, base: &Path, home: Option<&Path>) -> PathBuf {
    let path = match (text.strip_prefix("~/"), home) {
        (Some(rest), Some(home)) => home.join(rest),
        _ if text == "~" => home.map(Path::to_owned).unwrap_or_else(|| "~".into()),
        _ => PathBuf::from(text),
    };
    let absolute = if path.is_absolute() {
        path
    } else {
        base.join(path)
    };
    follow_links(&lexical(&absolute))
}

/// Canonical forms of `roots` (a root that does not exist yet stays as
/// written, made absolute).
pub fn canonical_roots(roots: &[PathBuf]) -> Vec<PathBuf> {
    roots.iter().map(|r| follow_links(&lexical(r))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dot_dot_and_links_do_not_escape() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        std::os::unix::fs::symlink("/etc", base.join("etc-link")).unwrap();
        let roots = [base.clone()];
        let cases = [
            ("notes/a.md", true),
            ("new/dir/file", true),
            ("../outside", false),
            ("notes/../../x", false),
            ("etc-link/passwd", false),
            ("/etc/passwd", false),
            (".", true),
        ];
        for (text, expected) in cases {
            let path = resolve(text, &base, None);
            assert_eq!(
                roots.iter().any(|r| path.starts_with(r)),
                expected,
                "{text} -> {}",
                path.display()
            );
        }
    }

    #[test]
    fn a_root_is_canonical_where_it_exists_and_as_written_where_not() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        std::fs::create_dir(base.join("real")).unwrap();
        std::os::unix::fs::symlink(base.join("real"), base.join("link")).unwrap();
        assert_eq!(
            canonical_roots(&[base.join("link"), base.join("new/../later")]),
            [base.join("real"), base.join("later")]
        );
    }

    #[test]
    fn a_tilde_is_the_owner_s_home() {
        let dir = tempfile::tempdir().unwrap();
        let (base, home) = (dir.path().join("hearth"), dir.path().join("owner"));
        let cases = [
            ("~", Some(&home), home.clone()),
            ("~/notes", Some(&home), home.join("notes")),
            ("~", None, base.join("~")),
            ("~other/x", Some(&home), base.join("~other/x")),
        ];
        for (text, owner, expected) in cases {
            assert_eq!(
                resolve(text, &base, owner.map(PathBuf::as_path)),
                expected,
                "{text}"
            );
        }
    }
}
