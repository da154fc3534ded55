//! Links the release binary with packed relative relocations, and records
//! the commit the binary is built from, for `hearth --version`, so a bug
//! report names the exact source.
//!
//! The code is laid out as the linker leaves it: the daemon pages out
//! its binary's start-up pages once it has settled (`daemon/pageout.rs`),
//! which a hand-kept function order no longer improved on (measured in
//! docs/benchmarks.md, "Start-up time and idle memory").

fn main() {
    record_commit();
    if !packs_relocations() {
        return;
    }
    // The daemon is position-independent, and its 74,000 relative
    // relocations took 1.8 MB as RELA entries that the loader reads at
    // every start (the Lua workers' too). Packed (DT_RELR, glibc 2.36 and
    // later, which LLD marks the binary as needing) they take kilobytes.
    println!("cargo:rustc-link-arg-bin=hearth=-Wl,-z,pack-relative-relocs");
}

/// Only optimised builds for the target whose default linker is LLD (Rust
/// 1.90 and later on x86-64 Linux) pack them, the one setup this was
/// measured for; a build that names its own linker links as it chooses.
fn packs_relocations() -> bool {
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
