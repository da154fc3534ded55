//! The host's own gate branches, reached through a channel that filters
//! nothing itself (the probe plugin): a sender outside the allow-list, a
//! disabled contact, and a contact with no agent are dropped before
//! anything is stored, whatever the channel lets through; an enabled
//! contact with an agent is stored. Each outcome is read from the inbox.

use std::time::Duration;

use hearth_tests::{Hearth, probe};
use serde_json::json;

/// A home whose probe channel allows `c-on`, `c-off` and `c-none`, with a
/// contact for each (enabled with an agent, disabled, and with no agent),
/// and `outsider` a contact too but outside the allow-list.
fn home() -> Hearth {
    let h = Hearth::with_plugins(
        &[probe()],
        "[owner.identities]\nprobe = [\"owner\"]\n\
         [plugins.probe]\nallowed = [\"c-on\", \"c-off\", \"c-none\"]\n",
    );
    // The store exists once a command has opened it.
    h.cmd(&["contacts"]).ok();
    let db = h.db();
    for (name, native, enabled, agent) in [
        ("On", "c-on", 1, Some(1)),
        ("Off", "c-off", 0, Some(1)),
        ("None", "c-none", 1, None),
        ("Outsider", "outsider", 1, Some(1)),
    ] {
        db.execute(
            "INSERT INTO contacts (display_name, agent_id, enabled, created_at_ms, updated_at_ms) \
             VALUES (?1, ?2, ?3, 0, 0)",
            rusqlite::params![name, agent, enabled],
        )
        .unwrap();
        db.execute(
            "INSERT INTO contact_identities (contact_id, channel, native_id, created_at_ms) \
             VALUES (last_insert_rowid(), 'probe', ?1, 0)",
            [native],
        )
        .unwrap();
    }
    h
}

fn submit(h: &Hearth, sender: &str) {
    let raw =
        json!({"type": "message", "channel": "probe", "idempotency_key": format!("k-{sender}"),
                     "sender": sender, "text": format!("hello from {sender}")})
        .to_string();
    let args = json!({ "raw": raw }).to_string();
    let result = h
        .cmd_with_input(&["tool", "call", "probe_submit", "-"], &args)
        .json();
    // Strangers are acknowledged (told nothing), like everyone else.
    assert_eq!(result["result"], "Ok(())", "{sender}: {result}");
}

fn stored(h: &Hearth, sender: &str) -> i64 {
    h.db()
        .query_row(
            "SELECT COUNT(*) FROM inbox WHERE channel = 'probe' AND sender = ?1",
            [sender],
            |r| r.get(0),
        )
        .unwrap()
}

#[test]
fn the_hosts_gates_drop_what_the_channel_lets_through() {
    let h = home();
    let cases = [
        ("outsider", 0, "outside the allow-list, even as a contact"),
        ("stranger", 0, "outside the allow-list, no contact"),
        ("c-off", 0, "a disabled contact"),
        ("c-none", 0, "a contact with no agent"),
        ("c-on", 1, "an enabled contact with an agent"),
        ("owner", 1, "the owner"),
    ];
    for (sender, _, _) in cases {
        submit(&h, sender);
    }
    for (sender, expected, what) in cases {
        assert_eq!(stored(&h, sender), expected, "{what} ({sender})");
    }
}

/// Who the owner is, as the host decides it: `[owner.identities]` first
/// (an empty list counts as naming none), else the channel's own list of
/// the owner's ids; and the sender `owner` only on a channel that vouches
/// for it. A sender who is neither the owner nor a contact is dropped, so
/// what is stored says who was taken for the owner.
#[test]
fn the_owner_is_who_the_identities_or_the_channel_name() {
    let cases = [
        // (identities, channel owners, vouches, sender, stored, why)
        (
            "[\"boss\"]",
            "[]",
            false,
            "owner",
            0,
            "`owner` on a channel that does not vouch",
        ),
        (
            "[\"boss\"]",
            "[]",
            true,
            "owner",
            1,
            "`owner` on a channel that vouches",
        ),
        (
            "[\"boss\"]",
            "[]",
            false,
            "boss",
            1,
            "the id the identities name",
        ),
        (
            "[]",
            "[\"boss\"]",
            false,
            "boss",
            1,
            "empty identities: the channel's owners",
        ),
        (
            "[]",
            "[\"boss\"]",
            false,
            "other",
            0,
            "empty identities: not among the channel's owners",
        ),
        (
            "[\"chief\"]",
            "[\"boss\"]",
            false,
            "boss",
            0,
            "the identities win over the channel's list",
        ),
    ];
    for (identities, owners, vouches, sender, expected, why) in cases {
        let h = Hearth::with_plugins(
            &[probe()],
            &format!(
                "[owner.identities]\nprobe = {identities}\n\
                 [plugins.probe]\nallowed = [\"owner\", \"boss\", \"other\"]\n\
                 owners = {owners}\nauthenticates_owner = {vouches}\n"
            ),
        );
        submit(&h, sender);
        assert_eq!(stored(&h, sender), expected, "{why}");
    }
}

/// A stranger inside the allow-list gets a pairing code only on a channel
/// that pairs; elsewhere, silence. Their message is never stored.
#[test]
fn only_a_channel_that_pairs_gives_strangers_a_code() {
    for pairing in [false, true] {
        let h = Hearth::with_plugins(
            &[probe()],
            &format!(
                "[owner.identities]\nprobe = [\"boss\"]\n\
                 [plugins.probe]\nallowed = [\"newcomer\"]\npairing = {pairing}\n"
            ),
        );
        submit(&h, "newcomer");
        assert_eq!(stored(&h, "newcomer"), 0, "pairing = {pairing}");
        let codes: i64 = h
            .db()
            .query_row("SELECT COUNT(*) FROM pairing_codes", [], |r| r.get(0))
            .unwrap();
        assert_eq!(codes, i64::from(pairing), "pairing = {pairing}");
    }
}

/// A dropped stranger is logged once an hour per sender, not once per
/// message: a flood cannot fill the log, and each stranger shows once.
#[test]
fn each_dropped_stranger_is_logged_once() {
    let h = Hearth::with_plugins(
        &[probe()],
        "[owner.identities]\nprobe = [\"boss\"]\n[plugins.probe]\nallowed = [\"boss\"]\n",
    );
    let daemon = h.daemon();
    for (n, sender) in ["stranger", "stranger", "stranger", "other"]
        .iter()
        .enumerate()
    {
        let raw =
            json!({"type": "message", "channel": "probe", "idempotency_key": format!("k-{n}"),
                         "sender": sender, "text": "let me in"})
            .to_string();
        h.cmd_with_input(
            &["tool", "call", "probe_submit", "-"],
            &json!({ "raw": raw }).to_string(),
        )
        .ok();
    }
    // The daemon's log reaches the test through a pipe: wait for the last
    // sender's line, which comes after every line the ones before caused.
    daemon.wait_for_log(
        |l| l.contains("unknown sender dropped") && l.contains("\"sender\":\"other\""),
        Duration::from_secs(10),
    );
    let dropped: Vec<String> = daemon
        .logs()
        .into_iter()
        .filter(|l| l.contains("message from an unknown sender dropped"))
        .collect();
    let from = |who: &str| {
        dropped
            .iter()
            .filter(|l| l.contains(&format!("\"sender\":\"{who}\"")))
            .count()
    };
    assert_eq!((from("stranger"), from("other")), (1, 1), "{dropped:#?}");
}
