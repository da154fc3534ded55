//! `manage_pages`: the agent publishes pages the canvas serves at
//! `/pages/<path>`, each with named read-only queries on its database.
//!
//! A separate file from the other workshop tools because its spec and help
//! are long; the rules themselves are in `workshop::pages`.

use std::collections::BTreeMap;

use hearth_sdk::protocol::{Risk, ToolSpec};
use serde_json::{Value, json};

use hearth_base::caller::Caller;
use hearth_base::store::MAIN_AGENT;
use hearth_data::workshop::Workshop;
use hearth_data::workshop::pages::{MAX_CONTENT, MIMES, PageChange, url};

/// What `help` answers.
const HELP: &str = "Pages are served by the canvas at /pages/<path> (path: a-z 0-9 - _ . /, e.g. `reports/weekly`).\n\
- create: path, content (HTML, markdown, JSON, CSS, JS, SVG; at most 512 KiB) or file (under $HEARTH_HOME/pages or $HEARTH_HOME/shared; images need a file), mime (default text/html; text/markdown is rendered to HTML), public (default false), queries.\n\
- update: path and only what changes (queries replaces the whole set). delete: path. list.\n\
- history: path: every version (hash, time, author). rollback: path, version: saves that version again as the newest (a deleted page comes back).\n\
- queries: {\"name\": \"SELECT ... WHERE day >= :since\"}: read-only SQL on your database (execute_sql's), at most 20, names a-z 0-9 _. \
The page's script fetches `/pages/<path>/queries/<name>?since=2026-01-01` (URL parameters fill :name parameters, as text) and gets \
{\"columns\": [...], \"rows\": [{column: value}], \"row_count\": n, \"truncated\": bool}; at most 1000 rows, 1 s.\n\
- A private page needs the owner's canvas session. A public one is served to anyone (rate-limited), sandboxed: it can fetch its own queries and nothing else of the canvas.\n\
- Scripts and styles may be inline. Every save is a version.";

/// The spec of `manage_pages`.
pub fn spec() -> ToolSpec {
    ToolSpec {
        name: "manage_pages".into(),
        description: "Publishes pages at /pages/<path>, with read-only SQL queries on your database. See action \"help\".".into(),
        parameters: json!({
            "type": "object",
            "properties": {
                "action": { "enum": ["help", "create", "update", "delete", "list", "history", "rollback"] },
                "version": { "type": "integer", "minimum": 1 },
                "path": { "type": "string", "maxLength": 200 },
                "content": { "type": "string", "maxLength": MAX_CONTENT },
                "file": { "type": "string", "maxLength": 4096 },
                "mime": { "type": "string", "maxLength": 100 },
                "public": { "type": "boolean" },
                "queries": {
                    "type": "object",
                    "additionalProperties": { "type": "string", "maxLength": 100000 }
                }
            },
            "required": ["action"],
            "additionalProperties": false
        }),
        risk: Risk::Write,
        targets: Default::default(),
    }
}

/// Runs `manage_pages` with validated `args`.
pub fn manage(workshop: &Workshop, caller: &Caller, args: &Value) -> Result<Value, String> {
    let pages = &workshop.pages;
    let action = args["action"].as_str().unwrap_or_default();
    if matches!(action, "help" | "list") {
        return match action {
            // The types are listed here, not in the schema: the schema is
            // sent on every model call, the help only when asked for.
            "help" => Ok(json!({ "help": HELP, "mime": MIMES })),
            _ => pages
                .list()
                .map(|pages| json!({ "pages": pages }))
                .map_err(|e| e.to_string()),
        };
    }
    let path = args["path"]
        .as_str()
        .ok_or_else(|| format!("field `path`: required for `{action}`"))?;
    let author = author(caller);
    if action == "history" {
        return pages
            .history(path)
            .map(|versions| json!({ "path": path, "url": url(path), "versions": versions }))
            .map_err(|e| e.to_string());
    }
    let text = |field: &str| args[field].as_str().map(str::to_owned);
    let change = PageChange {
        mime: text("mime"),
        content: text("content"),
        file: text("file"),
        public: args["public"].as_bool(),
        queries: args["queries"].as_object().map(|queries| {
            queries
                .iter()
                .map(|(name, sql)| (name.clone(), sql.as_str().unwrap_or_default().to_owned()))
                .collect::<BTreeMap<_, _>>()
        }),
    };
    let saved = match action {
        "create" => pages.create(path, change, &author, &workshop.data),
        "update" => pages.update(path, change, &author, &workshop.data),
        "rollback" => {
            let version = args["version"]
                .as_i64()
                .ok_or("field `version`: required for `rollback`, a number from `history`")?;
            pages.rollback(path, version, &author, &workshop.data)
        }
        _ => {
            return pages
                .delete(path, &author)
                .map(|()| json!({ "deleted": path }))
                .map_err(|e| e.to_string());
        }
    };
    let page = saved.map_err(|e| e.to_string())?;
    let page_url = url(&page.path);
    let queries: Vec<String> = page
        .queries
        .keys()
        .map(|name| format!("{page_url}/queries/{name}"))
        .collect();
    Ok(json!({
        "saved": page.path,
        "url": page_url,
        "mime": page.mime,
        "public": page.public,
        "queries": queries,
    }))
}

/// Who a save is recorded as.
fn author(caller: &Caller) -> String {
    match caller.agent_id() {
        Some(MAIN_AGENT) => "main agent".to_owned(),
        Some(id) => format!("agent {id}"),
        None if !caller.is_scoped() => "owner".to_owned(),
        None => caller.as_str().to_owned(),
    }
}
