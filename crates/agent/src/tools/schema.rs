//! A JSON Schema validator for tool arguments: the subset tool specs use.
//!
//! Supported keywords: `type` (one or a list), `properties`, `required`,
//! `additionalProperties` (boolean or schema), `items`, `enum`, `const`,
//! `minLength`/`maxLength`, `minimum`/`maximum`, `minItems`/`maxItems`.
//! Unknown keywords are ignored, as JSON Schema says. Errors name the field
//! by its path (`args.items[2].name`), so the caller (often a model) can fix
//! exactly that field.

use serde_json::Value;

/// Checks `value` against `schema`; the error names the offending field.
pub fn validate(value: &Value, schema: &Value) -> Result<(), String> {
    check(value, schema, "args")
}

fn check(value: &Value, schema: &Value, path: &str) -> Result<(), String> {
    let Some(schema) = schema.as_object() else {
        // `true` (or a non-object) accepts everything; `false` nothing.
        return match schema {
            Value::Bool(false) => Err(format!("{path}: no value is allowed here")),
            _ => Ok(()),
        };
    };
    if let Some(types) = schema.get("type") {
        let allowed: Vec<&str> = match types {
            Value::String(t) => vec![t.as_str()],
            Value::Array(ts) => ts.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        if !allowed.is_empty() && !allowed.iter().any(|t| has_type(value, t)) {
            return Err(format!(
                "{path}: expected {}, found {}",
                allowed.join(" or "),
                type_name(value)
            ));
        }
    }
    if let Some(options) = schema.get("enum").and_then(Value::as_array) {
        if !options.contains(value) {
            return Err(format!(
                "{path}: {value} is not one of {}",
                Value::from(options.clone())
            ));
        }
    }
    if let Some(expected) = schema.get("const") {
        if expected != value {
            return Err(format!("{path}: must be {expected}"));
        }
    }
    match value {
        Value::Object(map) => check_object(map, schema, path),
        Value::Array(items) => check_array(items, schema, path),
        Value::String(s) => {
            let chars = s.chars().count() as u64;
            let what = format!("is {chars} characters long");
            bound(schema, "minLength", |min| chars < min, path, &what)?;
            bound(schema, "maxLength", |max| chars > max, path, &what)
        }
        Value::Number(n) => {
            let x = n.as_f64().unwrap_or(f64::NAN);
            if let Some(min) = schema.get("minimum").and_then(Value::as_f64) {
                if x < min {
                    return Err(format!("{path}: {n} is less than the minimum {min}"));
                }
            }
            if let Some(max) = schema.get("maximum").and_then(Value::as_f64) {
                if x > max {
                    return Err(format!("{path}: {n} is more than the maximum {max}"));
                }
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

fn check_object(
    map: &serde_json::Map<String, Value>,
    schema: &serde_json::Map<String, Value>,
    path: &str,
) -> Result<(), String> {
    let properties = schema.get("properties").and_then(Value::as_object);
    for name in schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
    {
        if !map.contains_key(name) {
            return Err(format!("{path}.{name}: required field is missing"));
        }
    }
    for (name, item) in map {
        let item_path = format!("{path}.{name}");
        match (
            properties.and_then(|p| p.get(name)),
            schema.get("additionalProperties"),
        ) {
            (Some(sub), _) => check(item, sub, &item_path)?,
            (None, Some(Value::Bool(false))) => {
                let known: Vec<&str> = properties
                    .map(|p| p.keys().map(String::as_str).collect())
                    .unwrap_or_default();
                return Err(format!(
                    "{item_path}: unknown field (known fields: {})",
                    if known.is_empty() {
                        "none".into()
                    } else {
                        known.join(", ")
                    }
                ));
            }
            (None, Some(sub @ Value::Object(_))) => check(item, sub, &item_path)?,
            (None, _) => {}
        }
    }
    Ok(())
}

fn check_array(
    items: &[Value],
    schema: &serde_json::Map<String, Value>,
    path: &str,
) -> Result<(), String> {
    let n = items.len() as u64;
    let what = format!("has {n} items");
    bound(schema, "minItems", |min| n < min, path, &what)?;
    bound(schema, "maxItems", |max| n > max, path, &what)?;
    if let Some(item_schema) = schema.get("items") {
        for (i, item) in items.iter().enumerate() {
            check(item, item_schema, &format!("{path}[{i}]"))?;
        }
    }
    Ok(())
}

fn bound(
    schema: &serde_json::Map<String, Value>,
    keyword: &str,
    violated: impl Fn(u64) -> bool,
    path: &str,
    what: &str,
) -> Result<(), String> {
    match schema.get(keyword).and_then(Value::as_u64) {
        Some(limit) if violated(limit) => Err(format!("{path}: {what}, {keyword} is {limit}")),
        _ => Ok(()),
    }
}

fn has_type(value: &Value, name: &str) -> bool {
    match name {
        "integer" => value.as_i64().is_some() || value.as_u64().is_some(),
        "number" => value.is_number(),
        other => type_name(value) == other,
    }
}

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

#[cfg(test)]
mod tests {
    use super::validate;
    use serde_json::json;

    #[test]
    fn accepts_and_rejects_as_the_schema_says() {
        let schema = json!({
            "type": "object",
            "properties": {
                "name": { "type": "string", "minLength": 1, "maxLength": 5 },
                "n": { "type": "integer", "minimum": 0, "maximum": 10 },
                "tags": { "type": "array", "items": { "type": "string" }, "maxItems": 2 },
                "mode": { "enum": ["a", "b"] }
            },
            "required": ["name"],
            "additionalProperties": false
        });
        let cases = [
            (json!({"name": "x"}), None),
            (
                json!({"name": "x", "n": 3, "tags": ["a"], "mode": "b"}),
                None,
            ),
            (json!([]), Some("args: expected object, found array")),
            (json!({}), Some("args.name: required field is missing")),
            (
                json!({"name": 1}),
                Some("args.name: expected string, found number"),
            ),
            (
                json!({"name": ""}),
                Some("args.name: is 0 characters long, minLength is 1"),
            ),
            (
                json!({"name": "toolong"}),
                Some("args.name: is 7 characters long, maxLength is 5"),
            ),
            (
                json!({"name": "x", "n": 1.5}),
                Some("args.n: expected integer, found number"),
            ),
            (
                json!({"name": "x", "n": 11}),
                Some("args.n: 11 is more than the maximum 10"),
            ),
            (
                json!({"name": "x", "tags": ["a", 2]}),
                Some("args.tags[1]: expected string"),
            ),
            (
                json!({"name": "x", "tags": ["a", "b", "c"]}),
                Some("args.tags: has 3 items"),
            ),
            (
                json!({"name": "x", "mode": "c"}),
                Some("args.mode: \"c\" is not one of"),
            ),
            (
                json!({"name": "x", "extra": 1}),
                Some("args.extra: unknown field"),
            ),
        ];
        for (value, expected) in cases {
            let got = validate(&value, &schema);
            match expected {
                None => assert_eq!(got, Ok(()), "{value}"),
                Some(prefix) => {
                    let err = got.expect_err(&value.to_string());
                    assert!(err.starts_with(prefix), "{value}: {err}");
                }
            }
        }
    }
}
