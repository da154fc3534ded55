//! `hearth doctor` end to end: beside a healthy daemon (real Telegram
//! plugin against the fake Bot API, the fake model) every check passes and
//! the live ones come through the control socket; a broken config, a
//! damaged or newer database, a readable secrets file and each way the
//! model can fail get a FAIL or WARN line with the fix, and the exit code
//! says whether anything failed.

use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use hearth_tests::fake_llm::FakeLlm;
use hearth_tests::telegram_home::TelegramHome;
use hearth_tests::{Hearth, Run};
use serde_json::Value;

/// `hearth doctor --json` on `h`, with no systemd unit to find.
fn doctor(h: &Hearth) -> Run {
    let units = tempfile::tempdir().unwrap();
    let out = h
        .command(&["doctor", "--json"])
        .env("XDG_CONFIG_HOME", units.path())
        .env("HEARTH_TEST_API_KEY", "sk-test")
        .output()
        .expect("run hearth doctor");
    Run::from(out)
}

/// The findings of a report.
fn findings(run: &Run) -> Vec<Value> {
    let report: Value = serde_json::from_str(&run.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}):\n{}\n{}", run.stdout, run.stderr));
    report["findings"].as_array().cloned().unwrap_or_default()
}

/// The first finding of `check`, as (level, detail, fix).
fn finding(run: &Run, check: &str) -> (String, String, String) {
    let all = findings(run);
    let f = all
        .iter()
        .find(|f| f["check"] == check)
        .unwrap_or_else(|| panic!("no {check:?} finding in {all:#?}"));
    let text = |k: &str| f[k].as_str().unwrap_or_default().to_owned();
    (text("level"), text("detail"), text("fix"))
}

/// A config with the fake model as `provider`, asking for `model`.
fn model_config(fake: &FakeLlm, provider: &str, model: &str, base: Option<&str>) -> String {
    let base = base.map_or_else(
        || match provider {
            "openai" => format!("{}/v1", fake.url()),
            _ => fake.url(),
        },
        str::to_owned,
    );
    format!(
        "[llm]\nprovider = \"{provider}\"\nmodel = \"{model}\"\nbase_url = \"{base}\"\n\
         api_key_env = \"HEARTH_TEST_API_KEY\"\nmax_retries = 0\n"
    )
}

#[test]
fn beside_a_healthy_daemon_every_check_passes_and_the_live_ones_come_from_it() {
    let t = TelegramHome::new("", "");
    t.llm.require_key("sk-test");
    let daemon = t.start();
    t.polled(1);
    let run = doctor(&t.home);
    assert!(run.status.success(), "{}\n{}", run.stdout, run.stderr);
    for check in ["config", "store", "disk", "daemon", "plugin telegram"] {
        assert_eq!(
            finding(&run, check).0,
            "ok",
            "{check}: {:?}",
            finding(&run, check)
        );
    }
    let (level, detail, _) = finding(&run, "channel telegram");
    assert_eq!(level, "ok", "{detail}");
    // Its last activity follows (channel_health.rs checks the times).
    assert!(
        detail.starts_with("up (long polling) for ")
            && detail.ends_with("; last in never, last out never"),
        "{detail}"
    );
    let (level, detail, _) = finding(&run, "model");
    assert_eq!(level, "ok");
    assert_eq!(detail, "fake-model (anthropic) is reachable");
    // The model was asked by the daemon, with the daemon's key, about
    // the model: no completion, so no tokens spent.
    let asked: Vec<_> = t
        .llm
        .requests()
        .into_iter()
        .filter(|r| r.path.starts_with("/v1/models"))
        .collect();
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0].path, "/v1/models/fake-model");
    assert_eq!(asked[0].header("x-api-key"), Some("sk-test"));
    daemon.wait_for_log(
        |l| l.contains("control request") && l.contains("\"op\":\"doctor\""),
        Duration::from_secs(10),
    );
    // The text form: one line per check, the worst verdict last.
    let text = t.home.cmd(&["doctor"]);
    assert!(text.ok().contains("OK    "), "{}", text.stdout);
    assert!(text.stdout.contains("channel telegram"), "{}", text.stdout);
}

#[test]
fn each_way_the_model_fails_names_the_cause_and_the_fix() {
    let fake = FakeLlm::start();
    fake.require_key("sk-test");
    fake.serve_models(&["fake-model", "llama3"]);
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", listener.local_addr().unwrap())
    };
    let cases: [(&str, String, &str, &str); 5] = [
        (
            "unknown model",
            model_config(&fake, "anthropic", "claude-nope", None),
            "claude-nope",
            "does not know this model",
        ),
        (
            "wrong key",
            model_config(&fake, "anthropic", "fake-model", None)
                .replace("HEARTH_TEST_API_KEY", "HEARTH_OTHER_KEY"),
            "401",
            "refused the key",
        ),
        (
            "not pulled",
            model_config(&fake, "openai", "mistral", None),
            "do not include",
            "pull the model",
        ),
        (
            "server down",
            model_config(&fake, "anthropic", "fake-model", Some(&closed)),
            "cannot reach",
            "cannot be reached",
        ),
        (
            "no section",
            String::new(),
            "no model configured",
            "add an [llm] section",
        ),
    ];
    for (case, config, detail, fix) in cases {
        let h = Hearth::new(&config);
        let run = {
            let mut cmd = h.command(&["doctor", "--json"]);
            cmd.env("HEARTH_TEST_API_KEY", "sk-test")
                .env("HEARTH_OTHER_KEY", "sk-wrong");
            Run::from(cmd.output().unwrap())
        };
        let (level, found, fixed) = finding(&run, "model");
        let expected = if case == "no section" { "warn" } else { "fail" };
        assert_eq!(level, expected, "{case}: {found}");
        assert!(found.contains(detail), "{case}: {found}");
        assert!(fixed.contains(fix), "{case}: {fixed}");
        assert_eq!(
            run.status.success(),
            case == "no section",
            "{case}: exit code"
        );
        // Without a daemon the plugins are loaded for the command.
        assert_eq!(finding(&run, "daemon").0, "warn", "{case}");
    }
    // The one listed model of the OpenAI-style server passes.
    let h = Hearth::new(&model_config(&fake, "openai", "llama3", None));
    let run = doctor(&h);
    assert_eq!(finding(&run, "model").0, "ok", "{}", run.stdout);
}

#[test]
fn an_html_error_page_is_reported_by_its_status_and_first_line() {
    // A proxy in front of the model answering with its own error page.
    let proxy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", proxy.local_addr().unwrap());
    std::thread::spawn(move || {
        use std::io::{Read, Write};
        for mut stream in proxy.incoming().map_while(Result::ok) {
            let mut request = [0u8; 4096];
            let _ = stream.read(&mut request);
            let body = "<!DOCTYPE html>\n<html><head><title>502 Bad Gateway</title>\
                        <style>body{margin:0}</style></head><body><center><h1>502 Bad \
                        Gateway</h1></center><hr><center>nginx</center></body></html>\n";
            let _ = write!(
                stream,
                "HTTP/1.1 502 Bad Gateway\r\ncontent-type: text/html\r\ncontent-length: {}\r\n\
                 connection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    let fake = FakeLlm::start();
    let h = Hearth::new(&model_config(&fake, "anthropic", "fake-model", Some(&url)));
    let run = doctor(&h);
    let (level, detail, _) = finding(&run, "model");
    assert_eq!(level, "fail", "{detail}");
    assert!(
        detail.contains("502") && detail.contains("Bad Gateway") && !detail.contains('<'),
        "{detail}"
    );
}

#[test]
fn a_broken_config_fails_with_its_line_and_the_rest_is_checked_anyway() {
    let h = Hearth::exact("mode = \"production\"\n[agent]\nname = \n");
    let run = doctor(&h);
    assert!(!run.status.success());
    let (level, detail, fix) = finding(&run, "config");
    assert_eq!(level, "fail");
    assert!(detail.contains("line 3"), "{detail}");
    assert!(fix.contains("edit the file"), "{fix}");
    // The home is still looked at (HEARTH_HOME names it).
    assert!(findings(&run).iter().any(|f| f["check"] == "home"));
    assert!(findings(&run).iter().any(|f| f["check"] == "disk"));
}

#[test]
fn a_damaged_or_newer_store_and_an_open_secrets_file_are_reported() {
    let h = Hearth::new("");
    // A store made by a real start, then damaged in its middle.
    assert!(doctor(&h).status.success());
    let db = h.home().join("hearth.db");
    {
        let conn = rusqlite::Connection::open(&db).unwrap();
        conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE); PRAGMA user_version = 999;")
            .unwrap();
    }
    let run = doctor(&h);
    let (level, detail, fix) = finding(&run, "store");
    assert_eq!(level, "fail");
    assert!(detail.contains("schema version 999"), "{detail}");
    assert!(fix.contains("backup"), "{fix}");
    assert_eq!(
        finding(&run, "plugins").0,
        "fail",
        "hearth cannot start on it"
    );

    let mut bytes = std::fs::read(&db).unwrap();
    let middle = bytes.len() / 2;
    for b in &mut bytes[middle..middle + 2048] {
        *b = 0x5a;
    }
    std::fs::write(&db, &bytes).unwrap();
    let run = doctor(&h);
    let (level, detail, _) = finding(&run, "store");
    assert_eq!(level, "fail", "{detail}");
    assert!(!run.status.success());

    let secrets = h.home().join("secrets.json");
    std::fs::write(&secrets, "{}").unwrap();
    std::fs::set_permissions(&secrets, std::fs::Permissions::from_mode(0o644)).unwrap();
    let run = doctor(&h);
    let open = findings(&run)
        .into_iter()
        .find(|f| {
            f["detail"]
                .as_str()
                .unwrap_or_default()
                .contains("secrets.json")
        })
        .expect("a finding about secrets.json");
    assert_eq!(open["level"], "fail", "{open}");
    assert!(
        open["fix"].as_str().unwrap().starts_with("chmod 600"),
        "{open}"
    );
}

#[test]
fn the_doctor_says_whether_a_browser_is_available() {
    let found = Hearth::new("");
    let (level, detail, _) = finding(&doctor(&found), "browser chromium");
    assert_eq!(level, "ok", "{detail}");
    assert!(detail.contains("starts on first use"), "{detail}");
    let missing = Hearth::new("[plugins.browser]\nexecutable = \"/nonexistent/chromium\"\n");
    let (level, detail, fix) = finding(&doctor(&missing), "browser chromium");
    assert_eq!(level, "warn", "{detail}");
    assert!(
        detail.contains("/nonexistent/chromium") && detail.contains("not offered"),
        "{detail}"
    );
    assert!(!fix.is_empty());
    let check = missing.cmd(&["check"]);
    assert!(
        check
            .stdout
            .contains("browser: [plugins.browser] executable \"/nonexistent/chromium\""),
        "{}",
        check.stdout
    );
}
