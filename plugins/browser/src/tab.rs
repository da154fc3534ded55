//! One tab as the plugin knows it: the page's target and the protocol
//! session attached to it. Its own file, so the session and the live view
//! both name it without importing each other.

/// One tab: its target and the protocol session attached to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tab {
    /// The browser's id for the page.
    pub target: String,
    /// The flat session that drives it.
    pub session: String,
}
