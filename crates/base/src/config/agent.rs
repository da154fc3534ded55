//! `[llm]` (with `[llm.cheap]`, the model that summarizes long output),
//! `[agent]` and `[owner]`: the model, the agent's limits, and who the owner
//! is on each channel.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

/// Which wire format the model speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProviderKind {
    /// The Anthropic Messages API.
    Anthropic,
    /// OpenAI-compatible chat completions (OpenAI, OpenRouter, Ollama,
    /// llama.cpp's server, vLLM).
    #[serde(rename = "openai")]
    OpenAi,
}

impl ProviderKind {
    /// Where its API is when the config does not say.
    fn default_base_url(self) -> String {
        match self {
            ProviderKind::Anthropic => "https://api.anthropic.com".into(),
            ProviderKind::OpenAi => "https://api.openai.com/v1".into(),
        }
    }

    /// The variable holding its key when the config does not say (local
    /// OpenAI-compatible servers need none).
    fn default_key_env(self) -> Option<String> {
        match self {
            ProviderKind::Anthropic => Some("ANTHROPIC_API_KEY".into()),
            ProviderKind::OpenAi => None,
        }
    }
}

/// `url` when it is http or https; else the error for `key`.
fn http_url(key: &str, url: String) -> Result<String, (String, String)> {
    if url.starts_with("http://") || url.starts_with("https://") {
        Ok(url)
    } else {
        Err((
            key.into(),
            format!("{url:?} must start with http:// or https://"),
        ))
    }
}

/// `[llm]`, validated. Absent: hearth runs without a model.
#[derive(Clone, Debug, PartialEq)]
pub struct LlmConfig {
    /// The wire format.
    pub provider: ProviderKind,
    /// The model's name.
    pub model: String,
    /// Where the API is (`https://api.anthropic.com`,
    /// `https://api.openai.com/v1`, `http://127.0.0.1:11434/v1`).
    pub base_url: String,
    /// The environment variable holding the API key; never the key itself.
    pub api_key_env: Option<String>,
    /// The secret holding the API key instead (`hearth secret set NAME`,
    /// what `hearth setup` writes): nothing for the service's environment
    /// to carry.
    pub api_key_secret: Option<SecretKey>,
    /// The most tokens per answer.
    pub max_tokens: u32,
    /// One request's timeout, stream included.
    pub timeout_ms: u64,
    /// Retries per model on 429, 5xx, 529 and broken connections.
    pub max_retries: u32,
    /// The first backoff; it doubles per retry (`retry-after` wins).
    pub retry_base_ms: u64,
    /// Models to try, in order, when the first keeps failing.
    pub fallback_models: Vec<String>,
    /// Whether the model sees images; `None`: judged by provider and
    /// model name (`media::sees_images`).
    pub vision: Option<bool>,
    /// How many turns an image is sent in (the one it came in included);
    /// after that the model gets a note saying where it is saved.
    pub image_turns: u32,
    /// A cap on the longer side of images sent, below the provider's.
    pub image_max_side: Option<u32>,
    /// `[llm.cheap]`: the model that summarizes long tool output.
    pub cheap: Option<Box<CheapConfig>>,
    /// `prompt_cache`, `cache_ttl`: whether requests mark what the
    /// provider may cache, and for how long.
    pub cache: PromptCache,
    /// `prompt_cache_key`: whether an OpenAI-compatible request carries a
    /// `prompt_cache_key` (`None`: only to OpenAI's own API).
    pub prompt_cache_key: Option<bool>,
    /// `thinking` and `thinking_effort`: whether and how the model thinks
    /// before it answers; `None`: as the model does by default.
    pub thinking: Option<Thinking>,
}

/// `[llm] thinking`, Anthropic's two ways.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Thinking {
    /// `"adaptive"`: the model decides when and how much (the way of
    /// current models, which refuse a budget), at this effort if given.
    Adaptive(Option<Effort>),
    /// A number: extended thinking within that many tokens (the older
    /// models' only way; `budget_tokens`, within `max_tokens`).
    Budget(u32),
}

/// `thinking_effort`: Anthropic's `output_config.effort`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Effort {
    /// Thinks least; may skip thinking on simple questions.
    Low,
    /// Between the two.
    Medium,
    /// The API's default: almost always thinks.
    High,
}

impl Effort {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Effort::Low => "low",
            Effort::Medium => "medium",
            Effort::High => "high",
        }
    }
}

/// `thinking` as written: a budget or a mode's name.
#[derive(Deserialize)]
#[serde(untagged)]
pub(super) enum RawThinking {
    /// Tokens.
    Budget(u32),
    /// `"adaptive"` (or `"off"`).
    Mode(String),
}

/// How a provider may cache the prompt's prefix (`llm::cache`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PromptCache {
    /// `[llm] prompt_cache`: mark the request (Anthropic's
    /// `cache_control`); off, a request carries no mark at all.
    pub enabled: bool,
    /// `[llm] cache_ttl`: how long an unread entry is kept.
    pub ttl: CacheTtl,
}

/// How long a provider keeps a cache entry nobody reads (Anthropic's two
/// choices; each read starts the time over).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CacheTtl {
    /// `"5m"`, the default: writes cost 1.25 times the input price.
    FiveMinutes,
    /// `"1h"`: writes cost twice the input price; worth it when the owner
    /// often pauses longer than five minutes.
    OneHour,
}

impl CacheTtl {
    /// How long, as a duration.
    pub fn duration(self) -> std::time::Duration {
        match self {
            CacheTtl::FiveMinutes => std::time::Duration::from_secs(300),
            CacheTtl::OneHour => std::time::Duration::from_secs(3600),
        }
    }

    fn parse(value: Option<&str>) -> Result<CacheTtl, (String, String)> {
        match value {
            None | Some("5m") => Ok(CacheTtl::FiveMinutes),
            Some("1h") => Ok(CacheTtl::OneHour),
            Some(other) => Err((
                "llm.cache_ttl".into(),
                format!("must be \"5m\" or \"1h\", not {other:?}"),
            )),
        }
    }
}

/// A key kept in the secret store: its name, and the home whose
/// `secrets.json` holds it.
#[derive(Clone, Debug, PartialEq)]
pub struct SecretKey {
    /// The secret's name.
    pub name: String,
    /// `$HEARTH_HOME`.
    pub home: PathBuf,
}

/// `[llm.cheap]`, validated: a cheaper model for summaries of long output
/// (a command's, a failed background process's stderr, a worker's result).
#[derive(Clone, Debug, PartialEq)]
pub struct CheapConfig {
    /// The model, with `[llm]`'s provider, address and key unless the
    /// table names its own; its `timeout_ms` bounds a whole summary.
    pub llm: LlmConfig,
    /// The most characters of the output the model reads: the head and the
    /// tail, the middle left out.
    pub input_chars: usize,
}

/// `[llm.cheap]` as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawCheap {
    provider: Option<ProviderKind>,
    model: String,
    base_url: Option<String>,
    api_key_env: Option<String>,
    #[serde(default = "cheap_max_tokens")]
    max_tokens: u32,
    #[serde(default = "cheap_timeout_ms")]
    timeout_ms: u64,
    #[serde(default = "cheap_input_chars")]
    input_chars: usize,
}

fn cheap_max_tokens() -> u32 {
    1024
}
fn cheap_timeout_ms() -> u64 {
    20_000
}
fn cheap_input_chars() -> usize {
    60_000
}

/// `[llm]` as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawLlm {
    provider: ProviderKind,
    model: String,
    base_url: Option<String>,
    api_key_env: Option<String>,
    api_key_secret: Option<String>,
    #[serde(default = "max_tokens")]
    max_tokens: u32,
    #[serde(default = "timeout_ms")]
    timeout_ms: u64,
    #[serde(default = "max_retries")]
    max_retries: u32,
    #[serde(default = "retry_base_ms")]
    retry_base_ms: u64,
    #[serde(default)]
    fallback_models: Vec<String>,
    vision: Option<bool>,
    #[serde(default = "image_turns")]
    image_turns: u32,
    image_max_side: Option<u32>,
    cheap: Option<RawCheap>,
    #[serde(default = "prompt_cache")]
    prompt_cache: bool,
    cache_ttl: Option<String>,
    prompt_cache_key: Option<bool>,
    thinking: Option<RawThinking>,
    thinking_effort: Option<Effort>,
}

fn prompt_cache() -> bool {
    true
}

fn max_tokens() -> u32 {
    4096
}
fn timeout_ms() -> u64 {
    120_000
}
fn max_retries() -> u32 {
    4
}
fn retry_base_ms() -> u64 {
    500
}
fn image_turns() -> u32 {
    3
}

/// `[agent]`.
#[derive(Clone, Debug, PartialEq)]
pub struct AgentConfig {
    /// A file with the agent's identity (who it is, how it speaks).
    pub identity_file: Option<PathBuf>,
    /// Model calls per turn at most.
    pub max_steps: u32,
    /// Compact the history once it holds more messages than this.
    pub compact_after_messages: usize,
    /// ...or more characters than this (about four per token).
    pub compact_after_chars: usize,
    /// How many recent messages stay verbatim after a compaction.
    pub keep_recent_messages: usize,
    /// Agent-to-agent hops allowed per originating message, after which
    /// `send_agent_message` is refused (a ping-pong guard).
    pub max_agent_hops: u32,
    /// The agent a contact approved by pairing code is answered by.
    pub contact_agent: String,
    /// Whether `send_message` to anyone but the owner asks the owner first
    /// (in either mode).
    pub ask_before_messaging_contacts: bool,
    /// The wall-clock limit of one delegated worker.
    pub worker_timeout_ms: u64,
    /// A worker's result longer than this many characters is cut for the
    /// caller, the whole kept in a file under `$HEARTH_HOME/workers`.
    pub worker_result_chars: usize,
    /// The most tokens one turn's model calls may use (its workers'
    /// included); `None`: no limit.
    pub max_tokens_per_turn: Option<u64>,
    /// The most tokens all agents' model calls may use per day, in the
    /// owner's zone; `None`: no budget.
    pub daily_token_budget: Option<u64>,
}

/// `[agent]` as written.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RawAgent {
    identity_file: Option<String>,
    max_steps: Option<u32>,
    compact_after_messages: Option<usize>,
    compact_after_chars: Option<usize>,
    keep_recent_messages: Option<usize>,
    max_agent_hops: Option<u32>,
    contact_agent: Option<String>,
    ask_before_messaging_contacts: Option<bool>,
    worker_timeout_ms: Option<u64>,
    worker_result_chars: Option<usize>,
    max_tokens_per_turn: Option<u64>,
    daily_token_budget: Option<u64>,
}

/// `[owner]`: the one person the agent works for.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OwnerConfig {
    /// How the agent addresses the owner.
    #[serde(default)]
    pub name: Option<String>,
    /// The owner's sender ids per channel: `telegram = ["12345"]`. The local
    /// control socket is always the owner.
    #[serde(default)]
    pub identities: BTreeMap<String, Vec<String>>,
    /// The channel `send_message` reaches the owner on first (`telegram`);
    /// without it, any running channel that knows the owner.
    #[serde(default)]
    pub notify: Option<String>,
    /// The owner's IANA time zone (`Europe/Berlin`): reminders and
    /// schedules are read in it unless a job names its own. Without it, the
    /// system's zone.
    #[serde(default)]
    pub timezone: Option<String>,
}

pub(super) fn build_llm(
    raw: Option<RawLlm>,
    home: &Path,
) -> Result<Option<LlmConfig>, (String, String)> {
    let Some(raw) = raw else { return Ok(None) };
    if raw.model.trim().is_empty() {
        return Err(("llm.model".into(), "must not be empty".into()));
    }
    let base_url = http_url(
        "llm.base_url",
        raw.base_url
            .unwrap_or_else(|| raw.provider.default_base_url()),
    )?;
    if !(1..=100).contains(&raw.image_turns) {
        return Err(("llm.image_turns".into(), "must be 1 to 100".into()));
    }
    if let Some(side) = raw.image_max_side
        && !(64..=8000).contains(&side)
    {
        return Err(("llm.image_max_side".into(), "must be 64 to 8000".into()));
    }
    let api_key_secret = match raw.api_key_secret {
        Some(name) => {
            if raw.api_key_env.is_some() {
                return Err((
                    "llm.api_key_secret".into(),
                    "give api_key_env or api_key_secret, not both".into(),
                ));
            }
            crate::secrets::check_name(&name)
                .map_err(|e| ("llm.api_key_secret".to_owned(), e.to_string()))?;
            Some(SecretKey {
                name,
                home: home.to_owned(),
            })
        }
        None => None,
    };
    let api_key_env = match api_key_secret {
        Some(_) => None,
        None => raw.api_key_env.or_else(|| raw.provider.default_key_env()),
    };
    let cheap = raw
        .cheap
        .map(|cheap| {
            let key = (api_key_env.as_deref(), api_key_secret.as_ref());
            build_cheap(cheap, raw.provider, &base_url, key)
        })
        .transpose()?
        .map(Box::new);
    Ok(Some(LlmConfig {
        provider: raw.provider,
        model: raw.model,
        base_url,
        api_key_env,
        api_key_secret,
        max_tokens: raw.max_tokens,
        timeout_ms: raw.timeout_ms.max(1),
        max_retries: raw.max_retries,
        retry_base_ms: raw.retry_base_ms,
        fallback_models: raw.fallback_models,
        vision: raw.vision,
        image_turns: raw.image_turns,
        image_max_side: raw.image_max_side,
        cheap,
        cache: PromptCache {
            enabled: raw.prompt_cache,
            ttl: CacheTtl::parse(raw.cache_ttl.as_deref())?,
        },
        prompt_cache_key: raw.prompt_cache_key,
        thinking: thinking(
            raw.thinking,
            raw.thinking_effort,
            raw.provider,
            raw.max_tokens,
        )?,
    }))
}

/// `[llm] thinking`: `"adaptive"`, or a budget Anthropic takes (at least
/// 1,024 tokens, and below `max_tokens`, which counts the thinking too);
/// 0 or `"off"` is none. Other providers take neither.
fn thinking(
    raw: Option<RawThinking>,
    effort: Option<Effort>,
    provider: ProviderKind,
    max_tokens: u32,
) -> Result<Option<Thinking>, (String, String)> {
    let bad = |why: String| Err(("llm.thinking".to_owned(), why));
    let thinking = match raw {
        None | Some(RawThinking::Budget(0)) => None,
        Some(RawThinking::Mode(mode)) if mode == "off" => None,
        Some(RawThinking::Mode(mode)) if mode == "adaptive" => Some(Thinking::Adaptive(effort)),
        Some(RawThinking::Mode(mode)) => {
            return bad(format!(
                "{mode:?} is not a way of thinking: \"adaptive\", a budget in tokens, or \"off\""
            ));
        }
        Some(RawThinking::Budget(1..1024)) => {
            return bad("a budget must be at least 1024 tokens (or 0: no thinking)".into());
        }
        Some(RawThinking::Budget(budget)) if budget >= max_tokens => {
            return bad(format!(
                "must be less than max_tokens ({max_tokens}), which counts the thinking too"
            ));
        }
        Some(RawThinking::Budget(budget)) => Some(Thinking::Budget(budget)),
    };
    if effort.is_some() && !matches!(thinking, Some(Thinking::Adaptive(_))) {
        return Err((
            "llm.thinking_effort".into(),
            "goes with thinking = \"adaptive\"".into(),
        ));
    }
    if thinking.is_some() && provider != ProviderKind::Anthropic {
        return bad(
            "thinking is sent to provider = \"anthropic\" only; leave it out (or \"off\") for \
             this provider"
                .into(),
        );
    }
    Ok(thinking)
}

/// `[llm.cheap]`: what it does not name comes from `[llm]` (its address
/// and key only when the provider is the same).
fn build_cheap(
    raw: RawCheap,
    provider: ProviderKind,
    base_url: &str,
    (api_key_env, api_key_secret): (Option<&str>, Option<&SecretKey>),
) -> Result<CheapConfig, (String, String)> {
    if raw.model.trim().is_empty() {
        return Err(("llm.cheap.model".into(), "must not be empty".into()));
    }
    let same = raw.provider.is_none_or(|p| p == provider);
    let provider = raw.provider.unwrap_or(provider);
    let base_url = match (raw.base_url, same) {
        (Some(url), _) => url,
        (None, true) => base_url.to_owned(),
        (None, false) => provider.default_base_url(),
    };
    let base_url = http_url("llm.cheap.base_url", base_url)?;
    if !(1_000..=600_000).contains(&raw.timeout_ms) {
        return Err((
            "llm.cheap.timeout_ms".into(),
            "must be 1000 to 600000".into(),
        ));
    }
    if !(1_000..=1_000_000).contains(&raw.input_chars) {
        return Err((
            "llm.cheap.input_chars".into(),
            "must be 1000 to 1000000".into(),
        ));
    }
    if !(16..=16_384).contains(&raw.max_tokens) {
        return Err(("llm.cheap.max_tokens".into(), "must be 16 to 16384".into()));
    }
    // The main model's key, when the provider is the same and the table
    // names no key of its own.
    let api_key_secret = match (&raw.api_key_env, same) {
        (None, true) => api_key_secret.cloned(),
        _ => None,
    };
    let api_key_env = raw.api_key_env.or_else(|| match same {
        true => api_key_env.map(str::to_owned),
        false => provider.default_key_env(),
    });
    Ok(CheapConfig {
        llm: LlmConfig {
            provider,
            model: raw.model,
            base_url,
            api_key_env,
            api_key_secret,
            max_tokens: raw.max_tokens,
            timeout_ms: raw.timeout_ms,
            // One quick retry at most: a summary that waits long is no help,
            // and the head and tail are there without it.
            max_retries: 1,
            retry_base_ms: 200,
            fallback_models: Vec::new(),
            vision: Some(false),
            image_turns: 1,
            image_max_side: None,
            cheap: None,
            // A summary is one call on text that is never asked about
            // again: nothing to reuse, and a cache write costs more.
            cache: PromptCache {
                enabled: false,
                ttl: CacheTtl::FiveMinutes,
            },
            prompt_cache_key: Some(false),
            thinking: None,
        },
        input_chars: raw.input_chars,
    })
}

pub(super) fn build_agent(raw: RawAgent, base: &Path) -> Result<AgentConfig, (String, String)> {
    let config = AgentConfig {
        identity_file: raw
            .identity_file
            .map(|f| super::resolve(base, &f))
            .transpose()
            .map_err(|e| ("agent.identity_file".to_owned(), e.to_string()))?,
        max_steps: raw.max_steps.unwrap_or(16),
        compact_after_messages: raw.compact_after_messages.unwrap_or(80),
        compact_after_chars: raw.compact_after_chars.unwrap_or(200_000),
        keep_recent_messages: raw.keep_recent_messages.unwrap_or(12),
        max_agent_hops: raw.max_agent_hops.unwrap_or(8),
        contact_agent: raw.contact_agent.unwrap_or_else(|| "main".into()),
        ask_before_messaging_contacts: raw.ask_before_messaging_contacts.unwrap_or(true),
        worker_timeout_ms: raw.worker_timeout_ms.unwrap_or(300_000),
        worker_result_chars: raw.worker_result_chars.unwrap_or(16_000),
        max_tokens_per_turn: raw.max_tokens_per_turn,
        daily_token_budget: raw.daily_token_budget,
    };
    for (key, value) in [
        ("max_tokens_per_turn", config.max_tokens_per_turn),
        ("daily_token_budget", config.daily_token_budget),
    ] {
        if value == Some(0) {
            return Err((
                format!("agent.{key}"),
                "must be at least 1 (leave it out for no limit)".into(),
            ));
        }
    }
    if !(1_000..=86_400_000).contains(&config.worker_timeout_ms) {
        return Err((
            "agent.worker_timeout_ms".into(),
            "must be 1000 to 86400000 (1 s to a day)".into(),
        ));
    }
    if !(100..=1_000_000).contains(&config.worker_result_chars) {
        return Err((
            "agent.worker_result_chars".into(),
            "must be 100 to 1000000".into(),
        ));
    }
    if config.max_agent_hops == 0 || config.max_agent_hops > 64 {
        return Err(("agent.max_agent_hops".into(), "must be 1 to 64".into()));
    }
    if config.max_steps == 0 {
        return Err(("agent.max_steps".into(), "must be at least 1".into()));
    }
    if config.keep_recent_messages >= config.compact_after_messages {
        return Err((
            "agent.keep_recent_messages".into(),
            "must be smaller than compact_after_messages".into(),
        ));
    }
    Ok(config)
}
