//! Carrier crate for the C example plugin.
//!
//! The plugin itself is `hello.c`, plain C against `sdk/include/hearth.h`.
//! This crate exists so that `cargo build` compiles it: `build.rs` turns
//! `hello.c` into `libhearth_plugin_hello_c.so` next to the `hearth` binary,
//! where the host finds bundled plugins. There is no Rust code here.
