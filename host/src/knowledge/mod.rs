//! What the agents know and can look up: for now, search over every past
//! conversation (`search`). Memories, the scratchpad, the session notepad
//! and the versioned identity join it as issue 15 goes on
//! ([knowledge.md](../../../docs/knowledge.md)).

pub mod search;
