//! The confirmation gate end to end: the model asks for `shell_exec`, the
//! card reaches the canvas over a real WebSocket, the owner answers there,
//! and the real shell plugin runs exactly the approved command, or nothing.
//! Every call ends up in the audit with its outcome and approver.

use std::path::Path;
use std::time::Duration;

use hearth_tests::canvas::{self, Canvas, Ws};
use hearth_tests::fake_llm::{FakeLlm, anthropic_text, anthropic_tool_use};
use hearth_tests::{Daemon, Hearth, plugin};
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(20);

/// How the test answers a card.
#[derive(Clone, Copy, Debug)]
enum Answer {
    Approve,
    Always,
    Deny,
    /// Leave it to time out.
    Ignore,
}

/// One model turn: the command it runs, and how the owner answers (`None`:
/// no card is expected, a grant covers it).
struct Turn {
    command: &'static str,
    answer: Option<Answer>,
}

fn home(fake: &FakeLlm, mode: &str) -> Hearth {
    let h = Hearth::with_plugins(
        &[plugin("canvas"), plugin("shell")],
        &format!(
            "{}[llm]\nprovider = \"anthropic\"\nmodel = \"fake-model\"\nbase_url = \"{}\"\n\
             api_key_env = \"HEARTH_TEST_API_KEY\"\n[policy]\nconfirm_timeout_ms = 3000\n",
            canvas::CONFIG,
            fake.url()
        ),
    )
    .in_mode(mode);
    // Confined commands make new files in a subfolder: in `$HEARTH_HOME`
    // itself, beside the credentials, they cannot (docs/security.md).
    std::fs::create_dir_all(h.home().join("work")).unwrap();
    h
}

fn start(h: &Hearth) -> (Daemon, Canvas) {
    let daemon = h.daemon_with(|cmd| {
        cmd.env("HEARTH_TEST_API_KEY", "sk-test");
    });
    (daemon, Canvas::of(h.home()))
}

/// Runs `turns` through the canvas, answering each card as the turn says;
/// returns the cards seen.
fn run_turns(fake: &FakeLlm, canvas: &Canvas, turns: &[Turn]) -> Vec<Value> {
    for turn in turns {
        fake.push(anthropic_tool_use(
            None,
            "t1",
            "shell_exec",
            &json!({ "command": turn.command }),
        ));
        fake.push(anthropic_text("done"));
    }
    let (mut ws, _) = canvas.connect();
    let mut cards = Vec::new();
    for (n, turn) in turns.iter().enumerate() {
        ws.send(&json!({ "type": "send", "id": format!("g-{n}"), "text": "go" }).to_string());
        let mut settled = None;
        let reply = ws.wait_for(WAIT, |f| {
            f["type"] == "message" && f["message"]["role"] == "agent"
                || f["type"] == "confirmation" && f["confirmation"]["state"] == "pending"
        });
        if reply["type"] == "confirmation" {
            let card = reply["confirmation"].clone();
            let answer = turn
                .answer
                .unwrap_or_else(|| panic!("{}: asked although a grant covers it", turn.command));
            answer_card(&mut ws, &card, answer);
            settled = Some(card);
            ws.wait_for(WAIT, |f| {
                f["type"] == "message" && f["message"]["role"] == "agent"
            });
        } else {
            assert!(
                turn.answer.is_none(),
                "{}: ran without asking",
                turn.command
            );
        }
        cards.extend(settled);
    }
    cards
}

fn answer_card(ws: &mut Ws, card: &Value, answer: Answer) {
    let id = card["id"].as_str().unwrap();
    let frame = match answer {
        Answer::Approve => json!({ "type": "confirm", "id": id, "approve": true }),
        Answer::Always => json!({ "type": "confirm", "id": id, "approve": true, "always": true }),
        Answer::Deny => json!({ "type": "confirm", "id": id, "approve": false }),
        Answer::Ignore => return,
    };
    ws.send(&frame.to_string());
}

fn audit(h: &Hearth) -> Vec<Value> {
    let rows = h.cmd(&["audit", "--json", "--tool", "shell_exec"]).json();
    rows.as_array().unwrap().clone()
}

fn read(home: &Path, file: &str) -> Option<String> {
    std::fs::read_to_string(home.join(file)).ok()
}

#[test]
fn approve_deny_and_timeout_through_the_canvas_run_exactly_what_was_approved() {
    let fake = FakeLlm::start();
    let h = home(&fake, "development");
    let (_daemon, canvas) = start(&h);
    let turns = [
        Turn {
            command: "printf '%s|' one 'two three' > work/approved.txt",
            answer: Some(Answer::Approve),
        },
        Turn {
            command: "touch work/denied.txt",
            answer: Some(Answer::Deny),
        },
        Turn {
            command: "touch work/expired.txt",
            answer: Some(Answer::Ignore),
        },
    ];
    let cards = run_turns(&fake, &canvas, &turns);
    assert_eq!(cards.len(), 3);
    for (card, turn) in cards.iter().zip(&turns) {
        assert_eq!(card["tool"], "shell_exec");
        assert_eq!(
            card["command"], turn.command,
            "the card shows the exact command"
        );
        assert_eq!(card["mode"], "development");
        assert!(
            card["cwd"]
                .as_str()
                .unwrap()
                .ends_with(h.home().file_name().unwrap().to_str().unwrap())
        );
    }
    // Exactly the approved argv ran: the words arrive as quoted.
    assert_eq!(
        read(h.home(), "work/approved.txt").as_deref(),
        Some("one|two three|")
    );
    assert_eq!(read(h.home(), "work/denied.txt"), None);
    assert_eq!(read(h.home(), "work/expired.txt"), None);

    let rows = audit(&h);
    let seen: Vec<(&str, &str, &str, &str)> = rows
        .iter()
        .map(|r| {
            (
                r["decision"].as_str().unwrap(),
                r["approval"].as_str().unwrap_or(""),
                r["approver"].as_str().unwrap_or(""),
                r["outcome"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            ("ask", "approved", "owner", "ok"),
            ("ask", "denied", "owner", "refused"),
            ("ask", "expired", "", "refused"),
        ]
    );
    assert!(rows.iter().all(|r| r["caller"] == "agent 1"));
    let told = fake.requests()[5].body["messages"].to_string();
    assert!(told.contains("did not answer within 3 s"), "{told}");
}

#[test]
fn a_command_altered_after_approval_asks_again() {
    let fake = FakeLlm::start();
    let h = home(&fake, "development");
    let (_daemon, canvas) = start(&h);
    let turns = [
        Turn {
            command: "touch work/a.txt",
            answer: Some(Answer::Always),
        },
        // The granted call runs without a card.
        Turn {
            command: "touch work/a.txt",
            answer: None,
        },
        // One byte more is another call: it asks, and is denied.
        Turn {
            command: "touch work/a.txt work/b.txt",
            answer: Some(Answer::Deny),
        },
        Turn {
            command: "touch  work/a.txt",
            answer: Some(Answer::Deny),
        },
    ];
    let cards = run_turns(&fake, &canvas, &turns);
    assert_eq!(cards.len(), 3);
    let prints: Vec<&str> = cards
        .iter()
        .map(|c| c["fingerprint"].as_str().unwrap())
        .collect();
    assert!(
        prints[0] != prints[1] && prints[1] != prints[2],
        "{prints:?}"
    );
    assert!(read(h.home(), "work/a.txt").is_some());
    assert_eq!(read(h.home(), "work/b.txt"), None);

    let approvals: Vec<String> = audit(&h)
        .iter()
        .map(|r| r["approval"].as_str().unwrap_or("").to_owned())
        .collect();
    assert_eq!(
        approvals,
        ["approved always", "granted", "denied", "denied"]
    );
}

#[test]
fn production_mode_runs_everyday_commands_and_asks_for_guarded_ones() {
    let fake = FakeLlm::start();
    let h = home(&fake, "production");
    let (_daemon, canvas) = start(&h);
    std::fs::create_dir_all(h.home().join("victim")).unwrap();
    let turns = [
        Turn {
            command: "ls -la > work/listing.txt",
            answer: None,
        },
        Turn {
            command: "r''m -rf victim /",
            answer: Some(Answer::Deny),
        },
    ];
    let cards = run_turns(&fake, &canvas, &turns);
    assert_eq!(cards.len(), 1);
    assert!(
        cards[0]["reason"].as_str().unwrap().contains("delete"),
        "{}",
        cards[0]
    );
    assert_eq!(cards[0]["mode"], "production");
    assert!(read(h.home(), "work/listing.txt").is_some());
    assert!(
        h.home().join("victim").is_dir(),
        "the denied delete did not run"
    );
}
