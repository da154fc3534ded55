//! MCP servers through hearth, end to end: the real daemon with its
//! built-in MCP plugin, real servers from npm (`server-everything`,
//! `server-filesystem`, installed by `.ci/run` in `tests/mcp`) and the
//! plugin's scriptable test server, over stdio and Streamable HTTP.

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use hearth_tests::canvas::{self, Canvas};
use hearth_tests::fake_llm::{FakeLlm, anthropic_text, anthropic_tool_use};
use hearth_tests::{Daemon, Hearth, Run};
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(30);
const API_KEY: &str = "sk-test-mcp-DO-NOT-PASS-ON";

/// An npm-installed server's entry point.
fn npm_server(package: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("mcp/node_modules/@modelcontextprotocol")
        .join(package)
        .join("dist/index.js");
    assert!(
        path.is_file(),
        "{} is missing: run `npm ci` in tests/mcp (.ci/run does)",
        path.display()
    );
    path.display().to_string()
}

/// The MCP plugin's scriptable test server.
fn script() -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../plugins/mcp/tests/fixtures/script_server.mjs")
        .display()
        .to_string()
}

/// A `[plugins.mcp.servers.NAME]` table running `node` with `args`,
/// started with the daemon.
fn stdio(name: &str, args: &[&str], extra: &str) -> String {
    lazy(name, args, &format!("start = \"eager\"\n{extra}"))
}

/// The same, started by its first call (or once, to learn its tools).
fn lazy(name: &str, args: &[&str], extra: &str) -> String {
    format!("[plugins.mcp.servers.{name}]\ncommand = \"node\"\nargs = {args:?}\n{extra}\n")
}

/// Starts a daemon on `config` with the API key in its environment, and
/// waits until no server is still starting.
fn up(config: &str) -> (Hearth, Daemon) {
    let h = Hearth::new(config);
    let daemon = h.daemon_with(|cmd| {
        cmd.env("ANTHROPIC_API_KEY", API_KEY)
            .env("HEARTH_TEST_PASSED", "passed-on");
    });
    wait_until("every server to settle", || {
        servers(&h)
            .iter()
            .all(|s| s["state"] != "starting" && s["state"] != "idle")
    });
    (h, daemon)
}

/// `hearth mcp list --json`'s servers.
fn servers(h: &Hearth) -> Vec<Value> {
    h.cmd(&["mcp", "list", "--json"]).json()["servers"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

fn server(h: &Hearth, name: &str) -> Value {
    servers(h)
        .into_iter()
        .find(|s| s["name"] == name)
        .unwrap_or_else(|| panic!("no server {name}"))
}

fn call(h: &Hearth, tool: &str, args: Value) -> Run {
    h.cmd(&["tool", "call", tool, &args.to_string()])
}

fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < WAIT, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn has_tool(h: &Hearth, server_name: &str, tool: &str) -> bool {
    server(h, server_name)["tools"]
        .as_array()
        .is_some_and(|t| t.iter().any(|n| n == tool))
}

#[test]
fn server_everything_over_stdio_lists_calls_and_grows_its_tools() {
    let everything = npm_server("server-everything");
    let (h, _daemon) = up(&stdio(
        "everything",
        &[&everything, "stdio"],
        "risk = \"read\"",
    ));
    let shown = server(&h, "everything");
    assert_eq!(shown["state"], "up", "{shown}");
    assert!(
        shown["detail"]
            .as_str()
            .unwrap()
            .contains("stdio, protocol 2025-11-25"),
        "{shown}"
    );
    assert!(has_tool(&h, "everything", "mcp.everything.echo"), "{shown}");
    // Registered by the server after the handshake, announced with
    // notifications/tools/list_changed.
    wait_until("the tool the server adds late", || {
        has_tool(&h, "everything", "mcp.everything.simulate-research-query")
    });

    let echo = call(&h, "mcp.everything.echo", json!({"message": "hi there"})).json();
    assert_eq!(echo["text"], "Echo: hi there");

    // The server's environment holds the allow-list, never the API key.
    let env = call(&h, "mcp.everything.get-env", json!({})).json();
    let env = env["text"].as_str().unwrap();
    assert!(env.contains("\"PATH\""), "{env}");
    assert!(
        !env.contains(API_KEY) && !env.contains("ANTHROPIC_API_KEY"),
        "{env}"
    );
    assert!(!env.contains("HEARTH_TEST_PASSED"), "{env}");

    // An image comes back as a file the model is shown.
    let image = call(&h, "mcp.everything.get-tiny-image", json!({})).json();
    let path = image["image"]["path"].as_str().expect("an image path");
    let bytes = std::fs::read(path).unwrap();
    assert!(bytes.starts_with(b"\x89PNG"), "{image}");
    assert!(path.starts_with(&h.home().display().to_string()), "{path}");

    // hearth tools lists them with their source.
    let tools = h.cmd(&["tools", "--json"]).json();
    let row = tools["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["spec"]["name"] == "mcp.everything.get-sum")
        .cloned()
        .expect("get-sum listed");
    assert_eq!(row["source"], "plugin mcp");
    assert_eq!(row["spec"]["risk"], "read");
}

#[test]
fn pass_env_hands_a_named_variable_on() {
    let everything = npm_server("server-everything");
    let (h, _daemon) = up(&stdio(
        "everything",
        &[&everything, "stdio"],
        "pass_env = [\"HEARTH_TEST_PASSED\"]\nenv = { LITERAL = \"set-in-config\" }",
    ));
    let env = call(&h, "mcp.everything.get-env", json!({})).json();
    let env = env["text"].as_str().unwrap();
    assert!(
        env.contains("passed-on") && env.contains("set-in-config"),
        "{env}"
    );
    assert!(!env.contains(API_KEY), "{env}");
}

#[test]
fn server_filesystem_reads_inside_its_root_and_an_error_result_is_a_tool_error() {
    let filesystem = npm_server("server-filesystem");
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("note.txt"), "milk, eggs\n").unwrap();
    let root_path = root.path().canonicalize().unwrap().display().to_string();
    let (h, _daemon) = up(&stdio(
        "files",
        &[&filesystem, &root_path],
        "risk = \"read\"",
    ));
    let inside = format!("{root_path}/note.txt");
    let read = call(&h, "mcp.files.read_text_file", json!({"path": inside})).json();
    assert!(
        read["text"].as_str().unwrap().contains("milk, eggs"),
        "{read}"
    );

    let error = call(
        &h,
        "mcp.files.read_text_file",
        json!({"path": "/etc/hostname"}),
    )
    .fails();
    assert!(error.contains("mcp.files.read_text_file failed"), "{error}");
    assert!(error.to_lowercase().contains("access denied"), "{error}");
}

/// A child process killed when the test ends.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[test]
fn streamable_http_serves_the_same_tools() {
    let port = free_port();
    let _server = Killed(
        Command::new("node")
            .args([&npm_server("server-everything"), "streamableHttp"])
            .env("PORT", port.to_string())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start server-everything over HTTP"),
    );
    wait_until("the HTTP server to listen", || {
        std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
    });
    let (h, _daemon) = up(&format!(
        "[plugins.mcp.servers.web]\nurl = \"http://127.0.0.1:{port}/mcp\"\nstart = \"eager\"\nrisk = \"read\"\n"
    ));
    let shown = server(&h, "web");
    assert_eq!(shown["state"], "up", "{shown}");
    let echo = call(&h, "mcp.web.echo", json!({"message": "over http"})).json();
    assert_eq!(echo["text"], "Echo: over http");
    let sum = call(&h, "mcp.web.get-sum", json!({"a": 2, "b": 3})).json();
    assert!(sum["text"].as_str().unwrap().contains('5'), "{sum}");
}

#[test]
fn a_killed_server_restarts_and_a_hanging_call_times_out_alone() {
    let script = script();
    let config = lazy("flaky", &[&script], "risk = \"read\"\ntimeout_s = 1")
        + &stdio("steady", &[&script], "risk = \"read\"");
    let (h, _daemon) = up(&config);
    let pid: i32 = call(&h, "mcp.flaky.pid", json!({})).json()["text"]
        .as_str()
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // SAFETY: kill(2) on the server hearth started for this test.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGKILL) }, 0);
    wait_until("the server to be seen gone", || {
        server(&h, "flaky")["state"] == "down"
    });
    let echo = call(&h, "mcp.flaky.echo", json!({"text": "back"})).json();
    assert_eq!(echo["text"], "echo: back");
    let again: i32 = call(&h, "mcp.flaky.pid", json!({})).json()["text"]
        .as_str()
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert_ne!(again, pid);

    // A call that never answers is cut at its timeout; the other server
    // answers meanwhile.
    let hanging = {
        let config = h.config();
        let home = h.home().to_owned();
        std::thread::spawn(move || {
            let started = Instant::now();
            let out = Command::new(hearth_tests::bin())
                .arg("--config")
                .arg(config)
                .args(["tool", "call", "mcp.flaky.hang", "{}"])
                .env("HEARTH_HOME", home)
                .output()
                .unwrap();
            (out, started.elapsed())
        })
    };
    std::thread::sleep(Duration::from_millis(200));
    let started = Instant::now();
    let steady = call(&h, "mcp.steady.echo", json!({"text": "meanwhile"})).json();
    assert_eq!(steady["text"], "echo: meanwhile");
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "{:?}",
        started.elapsed()
    );
    let (out, took) = hanging.join().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("did not answer within 1 s"), "{stderr}");
    assert!(took < Duration::from_secs(5), "{took:?}");
    // The server that hung a call still serves.
    let echo = call(&h, "mcp.flaky.echo", json!({"text": "still"})).json();
    assert_eq!(echo["text"], "echo: still");
}

#[test]
fn bad_servers_are_reported_and_the_others_keep_serving() {
    let script = script();
    let refused = free_port();
    let config = stdio("good", &[&script], "risk = \"read\"")
        + "[plugins.mcp.servers.missing]\ncommand = \"/nonexistent/mcp-server\"\nstart = \"eager\"\n"
        + &format!(
            "[plugins.mcp.servers.refused]\nurl = \"http://127.0.0.1:{refused}/mcp\"\nstart = \"eager\"\n"
        )
        + &stdio(
            "garbage",
            &[&script, "--garbage", "only"],
            "startup_timeout_s = 2",
        )
        + &stdio("crashing", &[&script, "--exit-at-start"], "");
    let (h, _daemon) = up(&config);
    for (name, says) in [
        ("missing", "/nonexistent/mcp-server"),
        ("refused", &format!("127.0.0.1:{refused}")),
        ("garbage", "Hello world"),
        ("crashing", "cannot open database"),
    ] {
        let shown = server(&h, name);
        assert_eq!(shown["state"], "down", "{name}: {shown}");
        let detail = shown["detail"].as_str().unwrap();
        assert!(detail.contains(says), "{name}: {detail}");
    }
    let echo = call(&h, "mcp.good.echo", json!({"text": "fine"})).json();
    assert_eq!(echo["text"], "echo: fine");

    // An oversized answer is bounded, the whole kept in a file.
    let big = call(&h, "mcp.good.big", json!({"bytes": 2_000_000})).json();
    assert_eq!(big["truncated"], true, "{:.300}", big.to_string());
    let text = big["text"].as_str().unwrap();
    assert!(
        text.starts_with("HEAD") && text.ends_with("TAIL"),
        "{:.100}",
        text
    );
    assert!(text.len() < 300 * 1024, "{}", text.len());
    let kept = std::fs::read_to_string(big["log"].as_str().unwrap()).unwrap();
    assert!(kept.len() > 2_000_000);
    // The daemon serves on.
    let status = h.cmd(&["status"]).ok().to_owned();
    assert!(status.contains(", good up (stdio"), "{status}");
    assert!(status.contains("missing down ("), "{status}");
}

#[test]
fn bad_mcp_config_is_refused_naming_the_key() {
    for (config, says) in [
        (
            "[plugins.mcp.servers.fs]\ncommand = \"x\"\nrisk = \"rw\"\n",
            "plugins.mcp.servers.fs.risk",
        ),
        (
            "[plugins.mcp.servers.fs]\ncommand = \"x\"\nurl = \"http://127.0.0.1:1/mcp\"\n",
            "plugins.mcp.servers.fs",
        ),
        ("[plugins.mcp.servers.Bad]\ncommand = \"x\"\n", "Bad"),
        (
            "[plugins.mcp.servers.fs]\ncommand = \"x\"\ntimeout_s = 0\n",
            "plugins.mcp.servers.fs.timeout_s",
        ),
    ] {
        let h = Hearth::new(config);
        let out = h.cmd(&["check"]).fails();
        assert!(out.contains(says), "{config}: {out}");
    }
}

#[test]
fn an_exec_server_asks_on_the_canvas_in_development_mode_and_is_audited() {
    let fake = FakeLlm::start();
    fake.push(anthropic_tool_use(
        None,
        "t1",
        "mcp__script__echo",
        &json!({"text": "approved"}),
    ));
    fake.push(anthropic_text("done"));
    let config = format!(
        "{}[llm]\nprovider = \"anthropic\"\nmodel = \"fake-model\"\nbase_url = \"{}\"\n\
         api_key_env = \"HEARTH_TEST_API_KEY\"\nmax_retries = 0\n{}",
        canvas::CONFIG,
        fake.url(),
        stdio("script", &[&script()], "")
    );
    let h = Hearth::new(&config).in_mode("development");
    let _daemon = h.daemon_with(|cmd| {
        cmd.env("HEARTH_TEST_API_KEY", "sk-test");
    });
    // The server's tools join the registry once it has listed them; a
    // turn that starts earlier (a slow machine) would find no such tool.
    wait_until("the server's tools", || {
        has_tool(&h, "script", "mcp.script.echo")
    });
    let canvas = Canvas::of(h.home());
    let (mut ws, _) = canvas.connect();
    let home = h.home().to_owned();
    let chat = {
        let config = h.config();
        std::thread::spawn(move || {
            Command::new(hearth_tests::bin())
                .arg("--config")
                .arg(config)
                .args(["chat", "-m", "echo something"])
                .env("HEARTH_HOME", home)
                .output()
                .unwrap()
        })
    };
    let card = ws.wait_for(WAIT, |f| {
        f["type"] == "confirmation" && f["confirmation"]["state"] == "pending"
    });
    assert_eq!(card["confirmation"]["tool"], "mcp.script.echo", "{card}");
    ws.send(
        &json!({ "type": "confirm", "id": card["confirmation"]["id"], "approve": true })
            .to_string(),
    );
    let out = chat.join().unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "done");
    let told = fake.requests()[1].body["messages"].to_string();
    assert!(told.contains("echo: approved"), "{told}");

    let audit = h
        .cmd(&["audit", "--json", "--tool", "mcp.script.echo"])
        .json();
    let row = &audit.as_array().unwrap()[0];
    assert_eq!(row["approval"], "approved", "{row}");
    assert_eq!(row["outcome"], "ok", "{row}");
}
