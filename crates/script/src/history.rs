//! The versions of the agent's scripts: recording saves made outside
//! `write_script`, naming a script for `script_history`, and rollback.
//!
//! A script is named by its path under `$HEARTH_HOME` (`tools/greet.lua`,
//! `lib/util.lua`, `skills/dates/SKILL.md`), or for short by its tool's
//! name (`greet`, `dates.shift`), a library's name (`lib/util` or `util`)
//! or a skill's (`dates`, its `SKILL.md`). A rollback writes the old
//! content through `write_script`, so it is validated and hot-reloaded like
//! any save, and becomes the newest version.

use std::path::Path;

use serde_json::{Value, json};

use super::Scripts;
use hearth_data::workshop::versions::Kind;

/// Who a save found by the reload is put down to. It may be the owner's
/// editor, or the agent through another tool (`write_file`, a shell
/// command): the reload cannot tell, and a version never claims an author
/// it cannot prove.
const OUTSIDE: &str = "outside write_script";

impl Scripts {
    /// Every version of the script `name`, oldest first.
    pub fn history(&self, name: &str) -> Result<Value, String> {
        let path = self.version_name(name)?;
        let versions = self
            .versions
            .history(Kind::Script, &path)
            .map_err(|e| format!("cannot read the versions: {e}"))?;
        if versions.is_empty() {
            return Err(format!("{path} has no versions yet"));
        }
        Ok(json!({ "script": path, "versions": versions }))
    }

    /// Restores version `version` of the script `name` as its newest
    /// version, through validation and hot reload.
    pub fn rollback(&self, name: &str, version: i64, author: &str) -> Result<Value, String> {
        let path = self.version_name(name)?;
        let content = self
            .versions
            .content(Kind::Script, &path, version)
            .map_err(|e| format!("cannot read the versions: {e}"))?
            .ok_or_else(|| {
                format!("field `version`: {path} has no version {version}; script_history lists them")
            })?
            .ok_or_else(|| {
                format!("field `version`: version {version} of {path} is its deletion; roll back to a version with content")
            })?;
        let mut answer = self.write_script(
            &path,
            &content,
            author,
            &format!("rollback to version {version}"),
        )?;
        answer["rolled_back_to"] = json!(version);
        Ok(answer)
    }

    /// Records the content of a file under `$HEARTH_HOME` (`None`: it is
    /// gone) when it differs from its newest version.
    pub(super) fn record_by_hand(&self, root: usize, path: &Path, content: Option<&str>) {
        if root + 1 != self.roots.len() {
            // The bundled scripts are the release's, not the agent's.
            return;
        }
        let Some(relative) = path
            .strip_prefix(&self.roots[root])
            .ok()
            .and_then(|p| p.to_str())
        else {
            return;
        };
        let note = match content {
            Some(_) => "saved by an editor or another tool",
            None => "deleted",
        };
        if let Err(e) = self
            .versions
            .record(Kind::Script, relative, content, OUTSIDE, note)
        {
            tracing::warn!(file = %path.display(), "the version was not recorded: {e}");
        }
    }

    /// The path under `$HEARTH_HOME` that `name` stands for.
    fn version_name(&self, name: &str) -> Result<String, String> {
        let name = name.trim();
        let home = self.roots.last().ok_or("no script root")?;
        let known = |relative: &str| {
            home.join(relative).is_file()
                || self
                    .versions
                    .history(Kind::Script, relative)
                    .is_ok_and(|v| !v.is_empty())
        };
        if name.contains('/') {
            let with_lua = format!("{name}.lua");
            return [name, with_lua.as_str()]
                .into_iter()
                .find(|candidate| known(candidate))
                .map(str::to_owned)
                .ok_or_else(|| format!("field `name`: no script at {name} under $HEARTH_HOME"));
        }
        let catalog = self.catalog();
        if let Some(tool) = catalog.tool(name)
            && let Ok(relative) = tool.file.strip_prefix(home)
        {
            return Ok(relative.display().to_string());
        }
        let library = format!("lib/{name}.lua");
        let tool = format!("tools/{name}.lua");
        let skill = format!("skills/{name}/SKILL.md");
        [library, tool, skill]
            .into_iter()
            .find(|candidate| known(candidate))
            .ok_or_else(|| {
                format!("field `name`: no tool, library or skill of the agent's is named {name:?}; give a path like tools/x.lua")
            })
    }
}
