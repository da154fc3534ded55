//! `hearth scripts log NAME` and `hearth scripts rollback NAME N`: the
//! owner's view of the versions of the agent's scripts.
//!
//! Both are the `script_history` and `script_rollback` tools, run by the
//! daemon when one is running (so a rollback is reloaded there at once and
//! audited as the owner's), else by this command's own runtime.

use serde_json::Value;

/// Prints `script_history`'s answer as a table.
pub fn print_log(answer: &Value) -> anyhow::Result<()> {
    outln!("{}", answer["script"].as_str().unwrap_or_default());
    outln!(
        "{:>4}  {:<19}  {:<24} {:>7}  {:<12}  change",
        "ver",
        "saved (UTC)",
        "author",
        "bytes",
        "sha256"
    );
    for v in answer["versions"].as_array().into_iter().flatten() {
        let at = v["created_at_ms"]
            .as_i64()
            .and_then(|ms| jiff::Timestamp::from_millisecond(ms).ok())
            .map(|t| t.strftime("%Y-%m-%d %H:%M:%S").to_string())
            .unwrap_or_default();
        let hash = v["hash"].as_str().unwrap_or_default();
        outln!(
            "{:>4}  {at:<19}  {:<24} {:>7}  {:<12}  {}",
            // A JSON value ignores widths: pad its text.
            v["version"].to_string(),
            v["author"].as_str().unwrap_or_default(),
            v["size"].to_string(),
            hash.get(..12)
                .unwrap_or(if hash.is_empty() { "-" } else { hash }),
            v["note"].as_str().unwrap_or_default()
        );
    }
    Ok(())
}

/// Prints `script_rollback`'s answer.
pub fn print_rollback(answer: &Value) -> anyhow::Result<()> {
    let file = answer["written"].as_str().unwrap_or_default();
    match answer["version"].as_i64() {
        Some(new) => outln!(
            "restored version {} of {file} as version {new}",
            answer["rolled_back_to"]
        ),
        None => outln!(
            "{file} already has the content of version {}; nothing changed",
            answer["rolled_back_to"]
        ),
    }
    Ok(())
}
