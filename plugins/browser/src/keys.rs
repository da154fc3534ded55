//! Keys as the DevTools protocol wants them: the `Input.dispatchKeyEvent`
//! parameters of pressing a named key (Enter, Tab, an arrow...) or one
//! character, for the agent's `press` and the owner's keys on the live
//! view alike.

use serde_json::{Value, json};

/// The `Input.dispatchKeyEvent` parameters of pressing `key` (down, then
/// up), or why it is no key.
pub fn key_events(key: &str) -> Result<[Value; 2], String> {
    if key_code(key).is_none() && key.chars().count() != 1 {
        return Err(format!(
            "{key:?} is not a key name (Enter, Tab, Escape, Backspace, Delete, Space, ArrowUp, \
             ArrowDown, ArrowLeft, ArrowRight, PageUp, PageDown, Home, End) or one character"
        ));
    }
    Ok([key_event("keyDown", key), key_event("keyUp", key)])
}

fn key_code(key: &str) -> Option<(&'static str, u32, &'static str)> {
    Some(match key {
        "Enter" => ("Enter", 13, "\r"),
        "Tab" => ("Tab", 9, ""),
        "Escape" => ("Escape", 27, ""),
        "Backspace" => ("Backspace", 8, ""),
        "Delete" => ("Delete", 46, ""),
        "Space" => ("Space", 32, " "),
        "ArrowUp" => ("ArrowUp", 38, ""),
        "ArrowDown" => ("ArrowDown", 40, ""),
        "ArrowLeft" => ("ArrowLeft", 37, ""),
        "ArrowRight" => ("ArrowRight", 39, ""),
        "PageUp" => ("PageUp", 33, ""),
        "PageDown" => ("PageDown", 34, ""),
        "Home" => ("Home", 36, ""),
        "End" => ("End", 35, ""),
        _ => return None,
    })
}

/// One `Input.dispatchKeyEvent`'s parameters: `kind` (`keyDown` or
/// `keyUp`) of `key`.
pub fn key_event(kind: &str, key: &str) -> Value {
    let (code, virtual_code, text) = match key_code(key) {
        Some((code, n, text)) => (code.to_owned(), n, text.to_owned()),
        None => {
            let c = key.chars().next().unwrap_or(' ');
            let upper = c.to_ascii_uppercase();
            (format!("Key{upper}"), upper as u32, key.to_owned())
        }
    };
    let key = if key == "Space" { " " } else { key };
    let mut event =
        json!({ "type": kind, "key": key, "code": code, "windowsVirtualKeyCode": virtual_code });
    if kind == "keyDown" && !text.is_empty() {
        event["text"] = Value::String(text);
    }
    event
}
