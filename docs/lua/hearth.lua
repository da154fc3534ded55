---@meta hearth
-- LuaLS annotations for the hearth host API. Add this folder to
-- `workspace.library` and the editor completes and type-checks `hearth.*`.
-- See docs/lua.md for what each call does.

---A hearth tool: the table a tool file returns.
---@class hearth.Tool
---@field name string Lowercase letters, digits, `_` and `-`; at most 64.
---@field description string What it does, written for the model.
---@field risk? "read"|"write"|"exec" Defaults to "read".
---@field parameters? table JSON Schema of the arguments (type = "object").
---@field deadline_ms? integer Its own deadline, up to [scripts] max_deadline_ms.
---@field run fun(args: table, ctx: hearth.Context): any

---@class hearth.Context
---@field tool string The tool's name.
---@field deadline_ms integer This call's deadline.

---@class hearth.HttpRequest
---@field url string http or https only. `{{secret:NAME}}` in the path or query is replaced by the secret's value (percent-encoded) after the egress checks.
---@field method? string Defaults to "GET".
---@field headers? table<string, string> `{{secret:NAME}}` in a value is replaced by the secret's value; not in a name.
---@field body? string
---@field timeout_ms? integer At most [scripts.http] timeout_ms.

---@class hearth.HttpResponse
---@field status integer
---@field headers table<string, string> Secrets' values appear as `[secret:NAME]`.
---@field body string Secrets' values appear as `[secret:NAME]`.

---@class hearthlib
hearth = {}

---@class hearth.json
hearth.json = {}

---The JSON `null`: a JSON null arrives as this value, and this value
---encodes as null.
---@type lightuserdata
hearth.json.null = nil

---Encodes a value as JSON (keys sorted).
---@param value any
---@return string
function hearth.json.encode(value) end

---Decodes JSON; arrays stay arrays (even when empty), null is `hearth.json.null`.
---@param text string
---@return any
function hearth.json.decode(text) end

---Marks a table (or a new one) as an array, so that an empty one encodes as `[]`.
---@generic T: table
---@param t? T
---@return T
function hearth.json.array(t) end

---Writes a line to the daemon's log.
---@param message any
---@param level? "error"|"warn"|"info"|"debug" Defaults to "info".
function hearth.log(message, level) end

---Seconds since the Unix epoch, with fractions.
---@return number
function hearth.now() end

---@class hearth.time
hearth.time = {}

---Formats a Unix time in UTC: %Y %m %d %H %M %S %j %a %A %b %B %s %Z %z %%.
---@param format string
---@param t? number Defaults to now.
---@return string
function hearth.time.format(format, t) end

---A Unix time as ISO 8601 in UTC, like 2026-11-21T13:43:02Z.
---@param t? number Defaults to now.
---@return string
function hearth.time.iso(t) end

---Pauses this call (only this one). Sleeping past the deadline ends the call.
---@param seconds number
function hearth.sleep(seconds) end

---@class hearth.kv
hearth.kv = {}

---The stored value for `key` in this script's namespace, or nil.
---@param key string 1-256 bytes.
---@return any
function hearth.kv.get(key) end

---Stores any JSON-able value (nil deletes). Persistent across restarts.
---@param key string 1-256 bytes.
---@param value any At most 1 MiB as JSON.
function hearth.kv.set(key, value) end

---Deletes a key; true if it existed.
---@param key string
---@return boolean
function hearth.kv.delete(key) end

---Calls another tool through the registry (validation and policy apply).
---@param name string
---@param args? table
---@return any
function hearth.tool(name, args) end

---@class hearth.db
hearth.db = {}

---@class hearth.DbRows
---@field rows table[] One table per row, keyed by column name.
---@field truncated boolean True when rows were left out (over 500 rows or 256 KiB).

---@class hearth.DbWrite
---@field columns string[]
---@field rows any[][]
---@field changes integer Rows the statement changed.
---@field last_insert_rowid integer

---Runs one read-only statement on the agent's database (agent_data.db), on a
---connection opened read-only. Values go in `params`: an array for `?`, a
---table for `:name`. A statement that would write is an error.
---@param sql string
---@param params? table
---@return hearth.DbRows
function hearth.db.query(sql, params) end

---Runs one statement that may write (CREATE, INSERT, UPDATE, DELETE) on the
---agent's database, as an `execute_sql` call (ruled and audited as a write).
---@param sql string
---@param params? table
---@return hearth.DbWrite
function hearth.db.exec(sql, params) end

---@class hearth.http
hearth.http = {}

---Makes an HTTP request under hearth's egress rules (no private, loopback or
---metadata addresses unless allowed, checked after DNS and on redirects).
---The owner's secrets are used by name: write `{{secret:NAME}}` in a header
---value or the url's path or query, and the host puts the value in; an
---unknown name, or a placeholder anywhere else in the url, is an error.
---@param request hearth.HttpRequest
---@return hearth.HttpResponse
function hearth.http.request(request) end

---Loads a library: `lib/<name>.lua` under $HEARTH_HOME (or the bundled
---scripts), run once per call in a fresh environment, from the same
---snapshot of the scripts as the calling tool. Give a library its own
---`---@meta` file or annotate its returned table, and LuaLS follows
---`require("name")` to it when `lib/` is on the workspace's library path.
---A missing library or a cycle is an error at the line of the `require`.
---@param name string
---@return any
function require(name) end
