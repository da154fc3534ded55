//! `[plugins.canvas]`: where the canvas listens and what it accepts.

use std::net::SocketAddr;

use hearth_sdk::PluginError;
use serde::Deserialize;

use crate::hosts;

/// The canvas's settings, checked.
#[derive(Clone, Debug)]
pub struct Settings {
    /// The address to listen on.
    pub listen: SocketAddr,
    /// The largest upload, in bytes.
    pub max_upload_bytes: u64,
    /// `Host` names served besides the loopback names and the listen
    /// address: checked, lowercase, each `host` or `host:port`.
    pub allowed_hosts: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Raw {
    #[serde(default = "default_listen")]
    listen: String,
    #[serde(default)]
    allow_remote: bool,
    #[serde(default = "default_max_upload")]
    max_upload_bytes: u64,
    #[serde(default)]
    allowed_hosts: Vec<String>,
}

impl Settings {
    /// Parses and checks the plugin's config table. A non-loopback address
    /// is refused unless `allow_remote = true`: the canvas controls the
    /// whole machine, so exposing it must be a decision, not a typo.
    pub fn parse(config: serde_json::Value) -> Result<Settings, PluginError> {
        let raw: Raw = hearth_sdk::parse_args(config).map_err(|e| match e {
            PluginError::InvalidArguments(why) => {
                PluginError::InvalidArguments(format!("[plugins.canvas]: {why}"))
            }
            other => other,
        })?;
        let listen: SocketAddr = raw.listen.parse().map_err(|_| {
            PluginError::InvalidArguments(format!(
                "[plugins.canvas] listen: {:?} is not an address like \"127.0.0.1:8080\"",
                raw.listen
            ))
        })?;
        if !listen.ip().is_loopback() && !raw.allow_remote {
            return Err(PluginError::InvalidArguments(format!(
                "[plugins.canvas] listen: {listen} is not a loopback address; the canvas can run \
                 anything on this machine, so it listens on 127.0.0.1 unless you also set \
                 allow_remote = true (and put TLS in front of it)"
            )));
        }
        if raw.max_upload_bytes == 0 {
            return Err(PluginError::InvalidArguments(
                "[plugins.canvas] max_upload_bytes: must be at least 1".into(),
            ));
        }
        let allowed_hosts = raw
            .allowed_hosts
            .iter()
            .map(|entry| {
                hosts::check_entry(entry).map_err(|why| {
                    PluginError::InvalidArguments(format!(
                        "[plugins.canvas] allowed_hosts: {entry:?} {why}"
                    ))
                })
            })
            .collect::<Result<_, _>>()?;
        Ok(Settings {
            listen,
            max_upload_bytes: raw.max_upload_bytes,
            allowed_hosts,
        })
    }
}

fn default_listen() -> String {
    "127.0.0.1:8080".into()
}

fn default_max_upload() -> u64 {
    25 * 1024 * 1024
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn allowed_hosts_are_kept_lowercase() {
        let settings = Settings::parse(
            json!({ "allowed_hosts": ["MyHost.lan:8080", "[::2]:80", "pages.example.org"] }),
        )
        .expect("valid hosts");
        assert_eq!(
            settings.allowed_hosts,
            ["myhost.lan:8080", "[::2]:80", "pages.example.org"]
        );
    }

    #[test]
    fn addresses_are_checked() {
        let cases = [
            (json!({}), Ok("127.0.0.1:8080")),
            (json!({ "listen": "[::1]:9000" }), Ok("[::1]:9000")),
            (
                json!({ "listen": "0.0.0.0:8080" }),
                Err("not a loopback address"),
            ),
            (
                json!({ "listen": "0.0.0.0:8080", "allow_remote": true }),
                Ok("0.0.0.0:8080"),
            ),
            (json!({ "listen": "localhost" }), Err("not an address")),
            (
                json!({ "lisen": "127.0.0.1:1" }),
                Err("unknown field `lisen`"),
            ),
            (json!({ "max_upload_bytes": 0 }), Err("at least 1")),
            (
                json!({ "allowed_hosts": ["http://myhost.lan:8080"] }),
                Err("allowed_hosts: \"http://myhost.lan:8080\" is not"),
            ),
        ];
        for (config, expected) in cases {
            let got = Settings::parse(config.clone()).map(|s| s.listen.to_string());
            match (got, expected) {
                (Ok(addr), Ok(want)) => assert_eq!(addr, want, "{config}"),
                (Err(e), Err(want)) => assert!(e.to_string().contains(want), "{config}: {e}"),
                (got, want) => panic!("{config}: got {got:?}, wanted {want:?}"),
            }
        }
    }
}
