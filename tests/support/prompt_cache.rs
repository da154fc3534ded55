//! A model of the two providers' prompt caches, so the fake LLM can report
//! cache reads and writes the way the real services would, and tests and
//! benchmarks can measure what share of hearth's input tokens a cache
//! serves. [`PromptCache`] takes a request body (`serde_json::Value`) and
//! a [`Clock`] and answers a [`CacheOutcome`]; [`crate::fake_llm::FakeLlm`]
//! runs every model request through it once
//! [`keep_prompt_cache`](crate::fake_llm::FakeLlm::keep_prompt_cache) is
//! called.
//!
//! # Token counting
//!
//! Deterministic and simple, not a real tokenizer: a piece of text or JSON
//! counts `ceil(bytes / 4)` tokens. What is counted is the canonical
//! serialization of each *unit* of the prompt: compact JSON
//! (`serde_json::to_string` of the parsed body, so object keys come out
//! sorted) with every `cache_control` member removed first, at any depth,
//! so moving a breakpoint never changes the bytes of a prefix. Only the
//! prompt counts: `tools`, `system` and `messages`; `max_tokens`,
//! `stream`, `tool_choice`, `temperature` and the rest are not part of it
//! and never invalidate anything.
//!
//! # Anthropic (Messages API), as its prompt caching docs describe it
//!
//! - The prompt is rendered tools → system → messages. Units, in that
//!   order: each element of `tools`; the `system` (a string is one text
//!   block, an array is its blocks); each content block of each message (a
//!   string `content` is one text block). A message's role is counted once,
//!   at its first block: that block's bytes are prefixed with `user:` or
//!   `assistant:`, so the same text said by either side differs (a message
//!   with no blocks is one unit, its role and `""`). A unit counts
//!   `ceil(bytes / 4)` tokens; a prefix counts the sum of its units.
//! - A unit holding `cache_control` is a **breakpoint**; the cached prefix
//!   at a breakpoint is every unit up to and including it, keyed with the
//!   `model`. A `cache_control` nested in a unit (a text block inside a
//!   `tool_result`'s `content`) is a breakpoint at the end of that unit.
//!   A top-level `cache_control` object in the body (automatic caching)
//!   is a breakpoint on the last unit. Each of them counts toward the limit.
//! - 400 `invalid_request_error` (nothing read or written, the request is
//!   refused) when: a `cache_control` is not an object of type
//!   `ephemeral`; its `ttl` is neither `"5m"` nor `"1h"` (absent means
//!   `"5m"`); there are more than 4 breakpoints ("A maximum of 4 blocks
//!   with cache_control may be provided. Found N."); a `1h` breakpoint
//!   comes after a `5m` one (longer TTLs must come first).
//! - A prefix under [`MIN_CACHEABLE`] (1,024) tokens is neither read nor
//!   written, with no error.
//! - **Read**: the longest prefix ending at one of this request's
//!   breakpoints that an earlier request wrote, byte for byte, with the
//!   same model, and whose entry has not expired. An entry lives while
//!   less than its TTL (5 minutes or 1 hour) has passed since it was last
//!   written or read; a read refreshes it. Only breakpoints are looked up:
//!   the real service also looks back up to 20 blocks before each
//!   breakpoint for an earlier hit; this model does not, on purpose, so a
//!   test passes only when hearth puts its breakpoints where they hit.
//! - **Write**: every breakpoint prefix of this request (from 1,024
//!   tokens) is stored, or refreshed if already stored; an entry keeps the
//!   longest TTL it was written with.
//! - Reported: `cache_read_input_tokens` = the read prefix's tokens;
//!   `cache_creation_input_tokens` = the tokens from the end of the read
//!   prefix to the end of the last cacheable breakpoint (0 when there is
//!   none beyond it); `input_tokens` = the rest. The three add up to the
//!   prompt's tokens. The creation tokens are split by the TTL of the
//!   breakpoint closing each stretch (`cache_creation.ephemeral_1h_input_tokens`).
//!
//! # OpenAI-compatible chat completions (automatic prefix caching)
//!
//! - The prompt is the concatenation of the compact JSON of each element
//!   of `tools` (in the order sent), then of each message object, whole.
//!   Its tokens are the 4-byte chunks of that concatenation (the last one
//!   may be shorter).
//! - Each request is matched against every earlier request for the same
//!   `model` and the same `prompt_cache_key` (a request without one
//!   matches only earlier requests without one) that is still alive: the
//!   longest common prefix in whole tokens wins (a short last chunk
//!   matches only when both prompts are identical). An earlier request
//!   lives while less than the TTL ([`OPENAI_TTL`], 10 minutes, settable)
//!   has passed since it was made or last matched; a match of 1,024
//!   tokens or more refreshes it.
//! - `cached_tokens` is 0 when the common prefix is under 1,024 tokens,
//!   else the largest multiple of 128 not above it: hits come in 128-token
//!   steps from 1,024 on. `prompt_tokens` is the whole prompt, cached
//!   tokens included. OpenAI reports no cache writes: the outcome's
//!   `written` is always 0 and `uncached` is `total - read`.
//!
//! # Two phases
//!
//! [`PromptCache::plan_anthropic`] and [`PromptCache::plan_openai`] compute
//! the outcome without changing the cache; [`PromptCache::commit`] then
//! stores the writes and refreshes the read. The fake commits only the
//! requests it answers with a stream, so a scripted 429 or 529 writes
//! nothing, as on the real services. [`PromptCache::anthropic`] and
//! [`PromptCache::openai`] do both at once.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};

/// The fewest tokens a cached prefix may have, on either provider.
pub const MIN_CACHEABLE: u64 = 1024;

/// OpenAI's cache hits come in steps of this many tokens.
pub const OPENAI_STEP: u64 = 128;

/// How long an OpenAI prompt stays cached after its last use, by default.
pub const OPENAI_TTL: Duration = Duration::from_secs(10 * 60);

/// Anthropic's default TTL (`"5m"`).
pub const TTL_5M: Duration = Duration::from_secs(5 * 60);

/// Anthropic's extended TTL (`"1h"`).
pub const TTL_1H: Duration = Duration::from_secs(60 * 60);

/// The most breakpoints an Anthropic request may carry.
pub const MAX_BREAKPOINTS: usize = 4;

/// The tokens `bytes` bytes count: `ceil(bytes / 4)`.
pub fn tokens_of(bytes: usize) -> u64 {
    bytes.div_ceil(4) as u64
}

/// The caches' clock: real time plus however far a test has moved it
/// forward. Clones share the offset, so a test can keep one and move the
/// clock of a cache owned by a fake server.
#[derive(Clone, Debug, Default)]
pub struct Clock {
    offset: Arc<Mutex<Duration>>,
}

impl Clock {
    /// The real clock, not moved yet.
    pub fn new() -> Clock {
        Clock::default()
    }

    /// Now, as the caches see it.
    pub fn now(&self) -> Instant {
        Instant::now() + *self.offset.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Moves the clock forward by `by` (for every clone).
    pub fn advance(&self, by: Duration) {
        *self.offset.lock().unwrap_or_else(PoisonError::into_inner) += by;
    }
}

/// Which provider's rules an outcome was computed by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Provider {
    /// The Anthropic Messages API: explicit breakpoints.
    Anthropic,
    /// OpenAI-compatible chat completions: automatic prefix caching.
    OpenAi,
}

/// What the cache made of one request, in tokens.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CacheOutcome {
    /// Whose rules applied.
    pub provider: Provider,
    /// The whole prompt: `read + written + uncached`.
    pub total: u64,
    /// Served from the cache (`cache_read_input_tokens`, `cached_tokens`).
    pub read: u64,
    /// Written to the cache (`cache_creation_input_tokens`); always 0 for
    /// OpenAI, which reports no writes.
    pub written: u64,
    /// The part of `written` closed by a `1h` breakpoint.
    pub written_1h: u64,
    /// Neither read nor written (`input_tokens`).
    pub uncached: u64,
    /// How many breakpoints the request carried (0 for OpenAI).
    pub breakpoints: usize,
    /// Where each breakpoint's prefix ends, in tokens from the start, in
    /// prompt order (empty for OpenAI).
    pub breakpoint_positions: Vec<u64>,
}

impl CacheOutcome {
    /// The outcome of OpenAI's prefix rules: `read` of `total` tokens from
    /// the cache, nothing written, no breakpoints.
    pub fn prefix(total: u64, read: u64) -> CacheOutcome {
        CacheOutcome {
            provider: Provider::OpenAi,
            total,
            read,
            written: 0,
            written_1h: 0,
            uncached: total - read,
            breakpoints: 0,
            breakpoint_positions: Vec::new(),
        }
    }
}

/// The share of prompt tokens served from the cache over every request but
/// the first (which nothing can have cached): `sum(read) / sum(total)` over
/// `outcomes[1..]`; 0 when that is empty.
pub fn hit_share(outcomes: &[CacheOutcome]) -> f64 {
    let rest = outcomes.get(1..).unwrap_or_default();
    let total: u64 = rest.iter().map(|o| o.total).sum();
    let read: u64 = rest.iter().map(|o| o.read).sum();
    if total == 0 {
        0.0
    } else {
        read as f64 / total as f64
    }
}

/// A request the rules refuse: the provider's 400 `invalid_request_error`
/// with this message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CacheError {
    /// The error's `message`, worded as the service words it.
    pub message: String,
}

/// An outcome computed but not yet applied to the cache: hand it to
/// [`PromptCache::commit`] once the request is answered.
#[derive(Clone, Debug)]
pub struct Plan {
    /// What the request will report.
    pub outcome: CacheOutcome,
    change: Change,
}

#[derive(Clone, Debug)]
enum Change {
    /// Anthropic: the prefixes to store or refresh, each with its TTL.
    Anthropic(Vec<(Vec<u8>, Duration)>),
    /// OpenAI: the request's prompt to remember, and the earlier one it
    /// matched, to refresh.
    OpenAi {
        scope: Scope,
        prompt: Vec<u8>,
        matched: Option<u64>,
    },
}

/// Which earlier OpenAI requests a request may match.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Scope {
    model: String,
    key: Option<String>,
}

#[derive(Debug)]
struct Entry {
    ttl: Duration,
    expires: Instant,
}

#[derive(Debug)]
struct Prompt {
    id: u64,
    scope: Scope,
    bytes: Vec<u8>,
    expires: Instant,
}

/// Both providers' caches, on one clock.
#[derive(Debug)]
pub struct PromptCache {
    clock: Clock,
    /// Anthropic: model, a NUL, then the prefix's bytes.
    anthropic: HashMap<Vec<u8>, Entry>,
    openai: Vec<Prompt>,
    openai_ttl: Duration,
    next_id: u64,
}

impl Default for PromptCache {
    fn default() -> PromptCache {
        PromptCache::new()
    }
}

impl PromptCache {
    /// Empty caches on the real clock.
    pub fn new() -> PromptCache {
        PromptCache::with_clock(Clock::new())
    }

    /// Empty caches on `clock` (keep a clone to move it).
    pub fn with_clock(clock: Clock) -> PromptCache {
        PromptCache {
            clock,
            anthropic: HashMap::new(),
            openai: Vec::new(),
            openai_ttl: OPENAI_TTL,
            next_id: 0,
        }
    }

    /// The clock the caches run on.
    pub fn clock(&self) -> &Clock {
        &self.clock
    }

    /// Moves the clock forward by `by`.
    pub fn advance(&self, by: Duration) {
        self.clock.advance(by);
    }

    /// How long an OpenAI prompt stays cached after its last use, instead
    /// of [`OPENAI_TTL`].
    pub fn set_openai_ttl(&mut self, ttl: Duration) {
        self.openai_ttl = ttl;
    }

    /// An Anthropic request, planned and committed at once.
    pub fn anthropic(&mut self, body: &Value) -> Result<CacheOutcome, CacheError> {
        let plan = self.plan_anthropic(body)?;
        let outcome = plan.outcome.clone();
        self.commit(plan);
        Ok(outcome)
    }

    /// An OpenAI-compatible request, planned and committed at once.
    pub fn openai(&mut self, body: &Value) -> CacheOutcome {
        let plan = self.plan_openai(body);
        let outcome = plan.outcome.clone();
        self.commit(plan);
        outcome
    }

    /// What an Anthropic request reads and writes, by the rules in the
    /// module comment, without changing the cache; the 400 when it breaks
    /// them.
    pub fn plan_anthropic(&mut self, body: &Value) -> Result<Plan, CacheError> {
        let now = self.clock.now();
        self.anthropic.retain(|_, entry| entry.expires > now);
        let (units, marks) = anthropic_units(body)?;
        if marks.len() > MAX_BREAKPOINTS {
            return Err(CacheError {
                message: format!(
                    "A maximum of {MAX_BREAKPOINTS} blocks with cache_control may be provided. Found {}.",
                    marks.len()
                ),
            });
        }
        // Marks come in prompt order (the top-level one last, on the last
        // unit), so a 1h after a 5m shows as the TTL growing.
        if marks
            .windows(2)
            .any(|pair| pair[0].ttl == TTL_5M && pair[1].ttl == TTL_1H)
        {
            return Err(CacheError {
                message: "a ttl='1h' cache_control block must not come after a ttl='5m' \
                          cache_control block. Note that blocks are processed in the \
                          following order: `tools`, `system`, `messages`."
                    .to_owned(),
            });
        }
        let mut bytes = Vec::new();
        let mut ends = Vec::with_capacity(units.len());
        let mut positions = Vec::with_capacity(units.len());
        let mut total = 0;
        for unit in &units {
            bytes.extend_from_slice(unit);
            total += tokens_of(unit.len());
            ends.push(bytes.len());
            positions.push(total);
        }
        let model = body["model"].as_str().unwrap_or_default();
        let key = |unit: usize| {
            let mut key = Vec::with_capacity(model.len() + 1 + ends[unit]);
            key.extend_from_slice(model.as_bytes());
            key.push(0);
            key.extend_from_slice(&bytes[..ends[unit]]);
            key
        };
        let breakpoint_positions: Vec<u64> = marks.iter().map(|m| positions[m.unit]).collect();
        // Breakpoints long enough to cache, in order, each with its TTL.
        let cacheable: Vec<(usize, Duration)> = marks
            .iter()
            .filter(|m| positions[m.unit] >= MIN_CACHEABLE)
            .map(|m| (m.unit, m.ttl))
            .collect();
        let read = cacheable
            .iter()
            .rev()
            .find(|(unit, _)| self.anthropic.contains_key(&key(*unit)))
            .map_or(0, |(unit, _)| positions[*unit]);
        let mut written = 0;
        let mut written_1h = 0;
        let mut start = read;
        for (unit, ttl) in &cacheable {
            let end = positions[*unit];
            if end > start {
                written += end - start;
                if *ttl == TTL_1H {
                    written_1h += end - start;
                }
                start = end;
            }
        }
        let writes = cacheable
            .iter()
            .map(|(unit, ttl)| (key(*unit), *ttl))
            .collect();
        Ok(Plan {
            outcome: CacheOutcome {
                provider: Provider::Anthropic,
                total,
                read,
                written,
                written_1h,
                uncached: total - read - written,
                breakpoints: marks.len(),
                breakpoint_positions,
            },
            change: Change::Anthropic(writes),
        })
    }

    /// What an OpenAI-compatible request reads, by the rules in the module
    /// comment, without changing the cache.
    pub fn plan_openai(&mut self, body: &Value) -> Plan {
        let now = self.clock.now();
        self.openai.retain(|p| p.expires > now);
        let mut prompt = Vec::new();
        let tools = body["tools"].as_array().map(Vec::as_slice);
        let messages = body["messages"].as_array().map(Vec::as_slice);
        for unit in tools
            .unwrap_or_default()
            .iter()
            .chain(messages.unwrap_or_default())
        {
            prompt.extend_from_slice(unit.to_string().as_bytes());
        }
        let scope = Scope {
            model: body["model"].as_str().unwrap_or_default().to_owned(),
            key: body["prompt_cache_key"].as_str().map(str::to_owned),
        };
        let best = self
            .openai
            .iter()
            .filter(|p| p.scope == scope)
            .map(|p| (common_tokens(&p.bytes, &prompt), p.id))
            .max_by_key(|(common, _)| *common);
        let (read, matched) = match best {
            Some((common, id)) if common >= MIN_CACHEABLE => {
                (common / OPENAI_STEP * OPENAI_STEP, Some(id))
            }
            _ => (0, None),
        };
        let total = tokens_of(prompt.len());
        Plan {
            outcome: CacheOutcome::prefix(total, read),
            change: Change::OpenAi {
                scope,
                prompt,
                matched,
            },
        }
    }

    /// Applies a plan: stores its writes and refreshes what it read, as of
    /// now on the cache's clock.
    pub fn commit(&mut self, plan: Plan) {
        let now = self.clock.now();
        match plan.change {
            Change::Anthropic(writes) => {
                for (key, ttl) in writes {
                    let entry = self
                        .anthropic
                        .entry(key)
                        .or_insert(Entry { ttl, expires: now });
                    if entry.expires <= now {
                        entry.ttl = ttl;
                    }
                    entry.ttl = entry.ttl.max(ttl);
                    entry.expires = now + entry.ttl;
                }
            }
            Change::OpenAi {
                scope,
                prompt,
                matched,
            } => {
                let ttl = self.openai_ttl;
                if let Some(p) = self.openai.iter_mut().find(|p| Some(p.id) == matched) {
                    p.expires = now + ttl;
                }
                // An earlier prompt this one extends can never match more
                // than this one does, and dies sooner: drop it. (A short
                // last chunk matches only an identical prompt, so such a
                // prompt is kept unless identical.)
                self.openai.retain(|p| {
                    let dominated = p.scope == scope
                        && prompt.starts_with(&p.bytes)
                        && (p.bytes.len() % 4 == 0 || p.bytes.len() == prompt.len());
                    !dominated && p.expires > now
                });
                self.next_id += 1;
                self.openai.push(Prompt {
                    id: self.next_id,
                    scope,
                    bytes: prompt,
                    expires: now + ttl,
                });
            }
        }
    }
}

/// The longest common prefix of two prompts in whole 4-byte tokens; a
/// shorter last token counts only when the prompts are identical.
fn common_tokens(a: &[u8], b: &[u8]) -> u64 {
    let same = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    if same == a.len() && same == b.len() {
        tokens_of(same)
    } else {
        (same / 4) as u64
    }
}

/// One `cache_control` found: the unit it closes and its TTL.
struct Mark {
    unit: usize,
    ttl: Duration,
}

/// An Anthropic prompt's units (canonical bytes, in prompt order) and its
/// breakpoints (in prompt order); the 400 for a malformed `cache_control`.
fn anthropic_units(body: &Value) -> Result<(Vec<Vec<u8>>, Vec<Mark>), CacheError> {
    let mut units = Vec::new();
    let mut marks = Vec::new();
    let mut add = |value: &Value, prefix: &str, path: String| -> Result<(), CacheError> {
        let unit = units.len();
        let mut found = Vec::new();
        let bare = strip_cache_control(value, &path, &mut found);
        for (path, control) in found {
            marks.push(Mark {
                unit,
                ttl: ttl_of(&control, &path)?,
            });
        }
        let mut bytes = prefix.as_bytes().to_vec();
        bytes.extend_from_slice(bare.to_string().as_bytes());
        units.push(bytes);
        Ok(())
    };
    for (i, tool) in body["tools"].as_array().into_iter().flatten().enumerate() {
        add(tool, "", format!("tools.{i}"))?;
    }
    match &body["system"] {
        Value::String(text) => add(&text_block(text), "", "system".to_owned())?,
        Value::Array(blocks) => {
            for (i, block) in blocks.iter().enumerate() {
                add(block, "", format!("system.{i}"))?;
            }
        }
        _ => {}
    }
    for (i, message) in body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        let role = format!("{}:", message["role"].as_str().unwrap_or_default());
        match &message["content"] {
            Value::String(text) => add(&text_block(text), &role, format!("messages.{i}.content"))?,
            Value::Array(blocks) if !blocks.is_empty() => {
                for (j, block) in blocks.iter().enumerate() {
                    let prefix = if j == 0 { role.as_str() } else { "" };
                    add(block, prefix, format!("messages.{i}.content.{j}"))?;
                }
            }
            _ => add(
                &Value::String(String::new()),
                &role,
                format!("messages.{i}"),
            )?,
        }
    }
    if let Some(control) = body.get("cache_control") {
        let ttl = ttl_of(control, "")?;
        if let Some(last) = units.len().checked_sub(1) {
            marks.push(Mark { unit: last, ttl });
        }
    }
    Ok((units, marks))
}

/// A string prompt as the text block it stands for.
fn text_block(text: &str) -> Value {
    json!({"type": "text", "text": text})
}

/// `value` without any `cache_control` member, at any depth; each one
/// removed is pushed on `found` with the path of the object holding it.
fn strip_cache_control(value: &Value, path: &str, found: &mut Vec<(String, Value)>) -> Value {
    match value {
        Value::Object(map) => {
            let mut bare = Map::new();
            for (key, member) in map {
                if key == "cache_control" {
                    found.push((path.to_owned(), member.clone()));
                } else {
                    let inner = strip_cache_control(member, &format!("{path}.{key}"), found);
                    bare.insert(key.clone(), inner);
                }
            }
            Value::Object(bare)
        }
        Value::Array(items) => Value::Array(
            items
                .iter()
                .enumerate()
                .map(|(i, item)| strip_cache_control(item, &format!("{path}.{i}"), found))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// The TTL a `cache_control` asks for; the 400 when it is not an
/// `ephemeral` one with a TTL of `5m` or `1h`. `path` names the object
/// holding it (empty at the top level).
fn ttl_of(control: &Value, path: &str) -> Result<Duration, CacheError> {
    let at = if path.is_empty() {
        "cache_control".to_owned()
    } else {
        format!("{path}.cache_control")
    };
    if control["type"] != "ephemeral" {
        return Err(CacheError {
            message: format!("{at}.type: Input should be 'ephemeral'"),
        });
    }
    match control.get("ttl").map(Value::as_str) {
        None | Some(Some("5m")) => Ok(TTL_5M),
        Some(Some("1h")) => Ok(TTL_1H),
        Some(_) => Err(CacheError {
            message: format!("{at}.ephemeral.ttl: Input should be '5m' or '1h'"),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Text of exactly `tokens` tokens once it is a text block's JSON
    /// (`{"text":"…","type":"text"}` is 25 bytes besides the text), filled
    /// with `fill`.
    fn text_of(tokens: u64, fill: char) -> String {
        let bytes = (tokens * 4) as usize - 25;
        std::iter::repeat_n(fill, bytes).collect()
    }

    fn block(tokens: u64, fill: char) -> Value {
        json!({"type": "text", "text": text_of(tokens, fill)})
    }

    fn cached(mut block: Value, ttl: Option<&str>) -> Value {
        block["cache_control"] = match ttl {
            Some(ttl) => json!({"type": "ephemeral", "ttl": ttl}),
            None => json!({"type": "ephemeral"}),
        };
        block
    }

    /// A body with a system of `system` blocks and one user message of
    /// `user` blocks.
    fn body(system: Vec<Value>, messages: Vec<Value>) -> Value {
        json!({"model": "m", "max_tokens": 100, "system": system, "messages": messages})
    }

    fn user(blocks: Vec<Value>) -> Value {
        json!({"role": "user", "content": blocks})
    }

    fn assistant(blocks: Vec<Value>) -> Value {
        json!({"role": "assistant", "content": blocks})
    }

    /// The role prefix's extra tokens: `user:` is 5 bytes, so a first block
    /// of n tokens counts n + 2 (5 more bytes, rounded up).
    const USER: u64 = 2;
    const ASSISTANT: u64 = 3;

    fn counts(o: &CacheOutcome) -> (u64, u64, u64, u64) {
        (o.total, o.read, o.written, o.uncached)
    }

    #[test]
    fn token_counting_is_ceil_bytes_over_four() {
        for (bytes, tokens) in [(0, 0), (1, 1), (4, 1), (5, 2), (8, 2), (4097, 1025)] {
            assert_eq!(tokens_of(bytes), tokens, "{bytes} bytes");
        }
        assert_eq!(block(300, 'a').to_string().len(), 1200);
    }

    #[test]
    fn first_call_writes_and_a_grown_conversation_reads_it() {
        let mut cache = PromptCache::new();
        let system = vec![cached(block(2000, 's'), None)];
        let first = body(
            system.clone(),
            vec![user(vec![cached(block(100, 'a'), None)])],
        );
        let o = cache.anthropic(&first).expect("valid");
        let end = 2000 + 100 + USER;
        assert_eq!(counts(&o), (end, 0, end, 0));
        assert_eq!(o.breakpoint_positions, vec![2000, end]);

        // The conversation grows; the breakpoint moves to its last block.
        let second = body(
            system,
            vec![
                user(vec![block(100, 'a')]),
                assistant(vec![block(50, 'b')]),
                user(vec![cached(block(30, 'c'), None)]),
            ],
        );
        let o = cache.anthropic(&second).expect("valid");
        let total = end + 50 + ASSISTANT + 30 + USER;
        // The system breakpoint reads 2000; the earlier last-message
        // breakpoint is not a breakpoint now, so it cannot be read.
        assert_eq!(counts(&o), (total, 2000, total - 2000, 0));
        assert_eq!(o.breakpoints, 2);

        // Same conversation again: all of it is read.
        let o = cache.anthropic(&second).expect("valid");
        assert_eq!(counts(&o), (total, total, 0, 0));
    }

    #[test]
    fn reads_the_longest_prefix_and_leaves_the_tail_uncached() {
        let mut cache = PromptCache::new();
        let messages = vec![user(vec![cached(block(1500, 'a'), None), block(40, 'b')])];
        let o = cache
            .anthropic(&body(vec![], messages.clone()))
            .expect("valid");
        assert_eq!(counts(&o), (1500 + USER + 40, 0, 1500 + USER, 40));
        let o = cache.anthropic(&body(vec![], messages)).expect("valid");
        assert_eq!(counts(&o), (1500 + USER + 40, 1500 + USER, 0, 40));
    }

    #[test]
    fn a_changed_byte_early_invalidates_everything_after_it() {
        let mut cache = PromptCache::new();
        let make = |fill| {
            body(
                vec![block(10, fill), cached(block(1200, 's'), None)],
                vec![user(vec![cached(block(1000, 'a'), None)])],
            )
        };
        let o = cache.anthropic(&make('x')).expect("valid");
        assert_eq!(o.read, 0);
        let o = cache.anthropic(&make('y')).expect("valid");
        assert_eq!(counts(&o), (2210 + USER, 0, 2210 + USER, 0));
        let o = cache.anthropic(&make('y')).expect("valid");
        assert_eq!(o.read, 2210 + USER);
    }

    #[test]
    fn moving_a_breakpoint_keeps_the_prefix_bytes() {
        let mut cache = PromptCache::new();
        let a = body(
            vec![cached(block(1100, 's'), None)],
            vec![user(vec![block(10, 'a')])],
        );
        cache.anthropic(&a).expect("valid");
        // The same system block, breakpoint now on the message too.
        let b = body(
            vec![cached(block(1100, 's'), Some("5m"))],
            vec![user(vec![cached(block(10, 'a'), None)])],
        );
        let o = cache.anthropic(&b).expect("valid");
        assert_eq!(counts(&o), (1110 + USER, 1100, 10 + USER, 0));
    }

    #[test]
    fn role_and_model_are_part_of_the_key() {
        let mut cache = PromptCache::new();
        let said = |by: fn(Vec<Value>) -> Value| {
            body(vec![], vec![by(vec![cached(block(1100, 'a'), None)])])
        };
        cache.anthropic(&said(user)).expect("valid");
        assert_eq!(cache.anthropic(&said(assistant)).expect("valid").read, 0);
        let mut other = said(user);
        other["model"] = json!("other");
        assert_eq!(cache.anthropic(&other).expect("valid").read, 0);
        assert_eq!(
            cache.anthropic(&said(user)).expect("valid").read,
            1100 + USER
        );
    }

    #[test]
    fn prefixes_under_1024_tokens_are_neither_read_nor_written() {
        for (tokens, cached_tokens) in [(1000, 0), (1021, 0), (1022, 1024), (1500, 1502)] {
            let mut cache = PromptCache::new();
            let b = body(vec![], vec![user(vec![cached(block(tokens, 'a'), None)])]);
            let first = cache.anthropic(&b).expect("valid");
            let second = cache.anthropic(&b).expect("valid");
            let total = tokens + USER;
            assert_eq!(
                counts(&first),
                (total, 0, cached_tokens, total - cached_tokens),
                "{tokens}"
            );
            assert_eq!(
                counts(&second),
                (total, cached_tokens, 0, total - cached_tokens),
                "{tokens}"
            );
        }
    }

    #[test]
    fn strings_tools_and_automatic_caching() {
        let mut cache = PromptCache::new();
        let tool = json!({"name": "t", "description": text_of(600, 'd'), "input_schema": {}});
        let b = json!({
            "model": "m",
            "cache_control": {"type": "ephemeral"},
            "tools": [tool],
            "system": text_of(500, 's'),
            "messages": [{"role": "user", "content": "hi"}],
        });
        let o = cache.anthropic(&b).expect("valid");
        assert_eq!(o.breakpoints, 1);
        assert_eq!(o.read, 0);
        assert_eq!(o.written, o.total);
        // A string system is the text block it stands for.
        let mut same = b.clone();
        same["system"] = json!([block(500, 's')]);
        let o = cache.anthropic(&same).expect("valid");
        assert_eq!(o.read, o.total);
    }

    #[test]
    fn malformed_cache_control_is_a_400() {
        let five = || cached(block(10, 'a'), None);
        let hour = || cached(block(10, 'a'), Some("1h"));
        let cases: Vec<(Value, &str)> = vec![
            (
                body(
                    vec![five(), five()],
                    vec![user(vec![five(), five(), five()])],
                ),
                "A maximum of 4 blocks with cache_control may be provided. Found 5.",
            ),
            (
                {
                    let mut b = body(vec![five(), five()], vec![user(vec![five(), five()])]);
                    b["cache_control"] = json!({"type": "ephemeral"});
                    b
                },
                "A maximum of 4 blocks with cache_control may be provided. Found 5.",
            ),
            (
                body(vec![five()], vec![user(vec![hour()])]),
                "a ttl='1h' cache_control block must not come after a ttl='5m'",
            ),
            (
                body(vec![cached(block(10, 'a'), Some("10m"))], vec![]),
                "system.0.cache_control.ephemeral.ttl: Input should be '5m' or '1h'",
            ),
            (
                body(
                    vec![],
                    vec![user(vec![
                        json!({"type": "text", "text": "x", "cache_control": {"type": "persistent"}}),
                    ])],
                ),
                "messages.0.content.0.cache_control.type: Input should be 'ephemeral'",
            ),
        ];
        for (b, message) in cases {
            let mut cache = PromptCache::new();
            let err = cache.anthropic(&b).expect_err(message);
            assert!(err.message.starts_with(message), "{}", err.message);
        }
        // 1h before 5m and exactly 4 are fine.
        let mut cache = PromptCache::new();
        let ok = body(vec![hour(), hour()], vec![user(vec![five(), five()])]);
        assert_eq!(cache.anthropic(&ok).expect("valid").breakpoints, 4);
    }

    #[test]
    fn nested_cache_control_closes_its_block() {
        let mut cache = PromptCache::new();
        let result = json!({"type": "tool_result", "tool_use_id": "t1",
            "content": [cached(block(1200, 'r'), None)]});
        let b = body(vec![], vec![user(vec![result])]);
        let o = cache.anthropic(&b).expect("valid");
        assert_eq!(o.breakpoints, 1);
        assert_eq!(o.written, o.total);
        assert_eq!(cache.anthropic(&b).expect("valid").read, o.total);
    }

    /// Minutes to move the clock by, and whether the next call then reads.
    type Steps = &'static [(u64, bool)];

    #[test]
    fn entries_expire_after_their_ttl_unless_refreshed() {
        let minute = Duration::from_secs(60);
        // (ttl, steps: (advance minutes, expected read?))
        let cases: [(Option<&str>, Steps); 3] = [
            (None, &[(4, true), (4, true), (4, true), (6, false)]),
            (Some("5m"), &[(5, false)]),
            (Some("1h"), &[(30, true), (59, true), (61, false)]),
        ];
        for (ttl, steps) in cases {
            let mut cache = PromptCache::new();
            let b = body(vec![cached(block(1100, 's'), ttl)], vec![]);
            cache.anthropic(&b).expect("valid");
            for (i, (minutes, hit)) in steps.iter().enumerate() {
                cache.advance(minute * *minutes as u32);
                let o = cache.anthropic(&b).expect("valid");
                assert_eq!(o.read > 0, *hit, "{ttl:?} step {i}");
                // A miss writes it afresh.
                assert_eq!(o.written > 0, !*hit, "{ttl:?} step {i}");
            }
        }
    }

    #[test]
    fn creation_tokens_are_split_by_ttl() {
        let mut cache = PromptCache::new();
        let b = body(
            vec![cached(block(1100, 's'), Some("1h"))],
            vec![user(vec![cached(block(100, 'a'), None)])],
        );
        let o = cache.anthropic(&b).expect("valid");
        assert_eq!((o.written, o.written_1h), (1200 + USER, 1100));
    }

    #[test]
    fn planning_alone_changes_nothing() {
        let mut cache = PromptCache::new();
        let b = body(vec![cached(block(1100, 's'), None)], vec![]);
        cache.plan_anthropic(&b).expect("valid");
        assert_eq!(cache.anthropic(&b).expect("valid").read, 0);
        assert_eq!(cache.anthropic(&b).expect("valid").read, 1100);
        let o =
            json!({"model": "m", "messages": [{"role": "user", "content": text_of(2000, 'a')}]});
        cache.plan_openai(&o);
        assert_eq!(cache.openai(&o).read, 0);
        assert!(cache.openai(&o).read > 0);
    }

    /// An OpenAI body whose prompt is `bytes` long: one user message
    /// padded to it (`{"content":"","role":"user"}` is 28 bytes).
    fn openai_body(model: &str, bytes: usize, fill: char) -> Value {
        let text: String = std::iter::repeat_n(fill, bytes - 28).collect();
        json!({"model": model, "messages": [{"role": "user", "content": text}]})
    }

    /// Two messages whose prompt shares exactly `common` bytes with any
    /// other pair's: the first message, then the second's `{"content":"`
    /// (12 bytes), up to its `second` text.
    fn openai_pair(common: usize, second: &str) -> Value {
        let text: String = std::iter::repeat_n('a', common - 12 - 28).collect();
        json!({"model": "m", "messages": [
            {"role": "user", "content": text},
            {"role": "user", "content": second},
        ]})
    }

    #[test]
    fn openai_hits_come_in_128_token_steps_from_1024() {
        // (bytes in common with the earlier request, cached tokens)
        let cases = [
            (4000, 0),
            (4095, 0),
            (4096, 1024),
            (4100, 1024),
            (4096 + 512, 1152),
            (4096 + 511, 1024),
            (20_000, 4992),
        ];
        for (shared, expected) in cases {
            let mut cache = PromptCache::new();
            let first = cache.openai(&openai_pair(shared, "one"));
            assert_eq!(first.read, 0);
            let o = cache.openai(&openai_pair(shared, "two"));
            assert_eq!(o.read, expected, "{shared} bytes shared");
            assert_eq!(o.total, first.total);
            assert_eq!(o.uncached, o.total - o.read);
            assert_eq!(o.read % OPENAI_STEP, 0);
        }
    }

    #[test]
    fn openai_identical_prompt_counts_its_short_last_token() {
        let mut cache = PromptCache::new();
        // 4097 bytes: 1025 tokens, the last of 1 byte, so 1024 cached…
        let b = openai_body("m", 4097, 'a');
        cache.openai(&b);
        assert_eq!(cache.openai(&b).read, 1024);
        let mut cache = PromptCache::new();
        let b = openai_body("m", 1152 * 4 - 3, 'a');
        cache.openai(&b);
        // …and a short last token completes a 128 step (4605 bytes are
        // 1152 tokens) since the prompts are identical.
        assert_eq!(cache.openai(&b).read, 1152);
    }

    #[test]
    fn openai_matches_any_earlier_request_not_only_the_last() {
        let mut cache = PromptCache::new();
        cache.openai(&openai_body("m", 8000, 'a'));
        cache.openai(&openai_body("m", 8000, 'b'));
        // Against the first prompt: `{"content":"` and 5,960 a's, 1,493
        // tokens in common.
        let o = cache.openai(&openai_pair(6000, "x"));
        assert_eq!(o.read, 1408);
        let o = cache.openai(&openai_body("m", 8000, 'b'));
        assert_eq!(o.read, 1920);
    }

    #[test]
    fn openai_needs_the_same_model_and_key() {
        let mut cache = PromptCache::new();
        cache.openai(&openai_body("m", 8000, 'a'));
        assert_eq!(cache.openai(&openai_body("n", 8000, 'a')).read, 0);
        let mut keyed = openai_body("m", 8000, 'a');
        keyed["prompt_cache_key"] = json!("k");
        assert_eq!(cache.openai(&keyed).read, 0);
        assert_eq!(cache.openai(&keyed).read, 1920);
        keyed["prompt_cache_key"] = json!("other");
        assert_eq!(cache.openai(&keyed).read, 0);
        assert_eq!(cache.openai(&openai_body("m", 8000, 'a')).read, 1920);
    }

    #[test]
    fn openai_tools_come_first() {
        let mut cache = PromptCache::new();
        let tool = json!({"type": "function", "function": {"name": "t", "description": text_of(1100, 'd')}});
        let mut b = openai_body("m", 100, 'a');
        b["tools"] = json!([tool]);
        cache.openai(&b);
        let mut c = openai_body("m", 100, 'b');
        c["tools"] = b["tools"].clone();
        let o = cache.openai(&c);
        assert_eq!(o.read, 1024);
    }

    #[test]
    fn openai_entries_expire_unless_used() {
        let minute = Duration::from_secs(60);
        let mut cache = PromptCache::new();
        let b = openai_body("m", 8000, 'a');
        cache.openai(&b);
        cache.advance(minute * 9);
        assert!(cache.openai(&b).read > 0);
        cache.advance(minute * 9);
        assert!(cache.openai(&b).read > 0);
        cache.advance(minute * 11);
        assert_eq!(cache.openai(&b).read, 0);
        cache.set_openai_ttl(minute);
        assert!(cache.openai(&b).read > 0);
        cache.advance(minute * 2);
        assert_eq!(cache.openai(&b).read, 0);
    }

    #[test]
    fn hit_share_skips_the_first_request() {
        let outcome = CacheOutcome::prefix;
        assert_eq!(hit_share(&[]), 0.0);
        assert_eq!(hit_share(&[outcome(100, 0)]), 0.0);
        let share = hit_share(&[outcome(100, 0), outcome(100, 50), outcome(100, 100)]);
        assert!((share - 0.75).abs() < 1e-9);
    }
}
