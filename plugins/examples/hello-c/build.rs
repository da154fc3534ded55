//! Compiles `hello.c` into a shared library next to the `hearth` binary.
//!
//! A cdylib would hide the C symbols behind Rust's export list, so the C file
//! is linked straight into a `.so` with the C compiler the `cc` crate finds.

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let out_dir = PathBuf::from(std::env::var("OUT_DIR").expect("set by cargo"));
    let source = manifest.join("hello.c");
    let include = manifest.join("../../../sdk/include");
    println!("cargo:rerun-if-changed={}", source.display());
    println!(
        "cargo:rerun-if-changed={}",
        include.join("hearth.h").display()
    );

    // OUT_DIR is <target>/<profile>/build/<crate>-<hash>/out: three levels up
    // is the directory that holds the `hearth` binary.
    let profile_dir = out_dir
        .ancestors()
        .nth(3)
        .expect("OUT_DIR has the usual depth");
    let built = out_dir.join("libhearth_plugin_hello_c.so");
    compile_shared(&source, &include, &built);
    let dest = profile_dir.join("libhearth_plugin_hello_c.so");
    // Write to a temporary name, then rename: a running `hearth` never maps a
    // half-written file.
    let tmp = profile_dir.join(".libhearth_plugin_hello_c.so.tmp");
    std::fs::copy(&built, &tmp).expect("copy the plugin next to the binary");
    std::fs::rename(&tmp, &dest).expect("move the plugin into place");
}

fn compile_shared(source: &Path, include: &Path, output: &Path) {
    let compiler = cc::Build::new()
        .cargo_metadata(false)
        .cargo_warnings(false)
        .get_compiler();
    let status = Command::new(compiler.path())
        .args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-pedantic"])
        .args(["-O2", "-fPIC", "-shared", "-fvisibility=hidden"])
        .arg("-I")
        .arg(include)
        .arg(source)
        .arg("-o")
        .arg(output)
        .status()
        .expect("run the C compiler");
    assert!(status.success(), "compiling {} failed", source.display());
}
