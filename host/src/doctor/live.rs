//! The doctor's checks of a running set of plugins and a model: the
//! plugins that loaded or failed, each channel's live health (with why it
//! is down, and its last message in and reply out), the MCP
//! servers, the scripts that do not load, and whether the model answers.
//! The daemon runs them on its own plugins for the control socket's
//! `doctor` request; the CLI runs them on a one-shot runtime when no
//! daemon runs (without channel health, which only a running daemon
//! knows).

use hearth_sdk::protocol::{ChannelState, PartState};

use super::Finding;
use hearth_agent::tools::ToolRegistry;
use hearth_model::llm::{Llm, LlmError, ModelCheck};
use hearth_plugins::{PluginSet, PluginState, state_word};
use hearth_script::describe_problem;

/// What the config says about the model.
pub enum ModelSetup<'a> {
    /// No `[llm]` section.
    Absent,
    /// A section that could not be used (a key variable not set), and why.
    Broken(&'a str),
    /// A client to ask.
    Ready(&'a Llm),
}

/// One line per plugin found, and, when `live`, one per channel with its
/// health as the channel last reported it and its last activity; a
/// channel that is down fails, with its reason.
pub fn plugins(set: &PluginSet, live: bool) -> Vec<Finding> {
    let mut findings: Vec<Finding> = set
        .reports()
        .into_iter()
        .map(|r| {
            let name = r
                .name
                .clone()
                .unwrap_or_else(|| r.path.display().to_string());
            let check = format!("plugin {name}");
            match r.state {
                PluginState::Active => Finding::ok(
                    check,
                    match r.tools.len() {
                        1 => "active (1 tool)".to_owned(),
                        n => format!("active ({n} tools)"),
                    },
                ),
                PluginState::Off(why) => Finding::ok(check, format!("off: {why}")),
                PluginState::Failed(why) => Finding::fail(
                    check,
                    why,
                    "fix what the message names, or set `enabled = false` in its \
                     [plugins.NAME] table; `hearth plugins` shows the file",
                ),
            }
        })
        .collect();
    if live {
        let now = hearth_base::store::now_ms();
        findings.extend(set.active().iter().filter(|p| p.description().channel.is_some()).map(
            |p| {
                let check = format!("channel {}", p.name);
                let activity = p.channel_activity().text(now);
                match p.channel_status() {
                    None => Finding::warn(
                        check,
                        format!("has not reported its health yet; {activity}"),
                        "wait a minute; if it stays silent, read the daemon's log for the plugin",
                    ),
                    Some(h) => {
                        let detail = if h.detail.is_empty() {
                            format!("{} {activity}", state_word(h.state))
                        } else {
                            format!("{} ({}) {activity}", state_word(h.state), h.detail)
                        };
                        match h.state {
                            ChannelState::Up => Finding::ok(check, detail),
                            ChannelState::Degraded => Finding::warn(
                                check,
                                detail,
                                "it retries on its own; if it stays degraded, read the daemon's \
                                 log for the plugin",
                            ),
                            ChannelState::Down => Finding::fail(
                                check,
                                detail,
                                "check its settings and the network (docs/operations.md); it \
                                 reconnects by itself once the cause is gone",
                            ),
                        }
                    }
                }
            },
        ));
    }
    findings
}

/// One line per MCP server (or other part a plugin runs).
pub fn parts(set: &PluginSet) -> Vec<Finding> {
    hearth_plugins::parts(set.active())
        .into_iter()
        .map(|part| {
            let s = part.status;
            let mcp = part.plugin == "mcp";
            let check = if mcp {
                format!("{} server {}", part.plugin, s.name)
            } else {
                format!("{} {}", part.plugin, s.name)
            };
            let detail = if s.detail.is_empty() {
                format!("{:?}", s.state).to_lowercase()
            } else {
                format!("{} ({})", format!("{:?}", s.state).to_lowercase(), s.detail)
            };
            match s.state {
                PartState::Up | PartState::Starting | PartState::Idle | PartState::Off => {
                    Finding::ok(check, detail)
                }
                PartState::Degraded if !mcp => Finding::warn(
                    check,
                    detail,
                    "see the detail; the plugin's page in docs/ says how to set it up",
                ),
                PartState::Degraded => Finding::warn(
                    check,
                    detail,
                    "`hearth mcp list` shows more; the daemon's log has the server's errors",
                ),
                PartState::Down => Finding::fail(
                    check,
                    detail,
                    "check the server's command or URL in its config table (docs/mcp.md); it \
                     is restarted with backoff",
                ),
            }
        })
        .collect()
}

/// The scripts that do not load (each keeps its last good version).
pub fn scripts(tools: &ToolRegistry) -> Vec<Finding> {
    let Some(scripts) = tools.scripts() else {
        return Vec::new();
    };
    let catalog = scripts.catalog();
    let problems = catalog.problems();
    if problems.is_empty() {
        return vec![Finding::ok(
            "scripts",
            format!("{} Lua tools loaded", catalog.tools().len()),
        )];
    }
    problems
        .iter()
        .map(|p| {
            Finding::warn(
                "scripts",
                describe_problem(p),
                "fix the file at the line named; it reloads when saved (`hearth tools` shows \
                 the state)",
            )
        })
        .collect()
}

/// Whether the model can be reached: the provider is asked about it.
pub async fn model(setup: ModelSetup<'_>) -> Finding {
    let llm = match setup {
        ModelSetup::Absent => {
            return Finding::warn(
                "model",
                "no model configured: the daemon answers slash commands only",
                "add an [llm] section (config/hearth.example.toml lists its keys)",
            );
        }
        ModelSetup::Broken(why) => {
            return Finding::fail(
                "model",
                why.to_owned(),
                "set the variable in the daemon's environment (for the service: an \
                 EnvironmentFile, docs/operations.md)",
            );
        }
        ModelSetup::Ready(llm) => llm,
    };
    let name = format!("{} ({})", llm.model(), llm.provider());
    match llm.check().await {
        Ok(ModelCheck::Known) => Finding::ok("model", format!("{name} is reachable")),
        Ok(ModelCheck::NotListed { listed }) => Finding::fail(
            "model",
            format!("the server answers, but its {listed} models do not include {name}"),
            "set [llm] model to one the server lists, or pull the model on the server",
        ),
        Err(e) => Finding::fail("model", format!("{name}: {e}"), model_fix(&e)),
    }
}

/// What to do about a failed model check.
pub fn model_fix(e: &LlmError) -> &'static str {
    match e {
        LlmError::Http {
            status: 401 | 403, ..
        } => {
            "the API refused the key: set a valid one (`hearth secret set NAME` for the secret \
             [llm] api_key_secret names, or the variable [llm] api_key_env names)"
        }
        LlmError::Http { status: 404, .. } => {
            "the API does not know this model or address: check [llm] model and base_url"
        }
        LlmError::Http {
            status: 429 | 529, ..
        } => "the API is rate limiting or overloaded: try again later",
        LlmError::Connection(_) => {
            "the API cannot be reached: check [llm] base_url, the network and DNS"
        }
        _ => "check [llm] in the config and the provider's status page",
    }
}
