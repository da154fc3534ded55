//! The messages between the host and a Lua worker process: one JSON object
//! per line on the worker's stdin and stdout.
//!
//! A request (`load`, `load_library` or `call`) is answered by exactly one
//! `done`. While it runs, the worker may send `host` requests (kv, tool,
//! http, db, require), each
//! answered by one `reply`, and `log` lines, which need no answer.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Host to worker.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum ToWorker {
    /// Compile and run a script's top level, and describe the table it returns.
    Load {
        /// The chunk name used in error messages (`tools/convert.lua`).
        chunk: String,
        /// The source text.
        source: String,
        /// Milliseconds the top level may run.
        deadline_ms: u64,
    },
    /// Compile and run a library's top level (`lib/<name>.lua`), to check
    /// that it loads.
    LoadLibrary {
        /// The chunk name (`lib/util.lua`).
        chunk: String,
        /// What `require` takes.
        name: String,
        /// The source text.
        source: String,
        /// Milliseconds the top level may run.
        deadline_ms: u64,
    },
    /// Load a script and call its `run(args, ctx)`.
    Call {
        /// The chunk name.
        chunk: String,
        /// The source text (small; sent every call so a worker never runs
        /// a stale version).
        source: String,
        /// The arguments, already validated against the schema.
        args: Value,
        /// The `ctx` table handed to `run`.
        ctx: Value,
        /// Milliseconds the call may run.
        deadline_ms: u64,
    },
    /// The answer to a `host` request.
    Reply {
        /// The result, when the request succeeded.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        ok: Option<Value>,
        /// The error message, when it failed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        err: Option<String>,
    },
}

/// Worker to host.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum FromWorker {
    /// A host service the script asked for (`kv.get`, `tool`, ...).
    Host {
        /// The service.
        method: String,
        /// Its parameters.
        params: Value,
    },
    /// A log line from the script.
    Log {
        /// `error`, `warn`, `info` or `debug`.
        level: String,
        /// The text.
        message: String,
    },
    /// The outcome of the request.
    Done {
        /// The result (`Load`: the tool spec; `Call`: the JSON result).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        ok: Option<Value>,
        /// The failure.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        err: Option<ScriptFailure>,
    },
}

/// Why a load or call failed, as the worker saw it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScriptFailure {
    /// What kind of failure.
    pub kind: FailureKind,
    /// The message, with the chunk name and line where Lua gave them.
    pub message: String,
    /// The line in the script, when known.
    #[serde(default)]
    pub line: Option<u32>,
}

/// Kinds of script failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureKind {
    /// The source does not compile.
    Syntax,
    /// The script raised an error, or its table is not a valid tool.
    Runtime,
    /// It ran past its deadline.
    Deadline,
    /// It went over its memory cap.
    Memory,
    /// The owner stopped the turn it ran in (`/stop`); the host killed it.
    Cancelled,
}
