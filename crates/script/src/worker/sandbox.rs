//! The sandbox: one Lua state per worker, a fresh environment per request.
//!
//! What a script sees is built from an allow-list: the safe half of the base
//! library, copies of `string` (without `dump`), `table`, `math`, `utf8` and
//! `coroutine`, `hearth.*`, and a `require` that loads the agent's
//! libraries only (`require`). There is no `io`, `os`, `package`, `debug`,
//! `load`, `collectgarbage`, `getmetatable` or `raw*`, and no `__gc`. Each request gets new copies of the library tables, so a script
//! that overwrites `string.rep` changes only its own copy; the shared string
//! metatable points at the original table, which no script can reach.
//! Building those copies is most of a trivial call's work in the worker, so
//! the worker builds the next request's environment right after it answers
//! one, while the host already has its answer ([`Sandbox::prepare`]); an
//! environment is still used by exactly one request.
//!
//! The deadline: a hook every 1,000 instructions raises an error once the
//! deadline has passed, in every coroutine. `pcall`, `xpcall` and
//! `coroutine.resume` are wrapped to re-raise after the deadline, so a loop
//! that catches its own errors still stops. What the hook cannot stop (a long
//! C call) the host stops by killing the process.

use std::cell::{Cell, RefCell};
use std::time::Instant;

use mlua::chunk::ChunkMode;
use mlua::{
    Function, HookTriggers, Lua, LuaOptions, LuaSerdeExt, StdLib, Table, Value as LuaValue, VmState,
};
use serde_json::{Value, json};

use super::require::{self, Modules};
use super::{Io, WorkerState, api, failure, to_json};
use crate::wire::{FailureKind, FromWorker, ScriptFailure};

/// Base functions scripts may use as they are.
const BASE: &[&str] = &[
    "assert", "error", "ipairs", "next", "pairs", "select", "tonumber", "tostring", "type",
    "_VERSION",
];

/// Libraries copied into every environment.
const LIBS: &[&str] = &["string", "table", "math", "utf8", "coroutine"];

/// Trusted Lua that builds the deadline-aware wrappers.
const WRAPPERS: &str = r#"
local raw_pcall, raw_xpcall, raw_resume, raw_setmetatable, raw_get, check = ...
local function pcall_(f, ...) return check(raw_pcall(f, ...)) end
local function xpcall_(f, handler, ...)
    return check(raw_xpcall(f, function(e) check() return handler(e) end, ...))
end
local function resume_(co, ...) return check(raw_resume(co, ...)) end
local function setmetatable_(t, mt)
    if type(mt) == "table" and raw_get(mt, "__gc") ~= nil then
        error("__gc metamethods are not allowed in hearth scripts", 2)
    end
    return raw_setmetatable(t, mt)
end
return pcall_, xpcall_, resume_, setmetatable_
"#;

/// The Lua state, with the template each environment is built from in its
/// app data.
pub(super) struct Sandbox {
    lua: Lua,
    /// The next request's environment, built ahead by `prepare`.
    next: RefCell<Option<Table>>,
}

/// What every environment is built from, in the state's app data so that
/// `require` builds libraries' environments by the same rules.
struct Template {
    base: Vec<(String, LuaValue)>,
    libs: Vec<(&'static str, Table)>,
    hearth: Table,
}

impl Sandbox {
    /// Builds the state, the hook and the templates.
    pub(super) fn new(memory: usize, io: Io) -> mlua::Result<Sandbox> {
        let lua = Lua::new_with(
            StdLib::STRING | StdLib::TABLE | StdLib::MATH | StdLib::UTF8 | StdLib::COROUTINE,
            LuaOptions::new(),
        )?;
        lua.set_app_data(WorkerState {
            io: RefCell::new(io),
            deadline: Cell::new(Instant::now()),
        });
        lua.set_global_hook(HookTriggers::new().every_nth_instruction(1000), |lua, _| {
            deadline_check(lua)?;
            Ok(VmState::Continue)
        })?;
        let globals = lua.globals();
        // Reachable from every string through its metatable: remove it at
        // the source, not only from the copies.
        let string: Table = globals.get("string")?;
        string.set("dump", LuaValue::Nil)?;

        let mut base: Vec<(String, LuaValue)> = BASE
            .iter()
            .map(|name| Ok(((*name).to_owned(), globals.get::<LuaValue>(*name)?)))
            .collect::<mlua::Result<_>>()?;
        let check = lua.create_function(|lua, args: mlua::MultiValue| {
            deadline_check(lua)?;
            Ok(args)
        })?;
        let coroutine: Table = globals.get("coroutine")?;
        let (pcall, xpcall, resume, setmetatable): (Function, Function, Function, Function) =
            lua.load(WRAPPERS).set_name("=hearth-sandbox").call((
                globals.get::<Function>("pcall")?,
                globals.get::<Function>("xpcall")?,
                coroutine.get::<Function>("resume")?,
                globals.get::<Function>("setmetatable")?,
                globals.get::<Function>("rawget")?,
                check,
            ))?;
        base.push(("pcall".into(), LuaValue::Function(pcall)));
        base.push(("xpcall".into(), LuaValue::Function(xpcall)));
        base.push(("setmetatable".into(), LuaValue::Function(setmetatable)));
        base.push(("print".into(), LuaValue::Function(api::print(&lua)?)));
        base.push((
            "require".into(),
            LuaValue::Function(require::function(&lua, build_environment)?),
        ));

        let mut libs = Vec::new();
        for name in LIBS {
            let lib: Table = globals.get(*name)?;
            if *name == "coroutine" {
                let copy = shallow_copy(&lua, &lib)?;
                copy.set("resume", resume.clone())?;
                libs.push((*name, copy));
            } else {
                libs.push((*name, lib));
            }
        }
        let hearth = api::build(&lua)?;
        lua.set_app_data(Template { base, libs, hearth });
        lua.set_app_data(Modules::default());
        lua.set_memory_limit(memory)?;
        Ok(Sandbox {
            lua,
            next: RefCell::new(None),
        })
    }

    /// Builds the environment the next request will run in, between
    /// requests. A failure (out of memory) is not an error here: the
    /// request then builds its own, and reports what went wrong.
    pub(super) fn prepare(&self) {
        let mut next = self.next.borrow_mut();
        if next.is_none() {
            *next = build_environment(&self.lua).ok();
        }
    }

    /// Reads the next request line.
    pub(super) fn read_line(&self) -> Option<String> {
        self.state().io.borrow_mut().read_line()
    }

    /// Sends a message to the host.
    pub(super) fn send(&self, message: &FromWorker) -> std::io::Result<()> {
        self.state().io.borrow_mut().send(message)
    }

    /// Runs a script's top level and describes the tool it returns.
    pub(super) fn load(
        &self,
        chunk: &str,
        source: &str,
        deadline: Instant,
    ) -> Result<Value, ScriptFailure> {
        self.start(deadline);
        let table = self.module(chunk, source)?;
        describe(&self.lua, &table).map_err(|message| ScriptFailure {
            kind: FailureKind::Runtime,
            message: format!("{chunk}: {message}"),
            line: None,
        })
    }

    /// Runs a script's `run(args, ctx)` and returns its result as JSON.
    pub(super) fn call(
        &self,
        chunk: &str,
        source: &str,
        args: &Value,
        ctx: &Value,
        deadline: Instant,
    ) -> Result<Value, ScriptFailure> {
        self.start(deadline);
        let table = self.module(chunk, source)?;
        let fail = |e: mlua::Error| failure(&self.lua, chunk, &e);
        let run: Function = table.get("run").map_err(fail)?;
        let args = self.lua.to_value(args).map_err(fail)?;
        let ctx = self.lua.to_value(ctx).map_err(fail)?;
        let result: LuaValue = run.call((args, ctx)).map_err(fail)?;
        to_json(&self.lua, result).map_err(|e| ScriptFailure {
            kind: FailureKind::Runtime,
            message: format!(
                "{chunk}: the result cannot be turned into JSON: {}",
                e.to_string().lines().next().unwrap_or_default()
            ),
            line: None,
        })
    }

    /// Compiles the source as text in a fresh environment and runs its top
    /// level, which must return a table.
    /// Compiles and runs library `name`'s top level, as `require` would.
    pub(super) fn load_library(
        &self,
        chunk: &str,
        name: &str,
        source: &str,
        deadline: Instant,
    ) -> Result<Value, ScriptFailure> {
        self.start(deadline);
        if let Some(modules) = self.lua.app_data_ref::<Modules>() {
            modules.enter(name);
        }
        let fail = |e: mlua::Error| failure(&self.lua, chunk, &e);
        let env = match self.next.borrow_mut().take() {
            Some(env) => env,
            None => build_environment(&self.lua).map_err(fail)?,
        };
        self.lua
            .load(source)
            .set_name(format!("@{chunk}"))
            .set_mode(ChunkMode::Text)
            .set_environment(env)
            .call::<LuaValue>(name)
            .map_err(fail)?;
        Ok(Value::Null)
    }

    /// Starts a request: its deadline, and no library loaded yet.
    fn start(&self, deadline: Instant) {
        self.state().deadline.set(deadline);
        if let Some(modules) = self.lua.app_data_ref::<Modules>() {
            modules.reset();
        }
    }

    fn module(&self, chunk: &str, source: &str) -> Result<Table, ScriptFailure> {
        let fail = |e: mlua::Error| failure(&self.lua, chunk, &e);
        let prepared = self.next.borrow_mut().take();
        let env = match prepared {
            Some(env) => env,
            None => build_environment(&self.lua).map_err(fail)?,
        };
        let value: LuaValue = self
            .lua
            .load(source)
            .set_name(format!("@{chunk}"))
            .set_mode(ChunkMode::Text)
            .set_environment(env)
            .call(())
            .map_err(fail)?;
        match value {
            LuaValue::Table(t) => Ok(t),
            other => Err(ScriptFailure {
                kind: FailureKind::Runtime,
                message: format!(
                    "{chunk}: the script must end with `return {{ name = ..., run = function(args, ctx) ... end }}`, but it returned {}",
                    other.type_name()
                ),
                line: None,
            }),
        }
    }

    /// A fresh global table for one request.
    fn state(&self) -> mlua::AppDataRef<'_, WorkerState> {
        self.lua
            .app_data_ref::<WorkerState>()
            .expect("set in Sandbox::new")
    }
}

/// Raises the deadline error once the deadline has passed.
/// A fresh environment: the base functions, copies of the libraries and of
/// `hearth`.
fn build_environment(lua: &Lua) -> mlua::Result<Table> {
    let template = lua
        .app_data_ref::<Template>()
        .ok_or_else(|| mlua::Error::runtime("the sandbox has no template"))?;
    let env = lua.create_table()?;
    for (name, value) in &template.base {
        env.raw_set(name.as_str(), value.clone())?;
    }
    for (name, lib) in &template.libs {
        env.raw_set(*name, shallow_copy(lua, lib)?)?;
    }
    env.raw_set("hearth", deep_copy(lua, &template.hearth)?)?;
    env.raw_set("_G", env.clone())?;
    Ok(env)
}

fn deadline_check(lua: &Lua) -> mlua::Result<()> {
    match lua.app_data_ref::<WorkerState>() {
        Some(state) if Instant::now() >= state.deadline() => {
            Err(mlua::Error::runtime("deadline exceeded"))
        }
        _ => Ok(()),
    }
}

/// Checks the returned table and turns it into the tool spec the host keeps.
fn describe(lua: &Lua, table: &Table) -> Result<Value, String> {
    let text = |field: &str| -> Result<String, String> {
        match table.raw_get::<LuaValue>(field) {
            Ok(LuaValue::String(s)) => Ok(s.to_string_lossy()),
            Ok(LuaValue::Nil) => Err(format!("the table has no `{field}` (a string)")),
            Ok(other) => Err(format!(
                "`{field}` must be a string, not {}",
                other.type_name()
            )),
            Err(e) => Err(e.to_string()),
        }
    };
    let name = text("name")?;
    let description = text("description")?;
    let risk = match table.raw_get::<LuaValue>("risk") {
        Ok(LuaValue::Nil) => "read".to_owned(),
        _ => text("risk")?,
    };
    if !matches!(risk.as_str(), "read" | "write" | "exec") {
        return Err(format!(
            "`risk` must be \"read\", \"write\" or \"exec\", not {risk:?}"
        ));
    }
    match table.raw_get::<LuaValue>("run") {
        Ok(LuaValue::Function(_)) => {}
        Ok(LuaValue::Nil) => return Err("the table has no `run` function".into()),
        Ok(other) => {
            return Err(format!(
                "`run` must be a function, not {}",
                other.type_name()
            ));
        }
        Err(e) => return Err(e.to_string()),
    }
    let parameters = match table.raw_get::<LuaValue>("parameters") {
        Ok(LuaValue::Nil) => json!({ "type": "object" }),
        Ok(value @ LuaValue::Table(_)) => {
            let schema = to_json(lua, value)
                .map_err(|e| format!("`parameters` is not a JSON Schema: {e}"))?;
            if schema.get("type").and_then(Value::as_str) != Some("object") {
                return Err("`parameters` must be a JSON Schema with type = \"object\"".into());
            }
            schema
        }
        Ok(other) => {
            return Err(format!(
                "`parameters` must be a table, not {}",
                other.type_name()
            ));
        }
        Err(e) => return Err(e.to_string()),
    };
    let deadline_ms = match table.raw_get::<LuaValue>("deadline_ms") {
        Ok(LuaValue::Nil) => Value::Null,
        Ok(LuaValue::Integer(n)) if n > 0 => json!(n),
        Ok(_) => return Err("`deadline_ms` must be a positive integer".into()),
        Err(e) => return Err(e.to_string()),
    };
    Ok(json!({
        "name": name,
        "description": description,
        "parameters": parameters,
        "risk": risk,
        "deadline_ms": deadline_ms,
    }))
}

fn shallow_copy(lua: &Lua, table: &Table) -> mlua::Result<Table> {
    let copy = lua.create_table()?;
    for pair in table.pairs::<LuaValue, LuaValue>() {
        let (k, v) = pair?;
        copy.raw_set(k, v)?;
    }
    Ok(copy)
}

/// Copies nested tables too (the `hearth` template is two levels deep).
fn deep_copy(lua: &Lua, table: &Table) -> mlua::Result<Table> {
    let copy = lua.create_table()?;
    for pair in table.pairs::<LuaValue, LuaValue>() {
        let (k, v) = pair?;
        let v = match v {
            LuaValue::Table(t) if t.metatable().is_none() => LuaValue::Table(deep_copy(lua, &t)?),
            other => other,
        };
        copy.raw_set(k, v)?;
    }
    Ok(copy)
}
