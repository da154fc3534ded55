//! The router: where inbound messages enter the daemon.
//!
//! For now it owns the durable inbox; the gates, the agent hand-off and the
//! outbox join it as the agent grows.

pub mod inbox;
