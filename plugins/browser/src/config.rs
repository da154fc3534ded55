//! `[plugins.browser]`: which Chromium, how long an unused one lives, how
//! long a call may take, and where pages may go (the web plugin's rules).
//!
//! ```toml
//! [plugins.browser]
//! # executable = "/usr/bin/chromium"   # default: chromium (or google-chrome) on PATH
//! idle_timeout_secs = 600               # an unused browser is stopped after this
//! call_timeout_secs = 30                # the longest one action may take
//! allow_hosts = ["127.0.0.1:8123"]      # as [plugins.web]: host or host:port
//! allow_private = false
//! max_download_bytes = 104857600        # 100 MiB
//! ```

use std::time::Duration;

use hearth_web::guard::{AllowEntry, Policy};
use serde::Deserialize;
use serde_json::Value;

/// The default idle timeout: ten minutes.
pub const DEFAULT_IDLE_SECS: u64 = 600;
/// The default longest call.
pub const DEFAULT_CALL_SECS: u64 = 30;
/// The default cap on one download: 100 MiB.
pub const DEFAULT_MAX_DOWNLOAD: u64 = 100 << 20;

/// The plugin's settings, checked.
#[derive(Debug, Clone)]
pub struct Settings {
    /// `executable`, as written (found on first use, and by `doctor`).
    pub executable: Option<String>,
    /// An unused browser is stopped after this.
    pub idle_timeout: Duration,
    /// The longest one call may wait for the browser.
    pub call_timeout: Duration,
    /// Where pages may go.
    pub policy: Policy,
    /// The largest download kept.
    pub max_download_bytes: u64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Raw {
    #[serde(default)]
    executable: Option<String>,
    #[serde(default)]
    idle_timeout_secs: Option<u64>,
    #[serde(default)]
    call_timeout_secs: Option<u64>,
    #[serde(default)]
    allow_hosts: Vec<String>,
    #[serde(default)]
    allow_private: bool,
    #[serde(default)]
    max_download_bytes: Option<u64>,
}

impl Settings {
    /// Reads `[plugins.browser]`; the error names the key.
    pub fn parse(config: Value) -> Result<Settings, String> {
        let config = if config.is_null() {
            Value::Object(Default::default())
        } else {
            config
        };
        let raw: Raw =
            hearth_sdk::parse_args(config).map_err(|e| format!("[plugins.browser]: {e}"))?;
        let seconds = |key: &str, value: Option<u64>, default: u64, most: u64| match value {
            None => Ok(Duration::from_secs(default)),
            Some(v) if (1..=most).contains(&v) => Ok(Duration::from_secs(v)),
            Some(v) => Err(format!("[plugins.browser] {key} must be 1-{most}, not {v}")),
        };
        let allow_hosts = raw
            .allow_hosts
            .iter()
            .map(|entry| AllowEntry::parse(entry))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| format!("[plugins.browser] {e}"))?;
        let max_download_bytes = raw.max_download_bytes.unwrap_or(DEFAULT_MAX_DOWNLOAD);
        if max_download_bytes == 0 {
            return Err("[plugins.browser] max_download_bytes must be above 0".into());
        }
        Ok(Settings {
            executable: raw.executable.filter(|e| !e.trim().is_empty()),
            idle_timeout: seconds(
                "idle_timeout_secs",
                raw.idle_timeout_secs,
                DEFAULT_IDLE_SECS,
                86_400,
            )?,
            call_timeout: seconds(
                "call_timeout_secs",
                raw.call_timeout_secs,
                DEFAULT_CALL_SECS,
                600,
            )?,
            policy: Policy {
                plugin: "browser",
                allow_hosts,
                allow_private: raw.allow_private,
            },
            max_download_bytes,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn defaults_and_bad_values_name_their_key() {
        let s = Settings::parse(Value::Null).unwrap();
        assert_eq!(s.idle_timeout, Duration::from_secs(600));
        assert_eq!(s.call_timeout, Duration::from_secs(30));
        assert!(s.executable.is_none());
        let cases = [
            (
                json!({"idle_timeout_secs": 0}),
                "idle_timeout_secs must be 1-86400, not 0",
            ),
            (
                json!({"call_timeout_secs": 601}),
                "call_timeout_secs must be 1-600",
            ),
            (json!({"allow_hosts": ["a b"]}), "allow_hosts entry \"a b\""),
            (
                json!({"max_download_bytes": 0}),
                "max_download_bytes must be above 0",
            ),
            (json!({"executible": "x"}), "unknown field `executible`"),
        ];
        for (config, expected) in cases {
            let error = Settings::parse(config.clone()).unwrap_err();
            assert!(error.contains(expected), "{config}: {error}");
            assert!(error.starts_with("[plugins.browser]"), "{error}");
        }
    }
}
