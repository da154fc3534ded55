//! The MCP protocol revisions hearth speaks, newest first, and what sets
//! them apart.
//!
//! Revisions up to 2025-11-25 ("legacy") open a session with `initialize`;
//! 2026-07-28 ("modern") has no handshake: every request carries its
//! revision in `_meta`.

use serde_json::{Value, json};

/// A protocol revision hearth speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Version {
    /// 2025-03-26: Streamable HTTP appears; messages may come in batches.
    V2025_03_26,
    /// 2025-06-18: structured content, resource links, the
    /// `MCP-Protocol-Version` header.
    V2025_06_18,
    /// 2025-11-25: the last revision with a handshake.
    V2025_11_25,
    /// 2026-07-28: stateless, `server/discover`, `resultType`.
    V2026_07_28,
}

/// Every revision hearth speaks, newest first (the order it prefers them).
pub const SUPPORTED: [Version; 4] = [
    Version::V2026_07_28,
    Version::V2025_11_25,
    Version::V2025_06_18,
    Version::V2025_03_26,
];

/// The newest revision with an `initialize` handshake: what hearth asks
/// for in `initialize`.
pub const LATEST_LEGACY: Version = Version::V2025_11_25;

impl Version {
    /// Its date, as on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Version::V2025_03_26 => "2025-03-26",
            Version::V2025_06_18 => "2025-06-18",
            Version::V2025_11_25 => "2025-11-25",
            Version::V2026_07_28 => "2026-07-28",
        }
    }

    /// The revision named `text`, if hearth speaks it.
    pub fn parse(text: &str) -> Option<Version> {
        SUPPORTED.into_iter().find(|v| v.as_str() == text)
    }

    /// Whether it is stateless (no handshake, `_meta` on every request).
    pub fn is_modern(self) -> bool {
        self == Version::V2026_07_28
    }
}

impl std::fmt::Display for Version {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The revisions hearth speaks, oldest first, for messages:
/// `2025-03-26, 2025-06-18, 2025-11-25, 2026-07-28`.
pub fn supported_list() -> String {
    let mut all: Vec<&str> = SUPPORTED.iter().map(|v| v.as_str()).collect();
    all.reverse();
    all.join(", ")
}

/// The `_meta` every 2026-07-28 request carries: the revision, our
/// capabilities (none: no roots, sampling or elicitation) and who we are.
pub fn modern_meta(version: Version) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": version.as_str(),
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": client_info(),
    })
}

pub fn client_info() -> Value {
    json!({"name": "hearth", "version": env!("CARGO_PKG_VERSION")})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_round_trip_and_sort() {
        for v in SUPPORTED {
            assert_eq!(Version::parse(v.as_str()), Some(v));
        }
        assert_eq!(Version::parse("2024-11-05"), None);
        assert!(Version::V2026_07_28 > Version::V2025_11_25);
        assert_eq!(
            supported_list(),
            "2025-03-26, 2025-06-18, 2025-11-25, 2026-07-28"
        );
    }
}
