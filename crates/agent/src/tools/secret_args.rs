//! `{{secret:NAME}}` in a plugin tool's arguments: the host puts the
//! owner's secret in just before the call reaches the plugin (the
//! browser's `type`, a password into a login form).
//!
//! Why here: the ruling, the confirmation card and the audit row are all
//! made from the arguments as the model wrote them, so they show the
//! placeholder; only the plugin's copy holds the value, and the result
//! coming back is redacted of it with every other secret. Only the
//! arguments a tool's `Targets::secrets` names are filled: a placeholder
//! anywhere else stays text.

use hearth_base::secrets::{Secrets, placeholder};
use hearth_sdk::protocol::ToolSpec;
use serde_json::Value;

/// The arguments with the placeholders in a tool's secret arguments
/// filled, and which of them were.
pub struct Filled {
    /// The arguments as the plugin gets them.
    pub args: Value,
    /// The arguments that now hold a secret ([`ToolCall::secrets`]).
    ///
    /// [`ToolCall::secrets`]: hearth_sdk::protocol::ToolCall::secrets
    pub keys: Vec<String>,
}

/// `args` with the placeholders in `spec`'s secret arguments filled, or
/// why they cannot be: no secrets store, an unknown secret, one the host
/// keeps for itself, or a malformed placeholder. The message names the
/// argument and never a value.
pub fn fill(spec: &ToolSpec, args: Value, secrets: Option<&Secrets>) -> Result<Filled, String> {
    fill_targets(&spec.targets.secrets, args, secrets)
}

fn fill_targets(
    keys: &[String],
    mut args: Value,
    secrets: Option<&Secrets>,
) -> Result<Filled, String> {
    let mut filled = Vec::new();
    for key in keys {
        let Some(Value::String(text)) = args.get_mut(key.as_str()) else {
            continue;
        };
        if !text.contains(placeholder::OPEN) {
            continue;
        }
        let found = placeholder::find(text).map_err(|e| format!("`{key}`: {e}"))?;
        let secrets = secrets.ok_or_else(|| {
            format!("`{key}` names a secret, but this hearth has no secrets store")
        })?;
        for p in &found {
            secrets
                .for_script(&p.name)
                .map_err(|e| format!("`{key}`: {e}"))?;
        }
        let snapshot = secrets.current().map_err(|e| format!("`{key}`: {e}"))?;
        *text = placeholder::fill(text, |name| snapshot.value(name).map(str::to_owned))
            .map_err(|e| format!("`{key}`: {e}"))?;
        filled.push(key.clone());
    }
    Ok(Filled { args, keys: filled })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn fill(args: Value, secrets: Option<&Secrets>) -> Result<Value, String> {
        fill_targets(&["text".to_owned()], args, secrets).map(|f| f.args)
    }

    fn store(dir: &tempfile::TempDir) -> Secrets {
        let secrets = Secrets::open(dir.path());
        secrets.set("BANK_PASSWORD", b"hunter2").unwrap();
        secrets.set("ANTHROPIC_KEY", b"sk-x").unwrap();
        secrets.reserve_for_host(["ANTHROPIC_KEY".to_owned()]);
        secrets
    }

    #[test]
    fn only_the_named_arguments_are_filled() {
        let dir = tempfile::tempdir().unwrap();
        let secrets = store(&dir);
        let args = json!({
            "action": "type",
            "text": "pw: {{secret:BANK_PASSWORD}}",
            "url": "{{secret:BANK_PASSWORD}}",
        });
        let filled = fill_targets(
            &["text".to_owned(), "action".to_owned()],
            args,
            Some(&secrets),
        );
        let filled = filled.unwrap();
        assert_eq!(filled.keys, ["text"]);
        let filled = filled.args;
        assert_eq!(filled["text"], "pw: hunter2");
        assert_eq!(filled["url"], "{{secret:BANK_PASSWORD}}");
    }

    #[test]
    fn refusals_name_the_argument_and_never_a_value() {
        let dir = tempfile::tempdir().unwrap();
        let secrets = store(&dir);
        let cases = [
            ("{{secret:nope}}", "nope"),
            ("{{secret:ANTHROPIC_KEY}}", "ANTHROPIC_KEY"),
            ("{{secret:BANK_PASSWORD", "not closed"),
        ];
        for (text, expected) in cases {
            let why = fill(json!({ "text": text }), Some(&secrets)).unwrap_err();
            assert!(
                why.starts_with("`text`: ") && why.contains(expected),
                "{text}: {why}"
            );
            assert!(!why.contains("hunter2") && !why.contains("sk-x"), "{why}");
        }
        let why = fill(json!({ "text": "{{secret:BANK_PASSWORD}}" }), None).unwrap_err();
        assert!(why.contains("no secrets store"), "{why}");
        let plain = fill(json!({ "text": "hello" }), None).unwrap();
        assert_eq!(plain["text"], "hello");
    }
}
