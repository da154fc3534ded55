//! `include/hearth.h` and `hearth_sdk::abi` describe the same ABI.
//!
//! The test writes a C file that `_Static_assert`s every size, offset and
//! constant of the Rust mirror and compares the strings, compiles it against
//! the header and runs it. Any drift, in either file, fails with the field
//! named.

use std::fmt::Write as _;
use std::mem::{offset_of, size_of};
use std::path::Path;
use std::process::Command;

use hearth_sdk::abi::{self, HearthStr, HostApi, PluginHeader, level, status};

macro_rules! fields {
    ($out:ident, $c:literal, $t:ty, [$($f:ident),* $(,)?]) => {{
        writeln!($out, "_Static_assert(sizeof({}) == {}, \"size of {}\");", $c, size_of::<$t>(), $c).unwrap();
        $(
            writeln!(
                $out,
                "_Static_assert(offsetof({}, {}) == {}, \"offset of {}.{}\");",
                $c, stringify!($f), offset_of!($t, $f), $c, stringify!($f)
            ).unwrap();
        )*
    }};
}

#[test]
fn c_header_agrees_with_the_rust_mirror() {
    let mut c = String::from("#include <stddef.h>\n#include \"hearth.h\"\n");
    fields!(c, "HearthStr", HearthStr, [ptr, len]);
    fields!(
        c,
        "HearthHostApi",
        HostApi,
        [
            struct_size,
            abi_major,
            abi_minor,
            ctx,
            log,
            submit,
            call,
            write_result
        ]
    );
    fields!(
        c,
        "HearthPlugin",
        PluginHeader,
        [
            struct_size,
            magic,
            abi_major,
            abi_minor,
            reserved,
            name,
            version,
            init,
            describe,
            invoke,
            shutdown
        ]
    );
    let constants: [(&str, i64); 18] = [
        ("HEARTH_ABI_MAGIC", abi::MAGIC.into()),
        ("HEARTH_ABI_MAJOR", abi::ABI_MAJOR.into()),
        ("HEARTH_ABI_MINOR", abi::ABI_MINOR.into()),
        ("HEARTH_OK", status::OK.into()),
        ("HEARTH_ERROR", status::ERROR.into()),
        ("HEARTH_UNSUPPORTED", status::UNSUPPORTED.into()),
        ("HEARTH_PANIC", status::PANIC.into()),
        ("HEARTH_BUSY", status::BUSY.into()),
        ("HEARTH_CLOSED", status::CLOSED.into()),
        ("HEARTH_INVALID", status::INVALID.into()),
        ("HEARTH_REFUSED", status::REFUSED.into()),
        ("HEARTH_LOG_ERROR", level::ERROR.into()),
        ("HEARTH_LOG_WARN", level::WARN.into()),
        ("HEARTH_LOG_INFO", level::INFO.into()),
        ("HEARTH_LOG_DEBUG", level::DEBUG.into()),
        ("HEARTH_LOG_TRACE", level::TRACE.into()),
        (
            "sizeof(HEARTH_ENTRY_SYMBOL) - 1",
            abi::ENTRY_SYMBOL.len() as i64,
        ),
        (
            "sizeof(HEARTH_METHOD_TOOL_CALL) - 1",
            hearth_sdk::protocol::method::TOOL_CALL.len() as i64,
        ),
    ];
    for (name, value) in constants {
        writeln!(c, "_Static_assert(({name}) == {value}, \"{name}\");").unwrap();
    }
    // The strings themselves are checked when the program runs: C has no
    // constant string comparison.
    c.push_str("#include <stdio.h>\n#include <string.h>\nint main(void) {\n    int bad = 0;\n");
    for (name, value) in [
        ("HEARTH_ENTRY_SYMBOL", abi::ENTRY_SYMBOL),
        (
            "HEARTH_METHOD_TOOL_CALL",
            hearth_sdk::protocol::method::TOOL_CALL,
        ),
        (
            "HEARTH_METHOD_CHANNEL_SEND",
            hearth_sdk::protocol::method::CHANNEL_SEND,
        ),
        (
            "HEARTH_METHOD_CHANNEL_EVENT",
            hearth_sdk::protocol::method::CHANNEL_EVENT,
        ),
        (
            "HEARTH_METHOD_TOOL_CANCEL",
            hearth_sdk::protocol::method::TOOL_CANCEL,
        ),
        (
            "HEARTH_SERVICE_HOST_INFO",
            hearth_sdk::protocol::service::HOST_INFO,
        ),
        (
            "HEARTH_SERVICE_TOOL_OUTPUT",
            hearth_sdk::protocol::service::TOOL_OUTPUT,
        ),
        (
            "HEARTH_METHOD_PLUGIN_STATUS",
            hearth_sdk::protocol::method::PLUGIN_STATUS,
        ),
        (
            "HEARTH_SERVICE_TOOLS_SET",
            hearth_sdk::protocol::service::TOOLS_SET,
        ),
        (
            "HEARTH_SERVICE_MODEL_SUMMARIZE",
            hearth_sdk::protocol::service::MODEL_SUMMARIZE,
        ),
        (
            "HEARTH_METHOD_VIEW_INPUT",
            hearth_sdk::protocol::method::VIEW_INPUT,
        ),
        (
            "HEARTH_SERVICE_VIEW_SHOW",
            hearth_sdk::protocol::service::VIEW_SHOW,
        ),
    ] {
        writeln!(
            c,
            "    if (strcmp({name}, {value:?}) != 0) {{ printf(\"{name} differs\\n\"); bad = 1; }}"
        )
        .unwrap();
    }
    c.push_str("    return bad;\n}\n");

    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("check.c");
    std::fs::write(&file, &c).unwrap();
    let include = Path::new(env!("CARGO_MANIFEST_DIR")).join("include");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let exe = dir.path().join("check");
    let out = Command::new(cc)
        .args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-pedantic", "-I"])
        .arg(&include)
        .arg(&file)
        .arg("-o")
        .arg(&exe)
        .output()
        .expect("run the C compiler");
    assert!(
        out.status.success(),
        "hearth.h and abi.rs disagree:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run = Command::new(&exe).output().expect("run the check");
    assert!(
        run.status.success(),
        "hearth.h and abi.rs disagree:\n{}",
        String::from_utf8_lossy(&run.stdout)
    );
}
