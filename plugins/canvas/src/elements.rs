//! The canvas pane's elements: the tools that put them there, and the
//! checks every element passes before a browser sees it.
//!
//! The browser builds elements with DOM calls, never from HTML strings,
//! except the markdown element, whose HTML is rendered here by `markdown`.
//! So the checks here are about shape (each field where the renderer
//! expects it, with a message naming the field when not) and about
//! addresses (no `javascript:` or foreign `data:` URLs).

use hearth_sdk::PluginError;
use hearth_sdk::protocol::{Risk, ToolSpec};
use serde::Serialize;
use serde_json::{Value, json};

use crate::markdown;

/// The element types, in the order the tool's schema lists them.
pub const TYPES: [&str; 9] = [
    "markdown",
    "table",
    "chart",
    "image",
    "code",
    "checklist",
    "link",
    "video",
    "progress",
];

/// The largest element, as JSON.
const MAX_ELEMENT_BYTES: usize = 256 * 1024;

/// One element as the browser gets it.
#[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
pub struct Element {
    /// Unique on the pane; showing an existing id replaces that element.
    pub id: String,
    /// One of [`TYPES`].
    #[serde(rename = "type")]
    pub kind: String,
    /// An optional heading.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The type's data, checked.
    pub data: Value,
    /// For markdown: the sanitized HTML.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub html: Option<String>,
}

/// The canvas tools.
pub fn tools() -> Vec<ToolSpec> {
    vec![
        ToolSpec {
            name: "canvas_show".into(),
            description:
                "Shows an element on the owner's canvas; an id updates it. data: markdown \
                {markdown}, table {columns, rows}, chart {kind: line|bar, labels, series: [{name, \
                values}]}, image {url}, code {code}, checklist {items: [{text, done}]}, link {url, \
                title}, video {url}, progress {label, value}."
                    .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "type": { "enum": TYPES },
                    "data": { "type": "object" },
                    "id": { "type": "string", "maxLength": 64 },
                    "title": { "type": "string", "maxLength": 200 }
                },
                "required": ["type", "data"]
            }),
            risk: Risk::Read,
            targets: Default::default(),
        },
        ToolSpec {
            name: "canvas_remove".into(),
            description: "Removes a canvas element by id.".into(),
            parameters: json!({
                "type": "object",
                "properties": { "id": { "type": "string" } },
                "required": ["id"]
            }),
            risk: Risk::Read,
            targets: Default::default(),
        },
        ToolSpec {
            name: "canvas_clear".into(),
            description: "Removes every canvas element.".into(),
            parameters: json!({ "type": "object" }),
            risk: Risk::Read,
            targets: Default::default(),
        },
    ]
}

/// Checks `canvas_show` arguments and builds the element; `fresh_id` names
/// it when the arguments do not.
pub fn build(args: &Value, fresh_id: impl FnOnce() -> String) -> Result<Element, PluginError> {
    let kind = args["type"].as_str().unwrap_or_default();
    if !TYPES.contains(&kind) {
        return Err(invalid(format!(
            "field `type`: {kind:?} is not one of {}",
            TYPES.join(", ")
        )));
    }
    let data = &args["data"];
    if !data.is_object() {
        return Err(invalid("field `data` must be an object".into()));
    }
    let id = match args["id"].as_str() {
        Some(id) if valid_id(id) => id.to_owned(),
        Some(id) => {
            return Err(invalid(format!(
                "field `id`: {id:?} must be 1-64 characters of letters, digits, `_` and `-`"
            )));
        }
        None => fresh_id(),
    };
    check(kind, data).map_err(|e| invalid(format!("{kind} element: {e}")))?;
    let html =
        (kind == "markdown").then(|| markdown::to_html(data["markdown"].as_str().unwrap_or("")));
    let element = Element {
        id,
        kind: kind.to_owned(),
        title: args["title"].as_str().map(str::to_owned),
        data: data.clone(),
        html,
    };
    let size = serde_json::to_vec(&element).map_or(usize::MAX, |v| v.len());
    if size > MAX_ELEMENT_BYTES {
        return Err(invalid(format!(
            "the element is {size} bytes, over the {MAX_ELEMENT_BYTES}-byte limit"
        )));
    }
    Ok(element)
}

/// Whether `id` can name an element (or a chat message: the same rule).
pub fn valid_id(id: &str) -> bool {
    (1..=64).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

fn invalid(message: String) -> PluginError {
    PluginError::InvalidArguments(message)
}

fn check(kind: &str, data: &Value) -> Result<(), String> {
    match kind {
        "markdown" => string(data, "markdown").map(drop),
        "table" => {
            let columns = array(data, "columns")?;
            for (i, c) in columns.iter().enumerate() {
                if !c.is_string() {
                    return Err(format!("field `data.columns[{i}]` must be a string"));
                }
            }
            for (i, row) in array(data, "rows")?.iter().enumerate() {
                let Some(cells) = row.as_array() else {
                    return Err(format!("field `data.rows[{i}]` must be an array"));
                };
                if cells.iter().any(|c| c.is_object() || c.is_array()) {
                    return Err(format!(
                        "field `data.rows[{i}]`: cells must be strings, numbers, booleans or null"
                    ));
                }
            }
            Ok(())
        }
        "chart" => {
            match data["kind"].as_str() {
                Some("line" | "bar") => {}
                _ => return Err("field `data.kind` must be \"line\" or \"bar\"".into()),
            }
            let labels = array(data, "labels")?.len();
            let series = array(data, "series")?;
            if series.is_empty() {
                return Err("field `data.series` is empty".into());
            }
            for (i, s) in series.iter().enumerate() {
                let Some(values) = s["values"].as_array() else {
                    return Err(format!("field `data.series[{i}].values` must be an array"));
                };
                if values.iter().any(|v| !v.is_number() && !v.is_null()) {
                    return Err(format!(
                        "field `data.series[{i}].values` must hold numbers (or null for a gap)"
                    ));
                }
                if values.len() != labels {
                    return Err(format!(
                        "field `data.series[{i}].values` has {} values for {labels} labels",
                        values.len()
                    ));
                }
            }
            Ok(())
        }
        "image" => media(data, "url"),
        "video" => media(data, "url"),
        "code" => string(data, "code").map(drop),
        "checklist" => {
            for (i, item) in array(data, "items")?.iter().enumerate() {
                if !item["text"].is_string() {
                    return Err(format!("field `data.items[{i}].text` must be a string"));
                }
                if !item["done"].is_boolean() && !item["done"].is_null() {
                    return Err(format!("field `data.items[{i}].done` must be a boolean"));
                }
            }
            Ok(())
        }
        "link" => {
            let url = string(data, "url")?;
            if !markdown::link_allowed(url) || url.starts_with('#') {
                return Err(format!(
                    "field `data.url`: {url:?} is not an http(s) or /files/ address"
                ));
            }
            string(data, "title").map(drop)
        }
        "progress" => {
            let value = data["value"]
                .as_f64()
                .ok_or("field `data.value` must be a number")?;
            let max = match &data["max"] {
                Value::Null => 100.0,
                v => v.as_f64().ok_or("field `data.max` must be a number")?,
            };
            if !(max > 0.0 && (0.0..=max).contains(&value)) {
                return Err(format!(
                    "field `data.value`: {value} must be between 0 and max ({max})"
                ));
            }
            Ok(())
        }
        _ => Err("unknown type".into()),
    }
}

fn string<'a>(data: &'a Value, field: &str) -> Result<&'a str, String> {
    data[field]
        .as_str()
        .ok_or_else(|| format!("field `data.{field}` must be a string"))
}

fn array<'a>(data: &'a Value, field: &str) -> Result<&'a Vec<Value>, String> {
    data[field]
        .as_array()
        .ok_or_else(|| format!("field `data.{field}` must be an array"))
}

fn media(data: &Value, field: &str) -> Result<(), String> {
    let url = string(data, field)?;
    if markdown::media_allowed(url) {
        Ok(())
    } else {
        Err(format!(
            "field `data.{field}`: {:?} is not an http(s), /files/ or data:image address",
            url.chars().take(60).collect::<String>()
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn show(kind: &str, data: Value) -> Result<Element, String> {
        build(&json!({ "type": kind, "data": data }), || "el-1".into()).map_err(|e| e.to_string())
    }

    #[test]
    fn each_type_accepts_its_data() {
        let cases = [
            ("markdown", json!({ "markdown": "**hi**" })),
            ("table", json!({ "columns": ["a"], "rows": [[1], ["x"]] })),
            (
                "chart",
                json!({ "kind": "bar", "labels": ["a", "b"], "series": [{ "name": "s", "values": [1, null] }] }),
            ),
            ("image", json!({ "url": "/files/a.png" })),
            ("image", json!({ "url": "data:image/png;base64,AAAA" })),
            ("code", json!({ "code": "x", "language": "rust" })),
            (
                "checklist",
                json!({ "items": [{ "text": "a", "done": true }] }),
            ),
            (
                "link",
                json!({ "url": "https://example.org", "title": "t" }),
            ),
            ("video", json!({ "url": "/files/clip.mp4" })),
            ("progress", json!({ "label": "l", "value": 40, "max": 100 })),
        ];
        for (kind, data) in cases {
            show(kind, data.clone()).unwrap_or_else(|e| panic!("{kind} {data}: {e}"));
        }
    }

    #[test]
    fn bad_data_names_the_field() {
        let cases = [
            ("gizmo", json!({}), "field `type`"),
            ("markdown", json!({}), "data.markdown"),
            (
                "table",
                json!({ "columns": ["a"], "rows": [{}] }),
                "data.rows[0]",
            ),
            (
                "chart",
                json!({ "kind": "pie", "labels": [], "series": [] }),
                "data.kind",
            ),
            (
                "chart",
                json!({ "kind": "line", "labels": ["a"], "series": [{ "values": [1, 2] }] }),
                "2 values for 1 labels",
            ),
            (
                "chart",
                json!({ "kind": "line", "labels": ["a"], "series": [{ "values": ["x"] }] }),
                "data.series[0].values",
            ),
            ("image", json!({ "url": "javascript:alert(1)" }), "data.url"),
            (
                "image",
                json!({ "url": "data:text/html;base64,AAAA" }),
                "data.url",
            ),
            ("video", json!({ "url": "file:///etc/passwd" }), "data.url"),
            (
                "link",
                json!({ "url": "javascript:x", "title": "t" }),
                "data.url",
            ),
            (
                "checklist",
                json!({ "items": [{ "done": true }] }),
                "data.items[0].text",
            ),
            (
                "progress",
                json!({ "value": 140, "max": 100 }),
                "data.value",
            ),
        ];
        for (kind, data, expected) in cases {
            let error = show(kind, data.clone()).expect_err(&format!("{kind} {data} passed"));
            assert!(error.contains(expected), "{kind} {data}: {error}");
        }
    }

    #[test]
    fn markdown_elements_carry_sanitized_html() {
        let element = show(
            "markdown",
            json!({ "markdown": "**bold** <script>x</script>" }),
        )
        .unwrap();
        let html = element.html.unwrap();
        assert!(
            html.contains("<strong>bold</strong>") && !html.contains("<script"),
            "{html}"
        );
    }
}
