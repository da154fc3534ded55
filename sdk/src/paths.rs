//! Path resolution shared by the host's policy and guard and the SDK's
//! kernel floor: all three must agree on what a path names, or a path the
//! guard judged could be a different file from the one the floor protects.

use std::path::{Component, Path, PathBuf};

/// `path` made absolute with `.` and `..` taken out, without touching the
/// file system.
pub fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::from("/");
    for part in path.components() {
        match part {
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(p) => out.push(p),
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
    out
}

/// The longest existing ancestor of `path` canonicalized (its links
/// followed), with the rest appended as written.
pub fn follow_links(path: &Path) -> PathBuf {
    let mut existing = path.to_owned();
    let mut rest = Vec::new();
    loop {
        if let Ok(real) = existing.canonicalize() {
            let mut out = real;
            out.extend(rest.iter().rev());
            return out;
        }
        match (
            existing.file_name().map(ToOwned::to_owned),
            existing.parent(),
        ) {
            (Some(name), Some(parent)) => {
                rest.push(name);
                existing = parent.to_owned();
            }
            _ => return path.to_owned(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dots_go_and_the_path_is_absolute() {
        for (given, expected) in [
            ("/a/./b/../c", "/a/c"),
            ("a/b", "/a/b"),
            ("/../..", "/"),
            ("/a/b/", "/a/b"),
        ] {
            assert_eq!(lexical(Path::new(given)), Path::new(expected), "{given}");
        }
    }

    #[test]
    fn links_in_the_existing_part_are_followed() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().canonicalize().unwrap();
        std::os::unix::fs::symlink(&real, real.join("link")).unwrap();
        assert_eq!(
            follow_links(&real.join("link/missing/x")),
            real.join("missing/x")
        );
    }
}
