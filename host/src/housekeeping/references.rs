//! What the conversations still say about the files housekeeping may
//! remove, and the note left where they said it.
//!
//! The rule (docs/operations.md, "Housekeeping"): a file past its
//! retention is **kept** while something still needs it: a message not yet
//! answered (an `inbox` row not done) or a reply not yet delivered (an
//! `outbox` row pending) carries it, or a message of an open session
//! active within the kind's retention window names it (that session's
//! context may still show it to the model). Otherwise it is removed, and
//! every stored row that named it (older messages, answered inbox rows,
//! delivered replies) gets ` [removed by housekeeping on DATE]` after the
//! path, so the model reads why it is gone instead of a bare "not found".
//!
//! Paths are found as they are stored: absolute, under the home, inside
//! the rows' JSON. One pass reads the rows that mention the home at all;
//! a path counts where it ends at a boundary (so `a.jpg` is not found in
//! `a.jpg.bak`).

use std::collections::{HashMap, HashSet};

use rusqlite::{Connection, params};

/// The tables and columns that name files.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Column {
    /// `messages.content`: the conversation.
    Messages,
    /// `inbox.attachments`: what a message carried.
    Inbox,
    /// `outbox.attachments`: what a reply carried.
    Outbox,
}

/// What the rows say about the candidate paths.
#[derive(Default)]
pub struct Scan {
    /// Per path, the latest instant (ms) something live needed it:
    /// `i64::MAX` for an unanswered message or an undelivered reply, else
    /// the last activity of the open session whose messages name it.
    pub needed_until: HashMap<String, i64>,
    /// The rows naming candidates, with their text and the paths named.
    pub rows: Vec<Row>,
}

/// One row that names candidate paths.
pub struct Row {
    /// Where it is.
    pub column: Column,
    /// Its id.
    pub id: i64,
    /// The column's text.
    pub text: String,
    /// The candidates it names, with where each one ends in `text`.
    pub names: Vec<(String, usize)>,
}

/// Reads every row under `home` that names one of `candidates`.
pub fn scan(conn: &Connection, home: &str, candidates: &HashSet<String>) -> rusqlite::Result<Scan> {
    let mut scan = Scan::default();
    if candidates.is_empty() {
        return Ok(scan);
    }
    let prefix = format!("{}/", home.trim_end_matches('/'));
    let mut stmt = conn.prepare(
        "WITH last AS (SELECT session_id, max(created_at_ms) AS at FROM messages GROUP BY session_id) \
         SELECT m.id, m.content, s.ended_at_ms IS NULL, last.at FROM messages m \
         JOIN sessions s ON s.id = m.session_id JOIN last ON last.session_id = m.session_id \
         WHERE instr(m.content, ?1) > 0",
    )?;
    let mut rows = stmt.query([&prefix])?;
    while let Some(r) = rows.next()? {
        let (id, text, open, last): (i64, String, bool, i64) =
            (r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?);
        let live = open.then_some(last);
        scan.add(Column::Messages, id, text, &prefix, candidates, live);
    }
    for (column, table, live_when) in [
        (Column::Inbox, "inbox", "status != 'done'"),
        (Column::Outbox, "outbox", "status = 'pending'"),
    ] {
        let mut stmt = conn.prepare(&format!(
            "SELECT id, attachments, {live_when} FROM {table} \
             WHERE attachments IS NOT NULL AND instr(attachments, ?1) > 0"
        ))?;
        let mut rows = stmt.query([&prefix])?;
        while let Some(r) = rows.next()? {
            let (id, text, pending): (i64, String, bool) = (r.get(0)?, r.get(1)?, r.get(2)?);
            scan.add(
                column,
                id,
                text,
                &prefix,
                candidates,
                pending.then_some(i64::MAX),
            );
        }
    }
    Ok(scan)
}

impl Scan {
    fn add(
        &mut self,
        column: Column,
        id: i64,
        text: String,
        prefix: &str,
        candidates: &HashSet<String>,
        live: Option<i64>,
    ) {
        let names = named(&text, prefix, candidates);
        if names.is_empty() {
            return;
        }
        if let Some(live) = live {
            for (path, _) in &names {
                let until = self.needed_until.entry(path.clone()).or_insert(live);
                *until = (*until).max(live);
            }
        }
        self.rows.push(Row {
            column,
            id,
            text,
            names,
        });
    }
}

/// Writes the note after each removed path the rows name, in one
/// transaction; returns how many rows changed.
pub fn annotate(
    conn: &Connection,
    rows: &[Row],
    removed: &HashSet<String>,
    date: &str,
) -> rusqlite::Result<usize> {
    let note = format!(" [removed by housekeeping on {date}]");
    let tx = conn.unchecked_transaction()?;
    let mut changed = 0;
    for row in rows {
        let mut ends: Vec<usize> = row
            .names
            .iter()
            .filter(|(path, _)| removed.contains(path))
            .map(|(_, end)| *end)
            .collect();
        if ends.is_empty() {
            continue;
        }
        ends.sort_unstable();
        ends.dedup();
        let mut text = String::with_capacity(row.text.len() + ends.len() * note.len());
        let mut from = 0;
        for end in ends {
            text.push_str(&row.text[from..end]);
            text.push_str(&note);
            from = end;
        }
        text.push_str(&row.text[from..]);
        let sql = match row.column {
            Column::Messages => "UPDATE messages SET content = ?1 WHERE id = ?2",
            Column::Inbox => "UPDATE inbox SET attachments = ?1 WHERE id = ?2",
            Column::Outbox => "UPDATE outbox SET attachments = ?1 WHERE id = ?2",
        };
        changed += tx.execute(sql, params![text, row.id])?;
    }
    tx.commit()?;
    Ok(changed)
}

/// The candidates `text` names, each with the byte offset where it ends:
/// from each place the home's prefix starts, the longest candidate that
/// ends at a boundary.
fn named(text: &str, prefix: &str, candidates: &HashSet<String>) -> Vec<(String, usize)> {
    let mut found = Vec::new();
    for (start, _) in text.match_indices(prefix) {
        let rest = &text[start..];
        // A JSON string ends at its closing quote; a path has no quote.
        let span = rest.find('"').unwrap_or(rest.len());
        let mut best = None;
        for (i, c) in rest[..span].char_indices() {
            if i > prefix.len() && is_boundary(c) && candidates.contains(&rest[..i]) {
                best = Some(i);
            }
        }
        if candidates.contains(&rest[..span]) {
            best = Some(span);
        }
        if let Some(len) = best {
            found.push((rest[..len].to_owned(), start + len));
        }
    }
    found
}

/// A character that may follow a path in text: the end of a word, a
/// sentence or a bracket, or a JSON escape.
fn is_boundary(c: char) -> bool {
    c.is_whitespace() || matches!(c, ')' | ']' | '}' | ';' | ',' | '\\' | '\'' | '>')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_is_found_only_where_it_ends() {
        let candidates: HashSet<String> = ["/h/media/a.jpg", "/h/attachments/t/my photo.jpg"]
            .into_iter()
            .map(str::to_owned)
            .collect();
        let text = r#"{"path":"/h/media/a.jpg","x":"see /h/media/a.jpg.bak and /h/attachments/t/my photo.jpg; ok"}"#;
        let found = named(text, "/h/", &candidates);
        let paths: Vec<&str> = found.iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(paths, ["/h/media/a.jpg", "/h/attachments/t/my photo.jpg"]);
        let end = found[0].1;
        assert_eq!(&text[end..end + 1], "\"");
    }
}
