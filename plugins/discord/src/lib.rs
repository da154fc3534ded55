//! The Discord channel, being built in steps (issue 35). This step is the
//! protocol's core, with no network in it, so each rule is tested on its
//! own:
//!
//! - `gateway`: the Gateway session as a state machine: hello, identify or
//!   resume, heartbeats and the zombie connection they reveal, reconnect,
//!   invalid sessions and the close codes that must stop reconnecting;
//! - `gate`: which messages reach the host: direct messages and mentions
//!   in allowed channels, from allowed users only;
//! - `split`: replies cut to Discord's 2,000 characters on sensible
//!   boundaries.
//!
//! The connection loop, the REST client and the plugin itself come next;
//! until then the channel is not offered.

pub mod gate;
pub mod gateway;
pub mod split;
