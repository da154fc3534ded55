//! A small file system for tests about a full disk: a tmpfs of a few
//! megabytes mounted over a temporary directory, a filler file that takes
//! every free block, and its removal.
//!
//! Mounting needs root (CI runs as root). When the mount is refused, the
//! test re-runs itself inside `unshare --user --map-root-user --mount`, a
//! private mount namespace where it is root; if that cannot run either,
//! the test fails saying so rather than passing without having run.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Runs `scenario` with a tmpfs of `size` (as `mount -o size=` takes it:
/// `32m`) mounted, unmounted afterwards even when the scenario panics.
/// `test` is the calling test's name as the harness lists it
/// (`disk_full::a_test`), for re-running it in a namespace.
pub fn with_small_fs(size: &str, test: &str, scenario: impl FnOnce(&SmallFs)) {
    let refused = match SmallFs::mount(size) {
        Ok(fs) => {
            scenario(&fs);
            return;
        }
        Err(why) => why,
    };
    assert!(
        std::env::var_os(INSIDE).is_none(),
        "cannot mount a tmpfs even inside a private mount namespace: {refused}"
    );
    let exe = std::env::current_exe().expect("the test binary's path");
    let status = Command::new("unshare")
        .args(["--user", "--map-root-user", "--mount"])
        .arg(exe)
        .args([test, "--exact", "--nocapture", "--test-threads=1"])
        .env(INSIDE, "1")
        .status()
        .unwrap_or_else(|e| {
            panic!(
                "a full disk needs a small tmpfs: mounting one failed ({refused}), and \
                 `unshare` (for a private mount namespace) cannot run: {e}; run the test \
                 as root or install util-linux"
            )
        });
    assert!(
        status.success(),
        "the scenario failed inside `unshare --user --map-root-user --mount` ({status}); \
         its output is above (if `unshare` itself failed, this machine allows no \
         unprivileged user namespaces: run the test as root)"
    );
}

/// A mounted tmpfs.
pub struct SmallFs {
    dir: tempfile::TempDir,
    filler: PathBuf,
}

impl SmallFs {
    /// Mounts one, or says why it could not.
    fn mount(size: &str) -> Result<SmallFs, String> {
        let dir = tempfile::tempdir().map_err(|e| format!("no mount point: {e}"))?;
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size},mode=0700")])
            .arg("tmpfs")
            .arg(dir.path())
            .output()
            .map_err(|e| format!("cannot run mount: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "mount -t tmpfs on {}: {}",
                dir.path().display(),
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        let filler = dir.path().join("filler");
        Ok(SmallFs { dir, filler })
    }

    /// Where it is mounted.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Writes the filler until the file system refuses another byte;
    /// returns how many bytes it took.
    pub fn fill(&self) -> u64 {
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.filler)
            .expect("create the filler");
        let mut written = 0;
        for chunk in [1 << 20, 4096, 1] {
            let block = vec![0xA5u8; chunk];
            while file.write_all(&block).is_ok() {
                written += chunk as u64;
            }
        }
        written
    }

    /// Removes the filler.
    pub fn free(&self) {
        std::fs::remove_file(&self.filler).expect("remove the filler");
    }
}

/// Set in the copy of a test that runs inside the private namespace.
const INSIDE: &str = "HEARTH_SMALL_FS_INSIDE";

impl Drop for SmallFs {
    fn drop(&mut self) {
        // Lazily, so a process still holding a file (a daemon a failed
        // test left) cannot keep it mounted.
        let _ = Command::new("umount")
            .arg("--lazy")
            .arg(self.dir.path())
            .status();
    }
}
