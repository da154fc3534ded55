//! The malicious-script suite: every case is stopped or refused with a
//! clear error by its deadline, and the daemon keeps serving.

use std::time::{Duration, Instant};

use hearth_tests::Hearth;
use serde_json::json;

const DEADLINE_MS: u64 = 400;
/// Small, so runaway growth hits the limit long before the deadline even
/// on a loaded machine.
const MEMORY_MB: u64 = 16;

#[test]
fn hostile_scripts_are_stopped_or_refused_and_hearth_keeps_serving() {
    let h = Hearth::new(&format!(
        "[scripts]\ndeadline_ms = {DEADLINE_MS}\nload_deadline_ms = {DEADLINE_MS}\n\
         memory_mb = {MEMORY_MB}\n"
    ));
    let deep_parens = format!("return {}1{}", "(".repeat(100_000), ")".repeat(100_000));
    let cases: Vec<(&str, String, &str)> = vec![
        ("loop", "while true do end".into(), "deadline"),
        ("loop_in_coroutine", "coroutine.wrap(function() while true do end end)()".into(), "deadline"),
        ("loop_in_pcall_loop", "while true do pcall(function() while true do end end) end".into(), "deadline"),
        ("xpcall_looping_coroutine", "xpcall(coroutine.wrap(function() while true do end end), function() while true do end end)".into(), "deadline"),
        ("resume_loop", "while true do coroutine.resume(coroutine.create(function() while true do end end)) end".into(), "deadline"),
        ("gc_finalizer", "setmetatable({}, {__gc = function() while true do end end})".into(), "__gc metamethods are not allowed"),
        ("tostring_bomb", "error(setmetatable({}, {__tostring = function() while true do end end}))".into(), "deadline"),
        ("huge_rep", "return string.rep('x', 2^31)".into(), "too large"),
        ("doubling_concat", "local s = 'x' while true do s = s .. s end".into(), "memory"),
        ("table_growth", "local t = {} local i = 0 while true do i = i + 1 t[i] = {i} end".into(), "memory"),
        ("deep_recursion", "local function f() return f() + 1 end return f()".into(), "memory"),
        ("dump_and_load", "return load(string.dump(function() end))".into(), "field 'dump'"),
        ("dump_via_string_method", "return (''):dump()".into(), "method 'dump'"),
        ("os_exit", "os.exit(1)".into(), "global 'os'"),
        ("io_popen", "return io.popen('id')".into(), "global 'io'"),
        // require reaches the agent's libraries only, never Lua's modules.
        ("require", "local os = require('os')\nreturn os".into(), "no library named \"os\""),
        ("loadlib", "return package.loadlib('x', 'y')".into(), "global 'package'"),
        ("debug_registry", "return debug.getregistry()".into(), "global 'debug'"),
        ("getmetatable", "return getmetatable('').__index".into(), "global 'getmetatable'"),
        ("rawget", "return rawget(_G, 'os')".into(), "global 'rawget'"),
        ("collectgarbage", "return collectgarbage('count')".into(), "global 'collectgarbage'"),
        ("pathological_find", "return ('x'):rep(40000):find('.-.-.-.-b')".into(), "deadline"),
    ];
    for (name, body, _) in &cases {
        h.write(&format!("tools/{name}.lua"), &format!("return {{ name = {name:?}, description = \"x\", run = function(args, ctx)\n{body}\nend }}\n"));
    }
    // Refused at load time, with the file named.
    h.write("tools/nested_parens.lua", &format!("{deep_parens}\n"));
    h.write(
        "tools/too_big.lua",
        &format!(
            "return {}1{}\n",
            "(".repeat(1_000_000),
            ")".repeat(1_000_000)
        ),
    );
    std::fs::write(
        h.home().join("tools/bytecode.lua"),
        b"\x1bLuaT\x00\x19\x93\r\n\x1a\n\x04\x08\x08xV\x00\x00",
    )
    .unwrap();
    h.write("tools/top_level_loop.lua", "while true do end");
    // The string metatable poisoner, and a tool that relies on string.rep.
    h.write("tools/poison.lua", "string.rep = function() return 'poisoned' end\nreturn { name = 'poison', description = 'x', run = function() string.upper = nil return ('ab'):rep(2) end }");
    h.write("tools/repeat.lua", "return { name = 'repeat', description = 'x', run = function() return ('ab'):rep(2) .. string.upper('x') end }");

    let rt = h.runtime();
    for (name, _, expected) in &cases {
        let started = Instant::now();
        let err = rt.tools.call(name, json!({})).expect_err(name).to_string();
        let took = started.elapsed();
        assert!(
            err.contains(expected),
            "{name}: expected {expected:?} in {err:?}"
        );
        assert!(
            took < Duration::from_millis(DEADLINE_MS + 1_000),
            "{name} took {took:?}"
        );
        // Still serving after each case.
        let ok = rt
            .tools
            .call(
                "convert_units",
                json!({"value": 1, "from": "m", "to": "cm"}),
            )
            .unwrap();
        assert_eq!(ok["value"], 100, "after {name}");
    }
    let problems = rt.tools.scripts().unwrap().catalog().problems();
    let problem = |file: &str| {
        problems
            .iter()
            .find(|p| p.file.ends_with(file))
            .unwrap_or_else(|| panic!("{file} should not have loaded: {problems:#?}"))
            .message
            .clone()
    };
    assert!(
        problem("nested_parens.lua").contains("stack overflow"),
        "{}",
        problem("nested_parens.lua")
    );
    assert!(problem("too_big.lua").contains("over 262144 bytes"));
    let bytecode = problem("bytecode.lua");
    assert!(
        bytecode.contains("binary chunk") || bytecode.contains("UTF-8"),
        "{bytecode}"
    );
    assert!(problem("top_level_loop.lua").contains("deadline"));
    // Poisoning stays inside the poisoner's call.
    assert_eq!(rt.tools.call("poison", json!({})).unwrap(), json!("abab"));
    assert_eq!(rt.tools.call("repeat", json!({})).unwrap(), json!("ababX"));
    rt.stop(Duration::from_secs(5)).unwrap();
}

#[test]
fn scripts_cannot_see_the_environment() {
    // API keys live in the daemon's environment; a worker starts with none.
    let h = Hearth::new("");
    h.write("tools/env.lua", "return { name = 'env', description = 'x', run = function() return { os = os, getenv = os and os.getenv } end }");
    let rt = h.runtime();
    assert_eq!(rt.tools.call("env", json!({})).unwrap(), json!({}));
    rt.stop(Duration::from_secs(5)).unwrap();
}
