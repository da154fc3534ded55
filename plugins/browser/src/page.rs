//! What the agent does in a tab: open a URL, read the page (`snapshot`),
//! and act on its numbered elements: click, type, select, press a key,
//! scroll, wait, take a screenshot.
//!
//! Elements are found by the number the last snapshot gave them (kept in
//! the page as `window.__hearth.refs`), so the model never writes a CSS
//! selector. Clicks and keys are real input events at the element's
//! position, as a person's would be, so pages that ignore synthetic
//! `click()` calls still see them.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::keys::{self, key_event};
use crate::session::{Running, SessionError};

/// The script that reads a page (see its header).
const SNAPSHOT_JS: &str = include_str!("snapshot.js");

/// The most characters of page text a snapshot returns by default: about
/// 4,000 tokens. The rest is a call away (`from`).
pub const DEFAULT_MAX_CHARS: usize = 14_000;
/// The most a call may ask for.
pub const MAX_MAX_CHARS: usize = 60_000;
/// How long a page may go without a change before it counts as settled
/// after a load or an action.
const QUIET: Duration = Duration::from_millis(150);
/// The longest wait for a page to settle; a page that animates forever is
/// read as it is then.
const SETTLE_MOST: Duration = Duration::from_millis(2_000);

/// How a snapshot is cut.
#[derive(Debug, Clone, Copy)]
pub struct Window {
    /// The first line shown.
    pub from: usize,
    /// The most characters shown.
    pub max_chars: usize,
}

impl Default for Window {
    fn default() -> Window {
        Window {
            from: 0,
            max_chars: DEFAULT_MAX_CHARS,
        }
    }
}

/// Whether `url` is one the browser may be sent to by the agent: http or
/// https (pages it opens are judged again by the proxy).
pub fn check_url(url: &str) -> Result<url::Url, SessionError> {
    let parsed = url::Url::parse(url.trim())
        .map_err(|e| SessionError::Protocol(format!("{url:?} is not a URL: {e}")))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(SessionError::Protocol(format!(
            "{url:?} is not an http(s) URL; the browser opens only http and https pages"
        )));
    }
    Ok(parsed)
}

/// Sends the current tab to `url` and waits, at most `deadline` in all,
/// for it to load and settle.
pub fn navigate(running: &mut Running, url: &str, deadline: Duration) -> Result<(), SessionError> {
    let parsed = check_url(url)?;
    let start = Instant::now();
    let answer =
        match running.call_within("Page.navigate", json!({ "url": parsed.as_str() }), deadline) {
            Ok(answer) => answer,
            Err(SessionError::Unanswered(_)) => {
                let _ = running.call("Page.stopLoading", json!({}));
                return Err(not_loaded(deadline, "waiting for the site to answer"));
            }
            Err(e) => return Err(e),
        };
    if let Some(error) = answer["errorText"].as_str().filter(|e| !e.is_empty()) {
        let host = parsed
            .host_str()
            .unwrap_or_default()
            .trim_matches(['[', ']'])
            .to_ascii_lowercase();
        // A refusal on the way (a redirect to a private address) is the
        // likelier reason than the first host's own failure.
        let notes = running.take_notes();
        let why = notes
            .iter()
            .find(|n| n.starts_with("refused"))
            .cloned()
            .or_else(|| running.failure_for(&host))
            .unwrap_or_else(|| format!("the page did not load ({error})"));
        return Err(SessionError::Protocol(format!(
            "{}: {why}",
            parsed.as_str()
        )));
    }
    wait_loaded(running, deadline.saturating_sub(start.elapsed()))
}

fn not_loaded(deadline: Duration, state: &str) -> SessionError {
    SessionError::Protocol(format!(
        "the page did not finish loading in {} s (still {state}); snapshot reads what loaded so far",
        deadline.as_secs().max(1)
    ))
}

/// Waits for the document to finish loading (at most `deadline`), then
/// for it to settle.
pub fn wait_loaded(running: &mut Running, deadline: Duration) -> Result<(), SessionError> {
    let start = Instant::now();
    loop {
        let state = evaluate(running, "document.readyState")?;
        if state == "complete" {
            break;
        }
        if start.elapsed() >= deadline {
            return Err(not_loaded(deadline, state.as_str().unwrap_or("loading")));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    settle(running)
}

/// Waits until the page's DOM has been quiet for a moment (JavaScript
/// rendering its content), at most a couple of seconds.
pub fn settle(running: &mut Running) -> Result<(), SessionError> {
    let script = format!(
        "new Promise((done) => {{
            let timer = setTimeout(done, {quiet});
            const seen = new MutationObserver(() => {{ clearTimeout(timer); timer = setTimeout(done, {quiet}); }});
            seen.observe(document, {{ subtree: true, childList: true, attributes: true, characterData: true }});
            setTimeout(done, {most});
        }}).then(() => true)",
        quiet = QUIET.as_millis(),
        most = SETTLE_MOST.as_millis()
    );
    evaluate(running, &script).map(|_| ())
}

/// The current page as text for the model, cut to `window`.
pub fn snapshot(running: &mut Running, window: Window) -> Result<String, SessionError> {
    let page = evaluate(running, SNAPSHOT_JS)?;
    let title = page["title"].as_str().unwrap_or_default();
    let url = page["url"].as_str().unwrap_or_default();
    let refs = page["refs"].as_u64().unwrap_or(0);
    running.showing = Some((title.to_owned(), url.to_owned()));
    let lines: Vec<&str> = page["lines"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let mut out = format!(
        "{title:?} {url} (tab {} of {}; {refs} numbered elements)\n",
        running.current,
        running.tabs.len()
    );
    let mut shown = 0;
    let mut used = 0;
    for line in lines.iter().skip(window.from) {
        if used + line.len() + 1 > window.max_chars && shown > 0 {
            break;
        }
        out.push_str(line);
        out.push('\n');
        used += line.len() + 1;
        shown += 1;
    }
    let next = window.from + shown;
    if next < lines.len() {
        out.push_str(&format!(
            "[{} more lines: snapshot with from={next}]\n",
            lines.len() - next
        ));
    } else if lines.is_empty() {
        out.push_str("[the page shows no text]\n");
    }
    Ok(out)
}

/// Clicks element `reference` of the last snapshot.
pub fn click(running: &mut Running, reference: u64) -> Result<(), SessionError> {
    let (x, y) = center(running, reference)?;
    for (kind, buttons) in [("mouseMoved", 0), ("mousePressed", 1), ("mouseReleased", 0)] {
        running.call(
            "Input.dispatchMouseEvent",
            json!({ "type": kind, "x": x, "y": y, "button": "left", "buttons": buttons, "clickCount": 1 }),
        )?;
    }
    Ok(())
}

/// How `type` types: a secret's field is masked; `submit` presses Enter
/// after.
#[derive(Debug, Clone, Copy, Default)]
pub struct Typing {
    /// Press Enter after the text.
    pub submit: bool,
    /// The text is one of the owner's secrets (the host filled it in).
    pub secret: bool,
}

/// Types `text` into element `reference`, replacing what it held. A
/// secret's field is marked first: the snapshot then shows it only as
/// filled, and the page draws it as dots in a screenshot.
pub fn type_text(
    running: &mut Running,
    reference: u64,
    text: &str,
    typing: Typing,
) -> Result<(), SessionError> {
    const FOCUS: &str = "el.focus(); if (typeof el.select === 'function') el.select(); \
         else if (el.isContentEditable) { const r = document.createRange(); r.selectNodeContents(el); \
         const s = getSelection(); s.removeAllRanges(); s.addRange(r); } \
         return el.ownerDocument.activeElement === el || el.contains(el.ownerDocument.activeElement);";
    const MASK: &str = "el.setAttribute('data-hearth-secret', ''); \
         el.style.setProperty('-webkit-text-security', 'disc', 'important'); ";
    let body = if typing.secret {
        format!("{MASK}{FOCUS}")
    } else {
        FOCUS.to_owned()
    };
    let focused = on_element(running, reference, &body)?;
    if focused != Value::Bool(true) {
        return Err(SessionError::Protocol(format!(
            "element {reference} does not take text (it could not be focused)"
        )));
    }
    if text.is_empty() {
        running.call("Input.dispatchKeyEvent", key_event("keyDown", "Delete"))?;
        running.call("Input.dispatchKeyEvent", key_event("keyUp", "Delete"))?;
    } else {
        running.call("Input.insertText", json!({ "text": text }))?;
    }
    if typing.submit {
        press(running, "Enter")?;
    }
    Ok(())
}

/// Gives the file input `reference` the file at `path` (already checked
/// by the caller: inside the roots, not a credential).
pub fn upload(running: &mut Running, reference: u64, path: &Path) -> Result<(), SessionError> {
    let is_file_input = on_element(
        running,
        reference,
        "return el.tagName === 'INPUT' && el.type === 'file';",
    )?;
    if is_file_input != Value::Bool(true) {
        return Err(SessionError::Protocol(format!(
            "element {reference} is not a file input; upload needs the ref of one"
        )));
    }
    let index = reference.saturating_sub(1);
    let object = running.call(
        "Runtime.evaluate",
        json!({ "expression": format!("window.__hearth.refs[{index}]") }),
    )?;
    let Some(object_id) = object["result"]["objectId"].as_str() else {
        return Err(SessionError::Protocol(format!(
            "element {reference} could not be reached; take a new snapshot"
        )));
    };
    running.call(
        "DOM.setFileInputFiles",
        json!({ "files": [path.display().to_string()], "objectId": object_id }),
    )?;
    Ok(())
}

/// Chooses the options of select element `reference` whose value or text
/// is among `values`.
pub fn select(
    running: &mut Running,
    reference: u64,
    values: &[String],
) -> Result<(), SessionError> {
    let wanted = serde_json::to_string(values).unwrap_or_else(|_| "[]".into());
    let chosen = on_element(
        running,
        reference,
        &format!(
            "if (el.tagName !== 'SELECT') return 'not a select';
             const wanted = {wanted}; let n = 0;
             for (const o of el.options) {{
               const on = wanted.includes(o.value) || wanted.includes(o.text.trim());
               if (on && !el.multiple && n > 0) continue;
               o.selected = on; if (on) n++;
             }}
             el.dispatchEvent(new Event('input', {{ bubbles: true }}));
             el.dispatchEvent(new Event('change', {{ bubbles: true }}));
             return n;"
        ),
    )?;
    match chosen {
        Value::Number(n) if n.as_u64() > Some(0) => Ok(()),
        Value::String(why) => Err(SessionError::Protocol(format!(
            "element {reference} is {why}"
        ))),
        _ => Err(SessionError::Protocol(format!(
            "element {reference} has no option {values:?} (by value or text)"
        ))),
    }
}

/// Presses `key` (Enter, Tab, Escape, an arrow, a letter...) in the page.
pub fn press(running: &mut Running, key: &str) -> Result<(), SessionError> {
    for event in keys::key_events(key).map_err(SessionError::Protocol)? {
        running.call("Input.dispatchKeyEvent", event)?;
    }
    Ok(())
}

/// Scrolls the page by a screen `down` or up, or brings element
/// `reference` into view.
pub fn scroll(
    running: &mut Running,
    reference: Option<u64>,
    down: bool,
) -> Result<(), SessionError> {
    match reference {
        Some(r) => on_element(
            running,
            r,
            "el.scrollIntoView({block: 'center'}); return true;",
        )
        .map(|_| ()),
        None => {
            let sign = if down { 1 } else { -1 };
            evaluate(
                running,
                &format!("window.scrollBy(0, {sign} * innerHeight * 0.8); true"),
            )
            .map(|_| ())
        }
    }
}

/// Waits until `text` shows on the page, at most `deadline`.
pub fn wait_for_text(
    running: &mut Running,
    text: &str,
    deadline: Duration,
) -> Result<(), SessionError> {
    let needle = serde_json::to_string(text).unwrap_or_default();
    let start = Instant::now();
    loop {
        let found = evaluate(
            running,
            &format!("!!(document.body && document.body.innerText.includes({needle}))"),
        )?;
        if found == Value::Bool(true) {
            return Ok(());
        }
        if start.elapsed() >= deadline {
            return Err(SessionError::Protocol(format!(
                "{text:?} did not appear on the page in {} s",
                deadline.as_secs()
            )));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Saves a screenshot of the visible part of the page as a PNG in
/// `folder`, returning its path.
pub fn screenshot(
    running: &mut Running,
    folder: &Path,
) -> Result<std::path::PathBuf, SessionError> {
    use base64::Engine;
    let shot = running.call("Page.captureScreenshot", json!({ "format": "png" }))?;
    let data = shot["data"].as_str().unwrap_or_default();
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(data)
        .map_err(|e| SessionError::Protocol(format!("the screenshot is not base64: {e}")))?;
    std::fs::create_dir_all(folder)
        .map_err(|e| SessionError::Protocol(format!("cannot make {}: {e}", folder.display())))?;
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0);
    let path = folder.join(format!("shot-{stamp}.png"));
    std::fs::write(&path, bytes)
        .map_err(|e| SessionError::Protocol(format!("cannot write {}: {e}", path.display())))?;
    Ok(path)
}

/// Evaluates `expression` in the current tab and returns its value; a
/// thrown exception is an error with its text.
pub fn evaluate(running: &mut Running, expression: &str) -> Result<Value, SessionError> {
    let mut answer = running.call(
        "Runtime.evaluate",
        json!({ "expression": expression, "returnByValue": true, "awaitPromise": true }),
    )?;
    if let Some(details) = answer.get("exceptionDetails") {
        let text = details["exception"]["description"]
            .as_str()
            .or_else(|| details["text"].as_str())
            .unwrap_or("an exception");
        return Err(SessionError::Protocol(format!(
            "the page's script failed: {text}"
        )));
    }
    Ok(answer["result"]["value"].take())
}

/// Runs `body` with `el` bound to element `reference`; a reference the
/// page no longer has is an error that says to look again.
fn on_element(running: &mut Running, reference: u64, body: &str) -> Result<Value, SessionError> {
    let script = format!(
        "(() => {{
            const refs = (window.__hearth && window.__hearth.refs) || [];
            const el = refs[{index}];
            if (!el) return {{ missing: 'none' }};
            if (!el.isConnected) return {{ missing: 'gone' }};
            return {{ value: (() => {{ {body} }})() }};
        }})()",
        index = reference.saturating_sub(1)
    );
    let mut answer = evaluate(running, &script)?;
    match answer["missing"].as_str() {
        Some("none") => Err(SessionError::Protocol(format!(
            "there is no element {reference} in the last snapshot; take a snapshot and use its numbers"
        ))),
        Some(_) => Err(SessionError::Protocol(format!(
            "element {reference} is no longer on the page (it changed); take a new snapshot"
        ))),
        None => Ok(answer["value"].take()),
    }
}

/// The point at the middle of element `reference`, scrolled into view, in
/// the top page's coordinates (frames' offsets added).
fn center(running: &mut Running, reference: u64) -> Result<(f64, f64), SessionError> {
    let point = on_element(
        running,
        reference,
        "el.scrollIntoView({block: 'center', inline: 'center'});
         const r = el.getBoundingClientRect();
         if (r.width === 0 && r.height === 0) return null;
         let x = r.left + r.width / 2, y = r.top + r.height / 2;
         for (let w = el.ownerDocument.defaultView; w && w.frameElement; w = w.parent) {
           const f = w.frameElement.getBoundingClientRect(); x += f.left; y += f.top;
         }
         return [x, y];",
    )?;
    match point.as_array().map(|p| (p[0].as_f64(), p[1].as_f64())) {
        Some((Some(x), Some(y))) => Ok((x, y)),
        _ => Err(SessionError::Protocol(format!(
            "element {reference} has no size on the page (hidden); it cannot be clicked"
        ))),
    }
}
