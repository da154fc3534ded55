//! hearth's model side: everything between a turn and the model's answer.
//!
//! - `embeddings`: the `/embeddings` endpoint recall by meaning asks;
//! - `llm`: the providers (Anthropic, OpenAI-compatible), streaming, retries
//!   and the prompt-cache breakpoints;
//! - `media`: images the owner sends or a tool reads, shrunk and saved for
//!   the model;
//! - `speech`: voice notes in (speech to text) and out (text to speech);
//! - `summary`: the cheap model's summaries of long output, for workers'
//!   results and the plugins that ask for one;
//! - `usage`: the meter of tokens and money each call costs, and its report.
//!
//! It sits above the foundation (`hearth-base`) and the policy (speech runs
//! ffmpeg on a stranger's media confined as the policy's helpers are) and
//! below the agent, which drives it.

pub mod embeddings;
pub mod llm;
pub mod media;
pub mod speech;
pub mod summary;
pub mod usage;
