//! `hearth setup` takes a fresh home to a first reply from the (fake)
//! model: from its flags with `--yes` (the key on stdin), and at a terminal
//! answering its questions (the key typed without echo). The key lands in
//! the secret store, never in the config; a key the model refuses stops
//! the set-up with the reason, and nothing is written. With Telegram, the
//! owner's first message to the (fake) bot names the owner and the chat,
//! and the daemon then answers them there; with Signal, likewise through
//! the (fake) signal-cli daemon.

use std::process::{Command, Stdio};
use std::time::Duration;

use hearth_tests::fake_llm::{FakeLlm, anthropic_text};
use hearth_tests::pty::OnTerminal;
use hearth_tests::{Hearth, bin};

const KEY: &str = "sk-setup-test";

/// `hearth setup ARGS` for a fresh home, with no config named.
fn setup(home: &std::path::Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(bin());
    cmd.arg("setup")
        .args(args)
        .env("HEARTH_HOME", home)
        .env_remove("HEARTH_CONFIG")
        .env_remove("ANTHROPIC_API_KEY")
        .env("XDG_CONFIG_HOME", home.join("xdg"));
    cmd
}

/// The flags naming the fake model at `url`, then `extra`.
fn model_args(url: &str, extra: &[&str]) -> Vec<String> {
    [
        "--provider",
        "anthropic",
        "--model",
        "fake-model",
        "--base-url",
        url,
    ]
    .iter()
    .chain(extra)
    .map(|a| (*a).to_owned())
    .collect()
}

/// Runs `cmd` with `input` on stdin; exit status and stderr.
fn with_input(mut cmd: Command, input: &str) -> (bool, String) {
    use std::io::Write;
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run hearth setup");
    child
        .stdin
        .take()
        .expect("piped")
        .write_all(input.as_bytes())
        .expect("write stdin");
    let out = child.wait_with_output().expect("wait");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The home after setup, its canvas moved off the fixed port so tests run
/// side by side, and a first message answered through it.
fn first_reply(home: tempfile::TempDir, fake: &FakeLlm) {
    let config = home.path().join("hearth.toml");
    let text = std::fs::read_to_string(&config).unwrap();
    assert!(
        text.contains("api_key_secret = \"ANTHROPIC_API_KEY\""),
        "{text}"
    );
    assert!(!text.contains(KEY), "the key is in the config:\n{text}");
    let secrets = std::fs::read_to_string(home.path().join("secrets.json")).unwrap();
    assert!(secrets.contains(KEY), "the key is not in the secret store");
    std::fs::write(&config, text.replace("127.0.0.1:8080", "127.0.0.1:0")).unwrap();
    let h = Hearth::at(home);
    fake.push(anthropic_text("Hello from the fake model."));
    let _daemon = h.daemon();
    let reply = h.chat("hello").ok().to_owned();
    assert!(reply.contains("Hello from the fake model."), "{reply}");
}

#[test]
fn flags_and_yes_take_a_fresh_home_to_a_first_reply() {
    let fake = FakeLlm::start();
    fake.require_key(KEY);
    let home = tempfile::tempdir().unwrap();
    let url = fake.url();
    let args = model_args(
        &url,
        &[
            "--mode",
            "development",
            "--timezone",
            "Europe/Berlin",
            "--yes",
        ],
    );
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (ok, stderr) = with_input(setup(home.path(), &args), &format!("{KEY}\n"));
    assert!(ok, "{stderr}");
    assert!(stderr.contains("fake-model answers"), "{stderr}");
    let text = std::fs::read_to_string(home.path().join("hearth.toml")).unwrap();
    for line in [
        "mode = \"development\"",
        "timezone = \"Europe/Berlin\"",
        &format!("home = \"{}\"", home.path().display()),
    ] {
        assert!(text.contains(line), "{line} missing:\n{text}");
    }
    // A second run does not overwrite what the first wrote.
    let (ok, stderr) = with_input(setup(home.path(), &args), &format!("{KEY}\n"));
    assert!(!ok && stderr.contains("--force"), "{stderr}");
    first_reply(home, &fake);
}

#[test]
fn at_a_terminal_the_questions_are_answered_and_the_key_is_not_shown() {
    let fake = FakeLlm::start();
    fake.require_key(KEY);
    let home = tempfile::tempdir().unwrap();
    // The one flag: a hosted provider's address is not asked, and this one
    // is the fake's.
    let url = fake.url();
    let mut terminal = OnTerminal::spawn(setup(home.path(), &["--base-url", &url]));
    let wait = Duration::from_secs(20);
    terminal.wait_for("Model provider", wait);
    terminal.type_line("anthropic");
    terminal.wait_for("Model [", wait);
    terminal.type_line("fake-model");
    terminal.wait_for("API key", wait);
    terminal.type_line(KEY);
    terminal.wait_for("Mode (production", wait);
    terminal.type_line("");
    terminal.wait_for("time zone", wait);
    terminal.type_line("UTC");
    terminal.wait_for("Set up Telegram", wait);
    terminal.type_line("");
    terminal.wait_for("Set up Signal", wait);
    terminal.type_line("");
    terminal.wait_for("Turn on the heartbeat", wait);
    terminal.type_line("y");
    let screen = terminal.wait_for("Install hearth as a service", Duration::from_secs(60));
    assert!(!screen.contains(KEY), "the key was shown:\n{screen}");
    terminal.type_line("n");
    let (code, _, screen) = terminal.finish(wait);
    assert_eq!(code, Some(0), "{screen}");
    let text = std::fs::read_to_string(home.path().join("hearth.toml")).unwrap();
    assert!(text.contains("mode = \"production\""), "{text}");
    // The heartbeat, turned on by its one question, with a checklist to
    // start from.
    assert!(
        text.contains("[heartbeat]\n") && text.contains("enabled = true"),
        "{text}"
    );
    let checklist = std::fs::read_to_string(home.path().join("HEARTBEAT.md")).unwrap();
    assert!(checklist.contains("# Heartbeat checklist"), "{checklist}");
}

#[test]
fn a_refused_key_stops_the_setup_with_the_reason_and_writes_nothing() {
    let fake = FakeLlm::start();
    fake.require_key(KEY);
    let home = tempfile::tempdir().unwrap();
    let url = fake.url();
    let args = model_args(&url, &["--yes"]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (ok, stderr) = with_input(setup(home.path(), &args), "sk-wrong\n");
    assert!(!ok, "{stderr}");
    assert!(
        stderr.contains("401") && stderr.contains("refused the key"),
        "{stderr}"
    );
    assert!(!home.path().join("hearth.toml").exists());
    let bad = [
        (&["--provider", "bard", "--yes"][..], "not a provider"),
        (
            &["--provider", "local", "--mode", "reckless", "--yes"],
            "not a mode",
        ),
        (
            &["--provider", "local", "--timezone", "Mars/Olympus", "--yes"],
            "not a time zone",
        ),
    ];
    for (args, expected) in bad {
        let (ok, stderr) = with_input(setup(home.path(), args), "");
        assert!(!ok && stderr.contains(expected), "{args:?}: {stderr}");
    }
}

#[test]
fn telegram_is_set_up_from_the_owners_first_message() {
    use hearth_tests::fake_telegram::FakeTelegram;
    let fake = FakeLlm::start();
    fake.require_key(KEY);
    let token = "4242:setup-token";
    let telegram = std::sync::Arc::new(FakeTelegram::start(token));
    // A message from before the set-up is not the owner's answer.
    telegram.push_message(555, 555, "an old message");
    let home = tempfile::tempdir().unwrap();
    let (url, api) = (fake.url(), telegram.url());
    let args = model_args(
        &url,
        &[
            "--telegram",
            "--telegram-api",
            &api,
            "--telegram-wait",
            "30",
            "--yes",
        ],
    );
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let cmd = setup(home.path(), &args);
    let owner = std::thread::spawn({
        let telegram = std::sync::Arc::clone(&telegram);
        move || {
            // Setup polls once the token is checked: then the owner writes.
            let polled = telegram.wait_for_requests(3, Duration::from_secs(20));
            assert!(polled, "setup never polled: {:?}", telegram.requests());
            telegram.push_message(777, 777, "hi, it's me");
        }
    });
    let (ok, stderr) = with_input(cmd, &format!("{KEY}\n{token}\n"));
    owner.join().unwrap();
    assert!(ok, "{stderr}");
    let text = std::fs::read_to_string(home.path().join("hearth.toml")).unwrap();
    for line in [
        "telegram = [\"777\"]",
        "allowed_chat_ids = [777]",
        "token_secret = \"TELEGRAM_BOT_TOKEN\"",
    ] {
        assert!(text.contains(line), "{line} missing:\n{text}");
    }
    assert!(!text.contains(token), "the token is in the config:\n{text}");
    // The daemon runs with it: the owner's next message is answered there.
    std::fs::write(
        home.path().join("hearth.toml"),
        text.replace("127.0.0.1:8080", "127.0.0.1:0"),
    )
    .unwrap();
    let h = Hearth::at(home);
    fake.push(anthropic_text("Hello on Telegram."));
    let _daemon = h.daemon();
    telegram.push_message(777, 777, "hello?");
    let sent = telegram.wait_for_sent(1, Duration::from_secs(30));
    assert!(
        sent.iter().any(|s| s.text.contains("Hello on Telegram.")),
        "{:?}",
        sent.iter().map(|s| &s.text).collect::<Vec<_>>()
    );
}

#[test]
fn signal_is_set_up_from_the_owners_first_message() {
    use hearth_tests::fake_signal::FakeSignal;
    let fake = FakeLlm::start();
    fake.require_key(KEY);
    let account = "+15550001111";
    let signal = std::sync::Arc::new(FakeSignal::start(account));
    let home = tempfile::tempdir().unwrap();
    let (url, cli) = (fake.url(), signal.url());
    let args = model_args(
        &url,
        &[
            "--signal",
            "--signal-url",
            &cli,
            "--signal-account",
            account,
            "--signal-wait",
            "30",
            "--yes",
        ],
    );
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let owner = std::thread::spawn({
        let signal = std::sync::Arc::clone(&signal);
        move || {
            let until = std::time::Instant::now() + Duration::from_secs(20);
            while signal.streams_opened() == 0 && std::time::Instant::now() < until {
                std::thread::sleep(Duration::from_millis(20));
            }
            signal.push_message("+15557770000", "hi, it's me");
        }
    });
    let (ok, stderr) = with_input(setup(home.path(), &args), &format!("{KEY}\n"));
    owner.join().unwrap();
    assert!(ok, "{stderr}");
    let text = std::fs::read_to_string(home.path().join("hearth.toml")).unwrap();
    for line in [
        "signal = [\"+15557770000\"]",
        "allowed_numbers = [\"+15557770000\"]",
        "account = \"+15550001111\"",
    ] {
        assert!(text.contains(line), "{line} missing:\n{text}");
    }
    std::fs::write(
        home.path().join("hearth.toml"),
        text.replace("127.0.0.1:8080", "127.0.0.1:0"),
    )
    .unwrap();
    let h = Hearth::at(home);
    fake.push(anthropic_text("Hello on Signal."));
    let _daemon = h.daemon();
    signal.push_message("+15557770000", "hello?");
    let sent = signal.wait_for_sent(1, Duration::from_secs(30));
    assert!(
        sent.iter().any(|s| s.message.contains("Hello on Signal.")),
        "{:?}",
        sent.iter().map(|s| &s.message).collect::<Vec<_>>()
    );
}
