//! What the agents know and can look up: the main agent's versioned
//! identity (`identity`), each agent's notes (`notes`:
//! memories, always in its prompt, and the scratchpad, by title), and
//! search over every past conversation (`search`), over the index `index`
//! keeps in step; each session's notepad lives with the notes
//! ([knowledge.md](../../../docs/knowledge.md)). With an embeddings
//! endpoint, recall by meaning too: `recall` holds it, `embedding` keeps
//! the vectors (`vectors`) in step, `hybrid` merges both kinds of hits.
//! `capture` keeps what the cheap model picks out of a quiet conversation
//! as memories marked captured.

pub mod capture;
pub mod embedding;
pub mod hybrid;
pub mod identity;
pub mod index;
pub mod notes;
pub mod recall;
pub mod search;
pub mod vectors;
