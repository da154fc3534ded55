//! Builds the C fixture libraries the loader tests need: plugins that claim
//! other ABI versions, and a library without the entry point.

use std::path::PathBuf;
use std::process::Command;

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("set by cargo"));
    let include = manifest.join("../sdk/include");
    let fixtures = manifest.join("fixtures");
    println!("cargo:rerun-if-changed={}", fixtures.display());
    println!(
        "cargo:rerun-if-changed={}",
        include.join("hearth.h").display()
    );
    let compiler = cc::Build::new()
        .cargo_metadata(false)
        .cargo_warnings(false)
        .get_compiler();
    let builds: [(&str, &str, &[&str]); 4] = [
        (
            "abi_major2.so",
            "abi_variant.c",
            &["-DFIXTURE_MAJOR=2", "-DFIXTURE_MINOR=0"],
        ),
        (
            "abi_minor_newer.so",
            "abi_variant.c",
            &["-DFIXTURE_MAJOR=1", "-DFIXTURE_MINOR=7"],
        ),
        (
            "abi_current.so",
            "abi_variant.c",
            &["-DFIXTURE_MAJOR=1", "-DFIXTURE_MINOR=0"],
        ),
        ("no_entry.so", "no_entry.c", &[]),
    ];
    for (output, source, defines) in builds {
        let status = Command::new(compiler.path())
            .args([
                "-std=c11", "-Wall", "-Wextra", "-Werror", "-fPIC", "-shared",
            ])
            .args(defines)
            .arg("-I")
            .arg(&include)
            .arg(fixtures.join(source))
            .arg("-o")
            .arg(out.join(output))
            .status()
            .expect("run the C compiler");
        assert!(status.success(), "building fixture {output} failed");
    }
    println!("cargo:rustc-env=HEARTH_FIXTURES_DIR={}", out.display());
}
