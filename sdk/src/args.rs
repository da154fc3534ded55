//! Reading tool arguments by hand, so every error names the field at fault.
//!
//! The host validates arguments against each tool's schema before the call,
//! but a plugin can also be called directly (tests, other hosts), serde's
//! messages for a wrong type do not say which field it was, and some rules
//! are not expressible in the schema subset the host checks (no NUL bytes
//! in what a process is given). These helpers keep every plugin's messages
//! uniform: "field `x`: ...".

use serde_json::{Map, Value};

use crate::PluginError;

/// The arguments of one call: a JSON object whose keys are all known.
pub struct Args<'a> {
    map: &'a Map<String, Value>,
}

impl<'a> Args<'a> {
    /// Checks that `value` is an object with no keys outside `known`.
    pub fn new(value: &'a Value, known: &[&str]) -> Result<Self, PluginError> {
        let map = value.as_object().ok_or_else(|| {
            PluginError::InvalidArguments("arguments must be a JSON object".into())
        })?;
        if let Some(unknown) = map.keys().find(|k| !known.contains(&k.as_str())) {
            return Err(invalid(
                unknown,
                &format!("unknown field; expected one of {}", known.join(", ")),
            ));
        }
        Ok(Args { map })
    }

    /// A required string.
    pub fn string(&self, name: &str) -> Result<&'a str, PluginError> {
        self.opt_string(name)?
            .ok_or_else(|| invalid(name, "is required"))
    }

    /// An optional string; `null` counts as absent.
    pub fn opt_string(&self, name: &str) -> Result<Option<&'a str>, PluginError> {
        match self.map.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(other) => Err(invalid(
                name,
                &format!("expected a string, got {}", kind(other)),
            )),
        }
    }

    /// A required, non-blank string without NUL bytes.
    pub fn text(&self, name: &str) -> Result<&'a str, PluginError> {
        self.opt_text(name)?
            .ok_or_else(|| invalid(name, "is required"))
    }

    /// An optional string; `null` counts as absent. Present, it must not be
    /// blank or hold a NUL byte (nothing a process is given can).
    pub fn opt_text(&self, name: &str) -> Result<Option<&'a str>, PluginError> {
        match self.map.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) if s.trim().is_empty() => {
                Err(invalid(name, "must not be empty"))
            }
            Some(Value::String(s)) if s.contains('\0') => {
                Err(invalid(name, "must not contain a NUL character"))
            }
            Some(Value::String(s)) => Ok(Some(s)),
            Some(other) => Err(invalid(
                name,
                &format!("expected a string, got {}", kind(other)),
            )),
        }
    }

    /// An optional boolean, `default` when absent.
    pub fn bool(&self, name: &str, default: bool) -> Result<bool, PluginError> {
        match self.map.get(name) {
            None | Some(Value::Null) => Ok(default),
            Some(Value::Bool(b)) => Ok(*b),
            Some(other) => Err(invalid(
                name,
                &format!("expected a boolean, got {}", kind(other)),
            )),
        }
    }

    /// An optional integer of at least `min`; `null` counts as absent.
    pub fn opt_u64(&self, name: &str, min: u64) -> Result<Option<u64>, PluginError> {
        match self.map.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Number(n)) => match n.as_u64() {
                Some(v) if v >= min => Ok(Some(v)),
                _ => Err(invalid(
                    name,
                    &format!("expected an integer of at least {min}, got {n}"),
                )),
            },
            Some(other) => Err(invalid(
                name,
                &format!("expected an integer, got {}", kind(other)),
            )),
        }
    }

    /// An optional integer within `min..=max`, `default` when absent.
    pub fn u64_in(&self, name: &str, min: u64, max: u64, default: u64) -> Result<u64, PluginError> {
        match self.map.get(name) {
            None | Some(Value::Null) => Ok(default),
            Some(Value::Number(n)) => match n.as_u64() {
                Some(v) if (min..=max).contains(&v) => Ok(v),
                _ => Err(invalid(
                    name,
                    &format!("expected an integer from {min} to {max}, got {n}"),
                )),
            },
            Some(other) => Err(invalid(
                name,
                &format!("expected an integer, got {}", kind(other)),
            )),
        }
    }

    /// An optional object of string values (`env`), in key order.
    pub fn string_map(&self, name: &str) -> Result<Vec<(&'a str, &'a str)>, PluginError> {
        let map = match self.map.get(name) {
            None | Some(Value::Null) => return Ok(Vec::new()),
            Some(Value::Object(map)) => map,
            Some(other) => {
                return Err(invalid(
                    name,
                    &format!("expected an object of strings, got {}", kind(other)),
                ));
            }
        };
        map.iter()
            .map(|(key, value)| match value {
                Value::String(s) if s.contains('\0') => Err(invalid(
                    name,
                    &format!("the value of {key:?} contains a NUL character"),
                )),
                Value::String(s) => Ok((key.as_str(), s.as_str())),
                other => Err(invalid(
                    name,
                    &format!("the value of {key:?} must be a string, not {}", kind(other)),
                )),
            })
            .collect()
    }
}

/// An invalid-arguments error about one field.
pub fn invalid(field: &str, message: &str) -> PluginError {
    PluginError::InvalidArguments(format!("field `{field}`: {message}"))
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
