//! Contacts and the two gates end to end: the real daemon with the real
//! Telegram plugin against the fake Bot API, and the fake model answering
//! each agent by its name.
//!
//! The owner is 1001 and named in `[owner.identities]`; the allow-list
//! (the hard gate) holds the owner and Alex's private chat, 2002; 3003 is
//! outside it.

use hearth_tests::fake_llm::{anthropic_text, system_prompt};
use hearth_tests::telegram_home::{OWNER, TelegramHome as Setup};
use serde_json::{Value, json};

const ALEX: i64 = 2002;
const OUTSIDER: i64 = 3003;

/// A sub-agent named `name` with no tools, and Alex as its contact.
fn alex_with(s: &Setup, name: &str) {
    s.tool(
        "manage_agents",
        json!({"action": "create", "name": name, "allowed_tools": [],
               "system_prompt": format!("You are the {name} agent.")}),
    );
    s.tool(
        "manage_contacts",
        json!({"action": "add", "name": "Alex", "agent": name}),
    );
    s.tool(
        "manage_contacts",
        json!({"action": "add_identity", "name": "Alex", "channel": "telegram", "id": ALEX.to_string()}),
    );
}

/// Writes Olly, a contact whose only id lies outside the allow-list,
/// into the store before the daemon starts, as no tool would let it.
fn olly_outside(s: &Setup) {
    s.home.cmd(&["contacts"]).ok();
    let db = s.home.db();
    db.execute(
        "INSERT INTO contacts (display_name, agent_id, created_at_ms, updated_at_ms) \
         VALUES ('Olly', 1, 0, 0)",
        [],
    )
    .unwrap();
    db.execute(
        "INSERT INTO contact_identities (contact_id, channel, native_id, created_at_ms) \
         VALUES (last_insert_rowid(), 'telegram', ?1, 0)",
        [OUTSIDER.to_string()],
    )
    .unwrap();
}

fn inbox_rows_from(s: &Setup, sender: i64) -> i64 {
    s.home
        .db()
        .query_row(
            "SELECT COUNT(*) FROM inbox WHERE sender = ?1",
            [sender.to_string()],
            |r| r.get(0),
        )
        .unwrap()
}

/// The marker the fake model routes a sub-agent's requests by.
fn agent(name: &str) -> String {
    format!("You are {name}, one of the agents")
}

#[test]
fn a_contact_is_answered_by_their_agent_in_a_session_of_their_own() {
    let s = Setup::new("", "");
    s.llm.push(anthropic_text("Noted, Sam."));
    s.llm
        .push_for(&agent("shopping"), anthropic_text("Milk and eggs."));
    // The owner has a secret: its name is the main agent's to know only.
    s.home
        .cmd_with_input(
            &["secret", "set", "DOOR_API_TOKEN"],
            "value-of-the-door-token\n",
        )
        .ok();
    let _daemon = s.start();
    s.tool(
        "manage_knowledge",
        json!({"tier": "memory", "action": "add", "text": "Sam's door code is 4321"}),
    );
    alex_with(&s, "shopping");

    s.telegram
        .push_message(OWNER, OWNER, "my surprise party plan is secret");
    s.wait_sent_to(OWNER, 1);
    s.telegram.push_message(ALEX, ALEX, "what is on the list?");
    let to_alex = s.wait_sent_to(ALEX, 1);
    assert!(to_alex[0].text.contains("Milk and eggs."), "{to_alex:#?}");

    let requests = s.llm.requests();
    let shopping: Vec<&Value> = requests
        .iter()
        .map(|r| &r.body)
        .filter(|b| system_prompt(b).contains(&agent("shopping")))
        .collect();
    assert_eq!(shopping.len(), 1);
    let seen = shopping[0].to_string();
    // It has a memory of its own (empty), never the owner's.
    for private in ["4321", "door code", "surprise party", "DOOR_API_TOKEN"] {
        assert!(
            !seen.contains(private),
            "the sub-agent saw {private:?}: {seen}"
        );
    }
    let system = system_prompt(shopping[0]);
    let messages = shopping[0]["messages"].to_string();
    assert!(messages.contains("from Alex, a contact"), "{messages}");
    assert!(
        !system.contains(&ALEX.to_string()),
        "a raw id as identity: {system}"
    );

    // Each conversation has its own session; the owner's holds only theirs.
    let db = s.home.db();
    let sessions: Vec<(i64, String)> = db
        .prepare("SELECT agent_id, chat FROM sessions ORDER BY id")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(
        sessions,
        [(1, OWNER.to_string()), (2, ALEX.to_string())],
        "sessions"
    );
    let owner_session: String = db
        .query_row(
            "SELECT group_concat(content) FROM messages WHERE session_id = 1",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert!(!owner_session.contains("what is on the list"));
}

#[test]
fn inside_the_allow_list_without_a_contact_and_outside_it_get_silence() {
    let s = Setup::new("", "");
    olly_outside(&s);
    let _daemon = s.start();

    s.telegram.push_message(ALEX, ALEX, "hello?");
    s.telegram
        .push_message(OUTSIDER, OUTSIDER, "hello from outside");
    s.polled(3);
    assert!(s.telegram.sent().is_empty(), "{:#?}", s.telegram.sent());
    assert_eq!(inbox_rows_from(&s, ALEX), 0);
    assert_eq!(inbox_rows_from(&s, OUTSIDER), 0);
    assert!(s.llm.requests().is_empty());

    // And no tool puts an id outside the allow-list on a contact.
    let out = s.tool_fails(
        "manage_contacts",
        json!({"action": "add_identity", "name": "Olly", "channel": "telegram", "id": "4004"}),
    );
    assert!(out.contains("hard gate"), "{out}");
    assert!(out.contains("plugins.telegram.allowed_chat_ids"), "{out}");
}

#[test]
fn pairing_gives_one_code_an_hour_and_approval_lets_the_stranger_in() {
    let s = Setup::new("unknown_sender = \"pairing\"", "");
    s.llm
        .push_for(&agent("shopping"), anthropic_text("Hi Alex!"));
    let _daemon = s.start();
    s.tool(
        "manage_agents",
        json!({"action": "create", "name": "shopping", "allowed_tools": []}),
    );

    for text in ["hello?", "anyone there?", "please"] {
        s.telegram.push_message(ALEX, ALEX, text);
    }
    s.polled(3);
    let codes = s.wait_sent_to(ALEX, 1);
    s.polled(2);
    assert_eq!(
        s.sent_to(ALEX).len(),
        1,
        "one code, however often they write"
    );
    let code = codes[0]
        .text
        .split_whitespace()
        .last()
        .unwrap()
        .trim_end_matches('.')
        .to_owned();
    assert_eq!(code.len(), 6, "{}", codes[0].text);
    assert!(s.home.cmd(&["contacts"]).ok().contains(&code));

    let wrong = s.home.cmd(&["contacts", "approve", "ZZZZZZ"]).fails();
    assert!(wrong.contains("no pending pairing code"), "{wrong}");
    let approved = s
        .home
        .cmd(&[
            "contacts", "approve", &code, "--name", "Alex", "--agent", "shopping",
        ])
        .ok()
        .to_owned();
    assert!(approved.contains("Alex is a contact now"), "{approved}");

    s.telegram.push_message(ALEX, ALEX, "now?");
    let sent = s.wait_sent_to(ALEX, 2);
    assert!(sent[1].text.contains("Hi Alex!"));
    // Nothing they wrote before approval reached a model or the inbox.
    let seen: String = s
        .llm
        .requests()
        .iter()
        .map(|r| r.body.to_string())
        .collect();
    for early in ["hello?", "anyone there?", "please"] {
        assert!(!seen.contains(early), "{early} reached the model");
    }
    assert_eq!(inbox_rows_from(&s, ALEX), 1);
}

#[test]
fn send_message_goes_through_both_gates_and_names_the_one_that_refused() {
    let s = Setup::new("", "[agent]\nask_before_messaging_contacts = false\n");
    olly_outside(&s);
    let _daemon = s.start();
    alex_with(&s, "shopping");
    s.tool(
        "manage_contacts",
        json!({"action": "add", "name": "Blake", "agent": "shopping"}),
    );

    s.tool(
        "send_message",
        json!({"to": "Alex", "text": "Dinner at 8?"}),
    );
    s.tool("send_message", json!({"to": "owner", "text": "Told Alex."}));
    assert!(s.wait_sent_to(ALEX, 1)[0].text.contains("Dinner at 8?"));
    assert!(s.wait_sent_to(OWNER, 1)[0].text.contains("Told Alex."));

    s.tool(
        "manage_contacts",
        json!({"action": "disable", "name": "Alex"}),
    );
    let cases = [
        ("Alex", "soft gate: Alex is disabled"),
        ("Nobody", "soft gate: no contact named \"Nobody\""),
        ("Blake", "Blake has no id on a running channel"),
        (
            "Olly",
            "refused by the hard gate: telegram id \"3003\" is not in plugins.telegram.allowed_chat_ids",
        ),
    ];
    for (to, wanted) in cases {
        let out = s.tool_fails("send_message", json!({"to": to, "text": "x"}));
        assert!(out.contains(wanted), "{to}: {out}");
    }
}

#[test]
fn manage_contacts_refuses_bad_input_naming_the_field() {
    let s = Setup::new("", "");
    let _daemon = s.start();
    alex_with(&s, "shopping");
    let cases = [
        (json!({"action": "add"}), "field `name`: required"),
        (
            json!({"action": "add", "name": "  "}),
            "field `name`: required",
        ),
        (
            json!({"action": "add", "name": "owner"}),
            "always means the owner",
        ),
        (json!({"action": "add", "name": "ALEX"}), "already exists"),
        (
            json!({"action": "add", "name": "x".repeat(81)}),
            "args.name",
        ),
        (
            json!({"action": "add", "name": "Kim", "agent": "ghost"}),
            "field `agent`: no agent named \"ghost\"",
        ),
        (
            json!({"action": "update", "name": "Nobody"}),
            "no contact named \"Nobody\"",
        ),
        (
            json!({"action": "update", "name": "Sam"}),
            "kept from [owner]",
        ),
        (
            json!({"action": "add_identity", "name": "Alex", "channel": "fax", "id": "1"}),
            "no running channel \"fax\"",
        ),
        (
            json!({"action": "add_identity", "name": "Alex", "channel": "telegram", "id": OWNER.to_string()}),
            "already belongs to \"Sam\"",
        ),
        (
            json!({"action": "remove_identity", "name": "Alex", "channel": "telegram", "id": "5"}),
            "has no telegram id \"5\"",
        ),
        (
            json!({"action": "approve", "code": "NOPE12"}),
            "no pending pairing code",
        ),
        (json!({"action": "fly"}), "args.action"),
        (json!({"action": "add", "name": 5}), "args.name"),
    ];
    for (args, wanted) in cases {
        let out = s.tool_fails("manage_contacts", args.clone());
        assert!(out.contains(wanted), "{args}: {out}");
    }
    let listed = s.tool("manage_contacts", json!({"action": "list"}));
    let names: Vec<&str> = listed["contacts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["Sam", "Alex"]);
}

#[test]
fn check_warns_when_a_channels_owner_comes_from_its_allow_list() {
    let s = Setup::new("", "");
    // The model's key, which `check` wants, as the daemon gets it.
    let check = || {
        hearth_tests::Run::from(
            s.home
                .command(&["check"])
                .env("HEARTH_TEST_API_KEY", "sk-test")
                .output()
                .unwrap(),
        )
    };
    let named = check().ok().to_owned();
    assert!(!named.contains("warnings:"), "{named}");
    let config = std::fs::read_to_string(s.home.config()).unwrap();
    s.home.write_config(&config.replace(
        &format!("[owner.identities]\ntelegram = [\"{OWNER}\"]\n"),
        "",
    ));
    let out = check().ok().to_owned();
    assert!(
        out.contains(
            "[owner.identities] names no telegram id, so every id in plugins.telegram.allowed_chat_ids counts as the owner"
        ),
        "{out}"
    );
    assert!(
        out.contains("check passed"),
        "a warning does not fail the check: {out}"
    );
}

#[test]
fn at_most_three_pairing_codes_wait_at_once() {
    let strangers = [2101, 2102, 2103, 2104];
    let mut allowed = vec![OWNER];
    allowed.extend(strangers);
    let s = Setup::allowing(&allowed, "unknown_sender = \"pairing\"", "");
    let _daemon = s.start();
    for id in strangers {
        s.telegram.push_message(id, id, "hi");
        s.polled(2);
    }
    s.polled(2);
    let got: Vec<i64> = s.telegram.sent().iter().map(|m| m.chat_id).collect();
    assert_eq!(got, strangers[..3], "the fourth stranger gets silence");
}

#[test]
fn send_message_to_the_owner_uses_the_notify_channel() {
    let s = Setup::new("", "");
    let config = std::fs::read_to_string(s.home.config()).unwrap();
    s.home
        .write_config(&config.replace("[owner]\n", "[owner]\nnotify = \"telegram\"\n"));
    let _daemon = s.start();
    let queued = s.tool(
        "send_message",
        json!({"to": "owner", "text": "The build is green."}),
    );
    assert_eq!(queued["channel"], "telegram");
    assert!(
        s.wait_sent_to(OWNER, 1)[0]
            .text
            .contains("The build is green.")
    );
}
