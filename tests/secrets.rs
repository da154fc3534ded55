//! The owner's secrets end to end: `hearth secret set` (the real binary,
//! the value on stdin), a Lua tool that uses one by name in `hearth.http`
//! against a local server that checks it, and a scan of everything the
//! value could leak into: every file in `$HEARTH_HOME` but `secrets.json`,
//! the daemon's log, every request body the model received, and the tool
//! results. Bad input at each new entry point gets a clear error.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hearth_tests::Hearth;
use hearth_tests::fake_llm::{FakeLlm, anthropic_text, anthropic_tool_use, system_prompt};
use serde_json::{Value, json};

/// The secret the tool uses: `/`, `+` and `=` make its URL form differ.
const VALUE: &str = "tok/9f8e+7d6c=5b4a-DO-NOT-LEAK";
/// [`VALUE`] percent-encoded, as it travels in a URL.
const VALUE_IN_URL: &str = "tok%2F9f8e%2B7d6c%3D5b4a-DO-NOT-LEAK";
/// A secret set while the daemon runs, then planted in a tool call.
const PLANTED: &str = "planted-value-31415926";

/// What the echo server saw: `(request target, Authorization header)`.
type Seen = Arc<Mutex<Vec<(String, Option<String>)>>>;

/// A server on 127.0.0.1 that answers 200 only when the Authorization
/// header is `Bearer VALUE` (else 401), echoing the header and the request
/// target in the body and the header in `x-echo`.
fn echo_server() -> (u16, Seen) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen: Seen = Arc::default();
    let sink = Arc::clone(&seen);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut first = String::new();
            if reader.read_line(&mut first).is_err() {
                continue;
            }
            let target = first.split(' ').nth(1).unwrap_or_default().to_owned();
            let mut auth = None;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line.trim().is_empty() {
                    break;
                }
                if let Some((name, value)) = line.split_once(':')
                    && name.eq_ignore_ascii_case("authorization")
                {
                    auth = Some(value.trim().to_owned());
                }
            }
            sink.lock().unwrap().push((target.clone(), auth.clone()));
            let auth = auth.unwrap_or_default();
            let status = if auth == format!("Bearer {VALUE}") {
                "200 OK"
            } else {
                "401 Unauthorized"
            };
            let body = format!("auth={auth} target={target}");
            let _ = write!(
                stream,
                "HTTP/1.1 {status}\r\nX-Echo: {auth}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    (port, seen)
}

/// A Lua tool calling `url` with the secret in the Authorization header.
const CALL_API: &str = r#"return {
  name = "call_api",
  description = "Calls the test API with the API token",
  parameters = { type = "object", properties = { url = { type = "string" } }, required = { "url" } },
  run = function(args, ctx)
    local r = hearth.http.request({
      url = args.url,
      headers = { Authorization = "Bearer {{secret:API_TOKEN}}" },
    })
    hearth.log("the API answered " .. r.body)
    return { status = r.status, body = r.body, echoed = r.headers["x-echo"] }
  end,
}
"#;

/// A Lua tool that logs and returns its argument.
const LOG_IT: &str = r#"return {
  name = "log_it",
  description = "Logs and returns a text",
  parameters = { type = "object", properties = { text = { type = "string" } }, required = { "text" } },
  run = function(args, ctx)
    hearth.log("log_it got " .. args.text)
    error("failed on " .. args.text)
  end,
}
"#;

/// A Lua tool making any request the caller describes.
const FETCH: &str = r#"return {
  name = "fetch",
  description = "Makes a request",
  run = function(args, ctx)
    return hearth.http.request({ url = args.url, headers = args.headers })
  end,
}
"#;

fn config(fake: &FakeLlm) -> String {
    format!(
        "[llm]\nprovider = \"anthropic\"\nmodel = \"fake-model\"\nbase_url = \"{}\"\n\
         api_key_env = \"HEARTH_TEST_API_KEY\"\nretry_base_ms = 10\nmax_retries = 3\n\
         [scripts.http]\nallow_private = true\n",
        fake.url()
    )
}

/// `hearth secret set NAME` with `value` on stdin (which it may not read
/// when it refuses the name first).
fn set(h: &Hearth, name: &str, value: &str) -> hearth_tests::Run {
    let mut child = h
        .command(&["secret", "set", name])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let value = value.to_owned();
    let writer = std::thread::spawn(move || {
        // A refused name closes the pipe unread: that is not a failure here.
        let _ = stdin.write_all(value.as_bytes());
    });
    let output = child.wait_with_output().unwrap();
    writer.join().unwrap();
    hearth_tests::Run::from(output)
}

/// Panics if any form of `value` is in any file under `home` but
/// `secrets.json`.
fn assert_no_file_holds(home: &Path, forms: &[&str]) {
    let mut dirs = vec![home.to_owned()];
    let mut scanned = 0;
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().map(Result::unwrap) {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.is_file() && path != home.join("secrets.json") {
                let text = String::from_utf8_lossy(&std::fs::read(&path).unwrap()).into_owned();
                for form in forms {
                    assert!(!text.contains(form), "{} holds {form}", path.display());
                }
                scanned += 1;
            }
        }
    }
    assert!(scanned >= 2, "hearth.db and more should have been scanned");
}

#[test]
fn a_secret_reaches_the_server_and_nowhere_else() {
    let (port, seen) = echo_server();
    let fake = FakeLlm::start();
    let url = format!("http://127.0.0.1:{port}/check?key={{{{secret:API_TOKEN}}}}");
    fake.push(anthropic_tool_use(
        Some("Calling the API."),
        "toolu_01",
        "call_api",
        &json!({ "url": url }),
    ));
    fake.push(anthropic_text("The API said yes."));
    let h = Hearth::new(&config(&fake));
    h.write("tools/call_api.lua", CALL_API);
    h.write("tools/log_it.lua", LOG_IT);

    // The real CLI, the value on stdin with the newline a terminal adds.
    let out = set(&h, "API_TOKEN", &format!("{VALUE}\n"));
    out.ok();
    assert!(!out.stderr.contains(VALUE), "{}", out.stderr);
    let mode = std::fs::metadata(h.home().join("secrets.json"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);

    let mut daemon = h.daemon_with(|cmd| {
        cmd.env("HEARTH_TEST_API_KEY", "sk-test-model-key-123456");
    });
    assert_eq!(h.chat("call the API").ok().trim(), "The API said yes.");

    // The server saw the real value, in the header and (encoded) in the URL.
    let requests = seen.lock().unwrap().clone();
    assert_eq!(
        requests,
        [(
            format!("/check?key={VALUE_IN_URL}"),
            Some(format!("Bearer {VALUE}"))
        )]
    );
    // The model saw the secret's name in the prompt and the marker where the
    // value came back, never the value.
    let bodies = fake.requests();
    assert_eq!(bodies.len(), 2);
    let system = system_prompt(&bodies[0].body);
    assert!(
        system.contains("## Secrets\n") && system.contains("API_TOKEN"),
        "{system}"
    );
    let result = bodies[1].body["messages"].to_string();
    assert!(
        result.contains(r#"\"status\":200"#)
            && result.contains("auth=Bearer [secret:API_TOKEN]")
            && result.contains("target=/check?key=[secret:API_TOKEN]")
            && result.contains(r#"\"echoed\":\"Bearer [secret:API_TOKEN]\""#),
        "{result}"
    );

    // The owner's own tool call through the daemon: the result is redacted.
    let out = h.cmd(&[
        "tool",
        "call",
        "call_api",
        &json!({ "url": url }).to_string(),
    ]);
    let answer: Value = serde_json::from_str(out.ok()).unwrap();
    assert_eq!(answer["echoed"], "Bearer [secret:API_TOKEN]", "{answer}");

    // A secret set while the daemon runs is redacted from the next call's
    // log line, error and audit row at once.
    set(&h, "PLANTED", PLANTED).ok();
    let planted = json!({ "text": format!("here: {PLANTED}") }).to_string();
    let out = h.cmd(&["tool", "call", "log_it", &planted]);
    let failure = out.fails();
    assert!(
        failure.contains("failed on here: [secret:PLANTED]") && !failure.contains(PLANTED),
        "{failure}"
    );
    daemon.wait_for_log(
        |l| l.contains("log_it got here: [secret:PLANTED]"),
        Duration::from_secs(10),
    );
    daemon.wait_for_log(
        |l| l.contains("the API answered auth=Bearer [secret:API_TOKEN]"),
        Duration::from_secs(10),
    );

    let forms = [VALUE, VALUE_IN_URL, PLANTED];
    let scan_logs_and_prompts = |logs: &[String]| {
        for line in logs {
            for form in forms {
                assert!(!line.contains(form), "the log holds {form}: {line}");
            }
        }
        for request in fake.requests() {
            for form in forms {
                assert!(
                    !request.body.to_string().contains(form),
                    "a request to the model holds {form}"
                );
            }
        }
    };
    // While it runs: the WAL holds the newest pages.
    std::thread::sleep(Duration::from_millis(300));
    assert_no_file_holds(h.home(), &forms);
    scan_logs_and_prompts(&daemon.logs());

    daemon.signal(libc::SIGTERM);
    daemon.wait_exit(Duration::from_secs(20));
    assert_no_file_holds(h.home(), &forms);
    scan_logs_and_prompts(&daemon.logs());

    // The audit and the history hold the markers where the values were.
    let db = h.db();
    let audit: Vec<String> = db
        .prepare("SELECT args || ' ' || coalesce(detail, '') FROM audit ORDER BY id")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert!(
        audit
            .iter()
            .any(|row| row.contains("here: [secret:PLANTED]")),
        "{audit:?}"
    );
    let history: String = db
        .query_row("SELECT group_concat(content, ' ') FROM messages", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert!(history.contains("[secret:API_TOKEN]"), "{history}");
}

#[test]
fn the_cli_sets_lists_and_removes_and_refuses_bad_input() {
    let h = Hearth::new("");
    let rule = "an upper-case letter A-Z first";
    let long = "A".repeat(65);
    for (name, why) in [
        ("lower", "starts with 'l'"),
        ("1ABC", "starts with '1'"),
        ("A-B", "contains '-'"),
        ("A B", "contains ' '"),
        (long.as_str(), "65 characters long"),
        ("", "it is empty"),
        ("ÄPI", "starts with 'Ä'"),
        ("API_ÄÖ", "contains 'Ä'"),
    ] {
        let err = set(&h, name, "a-fine-value").fails();
        assert!(
            err.contains(&format!("secret name {name:?} is invalid")) && err.contains(why),
            "{name:?}: {err}"
        );
        assert!(err.contains(rule), "{name:?}: {err}");
    }
    for empty in ["", "\n"] {
        let err = set(&h, "EMPTY", empty).fails();
        assert!(err.contains("value is empty"), "{err}");
    }
    let err = set(&h, "BIG", &"x".repeat(20_000)).fails();
    assert!(err.contains("over the limit of 16384"), "{err}");
    assert!(!h.home().join("secrets.json").exists());

    // The value is never taken from the command line.
    let err = h.cmd(&["secret", "set", "API_TOKEN", "the-value"]).fails();
    assert!(err.contains("unexpected argument"), "{err}");

    set(&h, "GITHUB_TOKEN", "ghp-first-value").ok();
    set(&h, "API_TOKEN", "api-value-1234").ok();
    set(&h, "GITHUB_TOKEN", "ghp-second-value").ok();
    let listed = h.cmd(&["secret", "list"]);
    let text = listed.ok();
    assert!(
        text.contains("API_TOKEN") && text.contains("GITHUB_TOKEN"),
        "{text}"
    );
    assert!(!text.contains("value"), "{text}");
    let json = h.cmd(&["secret", "list", "--json"]).json();
    let names: Vec<&str> = json
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["API_TOKEN", "GITHUB_TOKEN"]);
    assert!(json[0]["set_at_ms"].as_i64().unwrap() > 0);
    assert!(!json.to_string().contains("value"), "{json}");

    let err = h.cmd(&["secret", "rm", "NOPE"]).fails();
    assert!(
        err.contains("no secret named NOPE") && err.contains("API_TOKEN, GITHUB_TOKEN"),
        "{err}"
    );
    let err = h.cmd(&["secret", "rm", "no-pe"]).fails();
    assert!(err.contains("is invalid"), "{err}");
    h.cmd(&["secret", "rm", "API_TOKEN"]).ok();
    let json = h.cmd(&["secret", "list", "--json"]).json();
    assert_eq!(json.as_array().unwrap().len(), 1);

    // A file others may read is refused, naming the file and its mode.
    let file = h.home().join("secrets.json");
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o640)).unwrap();
    for args in [&["secret", "list"][..], &["secret", "rm", "GITHUB_TOKEN"]] {
        let err = h.cmd(args).fails();
        assert!(
            err.contains(&file.display().to_string())
                && err.contains("mode 0640")
                && err.contains("chmod 600"),
            "{err}"
        );
    }
}

#[test]
fn placeholders_stand_only_where_the_host_fills_them() {
    let (port, seen) = echo_server();
    let h = Hearth::new("[scripts.http]\nallow_private = true\n");
    h.write("tools/fetch.lua", FETCH);
    set(&h, "API_TOKEN", VALUE).ok();
    let rt = h.runtime();
    let fetch = |args: Value| rt.tools.call("fetch", args);
    let base = format!("http://127.0.0.1:{port}");

    let refused = [
        (
            json!({"url": "http://{{secret:API_TOKEN}}/x"}),
            "may stand only in the url's path or query",
        ),
        (
            json!({"url": format!("http://user:{{{{secret:API_TOKEN}}}}@127.0.0.1:{port}/")}),
            "may stand only in the url's path or query",
        ),
        (
            json!({"url": format!("{base}/#{{{{secret:API_TOKEN}}}}")}),
            "may stand only in the url's path or query",
        ),
        (
            json!({"url": format!("{base}/?k={{{{secret:MISSING}}}}")}),
            "no secret named MISSING is set (set it with `hearth secret set MISSING`); set now: API_TOKEN",
        ),
        (
            json!({"url": format!("{base}/?k={{{{secret:api-token}}}}")}),
            "bad secret placeholder at byte",
        ),
        (
            json!({"url": format!("{base}/?k={{{{secret:API_TOKEN")}),
            "is not closed by `}}`",
        ),
        (
            json!({"url": base.clone(), "headers": {"X-{{secret:API_TOKEN}}": "v"}}),
            "may stand only in a header's value",
        ),
        (
            json!({"url": base.clone(), "headers": {"Authorization": "Bearer {{secret:MISSING}}"}}),
            "header Authorization: no secret named MISSING",
        ),
    ];
    for (args, why) in refused {
        let err = fetch(args.clone()).unwrap_err().to_string();
        assert!(err.contains(why), "{args}: {err}");
        assert!(!err.contains(VALUE) && !err.contains(VALUE_IN_URL), "{err}");
    }
    assert!(seen.lock().unwrap().is_empty(), "no request should be sent");

    // In the path and the query, and in a header, the value is put in.
    let got = fetch(json!({
        "url": format!("{base}/p/{{{{secret:API_TOKEN}}}}?q={{{{secret:API_TOKEN}}}}"),
        "headers": {"Authorization": "Bearer {{secret:API_TOKEN}}"},
    }))
    .unwrap();
    assert_eq!(got["status"], 200, "{got}");
    assert_eq!(
        got["body"],
        "auth=Bearer [secret:API_TOKEN] target=/p/[secret:API_TOKEN]?q=[secret:API_TOKEN]"
    );
    assert_eq!(
        seen.lock().unwrap().last().unwrap().0,
        format!("/p/{VALUE_IN_URL}?q={VALUE_IN_URL}")
    );
    rt.stop(Duration::from_secs(5)).unwrap();

    // The egress rules judge the url before any value is put in.
    let h = Hearth::new("");
    h.write("tools/fetch.lua", FETCH);
    set(&h, "API_TOKEN", VALUE).ok();
    let rt = h.runtime();
    let before = seen.lock().unwrap().len();
    let err = rt
        .tools
        .call(
            "fetch",
            json!({"url": format!("{base}/?k={{{{secret:API_TOKEN}}}}")}),
        )
        .unwrap_err()
        .to_string();
    assert!(err.contains("may not reach it"), "{err}");
    assert_eq!(seen.lock().unwrap().len(), before);
    rt.stop(Duration::from_secs(5)).unwrap();
}

#[test]
fn secrets_set_at_the_same_moment_are_all_kept() {
    let h = Hearth::new("");
    let names: Vec<String> = (0..8).map(|i| format!("TOKEN_{i}")).collect();
    std::thread::scope(|s| {
        for name in &names {
            let h = &h;
            s.spawn(move || {
                set(h, name, &format!("value-of-{name}-long-enough"))
                    .ok()
                    .to_owned()
            });
        }
    });
    let listed = h.cmd(&["secret", "list", "--json"]).json();
    let shown: Vec<&str> = listed
        .as_array()
        .or_else(|| listed["secrets"].as_array())
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(shown, names, "{listed}");
}

/// The host's own credentials (the model's key, a channel's token named
/// by `<key>_secret`) are in the same store, but no script may put them in
/// a request: the agent cannot send the owner's keys where it likes.
#[test]
fn the_hosts_own_credentials_are_refused_to_scripts() {
    let (port, seen) = echo_server();
    let h = Hearth::new(
        "[llm]\nprovider = \"anthropic\"\nmodel = \"m\"\napi_key_secret = \"MODEL_KEY\"\n\
         [scripts.http]\nallow_private = true\n\
         [plugins.web]\nexample_secret = \"WEB_TOKEN\"\nenabled = false\n",
    );
    h.write("tools/fetch.lua", FETCH);
    for name in ["MODEL_KEY", "WEB_TOKEN", "API_TOKEN"] {
        set(&h, name, VALUE).ok();
    }
    let rt = h.runtime();
    let base = format!("http://127.0.0.1:{port}");
    for args in [
        json!({"url": format!("{base}/?k={{{{secret:MODEL_KEY}}}}")}),
        json!({"url": base.clone(), "headers": {"x-api-key": "{{secret:MODEL_KEY}}"}}),
        json!({"url": base.clone(), "headers": {"Authorization": "Bearer {{secret:WEB_TOKEN}}"}}),
    ] {
        let err = rt
            .tools
            .call("fetch", args.clone())
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("one of hearth's own credentials"),
            "{args}: {err}"
        );
    }
    assert!(seen.lock().unwrap().is_empty(), "no request should be sent");
    // A secret of the owner's for tools still works.
    let got = rt
        .tools
        .call(
            "fetch",
            json!({"url": base, "headers": {"Authorization": "Bearer {{secret:API_TOKEN}}"}}),
        )
        .unwrap();
    assert_eq!(got["status"], 200, "{got}");
    rt.stop(Duration::from_secs(5)).unwrap();
}
