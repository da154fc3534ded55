//! The control socket, `$HEARTH_HOME/hearth.sock`: the owner's local channel.
//!
//! `hearth chat`, `status`, `plugins`, `tools`, `tool call`, `approvals`,
//! `audit` and `backup` talk to the running daemon here, one JSON object per line,
//! so that they show its live state and never start a second copy of its
//! plugins. The socket is created with mode 0600 inside the owner-only
//! home directory, but that keeps out only other users: the programs the
//! agent runs have the owner's user id too. So a client is the owner only
//! once its hello carried the control token (`token`), which those
//! programs cannot read; before that, nothing is served.
//!
//! docs/control.md describes every request and answer. `protocol` holds
//! the version and the errors, `token` the control token, `inventory` the
//! plugin and tool rows, and `tool_call` the owner's tool calls with their
//! confirmations. A bad line
//! (not JSON, too long, an unknown request, another version) is answered
//! with an `error` saying what was wrong; the daemon serves on.

mod inventory;
pub mod protocol;
pub mod token;
mod tool_call;
mod wedge;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use hearth_sdk::protocol::InboundMessage;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::mpsc;

pub use inventory::{mcp as mcp_rows, plugins as plugin_rows, script_problems, tools as tool_rows};
use protocol::{Code, error};
pub use token::{TOKEN_FILE, Token, TokenError};

use hearth_agent::agent::Agent;
use hearth_agent::tools::ToolRegistry;
use hearth_base::caller::Caller;
use hearth_base::channels::LOCAL_CHANNEL;
use hearth_base::store;
use hearth_data::router::local::LocalHub;
use hearth_data::router::outbox::Outbox;
use hearth_plugins::{Bridge, PluginSet};
use hearth_policy::{audit, grants};

/// The socket's file name in `$HEARTH_HOME`.
pub const SOCKET: &str = "hearth.sock";
/// The longest request line.
const MAX_LINE: usize = 1 << 20;

/// What the control socket serves.
pub struct Control {
    /// Stores the owner's messages.
    pub bridge: Arc<Bridge>,
    /// Local reply listeners.
    pub hub: Arc<LocalHub>,
    /// For delivering pending replies when a client subscribes.
    pub outbox: Arc<Outbox>,
    /// For `status`.
    pub agent: Arc<Agent>,
    /// For `plugins`.
    pub plugins: Arc<PluginSet>,
    /// For `tools` and `tool_call`.
    pub tools: Arc<ToolRegistry>,
    /// `hearth.db`, for `approvals`, `revoke` and `audit` (a connection per
    /// request: they are rare).
    pub db: PathBuf,
    /// Whether the config has an `[llm]` section, for `doctor`.
    pub model_configured: bool,
    /// For `backup`.
    pub backups: Arc<crate::backup::Backups>,
    /// What a client's hello must carry.
    pub token: Arc<Token>,
    /// Takes the answers the owner types at a `hearth tool call`'s
    /// terminal, as the channels' answers are taken.
    pub board: Arc<hearth_base::channels::answers::Board>,
}

/// The bound socket and the token its clients must show.
pub struct Bound {
    /// The listening socket.
    pub listener: UnixListener,
    /// Its path, removed when the daemon stops.
    pub socket: PathBuf,
    /// The token, written to its file.
    pub token: Arc<Token>,
}

/// Why the control socket could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum BindError {
    /// The socket could not be bound (another daemon has it, or the home
    /// cannot be written).
    #[error("cannot set up the control socket: {0}")]
    Socket(#[from] std::io::Error),
    /// The token could not be made.
    #[error(transparent)]
    Token(#[from] TokenError),
}

/// How long a closing connection may take to write its last answers.
const LAST_WORDS: std::time::Duration = std::time::Duration::from_secs(1);
/// The most audit rows one `audit` request returns.
const MAX_AUDIT_ROWS: u32 = 10_000;

/// Writes a fresh token, then binds the socket (replacing a stale one)
/// with mode 0600.
pub fn bind(home: &Path) -> Result<Bound, BindError> {
    use std::os::unix::fs::PermissionsExt;
    let path = home.join(SOCKET);
    let live = path.exists() && std::os::unix::net::UnixStream::connect(&path).is_ok();
    if live {
        // A live daemon answers; a stale file from a crash does not. The
        // live one's token is left alone.
        return Err(BindError::Socket(std::io::Error::new(
            std::io::ErrorKind::AddrInUse,
            format!(
                "{} is in use: is another hearth running with this home?",
                path.display()
            ),
        )));
    }
    // Written before the socket exists: a client that connects finds this
    // daemon's token, never the one a crashed daemon left.
    let token = Arc::new(Token::create(home)?);
    let bound = (|| {
        if path.exists() {
            std::fs::remove_file(&path)?;
        }
        let listener = UnixListener::bind(&path)?;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))?;
        Ok::<_, std::io::Error>(listener)
    })();
    match bound {
        Ok(listener) => Ok(Bound {
            listener,
            socket: path,
            token,
        }),
        Err(e) => {
            token.remove();
            Err(e.into())
        }
    }
}

/// Accepts clients until the task is aborted.
pub async fn serve(listener: UnixListener, control: Arc<Control>) {
    loop {
        match listener.accept().await {
            Ok((stream, _)) => {
                let control = Arc::clone(&control);
                tokio::spawn(async move { client(stream, control).await });
            }
            Err(e) => {
                tracing::warn!("control socket accept failed: {e}");
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
        }
    }
}

async fn client(stream: UnixStream, control: Arc<Control>) {
    // Who connected, for the warning when it is refused.
    let peer = stream.peer_cred().ok().and_then(|c| c.pid());
    tracing::debug!(pid = peer, "control client connected");
    let (read, mut write) = stream.into_split();
    let (tx, mut rx) = mpsc::channel::<Value>(256);
    let writer = tokio::spawn(async move {
        // `null` is the last word: everything queued before it is written.
        while let Some(message) = rx.recv().await.filter(|m| !m.is_null()) {
            let mut line = message.to_string();
            line.push('\n');
            if write.write_all(line.as_bytes()).await.is_err() {
                return;
            }
        }
    });
    let mut session = Session {
        hello: false,
        peer,
        in_flight: Arc::new(Mutex::new(tool_call::InFlight::default())),
    };
    let mut lines = BufReader::new(read);
    let mut line = String::new();
    loop {
        line.clear();
        match AsyncReadExt::take(&mut lines, MAX_LINE as u64 + 1)
            .read_line(&mut line)
            .await
        {
            Ok(0) => break,
            Err(e) => {
                // Bytes that are not UTF-8 end the line reader; say so.
                let _ = tx
                    .send(error(Code::BadRequest, &format!("unreadable request: {e}")))
                    .await;
                break;
            }
            Ok(n) if n > MAX_LINE => {
                let _ = tx
                    .send(error(
                        Code::TooLong,
                        "the request is over 1 MiB; the connection is closed",
                    ))
                    .await;
                break;
            }
            Ok(_) => {}
        }
        if line.trim().is_empty() {
            continue;
        }
        let (answer, close) = match serde_json::from_str::<Value>(&line) {
            Ok(request) => {
                // The op only: arguments and chat text may hold secrets.
                tracing::debug!(op = request["op"].as_str(), "control request");
                handle(&control, &mut session, &request, &tx).await
            }
            Err(e) => (
                Some(error(
                    Code::BadRequest,
                    &format!("the request is not JSON: {e}"),
                )),
                false,
            ),
        };
        if let Some(answer) = answer
            && tx.send(answer).await.is_err()
        {
            break;
        }
        if close {
            break;
        }
    }
    // A client that leaves withdraws the question its call waits on.
    tool_call::abandon(&session.in_flight);
    // The hub and a running call hold senders too: end the writer
    // (dropping its receiver) so the hub sees this client is gone and stops
    // counting it as a listener. The last answers (an error before the
    // close) are written first, unless the client does not read them.
    let _ = tx.try_send(Value::Null);
    let abort = writer.abort_handle();
    if tokio::time::timeout(LAST_WORDS, writer).await.is_err() {
        abort.abort();
    }
}

/// What one connection has said so far.
struct Session {
    /// The client sent a valid hello, with the token: it is the owner.
    hello: bool,
    /// The client's process id, when the kernel tells it.
    peer: Option<i32>,
    /// Its tool call, if one runs.
    in_flight: Arc<Mutex<tool_call::InFlight>>,
}

/// Answers one request; the flag says whether to close the connection.
async fn handle(
    control: &Control,
    session: &mut Session,
    request: &Value,
    tx: &mpsc::Sender<Value>,
) -> (Option<Value>, bool) {
    let Some(op) = request["op"].as_str() else {
        return (
            Some(error(Code::BadRequest, "the request has no `op` string")),
            false,
        );
    };
    if op == "hello" {
        return match protocol::hello(request, &control.token) {
            Ok(answer) => {
                session.hello = true;
                (Some(answer), false)
            }
            Err(refusal) => {
                let unauthorized = refusal["code"] == Code::Unauthorized.name();
                if unauthorized {
                    // Never the token: what was wrong, and who sent it.
                    tracing::warn!(
                        pid = session.peer,
                        why = refusal["message"].as_str(),
                        "control client refused: it did not show the control token, so it is \
                         not the owner (a program hearth runs, or a client of another home)"
                    );
                }
                let close = unauthorized || refusal["code"] == Code::Version.name();
                (Some(refusal), close)
            }
        };
    }
    // Nothing is served before the hello: only the token makes a client
    // the owner.
    if !session.hello {
        return (Some(protocol::hello_first(op)), false);
    }
    let answer = match op {
        "status" | "subscribe" | "chat" => v1(control, op, request, tx),
        "plugins" => {
            Some(json!({ "op": "plugins", "plugins": plugin_rows(&control.plugins, true) }))
        }
        "tools" => {
            let mut answer = tool_rows(&control.tools);
            answer["op"] = "tools".into();
            Some(answer)
        }
        "mcp" => {
            // Each plugin answers its status from memory, without I/O; a
            // blocking thread all the same, since it is a plugin call.
            let (plugins, tools) = (Arc::clone(&control.plugins), Arc::clone(&control.tools));
            let rows = tokio::task::spawn_blocking(move || mcp_rows(&plugins, &tools)).await;
            Some(match rows {
                Ok(mut answer) => {
                    answer["op"] = "mcp".into();
                    answer
                }
                Err(e) => error(Code::Tool, &format!("the status could not be read: {e}")),
            })
        }
        "tool_call" => tool_call::start(&control.tools, request, &session.in_flight, tx),
        "withdraw" => tool_call::withdraw(&session.in_flight),
        "answer" => tool_call::answer(&control.board, request, &session.in_flight),
        "approvals" | "revoke" | "audit" => Some(records(control, op, request).await),
        "contacts" | "agents" => Some(people(control, op, request)),
        "schedule" => Some(schedule(control, request)),
        "groups" => Some(groups(control, request)),
        "identity" => Some(identity(control, request)),
        "doctor" => Some(doctor(control).await),
        "usage" => Some(usage(control, request).await),
        // Test only, and so not listed in `protocol::OPS`.
        "test_wedge" => Some(wedge::wedge(request)),
        "backup" => Some(backup(control, request).await),
        other => Some(protocol::unknown(other)),
    };
    (answer, false)
}

/// `contacts` (`list`, `approve`) and `agents`: the owner at the terminal,
/// through the same code as the agent's tools (no approval asked: the
/// owner is the one asking).
fn people(control: &Control, op: &str, request: &Value) -> Value {
    let Some(people) = control.tools.people_tools() else {
        return error(Code::Store, "this daemon serves no contacts");
    };
    let result = match op {
        "agents" => people.manage_agents(&Caller::owner_cli(), &json!({ "action": "list" })),
        _ => match request["action"].as_str() {
            Some(action @ ("list" | "approve")) => {
                let mut args = request.clone();
                if let Some(object) = args.as_object_mut() {
                    object.remove("op");
                    object.retain(|_, v| !v.is_null());
                    object.insert("action".into(), action.into());
                }
                people.manage_contacts(&args)
            }
            _ => Err("`contacts` needs `action`: \"list\" or \"approve\"".into()),
        },
    };
    match result {
        Ok(result) => json!({ "op": op, "result": result }),
        Err(message) => error(Code::Tool, &message),
    }
}

/// `schedule`: the owner's `list`, `run_now`, `enable`, `disable` and
/// `remove`, through `manage_schedule`'s code.
fn schedule(control: &Control, request: &Value) -> Value {
    let Some(tools) = control.tools.schedule_tools() else {
        return error(Code::Store, "this daemon runs no scheduler");
    };
    let action = request["action"].as_str().unwrap_or_default();
    if !["list", "run_now", "enable", "disable", "remove"].contains(&action) {
        return error(
            Code::BadRequest,
            "`schedule` needs `action`: \"list\", \"run_now\", \"enable\", \"disable\" or \"remove\"",
        );
    }
    let args = json!({ "action": action, "id": request["id"] });
    match tools.call(&Caller::owner_cli(), None, &args) {
        Ok(result) => json!({ "op": "schedule", "result": result }),
        Err(message) => error(Code::Tool, &message),
    }
}

/// `groups`: every action of `manage_groups` and the owner's own
/// (`approve`, `reject`, `assign`, `plan`); `list` when none is named.
fn groups(control: &Control, request: &Value) -> Value {
    let Some(groups) = control.tools.groups() else {
        return error(Code::Store, "this daemon runs no groups");
    };
    let mut args = request.clone();
    if let Some(object) = args.as_object_mut() {
        object.remove("op");
        object.retain(|_, v| !v.is_null());
        object.entry("action").or_insert_with(|| "list".into());
    }
    match groups.act_for_owner(&args) {
        Ok(result) => json!({ "op": "groups", "result": result }),
        Err(message) => error(Code::Tool, &message),
    }
}

/// `usage`: the report of `spans` (`["day"]`, `["month"]`, or both when
/// absent), with the rows the writer still holds committed first.
async fn usage(control: &Control, request: &Value) -> Value {
    use hearth_model::usage::report::Which;
    let spans: Result<Vec<Which>, String> = match &request["spans"] {
        Value::Null => Ok(Which::BOTH.to_vec()),
        Value::Array(names) if !names.is_empty() => names
            .iter()
            .map(|n| match n.as_str() {
                Some("day") => Ok(Which::Day),
                Some("month") => Ok(Which::Month),
                _ => Err(format!(
                    "`spans` holds {n}: each must be \"day\" or \"month\""
                )),
            })
            .collect(),
        other => Err(format!(
            "`spans` must be a non-empty list of \"day\" and \"month\", not {other}"
        )),
    };
    let spans = match spans {
        Ok(spans) => spans,
        Err(why) => return error(Code::BadRequest, &why),
    };
    let meter = Arc::clone(&control.agent.base.usage);
    let report = tokio::task::spawn_blocking(move || meter.report(store::now_ms(), &spans)).await;
    match report {
        Ok(Ok(report)) => json!({ "op": "usage", "text": report.text(), "report": report }),
        Ok(Err(e)) => error(Code::Store, &format!("cannot read the usage: {e}")),
        Err(e) => error(Code::Store, &format!("the report failed: {e}")),
    }
}

/// `doctor`: the checks only the running daemon can answer (its plugins,
/// channels, MCP servers, scripts and model; docs/control.md).
async fn doctor(control: &Control) -> Value {
    use crate::doctor::live;
    let (plugins, tools) = (Arc::clone(&control.plugins), Arc::clone(&control.tools));
    // Parts are asked of their plugins: a plugin call, so a blocking thread.
    let found = tokio::task::spawn_blocking(move || {
        let mut found = live::plugins(&plugins, true);
        found.extend(live::parts(&plugins));
        found.extend(live::scripts(&tools));
        found
    })
    .await;
    let mut findings = match found {
        Ok(found) => found,
        Err(e) => return error(Code::Tool, &format!("the checks failed: {e}")),
    };
    let setup = match (&control.agent.llm, control.model_configured) {
        (Ok(llm), _) => live::ModelSetup::Ready(llm),
        (Err(_), false) => live::ModelSetup::Absent,
        (Err(why), true) => live::ModelSetup::Broken(why),
    };
    findings.push(live::model(setup).await);
    json!({
        "op": "doctor",
        "pid": std::process::id(),
        "uptime_s": control.agent.base.started.elapsed().as_secs(),
        "findings": findings,
    })
}

/// `identity`: the owner's `log`, `show` and `rollback` of the main
/// agent's identity (no approval asked: the owner is the one asking).
fn identity(control: &Control, request: &Value) -> Value {
    let identity = &control.agent.base.identity;
    let version = request["version"].as_i64();
    let result = match (request["action"].as_str(), version) {
        (Some("log"), _) => identity.history().map(|v| json!({ "versions": v })),
        (Some("show"), Some(v)) => identity
            .show(v)
            .map(|text| json!({ "version": v, "text": text })),
        (Some("rollback"), Some(v)) => identity
            .rollback(v, "owner")
            .map(|version| json!({ "version": version, "text": identity.current() })),
        (Some("show" | "rollback"), None) => {
            return error(Code::BadRequest, "`version` must be a number");
        }
        _ => {
            return error(
                Code::BadRequest,
                "`identity` needs `action`: \"log\", \"show\" or \"rollback\"",
            );
        }
    };
    match result {
        Ok(result) => json!({ "op": "identity", "result": result }),
        Err(e) => error(Code::Tool, &e.to_string()),
    }
}

/// `backup`: an archive made now on a blocking thread, in `to` (an
/// absolute folder) or `[backup] dir`; the daemon serves on meanwhile.
async fn backup(control: &Control, request: &Value) -> Value {
    let to = match &request["to"] {
        Value::Null => None,
        Value::String(dir) if Path::new(dir).is_absolute() => Some(PathBuf::from(dir)),
        _ => return error(Code::BadRequest, "`to` must be an absolute folder path"),
    };
    let backups = Arc::clone(&control.backups);
    match tokio::task::spawn_blocking(move || backups.run(to.as_deref())).await {
        Ok(Ok(made)) => {
            tracing::info!(path = %made.path.display(), size = made.size, "backup made");
            json!({ "op": "backup", "backup": made })
        }
        Ok(Err(e)) => error(Code::Backup, &e.to_string()),
        Err(e) => error(Code::Backup, &format!("the backup stopped: {e}")),
    }
}

/// The requests protocol 1 had: chat, subscribe, status.
fn v1(control: &Control, op: &str, request: &Value, tx: &mpsc::Sender<Value>) -> Option<Value> {
    let chat = request["chat"].as_str().unwrap_or("terminal");
    match op {
        "status" => Some(
            json!({ "op": "status", "status": control.agent.status(), "text": control.agent.status_text() }),
        ),
        "subscribe" => {
            control.hub.subscribe(chat, tx.clone());
            control.outbox.retry_local_now(chat);
            control.agent.base.router.outbox_wake.notify_one();
            Some(json!({ "op": "subscribed", "chat": chat }))
        }
        _ => {
            let Some(text) = request["text"].as_str().filter(|t| !t.trim().is_empty()) else {
                return Some(error(Code::BadRequest, "`text` must be a non-empty string"));
            };
            let key = new_key();
            let message = InboundMessage {
                channel: LOCAL_CHANNEL.into(),
                idempotency_key: key.clone(),
                sender: "owner".into(),
                chat: Some(chat.to_owned()),
                text: text.to_owned(),
                attachments: Vec::new(),
                sender_name: None,
            };
            // One insert on the local connection, well under a millisecond:
            // done in place, it saves a hop to the blocking pool.
            let stored = control.bridge.submit_local(message);
            Some(match stored {
                Ok(()) => json!({ "op": "accepted", "key": key }),
                Err(e) => error(Code::Store, &e),
            })
        }
    }
}

/// `approvals`, `revoke` and `audit`: read (or, for `revoke`, written) on
/// a connection of their own, on the blocking pool.
async fn records(control: &Control, op: &str, request: &Value) -> Value {
    let parsed = match op {
        "approvals" => match &request["all"] {
            Value::Null => Ok(Records::Approvals { all: false }),
            Value::Bool(all) => Ok(Records::Approvals { all: *all }),
            _ => Err("`all` must be true or false"),
        },
        "revoke" => request["id"]
            .as_i64()
            .map(|id| Records::Revoke { id })
            .ok_or("`revoke` needs `id`, a grant's number"),
        _ => {
            let tool = match &request["tool"] {
                Value::Null => Ok(None),
                Value::String(t) => Ok(Some(t.clone())),
                _ => Err("`tool` must be a string"),
            };
            let limit = match &request["limit"] {
                Value::Null => Ok(50),
                v => v
                    .as_u64()
                    .filter(|n| *n <= u64::from(MAX_AUDIT_ROWS))
                    .map(|n| n as u32)
                    .ok_or("`limit` must be a whole number up to 10000"),
            };
            tool.and_then(|tool| limit.map(|limit| Records::Audit { tool, limit }))
        }
    };
    let query = match parsed {
        Ok(query) => query,
        Err(why) => return error(Code::BadRequest, why),
    };
    let (db, tools) = (control.db.clone(), Arc::clone(&control.tools));
    tokio::task::spawn_blocking(move || query.run(&db, &tools))
        .await
        .unwrap_or_else(|e| error(Code::Store, &format!("the query failed: {e}")))
}

/// A records request, checked.
enum Records {
    Approvals { all: bool },
    Revoke { id: i64 },
    Audit { tool: Option<String>, limit: u32 },
}

impl Records {
    fn run(self, db: &Path, tools: &ToolRegistry) -> Value {
        let conn = match store::open_cold_connection(db) {
            Ok(conn) => conn,
            Err(e) => return error(Code::Store, &format!("cannot open the store: {e}")),
        };
        let store_error = |e: rusqlite::Error| error(Code::Store, &e.to_string());
        match self {
            Records::Approvals { all } => grants::list(&conn, all)
                .map(|grants| json!({ "op": "approvals", "grants": grants }))
                .unwrap_or_else(store_error),
            Records::Revoke { id } => match grants::revoke(&conn, id) {
                Ok(true) => json!({ "op": "revoked", "id": id }),
                Ok(false) => error(
                    Code::NotFound,
                    &format!("there is no active grant {id}; `hearth approvals` lists them"),
                ),
                Err(e) => store_error(e),
            },
            Records::Audit { tool, limit } => {
                // The rows of calls just made are still with the writer
                // thread: commit them first, so the answer is current.
                tools.flush_audit();
                audit::recent(&conn, tool.as_deref(), limit)
                    .map(|records| json!({ "op": "audit", "records": records }))
                    .unwrap_or_else(store_error)
            }
        }
    }
}

/// A key unique across restarts: time, process and a counter.
fn new_key() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    format!(
        "local-{}-{}-{}",
        hearth_base::store::now_ms(),
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    )
}
