//! What a model is shown of a tool: its name in wire form, its
//! description, and its schema without the bounds the host checks anyway.
//!
//! Every tool's schema is sent with every call and paid for on every call.
//! The registry validates each call against the whole schema and answers a
//! call that breaks it with what was wrong and where, so the model's copy
//! can leave out what only guards input (`additionalProperties: false`,
//! lengths and item counts): about a sixth of the tools' size with the
//! bundled config. What tells the model how to call it right stays: types,
//! `enum`, `required`, `minimum`/`maximum`, descriptions, defaults.

use serde_json::Value;

use hearth_base::tool_names::wire_name;
use hearth_model::llm::ToolDef;
use hearth_sdk::protocol::ToolSpec;

/// The members of a schema the model's copy leaves out.
const CHECKED_BY_THE_HOST: [&str; 5] = [
    "additionalProperties",
    "maxLength",
    "minLength",
    "maxItems",
    "minItems",
];

/// `spec` as a model is shown it.
pub fn offered(spec: ToolSpec) -> ToolDef {
    ToolDef {
        name: wire_name(&spec.name).into_owned(),
        description: spec.description,
        parameters: model_schema(spec.parameters),
    }
}

/// `schema` without the members the host checks on its own, at any depth.
/// A property that happens to be named like one of them stays: only
/// schema keywords go, never the names under `properties`.
fn model_schema(schema: Value) -> Value {
    match schema {
        Value::Object(members) => Value::Object(
            members
                .into_iter()
                .filter(|(key, value)| {
                    // `additionalProperties` with a schema says what extra
                    // members hold: that is for the model too.
                    !CHECKED_BY_THE_HOST.contains(&key.as_str())
                        || (key == "additionalProperties" && value.is_object())
                })
                .map(|(key, value)| {
                    let value = if key == "properties" {
                        properties(value)
                    } else {
                        model_schema(value)
                    };
                    (key, value)
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.into_iter().map(model_schema).collect()),
        other => other,
    }
}

/// A `properties` map: its keys are names, each value a schema.
fn properties(value: Value) -> Value {
    match value {
        Value::Object(members) => Value::Object(
            members
                .into_iter()
                .map(|(name, schema)| (name, model_schema(schema)))
                .collect(),
        ),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_models_copy_keeps_what_says_how_to_call_and_drops_what_the_host_checks() {
        let schema = json!({
            "type": "object",
            "properties": {
                "text": { "type": "string", "minLength": 1, "maxLength": 500, "description": "what" },
                "tags": { "type": "array", "items": { "type": "string", "maxLength": 20 }, "maxItems": 8 },
                "mode": { "type": "string", "enum": ["a", "b"], "default": "a" },
                "n": { "type": "integer", "minimum": 1, "maximum": 10 },
                "maxLength": { "type": "integer" },
                "env": { "type": "object", "additionalProperties": { "type": "string", "maxLength": 9 } }
            },
            "required": ["text"],
            "additionalProperties": false
        });
        let expected = json!({
            "type": "object",
            "properties": {
                "text": { "type": "string", "description": "what" },
                "tags": { "type": "array", "items": { "type": "string" } },
                "mode": { "type": "string", "enum": ["a", "b"], "default": "a" },
                "n": { "type": "integer", "minimum": 1, "maximum": 10 },
                "maxLength": { "type": "integer" },
                "env": { "type": "object", "additionalProperties": { "type": "string" } }
            },
            "required": ["text"]
        });
        assert_eq!(model_schema(schema), expected);
    }
}
