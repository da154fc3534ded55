//! Lays out the release binary's machine code so that what an idle daemon
//! runs sits together.
//!
//! The kernel maps a binary's code in 64 KiB windows around each page it
//! faults in, so start-up code scattered over 10 MB of text made 7 MB of
//! it resident. `link/idle.ld` is a linker script that gathers the
//! functions start-up and an idle daemon run, in the order they first run
//! (written by `scripts/text-order`), into one section ahead of the rest of
//! the code, so they share a few windows. A name it lists that a build
//! lacks matches nothing, so a stale list costs memory, never correctness.
//!
//! It also records the commit the binary is built from, for `hearth
//! --version`, so a bug report names the exact source.

use std::path::Path;

fn main() {
    record_commit();
    let order = Path::new("link/idle.ld");
    println!("cargo:rerun-if-changed={}", order.display());
    if !orders_text() {
        return;
    }
    // The linker gets a copy in OUT_DIR, not a path into this checkout:
    // cargo may reuse this script's output for another checkout of the
    // same source sharing the target directory, and that path would be
    // stale there.
    let out = std::path::PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"))
        .join("idle.ld");
    std::fs::copy(order, &out).expect("copy link/idle.ld into OUT_DIR");
    println!("cargo:rustc-link-arg-bin=hearth=-Wl,-T,{}", out.display());
    // The daemon is position-independent, and its 74,000 relative
    // relocations took 1.8 MB as RELA entries that the loader reads at
    // every start (the Lua workers' too). Packed (DT_RELR, glibc 2.36 and
    // later, which LLD marks the binary as needing) they take kilobytes.
    println!("cargo:rustc-link-arg-bin=hearth=-Wl,-z,pack-relative-relocs");
}

/// Only optimised builds for the target whose default linker is LLD (Rust
/// 1.90 and later on x86-64 Linux) take the order, the one setup it was
/// written and measured for; a build that names its own linker keeps the
/// default layout.
fn orders_text() -> bool {
    let env = |key: &str| std::env::var(key).unwrap_or_default();
    let linker_chosen = env("CARGO_ENCODED_RUSTFLAGS").contains("link")
        || std::env::var_os("CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_LINKER").is_some();
    env("PROFILE") == "release" && env("TARGET") == "x86_64-unknown-linux-gnu" && !linker_chosen
}

/// Sets `HEARTH_COMMIT` to the checkout's commit (12 hex digits), or
/// "unknown commit" outside a git checkout or without git; reruns when
/// the checkout moves to another commit.
fn record_commit() {
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .args(args)
            .output()
            .ok()
            .filter(|out| out.status.success())
            .and_then(|out| String::from_utf8(out.stdout).ok())
            .map(|text| text.trim().to_owned())
    };
    let commit = git(&["rev-parse", "--short=12", "HEAD"]);
    for path in ["HEAD", "packed-refs"] {
        if let Some(file) = git(&["rev-parse", "--git-path", path]) {
            println!("cargo:rerun-if-changed={file}");
        }
    }
    if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"])
        && let Some(file) = git(&["rev-parse", "--git-path", &branch])
    {
        println!("cargo:rerun-if-changed={file}");
    }
    let commit = commit.map_or_else(|| "unknown commit".to_owned(), |c| format!("commit {c}"));
    println!("cargo:rustc-env=HEARTH_COMMIT={commit}");
}
