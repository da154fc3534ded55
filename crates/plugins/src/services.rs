//! The host services a plugin reaches with `call`, besides `host.info`:
//! its channel's transcript (`channel.history`), its own key-value
//! namespace (`kv.get`, `kv.set`), notices for the agent
//! (`agent.notify`), the agent's pages for a channel that serves them
//! (`page.get`, `page.query`), and the checks on a tool list a plugin
//! sets at run time (`tools.set`).
//!
//! These answer inline on the bridge's own connection, unlike `submit`:
//! each is one short indexed statement, nothing that runs agent work, and
//! the plugin needs the answer to go on. A page query is one bounded
//! read-only statement on `agent_data.db` (at most 1 s).

use hearth_sdk::abi::status;
use hearth_sdk::protocol::{
    Attachment, ChannelHistory, ConfirmationRecord, ConfirmationRequest, ConfirmationState,
    HistoryMessage, HistoryRequest, InboundMessage, Notice, PageRequest, ToolSpec, ToolsUpdate,
    service,
};
use rusqlite::{Connection, OptionalExtension, params};
use serde_json::{Value, json};

use hearth_base::channels::LOCAL_CHANNEL;
use hearth_base::store::now_ms;
use hearth_data::workshop::Workshop;

/// Every service `call` answers.
pub const OFFERED: [&str; 12] = [
    service::HOST_INFO,
    service::TOOL_OUTPUT,
    service::TOOLS_SET,
    service::MODEL_SUMMARIZE,
    service::CHANNEL_HISTORY,
    service::KV_GET,
    service::KV_SET,
    service::AGENT_NOTIFY,
    service::PAGE_GET,
    service::PAGE_QUERY,
    service::VIEW_SHOW,
    service::VIEW_INPUT,
];

/// The sender of notices in the inbox: the host itself, never a person.
pub const NOTICE_SENDER: &str = "hearth";
/// The longest notice text.
const MAX_NOTICE: usize = 16 * 1024;

/// The largest `tools.set` request: a few hundred tools with their schemas.
const MAX_TOOLS_BYTES: usize = 4 << 20;
/// The most tools one plugin may offer.
const MAX_TOOLS: usize = 1000;

/// The most history messages one request returns.
const MAX_HISTORY: u32 = 1000;
/// How many recent confirmations a history carries.
const CONFIRMATIONS: u32 = 50;
/// The largest key and value a plugin may store.
const MAX_KEY: usize = 256;
const MAX_VALUE: usize = 1 << 20;

/// `channel.history` for `channel`.
pub fn history(conn: &Connection, channel: &str, request: Value) -> Result<Value, String> {
    let request: HistoryRequest =
        serde_json::from_value(request).map_err(|e| format!("channel.history: {e}"))?;
    let limit = request.limit.min(MAX_HISTORY);
    let answer = read_history(conn, channel, &request.chat, limit)
        .map_err(|e| format!("channel.history: the store failed: {e}"))?;
    serde_json::to_value(answer).map_err(|e| e.to_string())
}

/// Reads a `tools.set` request: the tools with valid, distinct names, and
/// why each other one was left out.
pub fn tools_update(request: &[u8]) -> Result<(Vec<ToolSpec>, Vec<String>), String> {
    if request.len() > MAX_TOOLS_BYTES {
        return Err(format!(
            "tools.set: the request is {} bytes, over the {MAX_TOOLS_BYTES}-byte limit",
            request.len()
        ));
    }
    let update: ToolsUpdate =
        serde_json::from_slice(request).map_err(|e| format!("tools.set: {e}"))?;
    if update.tools.len() > MAX_TOOLS {
        return Err(format!(
            "tools.set: field `tools` has {} tools, over the limit of {MAX_TOOLS}",
            update.tools.len()
        ));
    }
    let mut seen = std::collections::HashSet::new();
    let mut skipped = Vec::new();
    let mut tools = Vec::with_capacity(update.tools.len());
    for tool in update.tools {
        if let Err(why) = hearth_base::tool_names::check_name(&tool.name) {
            skipped.push(why);
        } else if !seen.insert(tool.name.clone()) {
            skipped.push(format!(
                "tool {} is listed twice; the first is kept",
                tool.name
            ));
        } else {
            tools.push(tool);
        }
    }
    Ok((tools, skipped))
}

/// `kv.get` in the plugin's namespace.
pub fn kv_get(conn: &Connection, plugin: &str, request: &Value) -> Result<Value, String> {
    let key = key_of(request)?;
    let value: Option<String> = conn
        .query_row(
            "SELECT value FROM kv WHERE namespace = ?1 AND key = ?2",
            params![namespace(plugin), key],
            |r| r.get(0),
        )
        .optional()
        .map_err(|e| format!("kv.get: the store failed: {e}"))?;
    let value = value
        .and_then(|v| serde_json::from_str::<Value>(&v).ok())
        .unwrap_or(Value::Null);
    Ok(json!({ "value": value }))
}

/// `kv.set` in the plugin's namespace; a null value deletes.
pub fn kv_set(conn: &Connection, plugin: &str, request: &Value) -> Result<Value, String> {
    let key = key_of(request)?;
    let value = request.get("value").unwrap_or(&Value::Null);
    let result = if value.is_null() {
        conn.execute(
            "DELETE FROM kv WHERE namespace = ?1 AND key = ?2",
            params![namespace(plugin), key],
        )
    } else {
        let text = value.to_string();
        if text.len() > MAX_VALUE {
            return Err(format!(
                "kv.set: field `value` is {} bytes, over the {MAX_VALUE}-byte limit",
                text.len()
            ));
        }
        conn.execute(
            "INSERT INTO kv (namespace, key, value, updated_at_ms) VALUES (?1, ?2, ?3, ?4) \
             ON CONFLICT (namespace, key) DO UPDATE SET value = ?3, updated_at_ms = ?4",
            params![namespace(plugin), key, text, now_ms()],
        )
    };
    result.map_err(|e| format!("kv.set: the store failed: {e}"))?;
    Ok(json!({}))
}

/// `page.get` or `page.query` (`service`), for a channel plugin: the
/// status and the answer for the bridge to hand back.
pub fn page(workshop: &Workshop, service: &str, request: Value) -> (i32, String) {
    let mut request: PageRequest = match serde_json::from_value(request) {
        Ok(request) => request,
        Err(e) => return (status::INVALID, format!("{service}: {e}")),
    };
    if service == service::PAGE_GET {
        request.query = None;
    } else if request.query.is_none() {
        return (
            status::INVALID,
            format!("{service}: field `query` is missing"),
        );
    }
    let answer = workshop.pages.answer(&request, &workshop.data);
    (
        status::OK,
        serde_json::to_string(&answer).unwrap_or_else(|_| "{}".into()),
    )
}

/// `agent.notify`: the inbox message that tells the agent what `plugin`
/// reports. It joins the conversation the owner spoke in last (the local
/// channel if none), so the agent's answer reaches the owner there.
pub fn notice(conn: &Connection, plugin: &str, request: Value) -> Result<InboundMessage, String> {
    let notice: Notice =
        serde_json::from_value(request).map_err(|e| format!("agent.notify: {e}"))?;
    if notice.key.is_empty() || notice.key.len() > MAX_KEY {
        return Err(format!(
            "agent.notify: field `key` must be 1 to {MAX_KEY} bytes"
        ));
    }
    if notice.text.trim().is_empty() || notice.text.len() > MAX_NOTICE {
        return Err(format!(
            "agent.notify: field `text` must be 1 to {MAX_NOTICE} bytes"
        ));
    }
    let last: Option<(String, String)> = conn
        .query_row(
            "SELECT channel, COALESCE(chat, sender) FROM inbox WHERE sender != ?1 \
             AND contact_id IS NULL AND source = 'channel' ORDER BY id DESC LIMIT 1",
            [NOTICE_SENDER],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()
        .map_err(|e| format!("agent.notify: the store failed: {e}"))?;
    let (channel, chat) = last.unwrap_or_else(|| (LOCAL_CHANNEL.to_owned(), "owner".to_owned()));
    Ok(InboundMessage {
        channel,
        idempotency_key: format!("notice:{plugin}:{}", notice.key),
        sender: NOTICE_SENDER.into(),
        chat: Some(chat),
        text: format!("[notice from plugin {plugin}] {}", notice.text),
        attachments: Vec::new(),
        sender_name: None,
    })
}

/// Plugins' namespaces cannot meet the scripts' (which never contain `:`).
fn namespace(plugin: &str) -> String {
    format!("plugin:{plugin}")
}

fn key_of(request: &Value) -> Result<&str, String> {
    match request.get("key").and_then(Value::as_str) {
        Some(k) if !k.is_empty() && k.len() <= MAX_KEY => Ok(k),
        Some(_) => Err(format!("field `key` must be 1 to {MAX_KEY} bytes")),
        None => Err("field `key` is missing or not a string".into()),
    }
}

fn read_history(
    conn: &Connection,
    channel: &str,
    chat: &str,
    limit: u32,
) -> rusqlite::Result<ChannelHistory> {
    let mut messages = Vec::new();
    let mut inbox = conn.prepare_cached(
        "SELECT idempotency_key, text, received_at_ms, attachments FROM inbox \
         WHERE channel = ?1 AND (chat = ?2 OR (chat IS NULL AND sender = ?2)) AND source = 'channel' \
         ORDER BY id DESC LIMIT ?3",
    )?;
    let rows = inbox.query_map(params![channel, chat, limit], |r| {
        let key: String = r.get(0)?;
        let attachments: Option<String> = r.get(3)?;
        Ok(HistoryMessage {
            key: format!("in-{key}"),
            role: "user".into(),
            text: r.get(1)?,
            at_ms: r.get(2)?,
            id: Some(key),
            attachments: attachments
                .and_then(|a| serde_json::from_str::<Vec<Attachment>>(&a).ok())
                .unwrap_or_default(),
        })
    })?;
    for row in rows {
        messages.push(row?);
    }
    let mut outbox = conn.prepare_cached(
        "SELECT o.id, o.text, o.created_at_ms, i.idempotency_key FROM outbox o \
         LEFT JOIN inbox i ON i.id = o.inbox_id \
         WHERE o.channel = ?1 AND o.chat = ?2 ORDER BY o.id DESC LIMIT ?3",
    )?;
    let rows = outbox.query_map(params![channel, chat, limit], |r| {
        Ok(HistoryMessage {
            key: format!("out-{}", r.get::<_, i64>(0)?),
            role: "agent".into(),
            text: r.get(1)?,
            at_ms: r.get(2)?,
            id: r.get(3)?,
            attachments: Vec::new(),
        })
    })?;
    for row in rows {
        messages.push(row?);
    }
    // A reply is stored after the message it answers, so time order is
    // conversation order; the key breaks ties.
    messages.sort_by(|a, b| (a.at_ms, &a.key).cmp(&(b.at_ms, &b.key)));
    let excess = messages.len().saturating_sub(limit as usize);
    messages.drain(..excess);
    Ok(ChannelHistory {
        messages,
        confirmations: read_confirmations(conn)?,
    })
}

fn read_confirmations(conn: &Connection) -> rusqlite::Result<Vec<ConfirmationRecord>> {
    let mut stmt = conn.prepare_cached(
        "SELECT id, tool, args, command, reason, fingerprint, at_ms, expires_at_ms, state, decided_by, \
         cwd, mode FROM confirmations ORDER BY at_ms DESC, id LIMIT ?1",
    )?;
    let rows = stmt.query_map([CONFIRMATIONS], |r| {
        let args: String = r.get(2)?;
        let state: String = r.get(8)?;
        Ok(ConfirmationRecord {
            request: ConfirmationRequest {
                id: r.get(0)?,
                tool: r.get(1)?,
                args: serde_json::from_str(&args).unwrap_or(Value::Null),
                command: r.get(3)?,
                cwd: r.get(10)?,
                mode: r.get(11)?,
                reason: r.get(4)?,
                fingerprint: r.get(5)?,
                at_ms: r.get(6)?,
                expires_at_ms: r.get(7)?,
            },
            state: match state.as_str() {
                "approved" => ConfirmationState::Approved,
                "denied" => ConfirmationState::Denied,
                "pending" => ConfirmationState::Pending,
                _ => ConfirmationState::Expired,
            },
            decided_by: r.get(9)?,
        })
    })?;
    let mut records = rows.collect::<rusqlite::Result<Vec<_>>>()?;
    records.reverse();
    Ok(records)
}
