//! What the agents know and can look up: for now, search over every past
//! conversation (`search`), over the index `index` keeps in step. Memories, the scratchpad, the session notepad
//! and the versioned identity join it as issue 15 goes on
//! ([knowledge.md](../../../docs/knowledge.md)).

pub mod index;
pub mod search;
