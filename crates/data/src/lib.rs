//! What hearth's agent knows and keeps, and the way messages enter and
//! leave.
//!
//! - `knowledge`: notes and documents the agents can look up, indexed for
//!   search;
//! - `people`: the contacts, the owner first;
//! - `workshop`: the tables and pages the agent builds with;
//! - `router`: the gate strangers meet, the inbox turns read from and the
//!   outbox replies leave by.
//!
//! It sits on the foundation (`hearth-base`) and the policy (the router
//! hands the owner's answers to the confirmation board) and below the
//! agent, which uses all four.

pub mod knowledge;
pub mod people;
pub mod router;
pub mod workshop;
