//! Where a path argument really leads: made absolute against the working
//! directory the guard tracked through the line, `..` taken out, and
//! symbolic links followed through the real filesystem (a link in an
//! allowed root may point anywhere), including links the line itself
//! made earlier (`ln -s /etc x && rm -rf x/`).

use std::cell::RefCell;
use std::collections::HashMap;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// What earlier commands of the line did to the filesystem, as far as it
/// matters to later ones. It outlives subshells.
#[derive(Clone, Debug, Default)]
pub struct Facts {
    /// Paths inside the allowed roots that now hold what `mv` brought in
    /// from outside them.
    pub moved_in: Vec<PathBuf>,
    /// Symbolic links the line made: the link, and where it points.
    pub links: Vec<(PathBuf, PathBuf)>,
    /// What the filesystem said of each path asked about (`None`: it
    /// does not exist), so a long line asks it once per path.
    canonical: RefCell<HashMap<PathBuf, Option<PathBuf>>>,
}

impl Facts {
    fn canonicalize(&self, path: &Path) -> Option<PathBuf> {
        if let Some(known) = self.canonical.borrow().get(path) {
            return known.clone();
        }
        let found = std::fs::canonicalize(path).ok();
        self.canonical
            .borrow_mut()
            .insert(path.to_path_buf(), found.clone());
        found
    }
}

/// `text` as an absolute path (`~` expanded, `.` and `..` taken out), or
/// why it cannot be known: a relative path when the working directory is
/// not known.
pub fn absolute(text: &str, cwd: Option<&Path>, home: &Path) -> Result<PathBuf, String> {
    let path = match text.strip_prefix('~') {
        Some(rest) if rest.is_empty() || rest.starts_with('/') => {
            home.join(rest.trim_start_matches('/'))
        }
        _ => PathBuf::from(text),
    };
    if path.is_absolute() {
        return Ok(normalize(&path));
    }
    match cwd {
        Some(cwd) => Ok(normalize(&cwd.join(path))),
        None => Err(format!(
            "{text:?} is relative to a working directory the line makes unknown"
        )),
    }
}

/// Where `path` (absolute, normalized) leads on the real filesystem: its
/// longest existing prefix with every link followed, then the rest. The
/// last part is followed only with `follow_last` (a write follows a link;
/// `rm -rf link` removes the link, `rm -rf link/` what it points to).
pub fn real(path: &Path, follow_last: bool, facts: &Facts) -> PathBuf {
    let path = through_links(path, follow_last, facts);
    let (head, last) = match (follow_last, path.parent(), path.file_name()) {
        (false, Some(parent), Some(name)) => (parent.to_path_buf(), Some(name.to_owned())),
        _ => (path, None),
    };
    let mut existing = head.as_path();
    let mut rest = Vec::new();
    let resolved = loop {
        if let Some(canonical) = facts.canonicalize(existing) {
            break canonical;
        }
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_owned());
                existing = parent;
            }
            _ => break existing.to_path_buf(),
        }
    };
    let mut out = resolved;
    for part in rest.iter().rev() {
        out.push(part);
    }
    if let Some(last) = last {
        out.push(last);
    }
    normalize(&out)
}

/// `path` with a link the line made earlier replaced by its target.
fn through_links(path: &Path, follow_last: bool, facts: &Facts) -> PathBuf {
    for (link, target) in &facts.links {
        if let Ok(rest) = path.strip_prefix(link)
            && (follow_last || !rest.as_os_str().is_empty())
        {
            return normalize(&target.join(rest));
        }
    }
    path.to_path_buf()
}

/// `path` with `.` and `..` taken out, lexically (the SDK's, which the
/// kernel floor uses too).
pub use hearth_sdk::paths::lexical as normalize;

/// Whether `path` is `prefix` or lies under it, both normalized (as
/// `absolute`, `real` and `normalize` make them): a comparison of bytes,
/// many times faster than `Path::starts_with`, for the long lines.
pub fn under(path: &Path, prefix: &Path) -> bool {
    let (p, q) = (path.as_os_str().as_bytes(), prefix.as_os_str().as_bytes());
    p.starts_with(q) && (p.len() == q.len() || q.ends_with(b"/") || p[q.len()] == b'/')
}

/// Whether `text` ends in a way that makes the last part a directory to
/// go through (`link/`, `link/.`).
pub fn goes_through(text: &str) -> bool {
    text.ends_with('/') || text.ends_with("/.") || text == "." || text.ends_with("/..")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_paths_need_a_known_directory() {
        let home = Path::new("/home/o");
        assert_eq!(
            absolute("a/../b", Some(Path::new("/x")), home).unwrap(),
            Path::new("/x/b")
        );
        assert_eq!(absolute("~/d", None, home).unwrap(), Path::new("/home/o/d"));
        assert!(absolute("d", None, home).is_err());
    }

    #[test]
    fn links_are_followed_through_the_real_filesystem() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(outside.path(), &link).unwrap();
        let facts = Facts::default();
        let outside_real = outside.path().canonicalize().unwrap();
        assert_eq!(
            real(&link.join("x/y"), false, &facts),
            outside_real.join("x/y")
        );
        assert_eq!(real(&link, true, &facts), outside_real);
        assert_eq!(
            real(&link, false, &facts),
            dir.path().canonicalize().unwrap().join("link")
        );
    }

    #[test]
    fn links_made_earlier_in_the_line_count() {
        let facts = Facts {
            links: vec![(PathBuf::from("/tmp/zz-no-such/l"), PathBuf::from("/etc"))],
            ..Facts::default()
        };
        assert_eq!(
            real(Path::new("/tmp/zz-no-such/l/passwd"), false, &facts),
            Path::new("/etc/passwd")
        );
    }
}
