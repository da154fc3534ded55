//! `require(name)` inside the sandbox: a library from `lib/<name>.lua`,
//! served by the host from the same catalog snapshot as the running tool.
//!
//! A library runs in a fresh environment built by the same rules as a
//! tool's (never the tool's own globals), once per request: a second
//! `require` of it in the same call answers the same value. Compiled
//! functions are kept across requests by name and content hash, so a hot
//! library costs one host round trip and no parse; the host sends the
//! source only when the worker does not hold that version. A cycle is an
//! error naming the chain.

use std::cell::RefCell;
use std::collections::HashMap;

use mlua::chunk::ChunkMode;
use mlua::{Function, Lua, Value as LuaValue};
use serde_json::{Value, json};

use super::WorkerState;

/// The worker's libraries: compiled ones across requests, loaded ones and
/// those loading within the current request.
#[derive(Default)]
pub(super) struct Modules {
    compiled: RefCell<HashMap<String, (String, Function)>>,
    loaded: RefCell<HashMap<String, LuaValue>>,
    loading: RefCell<Vec<String>>,
}

impl Modules {
    /// Forgets what the last request loaded: each request starts fresh.
    pub(super) fn reset(&self) {
        self.loaded.borrow_mut().clear();
        self.loading.borrow_mut().clear();
    }

    /// Marks `name` as loading while a library validates, so a library
    /// that requires itself is a cycle.
    pub(super) fn enter(&self, name: &str) {
        self.loading.borrow_mut().push(name.to_owned());
    }
}

/// Raises the loader's own refusals (a cycle, an unknown library) at the
/// caller's line, as Lua's `error(msg, 2)` does; errors inside a library
/// already carry the library's file and line.
const WRAPPER: &str = r#"
local load_library, type, error = ...
return function(name)
    if type(name) ~= "string" then
        error("require: the name must be a string", 2)
    end
    local ok, value = load_library(name)
    if not ok then
        error(value, 2)
    end
    return value
end
"#;

/// The `require` function every environment gets; `build_environment`
/// makes the fresh environment a library runs in.
pub(super) fn function(
    lua: &Lua,
    build_environment: fn(&Lua) -> mlua::Result<mlua::Table>,
) -> mlua::Result<Function> {
    let load_library = lua.create_function(move |lua, name: String| {
        match require(lua, &name, build_environment)? {
            Ok(value) => Ok((true, value)),
            Err(refusal) => Ok((false, LuaValue::String(lua.create_string(refusal)?))),
        }
    })?;
    let globals = lua.globals();
    lua.load(WRAPPER).set_name("=hearth-require").call((
        load_library,
        globals.get::<Function>("type")?,
        globals.get::<Function>("error")?,
    ))
}

/// Library `name`'s value; `Ok(Err(..))` is a refusal to raise at the
/// caller's line.
fn require(
    lua: &Lua,
    name: &str,
    build_environment: fn(&Lua) -> mlua::Result<mlua::Table>,
) -> mlua::Result<Result<LuaValue, String>> {
    let modules = lua
        .app_data_ref::<Modules>()
        .ok_or_else(|| mlua::Error::runtime("require: the worker has no module table"))?;
    if let Some(value) = modules.loaded.borrow().get(name) {
        return Ok(Ok(value.clone()));
    }
    if modules.loading.borrow().iter().any(|n| n == name) {
        let chain = modules.loading.borrow();
        let from = chain.iter().position(|n| n == name).unwrap_or(0);
        let mut cycle: Vec<&str> = chain[from..].iter().map(String::as_str).collect();
        cycle.push(name);
        return Ok(Err(format!("require cycle: {}", cycle.join(" -> "))));
    }
    let have = modules
        .compiled
        .borrow()
        .get(name)
        .map(|(hash, _)| hash.clone());
    let answer = match lua
        .app_data_ref::<WorkerState>()
        .ok_or_else(|| mlua::Error::runtime("require: the worker has no host connection"))?
        .host_call("require", json!({ "name": name, "have": have }))
    {
        Ok(answer) => answer,
        Err(e) => return Ok(Err(format!("require({name:?}): {e}"))),
    };
    let function = match &answer["source"] {
        Value::String(source) => {
            let chunk = answer["chunk"].as_str().unwrap_or(name);
            let hash = answer["hash"].as_str().unwrap_or_default().to_owned();
            let function = lua
                .load(source.as_str())
                .set_name(format!("@{chunk}"))
                .set_mode(ChunkMode::Text)
                .into_function()?;
            modules
                .compiled
                .borrow_mut()
                .insert(name.to_owned(), (hash, function.clone()));
            function
        }
        _ => match modules.compiled.borrow().get(name) {
            Some((_, function)) => function.clone(),
            None => {
                return Err(mlua::Error::runtime(format!(
                    "require({name:?}): the host sent no source"
                )));
            }
        },
    };
    function.set_environment(build_environment(lua)?)?;
    modules.enter(name);
    // No borrow is held across the call: the library may require others.
    drop(modules);
    let result = function.call::<LuaValue>(name);
    let modules = lua
        .app_data_ref::<Modules>()
        .ok_or_else(|| mlua::Error::runtime("require: the worker has no module table"))?;
    modules.loading.borrow_mut().pop();
    // A library that returns nothing is loaded all the same, as in Lua.
    let value = match result? {
        LuaValue::Nil => LuaValue::Boolean(true),
        value => value,
    };
    modules
        .loaded
        .borrow_mut()
        .insert(name.to_owned(), value.clone());
    Ok(Ok(value))
}
