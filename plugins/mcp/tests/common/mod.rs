//! What the crate's tests share: a host on the real plugin ABI, and the
//! script server (`fixtures/script_server.mjs`) over stdio or HTTP.
//!
//! The SDK builds a `Host` only inside its export glue, from the C table a
//! host passes to `init`. So the tests play host: they fill a
//! `HostApi` whose callbacks answer `host.info`, `kv.*` and `tools.set`
//! (recording each), hand it to a one-line plugin's `init` through the
//! glue to obtain the `Host`, and give that to `Mcp::init`, exactly as the
//! daemon would.

// Each test file compiles this module on its own and uses a part of it.
#![allow(dead_code)]

use std::cell::Cell;
use std::collections::HashMap;
use std::ffi::c_void;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hearth_mcp::Mcp;
use hearth_sdk::abi::{self, HearthSink, HearthStr, HostApi, ReceiveFn};
use hearth_sdk::export::StaticHeader;
use hearth_sdk::protocol::{Description, PartStatus, ToolCall, ToolOutput, ToolSpec, ToolsUpdate};
use hearth_sdk::{Host, Plugin, PluginError};
use serde_json::{Value, json};

/// The host side: what the plugin stored and told.
pub struct TestHost {
    pub home: tempfile::TempDir,
    /// `false`: `kv.*` answer UNSUPPORTED, as a host without the store.
    pub kv_supported: bool,
    pub kv: Mutex<HashMap<String, Value>>,
    /// Every `tools.set`, in order.
    pub tool_sets: Mutex<Vec<Vec<ToolSpec>>>,
    /// Every log line: (level, target, message).
    pub logs: Mutex<Vec<(u32, String, String)>>,
    /// Every piece of live output (`tool.output`).
    pub outputs: Mutex<Vec<ToolOutput>>,
}

impl TestHost {
    pub fn new() -> Arc<TestHost> {
        TestHost::with_kv(true)
    }

    pub fn with_kv(kv_supported: bool) -> Arc<TestHost> {
        Arc::new(TestHost {
            home: tempfile::tempdir().expect("a temporary home"),
            kv_supported,
            kv: Mutex::default(),
            tool_sets: Mutex::default(),
            logs: Mutex::default(),
            outputs: Mutex::default(),
        })
    }

    /// The names in the last `tools.set`, if any.
    pub fn last_tool_set(&self) -> Option<Vec<String>> {
        self.tool_sets
            .lock()
            .unwrap()
            .last()
            .map(|tools| tools.iter().map(|t| t.name.clone()).collect())
    }

    /// A `Host` for this host, through the SDK's export glue.
    fn host(self: &Arc<Self>) -> Host {
        let api = HostApi {
            struct_size: std::mem::size_of::<HostApi>() as u32,
            abi_major: abi::ABI_MAJOR,
            abi_minor: abi::ABI_MINOR,
            ctx: Arc::as_ptr(self) as *mut c_void,
            log: Some(host_log),
            submit: None,
            call: Some(host_call),
            write_result: Some(write_result),
        };
        static GRAB: StaticHeader = StaticHeader::built_in::<Grab>();
        // SAFETY: `as_ptr` points at the static header above.
        let header = unsafe { &*GRAB.as_ptr() };
        let mut state: *mut c_void = std::ptr::null_mut();
        let mut error: Vec<u8> = Vec::new();
        // SAFETY: the API table and the error buffer outlive the call; the
        // table's context (this host) outlives every use of the Host, since
        // the fixture drops the plugin first.
        let status = unsafe {
            (header.init.expect("init"))(
                &api,
                HearthStr::empty(),
                &mut state,
                (&mut error as *mut Vec<u8>).cast::<HearthSink>(),
            )
        };
        assert_eq!(
            status,
            abi::status::OK,
            "{}",
            String::from_utf8_lossy(&error)
        );
        // SAFETY: the state `init` made, freed once.
        unsafe { (header.shutdown.expect("shutdown"))(state) };
        GRABBED.with(|g| g.take()).expect("the glue built a Host")
    }
}

thread_local! {
    static GRABBED: Cell<Option<Host>> = const { Cell::new(None) };
}

/// A plugin whose `init` only hands its `Host` to the test.
struct Grab;

impl Plugin for Grab {
    const NAME: &'static str = "grab";
    const VERSION: &'static str = "0";

    fn init(host: Host, _config: Value) -> Result<Self, PluginError> {
        GRABBED.with(|g| g.set(Some(host)));
        Ok(Grab)
    }

    fn describe(&self) -> Description {
        Description::default()
    }

    fn call_tool(&self, _tool: &str, _args: Value) -> Result<Value, PluginError> {
        Err(PluginError::failed("none"))
    }
}

fn text(s: HearthStr) -> String {
    // SAFETY: the plugin passes valid bytes for the duration of the call.
    String::from_utf8_lossy(unsafe { s.as_bytes() }).into_owned()
}

unsafe extern "C" fn host_log(ctx: *mut c_void, level: u32, target: HearthStr, message: HearthStr) {
    // SAFETY: ctx is the TestHost the fixture keeps alive.
    let host = unsafe { &*(ctx as *const TestHost) };
    let line = (level, text(target), text(message));
    if std::env::var_os("MCP_TEST_LOG").is_some() {
        eprintln!("[{}] {}: {}", line.0, line.1, line.2);
    }
    host.logs.lock().unwrap().push(line);
}

unsafe extern "C" fn write_result(sink: *mut HearthSink, bytes: HearthStr) {
    // SAFETY: every sink this test host passes is a `Vec<u8>`.
    unsafe { (*sink.cast::<Vec<u8>>()).extend_from_slice(bytes.as_bytes()) };
}

unsafe extern "C" fn host_call(
    ctx: *mut c_void,
    service: HearthStr,
    request: HearthStr,
    user: *mut c_void,
    receive: Option<ReceiveFn>,
) -> i32 {
    // SAFETY: as in host_log.
    let host = unsafe { &*(ctx as *const TestHost) };
    let request: Value = serde_json::from_str(&text(request)).unwrap_or(Value::Null);
    let answer = match text(service).as_str() {
        "host.info" => json!({
            "version": "test", "abi_major": 1, "abi_minor": 0,
            "home": host.home.path(), "mode": "production", "confine_to": [], "serving": true,
        }),
        "kv.get" if host.kv_supported => {
            let key = request["key"].as_str().unwrap_or_default();
            json!({"value": host.kv.lock().unwrap().get(key).cloned()})
        }
        "kv.set" if host.kv_supported => {
            let key = request["key"].as_str().unwrap_or_default().to_owned();
            let mut kv = host.kv.lock().unwrap();
            if request["value"].is_null() {
                kv.remove(&key);
            } else {
                kv.insert(key, request["value"].clone());
            }
            json!({})
        }
        "tool.output" => {
            let piece: ToolOutput = serde_json::from_value(request).expect("a ToolOutput");
            host.outputs.lock().unwrap().push(piece);
            json!({})
        }
        "tools.set" => {
            let update: ToolsUpdate = serde_json::from_value(request).expect("a ToolsUpdate");
            host.tool_sets.lock().unwrap().push(update.tools);
            json!({"skipped": []})
        }
        _ => return abi::status::UNSUPPORTED,
    };
    let bytes = answer.to_string();
    if let Some(receive) = receive {
        // SAFETY: `user` is the plugin's, valid for this call.
        unsafe { receive(user, HearthStr::from_str(&bytes)) };
    }
    abi::status::OK
}

/// A plugin on a test host. Dropping it shuts the plugin down first.
pub struct Fixture {
    pub mcp: Option<Mcp>,
    pub host: Arc<TestHost>,
}

impl Fixture {
    /// The plugin with `[plugins.mcp]` = `config`, on a fresh host.
    pub fn new(config: Value) -> Fixture {
        Fixture::on(TestHost::new(), config).expect("the plugin starts")
    }

    /// The plugin on `host` (its store kept from an earlier instance).
    pub fn on(host: Arc<TestHost>, config: Value) -> Result<Fixture, String> {
        let mcp = Mcp::init(host.host(), config).map_err(|e| e.to_string())?;
        Ok(Fixture {
            mcp: Some(mcp),
            host,
        })
    }

    pub fn mcp(&self) -> &Mcp {
        self.mcp.as_ref().expect("running")
    }

    /// The names of the tools offered now.
    pub fn tool_names(&self) -> Vec<String> {
        self.mcp().tools().into_iter().map(|t| t.name).collect()
    }

    /// Waits until the plugin offers `tool`.
    pub fn wait_for_tool(&self, tool: &str) {
        eventually(Duration::from_secs(15), &format!("the tool {tool}"), || {
            self.tool_names().iter().any(|t| t == tool)
        });
    }

    pub fn call(&self, tool: &str, args: Value) -> Result<Value, String> {
        self.mcp().call_tool(tool, args).map_err(|e| e.to_string())
    }

    /// A call the owner can stop, with the host's `call_id`.
    pub fn call_as(&self, tool: &str, args: Value, call_id: &str) -> Result<Value, String> {
        self.mcp()
            .run_call(ToolCall {
                tool: tool.into(),
                args,
                floor: None,
                call_id: Some(call_id.into()),
                secrets: Vec::new(),
            })
            .map_err(|e| e.to_string())
    }

    pub fn ok(&self, tool: &str, args: Value) -> Value {
        self.call(tool, args.clone())
            .unwrap_or_else(|e| panic!("{tool} {args}: {e}"))
    }

    pub fn fails(&self, tool: &str, args: Value) -> String {
        match self.call(tool, args.clone()) {
            Ok(v) => panic!("{tool} {args} should fail, got {v}"),
            Err(e) => e,
        }
    }

    /// The status of the server `name`.
    pub fn status(&self, name: &str) -> PartStatus {
        self.mcp()
            .status()
            .expect("a status")
            .parts
            .into_iter()
            .find(|p| p.name == name)
            .unwrap_or_else(|| panic!("no server {name}"))
    }

    /// Waits until `name`'s status satisfies `done`; returns it.
    pub fn wait_status(
        &self,
        name: &str,
        what: &str,
        done: impl Fn(&PartStatus) -> bool,
    ) -> PartStatus {
        let mut last = None;
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(15) {
            let status = self.status(name);
            if done(&status) {
                return status;
            }
            last = Some(status);
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!("timed out waiting for {name} to be {what}; last: {last:?}");
    }

    /// Shuts the plugin down now.
    pub fn shutdown(&mut self) {
        if let Some(mcp) = self.mcp.take() {
            mcp.shutdown();
        }
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// The script server's path.
pub fn script() -> String {
    format!(
        "{}/tests/fixtures/script_server.mjs",
        env!("CARGO_MANIFEST_DIR")
    )
}

/// A stdio server table running the script with `args`.
pub fn stdio(args: &[&str]) -> Value {
    let mut all = vec![script()];
    all.extend(args.iter().map(|a| (*a).to_owned()));
    json!({"command": "node", "args": all})
}

/// `[plugins.mcp]` with these servers.
pub fn servers(servers: Value) -> Value {
    json!({ "servers": servers })
}

/// The script server listening on HTTP; killed when dropped.
pub struct HttpServer {
    child: Child,
    pub url: String,
}

impl HttpServer {
    pub fn start(args: &[&str]) -> HttpServer {
        let mut command = Command::new("node");
        command
            .arg(script())
            .args(["--http", "0"])
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        // SAFETY: prctl is async-signal-safe. The server dies with this
        // test's thread, even when the test process is killed.
        unsafe {
            std::os::unix::process::CommandExt::pre_exec(&mut command, || {
                libc::prctl(
                    libc::PR_SET_PDEATHSIG,
                    libc::SIGKILL as libc::c_ulong,
                    0,
                    0,
                    0,
                );
                Ok(())
            });
        }
        let mut child = command.spawn().expect("node runs");
        let mut lines = BufReader::new(child.stderr.take().expect("stderr")).lines();
        let first = lines.next().expect("a first line").expect("readable");
        let url = first
            .strip_prefix("listening on ")
            .unwrap_or_else(|| panic!("unexpected first line {first:?}"))
            .to_owned();
        // Keep draining its stderr so it never blocks on a full pipe.
        std::thread::spawn(move || for _ in lines {});
        HttpServer { child, url }
    }

    /// A server table for it.
    pub fn config(&self) -> Value {
        json!({ "url": self.url })
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A URL on which nothing listens.
pub fn refused_url() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
    let port = listener.local_addr().expect("its address").port();
    drop(listener);
    format!("http://127.0.0.1:{port}/mcp")
}

/// Waits up to `limit` for `done`, panicking with `what` on timeout.
pub fn eventually(limit: Duration, what: &str, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < limit, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Whether `pid` is a live process (not a zombie).
pub fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state != "Z"),
        Err(_) => false,
    }
}

/// Sends `pid` SIGKILL.
pub fn kill9(pid: u32) {
    // SAFETY: kill(2) on a process this test's plugin started.
    unsafe { libc::kill(pid as i32, libc::SIGKILL) };
}

/// The text a tool answered.
pub fn text_of(result: &Value) -> &str {
    result["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text in {result}"))
}
