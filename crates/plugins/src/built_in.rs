//! The first-party plugins linked into the `hearth` binary.
//!
//! Each of them used to be a shared library of its own, and each such
//! library carried its own copy of std, tokio, serde and (for web, Telegram
//! and Signal) reqwest, rustls and ring: about 11 MiB of an idle daemon.
//! Linked in, they share the host's copies. They still speak only the C
//! ABI: the host reaches each through the very `PluginHeader` function
//! table a loaded library exports (`hearth_sdk::export::StaticHeader`), so
//! a built-in plugin and its `libhearth_plugin_<name>.so` twin (built from
//! the crate's `so/` directory) behave the same.
//!
//! Architecture invariant: no Rust type crosses the plugin ABI, even for a
//! built-in plugin. The host calls `init`, `describe`, `invoke` and
//! `shutdown` through the header's `extern "C"` pointers with JSON bytes,
//! never the plugin's Rust API.

use hearth_sdk::abi::PluginHeader;
use hearth_sdk::export::StaticHeader;

use hearth_base::config::PluginEntry;

/// One plugin linked into the binary.
pub struct BuiltIn {
    /// The name its header declares (checked by a test).
    pub name: &'static str,
    header: &'static StaticHeader,
    /// A channel that starts only when its config table says how to reach
    /// the service (a bot token, an account): with an empty table it would
    /// do nothing but cost memory.
    needs_settings: bool,
}

/// Every built-in plugin, in start order.
pub fn all() -> &'static [BuiltIn] {
    &BUILT_IN
}

impl BuiltIn {
    /// The plugin's header, for the loader to check and the host to call.
    pub fn header(&self) -> *const PluginHeader {
        self.header.as_ptr()
    }

    /// Why this plugin stays off under `entry` (its `[plugins.<name>]`
    /// table, if any), or `None` if it starts.
    pub fn off_reason(&self, entry: Option<&PluginEntry>) -> Option<String> {
        let configured =
            entry.is_some_and(|e| e.settings.as_object().is_some_and(|s| !s.is_empty()));
        (self.needs_settings && !configured).then(|| {
            format!(
                "not configured: [plugins.{}] has no settings, so it is not loaded",
                self.name
            )
        })
    }
}

static BROWSER: StaticHeader = StaticHeader::built_in::<hearth_browser::Browser>();
static CANVAS: StaticHeader = StaticHeader::built_in::<hearth_canvas::Canvas>();
static DISCORD: StaticHeader = StaticHeader::built_in::<hearth_discord::Discord>();
static MAIL: StaticHeader = StaticHeader::built_in::<hearth_mail::Mail>();
static MATRIX: StaticHeader = StaticHeader::built_in::<hearth_matrix::Matrix>();
static SHELL: StaticHeader = StaticHeader::built_in::<hearth_shell::Shell>();
static FS: StaticHeader = StaticHeader::built_in::<hearth_fs::Fs>();
static WEB: StaticHeader = StaticHeader::built_in::<hearth_web::Web>();
static TELEGRAM: StaticHeader = StaticHeader::built_in::<hearth_telegram::Telegram>();
static SIGNAL: StaticHeader = StaticHeader::built_in::<hearth_signal::Signal>();
static MCP: StaticHeader = StaticHeader::built_in::<hearth_mcp::Mcp>();

/// The order the shared libraries had when scanned by file name.
static BUILT_IN: [BuiltIn; 11] = [
    BuiltIn {
        // Offers its tool only where a Chromium is found, and starts the
        // browser only on first use.
        name: "browser",
        header: &BROWSER,
        needs_settings: false,
    },
    BuiltIn {
        name: "canvas",
        header: &CANVAS,
        needs_settings: false,
    },
    BuiltIn {
        name: "discord",
        header: &DISCORD,
        needs_settings: true,
    },
    BuiltIn {
        name: "fs",
        header: &FS,
        needs_settings: false,
    },
    BuiltIn {
        name: "mail",
        header: &MAIL,
        needs_settings: true,
    },
    BuiltIn {
        name: "matrix",
        header: &MATRIX,
        needs_settings: true,
    },
    BuiltIn {
        name: "mcp",
        header: &MCP,
        // With no server it starts nothing: loaded, it can say so.
        needs_settings: false,
    },
    BuiltIn {
        name: "shell",
        header: &SHELL,
        needs_settings: false,
    },
    BuiltIn {
        name: "signal",
        header: &SIGNAL,
        needs_settings: true,
    },
    BuiltIn {
        name: "telegram",
        header: &TELEGRAM,
        needs_settings: true,
    },
    BuiltIn {
        name: "web",
        header: &WEB,
        needs_settings: false,
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_is_the_one_its_header_declares() {
        for plugin in all() {
            // SAFETY: a static header, valid for the program's life.
            let declared = unsafe { (*plugin.header()).name.as_bytes() };
            assert_eq!(declared, plugin.name.as_bytes());
        }
    }

    #[test]
    fn a_channel_without_settings_stays_off() {
        let telegram = all()
            .iter()
            .find(|p| p.name == "telegram")
            .expect("telegram");
        assert!(telegram.off_reason(None).is_some());
        let empty = PluginEntry::default();
        assert!(telegram.off_reason(Some(&empty)).is_some());
        let configured = PluginEntry {
            settings: serde_json::json!({"token": "x"}),
            ..PluginEntry::default()
        };
        assert_eq!(telegram.off_reason(Some(&configured)), None);
        let shell = all().iter().find(|p| p.name == "shell").expect("shell");
        assert_eq!(shell.off_reason(None), None);
    }
}
