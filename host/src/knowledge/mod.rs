//! What the agents know and can look up: the main agent's versioned
//! identity (`identity`), each agent's notes (`notes`:
//! memories, always in its prompt, and the scratchpad, by title), and
//! search over every past conversation (`search`), over the index `index`
//! keeps in step. Memories, the scratchpad, the session notepad
//! and the versioned identity join it as issue 15 goes on
//! ([knowledge.md](../../../docs/knowledge.md)).

pub mod identity;
pub mod index;
pub mod notes;
pub mod search;
