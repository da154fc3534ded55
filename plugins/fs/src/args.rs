//! Reading tool arguments by hand, so every error names the field at fault.
//!
//! The host validates arguments against each tool's schema before the call,
//! but a plugin can also be called directly (tests, other hosts), and serde's
//! messages for a wrong type do not say which field it was. These helpers
//! keep the messages uniform: "field `x`: ...".

use hearth_sdk::PluginError;
use serde_json::{Map, Value};

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

    /// The optional `encoding` field: text (the default) or base64.
    pub fn encoding(&self) -> Result<Encoding, PluginError> {
        match self.opt_string("encoding")? {
            None | Some("text") => Ok(Encoding::Text),
            Some("base64") => Ok(Encoding::Base64),
            Some(other) => Err(invalid(
                "encoding",
                &format!("expected \"text\" or \"base64\", got {other:?}"),
            )),
        }
    }
}

/// How file content travels in JSON.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    /// UTF-8 text as a JSON string.
    Text,
    /// Any bytes, base64 (standard alphabet, padded).
    Base64,
}

impl Encoding {
    /// The name used in arguments and results.
    pub fn name(self) -> &'static str {
        match self {
            Encoding::Text => "text",
            Encoding::Base64 => "base64",
        }
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
