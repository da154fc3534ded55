//! Secrets in a plugin's table: `token_secret = "TELEGRAM_BOT_TOKEN"`
//! reaches the plugin as `token = <the secret's value>`, so a channel's
//! credential can live in the secret store (`hearth secret set`, what
//! `hearth setup` writes) instead of the service's environment or the
//! config file.
//!
//! Only top-level string keys ending in `_secret` are read; the plugin
//! never sees the `_secret` key, and a key it already has is not replaced
//! (the plugin then refuses the pair, as it would `token` and `token_env`).

use std::path::Path;

use serde_json::Value;

use hearth_base::secrets::Secrets;

/// The suffix that names a secret.
const SUFFIX: &str = "_secret";

/// `settings` with each `<key>_secret = "NAME"` replaced by `<key>` and the
/// secret's value; the error names the table's key and the fix.
pub fn resolve(settings: &Value, home: &Path, plugin: &str) -> Result<Value, String> {
    let Some(table) = settings.as_object() else {
        return Ok(settings.clone());
    };
    let wanted: Vec<(&String, &str)> = table
        .iter()
        .filter(|(key, _)| key.ends_with(SUFFIX) && key.len() > SUFFIX.len())
        .filter_map(|(key, value)| value.as_str().map(|name| (key, name)))
        .collect();
    if wanted.is_empty() {
        return Ok(settings.clone());
    }
    let secrets = Secrets::open(home);
    let snapshot = secrets
        .current()
        .map_err(|e| format!("[plugins.{plugin}]: the secrets cannot be read: {e}"))?;
    let mut out = table.clone();
    for (key, name) in wanted {
        let value = snapshot.value(name).map_err(|_| {
            format!(
                "[plugins.{plugin}] {key}: the secret {name} is not set: `hearth secret set {name}`"
            )
        })?;
        let plain = key.trim_end_matches(SUFFIX).to_owned();
        out.remove(key);
        if out.contains_key(&plain) {
            return Err(format!(
                "[plugins.{plugin}]: give `{plain}` or `{key}`, not both"
            ));
        }
        out.insert(plain, Value::from(value));
    }
    Ok(Value::Object(out))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::resolve;
    use hearth_base::secrets::Secrets;

    #[test]
    fn a_secret_key_becomes_the_plain_key_with_the_value() {
        let home = tempfile::tempdir().unwrap();
        Secrets::open(home.path())
            .set("BOT_TOKEN", b"1:abc")
            .unwrap();
        let out = resolve(
            &json!({ "token_secret": "BOT_TOKEN", "mode": "polling" }),
            home.path(),
            "telegram",
        )
        .unwrap();
        assert_eq!(out, json!({ "token": "1:abc", "mode": "polling" }));
        let missing = resolve(&json!({ "token_secret": "NOPE" }), home.path(), "telegram");
        assert!(missing.unwrap_err().contains("the secret NOPE is not set"));
        let both = resolve(
            &json!({ "token_secret": "BOT_TOKEN", "token": "x" }),
            home.path(),
            "telegram",
        );
        assert!(both.unwrap_err().contains("not both"));
        // Nothing to resolve: the secrets file is not even read.
        let plain = json!({ "listen": "127.0.0.1:0" });
        assert_eq!(resolve(&plain, home.path(), "canvas").unwrap(), plain);
    }
}
