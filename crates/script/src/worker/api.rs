//! `hearth.*` inside the worker: the host API a script sees.
//!
//! Pure functions (json, time, sleep) run here. Anything that touches the
//! daemon's state or the network (kv, tool, http, db) is a request to the host,
//! which applies the same rules as everywhere else (namespaces, the tool
//! registry, the egress policy).

use std::time::{Instant, SystemTime, UNIX_EPOCH};

use mlua::{Function, Lua, LuaSerdeExt, Table, Value as LuaValue, Variadic};
use serde_json::Value;

use hearth_base::time_format;

use super::{WorkerState, to_json};

/// The template of the `hearth` table; each environment gets a copy.
pub(super) fn build(lua: &Lua) -> mlua::Result<Table> {
    let hearth = lua.create_table()?;

    let json_table = lua.create_table()?;
    json_table.set("null", LuaValue::NULL)?;
    json_table.set(
        "encode",
        lua.create_function(|lua, value: LuaValue| {
            let json = to_json(lua, value)?;
            Ok(json.to_string())
        })?,
    )?;
    json_table.set(
        "decode",
        lua.create_function(|lua, text: mlua::LuaString| {
            let json: Value = serde_json::from_slice(&text.as_bytes())
                .map_err(|e| mlua::Error::runtime(format!("hearth.json.decode: {e}")))?;
            lua.to_value(&json)
        })?,
    )?;
    json_table.set(
        "array",
        lua.create_function(|lua, table: Option<Table>| {
            let table = match table {
                Some(t) => t,
                None => lua.create_table()?,
            };
            table.set_metatable(Some(lua.array_metatable()))?;
            Ok(table)
        })?,
    )?;
    hearth.set("json", json_table)?;

    hearth.set(
        "log",
        lua.create_function(|lua, (message, level): (LuaValue, Option<String>)| {
            let level = level.unwrap_or_else(|| "info".into());
            if !matches!(level.as_str(), "error" | "warn" | "info" | "debug") {
                return Err(mlua::Error::runtime(format!(
                    "hearth.log: level must be error, warn, info or debug, not {level:?}"
                )));
            }
            let text = display(lua, message)?;
            state(lua)?.log(&level, text);
            Ok(())
        })?,
    )?;

    hearth.set("now", lua.create_function(|_, ()| Ok(now()))?)?;
    let time = lua.create_table()?;
    time.set(
        "format",
        lua.create_function(|_, (format, at): (String, Option<f64>)| {
            time_format::format(&format, at.unwrap_or_else(now)).map_err(mlua::Error::runtime)
        })?,
    )?;
    time.set(
        "iso",
        lua.create_function(|_, at: Option<f64>| {
            time_format::format("%Y-%m-%dT%H:%M:%SZ", at.unwrap_or_else(now))
                .map_err(mlua::Error::runtime)
        })?,
    )?;
    hearth.set("time", time)?;

    hearth.set(
        "sleep",
        lua.create_function(|lua, seconds: f64| {
            if seconds.is_nan() || seconds < 0.0 {
                return Err(mlua::Error::runtime(
                    "hearth.sleep: seconds must be a number >= 0",
                ));
            }
            let deadline = state(lua)?.deadline();
            let wake = Instant::now() + std::time::Duration::from_secs_f64(seconds.min(86_400.0));
            std::thread::sleep(wake.min(deadline).saturating_duration_since(Instant::now()));
            if wake > deadline {
                return Err(mlua::Error::runtime("deadline exceeded"));
            }
            Ok(())
        })?,
    )?;

    let kv = lua.create_table()?;
    kv.set("get", host_fn(lua, "kv.get", &["key"])?)?;
    kv.set("set", host_fn(lua, "kv.set", &["key", "value"])?)?;
    kv.set("delete", host_fn(lua, "kv.delete", &["key"])?)?;
    hearth.set("kv", kv)?;

    hearth.set("tool", host_fn(lua, "tool", &["name", "args"])?)?;

    let db = lua.create_table()?;
    db.set("query", host_fn(lua, "db.query", &["sql", "params"])?)?;
    db.set("exec", host_fn(lua, "db.exec", &["sql", "params"])?)?;
    hearth.set("db", db)?;

    let http = lua.create_table()?;
    http.set("request", host_fn(lua, "http.request", &["request"])?)?;
    hearth.set("http", http)?;
    Ok(hearth)
}

/// `print(...)`: scripts have no stdout (it carries the protocol), so print
/// writes an info log line instead.
pub(super) fn print(lua: &Lua) -> mlua::Result<Function> {
    lua.create_function(|lua, values: Variadic<LuaValue>| {
        let parts = values
            .into_iter()
            .map(|v| display(lua, v))
            .collect::<mlua::Result<Vec<_>>>()?;
        state(lua)?.log("info", parts.join("\t"));
        Ok(())
    })
}

/// A function that forwards its arguments, by name, to a host service.
fn host_fn(
    lua: &Lua,
    method: &'static str,
    names: &'static [&'static str],
) -> mlua::Result<Function> {
    lua.create_function(move |lua, values: Variadic<LuaValue>| {
        let mut params = serde_json::Map::new();
        for (name, value) in names.iter().zip(values) {
            params.insert((*name).to_owned(), to_json(lua, value)?);
        }
        let answer = state(lua)?
            .host_call(method, Value::Object(params))
            .map_err(|e| mlua::Error::runtime(format!("hearth.{method}: {e}")))?;
        // A missing value is `nil` (so `kv.get(k) or default` works); nulls
        // inside a structure stay `hearth.json.null`.
        match answer {
            Value::Null => Ok(LuaValue::Nil),
            answer => lua.to_value(&answer),
        }
    })
}

/// `tostring` semantics for log lines, without calling metamethods (which
/// could run arbitrary code on the way out).
fn display(lua: &Lua, value: LuaValue) -> mlua::Result<String> {
    Ok(match value {
        LuaValue::String(s) => s.to_string_lossy(),
        LuaValue::Nil => "nil".into(),
        LuaValue::Boolean(b) => b.to_string(),
        LuaValue::Integer(n) => n.to_string(),
        LuaValue::Number(n) => n.to_string(),
        LuaValue::Table(_) => match to_json(lua, value) {
            Ok(json) => json.to_string(),
            Err(_) => "<table>".into(),
        },
        other => format!("<{}>", other.type_name()),
    })
}

fn state(lua: &Lua) -> mlua::Result<mlua::AppDataRef<'_, WorkerState>> {
    lua.app_data_ref::<WorkerState>()
        .ok_or_else(|| mlua::Error::runtime("the worker has no host connection"))
}

fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}
