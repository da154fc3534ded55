//! The store's side of capture on a real store: what is pending, what is
//! read, and what is kept.

use super::*;
use hearth_base::store::Store;

fn store() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("hearth.db")).unwrap();
    (dir, store)
}

/// A session of the main agent on `chat`.
fn session(conn: &Connection, chat: &str) -> i64 {
    conn.execute(
        "INSERT INTO sessions (agent_id, channel, chat, started_at_ms) VALUES (1, 'local', ?1, 0)",
        [chat],
    )
    .unwrap();
    conn.last_insert_rowid()
}

/// A turn in `session`: `said` from the owner (or `contact`), and the
/// agent's `answer`, stored `at` ms.
fn turn(conn: &Connection, session: i64, contact: Option<i64>, said: &str, answer: &str, at: i64) {
    conn.execute(
        "INSERT INTO inbox (channel, idempotency_key, sender, chat, text, status, received_at_ms, \
         contact_id) VALUES ('local', ?1, 'x', 'c', ?2, 'done', ?3, ?4)",
        params![format!("k{}-{said}", now_ms()), said, at, contact],
    )
    .unwrap();
    let inbox = conn.last_insert_rowid();
    for (role, text) in [("user", said), ("assistant", answer)] {
        let content = serde_json::json!([{ "type": "text", "text": text }]).to_string();
        conn.execute(
            "INSERT INTO messages (session_id, inbox_id, role, content, created_at_ms) \
             VALUES (?1, ?2, ?3, ?4, ?5)",
            params![session, inbox, role, content, at],
        )
        .unwrap();
    }
}

fn never(_: &str) -> bool {
    false
}

fn facts(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| (*s).to_owned()).collect()
}

#[test]
fn a_quiet_conversation_is_read_once_and_its_facts_kept_as_captured() {
    let (_dir, store) = store();
    let conn = store.conn();
    let now = now_ms();
    let s = session(conn, "terminal");
    turn(
        conn,
        s,
        None,
        "[Fri 2026-12-04 09:30 CET · local · from Sam, your owner] My sister Ada moved to Lyon.",
        "Noted!",
        now - 5_000,
    );
    // A tool's result carries no text block: it is not read.
    conn.execute(
        "INSERT INTO messages (session_id, role, content, created_at_ms) VALUES (?1, 'user', \
         '[{\"type\":\"tool_result\",\"tool_use_id\":\"t\",\"content\":\"secret stuff\"}]', ?2)",
        params![s, now - 4_000],
    )
    .unwrap();
    let due = pending(conn, now).unwrap();
    assert_eq!(due.len(), 1);
    let p = due[0];
    assert_eq!((p.session, p.agent, p.mark), (s, 1, 0));
    assert_eq!(next_due(&due, 60_000), Some(now - 4_000 + 60_000));
    let t = read(conn, &p, 10_000).unwrap();
    assert_eq!(
        t.lines,
        [
            (Speaker::Owner, "My sister Ada moved to Lyon.".to_owned()),
            (Speaker::Agent, "Noted!".to_owned())
        ]
    );
    assert_eq!((t.owner_lines, t.contact_lines), (1, 0));
    let q = prompt::question("Sam", &[], &t, 5);
    assert!(
        q.contains("Owner: My sister Ada moved to Lyon.\nAssistant: Noted!\n"),
        "{q}"
    );
    assert!(!q.contains("secret stuff"), "{q}");

    let kept = keep(
        conn,
        &p,
        t.up_to,
        &facts(&["Sam's sister Ada lives in Lyon."]),
        5,
        &never,
    )
    .unwrap();
    assert_eq!(kept.added.len(), 1);
    let (source, from): (String, i64) = conn
        .query_row("SELECT source, session_id FROM memory", [], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .unwrap();
    assert_eq!((source.as_str(), from), ("captured", s));
    assert!(pending(conn, now).unwrap().is_empty(), "read once");
    assert_eq!(mark(conn, s).unwrap(), Some(t.up_to));

    // Dropped by the owner, it is not proposed again from the same words:
    // only what is said next is read.
    conn.execute("DELETE FROM memory", []).unwrap();
    turn(conn, s, None, "Ada has a cat.", "Sweet.", now - 1_000);
    let p = pending(conn, now).unwrap()[0];
    let t = read(conn, &p, 10_000).unwrap();
    assert_eq!(t.lines.len(), 2, "{:?}", t.lines);
    assert!(!format!("{:?}", t.lines).contains("Lyon"));
}

#[test]
fn known_facts_secrets_and_the_caps_are_kept_out() {
    let (_dir, store) = store();
    let conn = store.conn();
    let now = now_ms();
    let s = session(conn, "terminal");
    turn(conn, s, None, "hi", "hello", now);
    conn.execute(
        "INSERT INTO memory (agent_id, fact, created_at_ms) VALUES (1, 'Sam lives in Lyon.', 0)",
        [],
    )
    .unwrap();
    let p = pending(conn, now).unwrap()[0];
    let is_secret = |f: &str| f.contains("swordfish");
    let kept = keep(
        conn,
        &p,
        p.mark,
        &facts(&[
            "sam lives in lyon",
            "Sam has a dog named Rex.",
            "Sam has a dog named Rex",
            "Sam's gate phrase is swordfish",
            "Sam's password is hunter2",
            "Sam works at the bakery on Rue Neuve.",
            "Sam plays the cello.",
        ]),
        2,
        &is_secret,
    )
    .unwrap();
    let added: Vec<&str> = kept.added.iter().map(|(_, f)| f.as_str()).collect();
    assert_eq!(
        added,
        [
            "Sam has a dog named Rex.",
            "Sam works at the bakery on Rue Neuve."
        ]
    );
    assert_eq!((kept.known, kept.refused, kept.over), (2, 2, 1));
    // The cap counts what this conversation captured before.
    let again = keep(conn, &p, p.mark, &facts(&["Sam reads sci-fi."]), 2, &never).unwrap();
    assert_eq!((again.added.len(), again.over), (0, 1));

    // The memories' budget holds too.
    let big = "x".repeat(190);
    for i in 0..31 {
        conn.execute(
            "INSERT INTO memory (agent_id, fact, created_at_ms) VALUES (1, ?1, 0)",
            [format!("{i} {big}")],
        )
        .unwrap();
    }
    let s2 = session(conn, "other");
    turn(conn, s2, None, "hi", "hello", now);
    let p2 = pending(conn, now)
        .unwrap()
        .into_iter()
        .find(|p| p.session == s2)
        .unwrap();
    let full = keep(
        conn,
        &p2,
        p2.mark,
        &facts(&["Sam sings in a choir."]),
        5,
        &never,
    )
    .unwrap();
    assert_eq!((full.added.len(), full.over), (0, 1));
}

#[test]
fn a_long_conversation_is_read_in_parts_and_contacts_are_told_apart() {
    let (_dir, store) = store();
    let conn = store.conn();
    let now = now_ms();
    let s = session(conn, "telegram:2002");
    turn(conn, s, Some(7), &"a".repeat(900), "ok", now);
    turn(conn, s, Some(7), &"b".repeat(900), "ok", now);
    let p = pending(conn, now).unwrap()[0];
    let first = read(conn, &p, 1_000).unwrap();
    assert_eq!(
        first.lines.len(),
        2,
        "the second turn waits for the next read"
    );
    assert_eq!((first.owner_lines, first.contact_lines), (0, 1));
    assert_eq!(first.lines[0].0, Speaker::Contact);
    advance(conn, s, first.up_to).unwrap();
    let p = pending(conn, now).unwrap()[0];
    let second = read(conn, &p, 1_000).unwrap();
    assert!(second.lines[0].1.starts_with("bbb"), "{:?}", second.lines);
    // A message longer than a read's share is cut, never skipped.
    let s2 = session(conn, "long");
    turn(conn, s2, None, &"c".repeat(9_000), "ok", now);
    let p2 = pending(conn, now)
        .unwrap()
        .into_iter()
        .find(|p| p.session == s2)
        .unwrap();
    let cut = read(conn, &p2, 1_000).unwrap();
    assert_eq!(cut.lines.len(), 1);
    assert!(cut.lines[0].1.ends_with(" […]"));
    assert_eq!(cut.lines[0].1.chars().count(), MAX_MESSAGE_CHARS + 4);
    // Old conversations are left alone.
    let s3 = session(conn, "old");
    turn(conn, s3, None, "long ago", "yes", now - LOOKBACK_MS - 1);
    assert!(pending(conn, now).unwrap().iter().all(|p| p.session != s3));
}
