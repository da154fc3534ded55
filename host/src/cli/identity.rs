//! `hearth identity`: the owner's view of the main agent's versioned
//! identity: the versions, one version's text, and a rollback.
//!
//! With a daemon running, every action goes through its control socket (so
//! a rollback reaches the prompt at once); without one, the store is read
//! and written directly.

use std::process::ExitCode;

use anyhow::Context;
use serde_json::{Value, json};

use super::client::Daemon;
use hearth_base::config::Config;
use hearth_base::store::{Cold, Store};
use hearth_data::knowledge::identity::Identity;

/// What to do.
pub enum Action {
    /// Every version, newest first.
    Log,
    /// One version's text.
    Show(i64),
    /// Restore a version (as a new one).
    Rollback(i64),
}

/// `hearth identity log|show N|rollback N`.
pub fn run(
    config: &Config,
    daemon: Option<&mut Daemon>,
    action: Action,
) -> anyhow::Result<ExitCode> {
    let answer = match daemon {
        Some(d) => {
            let request = match action {
                Action::Log => json!({ "op": "identity", "action": "log" }),
                Action::Show(v) => json!({ "op": "identity", "action": "show", "version": v }),
                Action::Rollback(v) => {
                    json!({ "op": "identity", "action": "rollback", "version": v })
                }
            };
            d.ask(request)?["result"].clone()
        }
        None => offline(config, &action)?,
    };
    match action {
        Action::Log => {
            outln!("{:>4}  {:<12} {:>6}  change", "ver", "author", "chars");
            for v in answer["versions"].as_array().into_iter().flatten() {
                outln!(
                    "{:>4}  {:<12} {:>6}  {}",
                    // A JSON value ignores widths: pad its text.
                    v["version"].to_string(),
                    v["author"].as_str().unwrap_or_default(),
                    v["chars"].to_string(),
                    v["note"].as_str().unwrap_or_default()
                );
            }
        }
        Action::Show(_) => outln!("{}", answer["text"].as_str().unwrap_or_default()),
        Action::Rollback(v) => outln!(
            "restored version {v} as version {}",
            answer["version"]["version"]
        ),
    }
    Ok(ExitCode::SUCCESS)
}

/// The same answers, from the store.
fn offline(config: &Config, action: &Action) -> anyhow::Result<Value> {
    let path = config.home.join(hearth_base::store::FILE_NAME);
    drop(Store::open(&path).with_context(|| format!("cannot open {}", path.display()))?);
    let identity = Identity::open(Cold::open(&path)?, || {
        hearth_agent::agent::prompt::DEFAULT_IDENTITY.to_owned()
    })?;
    Ok(match action {
        Action::Log => json!({ "versions": identity.history()? }),
        Action::Show(v) => json!({ "version": v, "text": identity.show(*v)? }),
        Action::Rollback(v) => json!({ "version": identity.rollback(*v, "owner")? }),
    })
}
