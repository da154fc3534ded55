//! `hearth backup [--to DIR]` and `hearth restore ARCHIVE [--home DIR]
//! [--force]` (docs/operations.md, "Backups and restore").
//!
//! A backup goes through the running daemon when there is one (the
//! `backup` request: the daemon copies its own databases online); without
//! one, this process makes it. A restore never runs beside a daemon.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use serde_json::json;

use super::client::Daemon;
use crate::backup::{Backups, restore};
use hearth_agent::scheduler::Clock;
use hearth_base::config::Config;

/// `hearth backup`: one archive now.
pub fn backup(
    config: &Config,
    daemon: Option<&mut Daemon>,
    to: Option<&Path>,
    as_json: bool,
) -> anyhow::Result<ExitCode> {
    let to = to
        .map(std::path::absolute)
        .transpose()
        .context("cannot read the --to folder")?;
    let made = match daemon {
        Some(daemon) => daemon.ask(json!({ "op": "backup", "to": to }))?["backup"].take(),
        None => {
            let clock = Clock::from_env().map_err(anyhow::Error::msg)?;
            let made = Backups::new(config, clock).run(to.as_deref())?;
            serde_json::to_value(made)?
        }
    };
    if as_json {
        outln!("{}", serde_json::to_string_pretty(&made)?);
        return Ok(ExitCode::SUCCESS);
    }
    let count = |key: &str| made[key].as_array().map_or(0, Vec::len);
    outln!(
        "backup: {} ({}, {} files, schema version {})",
        made["path"].as_str().unwrap_or_default(),
        size(made["size"].as_u64().unwrap_or_default()),
        made["manifest"]["files"].as_array().map_or(0, Vec::len),
        made["manifest"]["schema_version"]
    );
    if made["manifest"]["secrets"] == true {
        outln!("it holds secrets.json in clear text: keep it as private as the home");
    }
    for skipped in made["skipped"].as_array().into_iter().flatten() {
        outln!("left out: {}", skipped.as_str().unwrap_or_default());
    }
    if count("pruned") > 0 {
        outln!("older backups deleted by retention: {}", count("pruned"));
    }
    Ok(ExitCode::SUCCESS)
}

/// `hearth restore`: `archive` into `home`.
pub fn restore(archive: &Path, home: &Path, force: bool) -> anyhow::Result<ExitCode> {
    let now = Clock::from_env().map_err(anyhow::Error::msg)?.now();
    let restored = restore::restore(archive, home, force, now)?;
    let manifest = &restored.manifest;
    outln!(
        "restored {} (made {} by hearth {}, schema version {}) into {}: {} files",
        archive.display(),
        manifest.created,
        manifest.hearth,
        manifest.schema_version,
        home.display(),
        manifest.files.len()
    );
    if let Some(aside) = &restored.moved_aside {
        outln!("the files it replaced are in {}", aside.display());
    }
    if let Some(config) = &manifest.config {
        let now_at = home.join("hearth.toml");
        if Path::new(config) != now_at {
            outln!(
                "the config file was {config} when backed up; it is restored as {} (start \
                 with --config {}, or copy it where you keep it)",
                now_at.display(),
                now_at.display()
            );
        }
    }
    if !manifest.secrets {
        outln!(
            "the archive holds no secrets.json (there was none, or [backup] include_secrets = \
             false): set any secrets again with `hearth secret set`"
        );
    }
    outln!(
        "start the daemon: HEARTH_HOME={} hearth run",
        home.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// The home to restore into: `--home`, else the config's.
pub fn home(config: &Config, flag: Option<PathBuf>) -> anyhow::Result<PathBuf> {
    match flag {
        Some(home) => std::path::absolute(home).context("cannot read the --home folder"),
        None => Ok(config.home.clone()),
    }
}

/// `1.2 MiB`.
fn size(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 30 => format!("{:.1} GiB", b as f64 / f64::from(1u32 << 30)),
        b if b >= 1 << 20 => format!("{:.1} MiB", b as f64 / f64::from(1u32 << 20)),
        b if b >= 1 << 10 => format!("{:.1} KiB", b as f64 / 1024.0),
        b => format!("{b} bytes"),
    }
}
