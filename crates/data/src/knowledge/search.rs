//! Search over every stored message, through the FTS5 index of migration
//! 9; whatever is still queued for it is indexed first (`index`).
//!
//! A query of plain words finds the messages that have all of them; those
//! holding the words as the exact phrase come first, each group ranked by
//! BM25. A query that uses FTS5's own syntax (`"a phrase"`, `OR`, `NOT`,
//! `NEAR`, `prefix*`) is passed through as written, and a syntax error in
//! it comes back as a readable message, not SQLite's.

use rusqlite::{Connection, params_from_iter, types::Value as Sql};

/// The most hits one search returns.
pub const MAX_HITS: usize = 50;
/// The most messages `read_around` returns on each side.
pub const MAX_AROUND: usize = 20;
/// The longest query.
const MAX_QUERY: usize = 500;
/// The characters of a message `read_around` shows (the rest is cut).
const MAX_SHOWN: usize = 4_000;

/// What to search for, and where.
#[derive(Clone, Debug, Default)]
pub struct Query<'a> {
    /// The words, phrase or FTS5 expression.
    pub text: &'a str,
    /// Only this agent's sessions; `None`: every agent's.
    pub agent: Option<i64>,
    /// Only sessions on this channel.
    pub channel: Option<&'a str>,
    /// Only messages stored at or after this instant (ms).
    pub since_ms: Option<i64>,
    /// Only messages stored before this instant (ms).
    pub until_ms: Option<i64>,
    /// The most hits (at most [`MAX_HITS`]).
    pub limit: usize,
}

/// One message that matched.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Hit {
    /// The message.
    pub message: i64,
    /// Its session.
    pub session: i64,
    /// The agent whose session it is.
    pub agent: String,
    /// The session's channel and chat.
    pub channel: String,
    /// The session's chat.
    pub chat: String,
    /// Who spoke: `owner`, a contact's name, an agent's name, `scheduler`,
    /// or `tool` (a tool's result).
    pub speaker: String,
    /// When it was stored (ms).
    pub at_ms: i64,
    /// The matching part, the match in `[brackets]`.
    pub snippet: String,
    /// Whether it holds the query as an exact phrase.
    pub exact: bool,
    /// How it was found, in a search by meaning too (`hybrid`); `None`
    /// in a search by keyword only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub matched: Option<Matched>,
    /// Its cosine similarity to the query, when found by meaning.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub similarity: Option<f32>,
}

/// How a hit of a hybrid search was found.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Matched {
    /// By its words only (FTS5).
    Words,
    /// By its meaning only (its vector).
    Meaning,
    /// Both.
    Both,
}

/// A message around another, for `read_history`.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Nearby {
    /// The message.
    pub message: i64,
    /// Who spoke (as in [`Hit::speaker`]).
    pub speaker: String,
    /// When it was stored (ms).
    pub at_ms: i64,
    /// Its searchable text, cut to a bound.
    pub text: String,
}

/// Why a search could not run.
#[derive(Debug, thiserror::Error)]
pub enum SearchError {
    /// The query is empty or too long.
    #[error("field `query`: {0}")]
    Query(String),
    /// The query's FTS5 syntax is wrong.
    #[error(
        "field `query`: {query:?} is not a valid search ({why}); write plain words, \"an exact \
         phrase\" in double quotes, OR, NOT, or a prefix*"
    )]
    Syntax {
        /// The query.
        query: String,
        /// What the parser said, without SQLite's wording.
        why: String,
    },
    /// No session with that id is visible to the caller.
    #[error("field `session`: no session {0} that you may read")]
    Session(i64),
    /// The message is not in that session.
    #[error("field `around_message`: message {message} is not in session {session}")]
    Message {
        /// The message.
        message: i64,
        /// The session.
        session: i64,
    },
    /// SQLite failed.
    #[error("the history store failed: {0}")]
    Sqlite(#[from] rusqlite::Error),
}

/// Searches the messages `query` names.
pub fn search(conn: &Connection, query: &Query<'_>) -> Result<Vec<Hit>, SearchError> {
    let text = query.text.trim();
    if text.is_empty() {
        return Err(SearchError::Query("required, the words to look for".into()));
    }
    if text.len() > MAX_QUERY {
        return Err(SearchError::Query(format!(
            "{} bytes, more than the {MAX_QUERY} allowed",
            text.len()
        )));
    }
    let limit = query.limit.clamp(1, MAX_HITS);
    super::index::drain(conn)?;
    let Some(words) = plain_words(text) else {
        return run(conn, query, text, limit, false);
    };
    // The exact phrase first, then messages with all the words.
    let phrase = format!("\"{}\"", words.join(" "));
    let mut hits = run(conn, query, &phrase, limit, true)?;
    if hits.len() < limit && words.len() > 1 {
        let all: Vec<String> = words.iter().map(|w| format!("\"{w}\"")).collect();
        for hit in run(conn, query, &all.join(" "), limit, false)? {
            if hits.len() < limit && !hits.iter().any(|h| h.message == hit.message) {
                hits.push(hit);
            }
        }
    }
    Ok(hits)
}

/// The `n` messages before and after `message` in `session`, with it;
/// `agent` limits the sessions the caller may read.
pub fn read_around(
    conn: &Connection,
    session: i64,
    message: i64,
    n: usize,
    agent: Option<i64>,
) -> Result<Vec<Nearby>, SearchError> {
    let owner: Option<i64> = conn
        .query_row(
            "SELECT agent_id FROM sessions WHERE id = ?1",
            [session],
            |r| r.get(0),
        )
        .ok();
    match (owner, agent) {
        (None, _) => return Err(SearchError::Session(session)),
        (Some(o), Some(a)) if o != a => return Err(SearchError::Session(session)),
        _ => {}
    }
    let inside: bool = conn.query_row(
        "SELECT EXISTS (SELECT 1 FROM messages WHERE id = ?1 AND session_id = ?2)",
        [message, session],
        |r| r.get(0),
    )?;
    if !inside {
        return Err(SearchError::Message { message, session });
    }
    let n = n.clamp(1, MAX_AROUND) as i64;
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT * FROM (
             SELECT m.id, {SPEAKER}, m.created_at_ms, ifnull(x.body, '') FROM messages m
             JOIN sessions s ON s.id = m.session_id
             LEFT JOIN message_index x ON x.rowid = m.id
             LEFT JOIN inbox i ON i.id = m.inbox_id
             WHERE m.session_id = ?1 AND m.id < ?2 ORDER BY m.id DESC LIMIT ?3)
         UNION ALL
         SELECT * FROM (
             SELECT m.id, {SPEAKER}, m.created_at_ms, ifnull(x.body, '') FROM messages m
             JOIN sessions s ON s.id = m.session_id
             LEFT JOIN message_index x ON x.rowid = m.id
             LEFT JOIN inbox i ON i.id = m.inbox_id
             WHERE m.session_id = ?1 AND m.id >= ?2 ORDER BY m.id LIMIT ?3 + 1)
         ORDER BY 1"
    ))?;
    let rows = stmt.query_map(rusqlite::params![session, message, n], |r| {
        let text: String = r.get(3)?;
        Ok(Nearby {
            message: r.get(0)?,
            speaker: r.get(1)?,
            at_ms: r.get(2)?,
            text: cut(&text, MAX_SHOWN),
        })
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// Who spoke a message `m` of session `s`, with its turn's inbox row `i`.
pub(super) const SPEAKER: &str = "CASE
        WHEN m.role = 'assistant' THEN (SELECT name FROM agents WHERE id = s.agent_id)
        WHEN m.content LIKE '[{\"type\":\"tool_result\"%' THEN 'tool'
        WHEN i.source = 'scheduler' THEN 'scheduler'
        WHEN i.from_agent_id IS NOT NULL THEN
            ifnull((SELECT name FROM agents WHERE id = i.from_agent_id), 'an agent')
        WHEN i.contact_id IS NOT NULL THEN
            ifnull((SELECT display_name FROM contacts WHERE id = i.contact_id), 'a former contact')
        ELSE 'owner'
    END";

/// Runs one FTS5 expression with the query's filters: first the ranked
/// ids (only the joins the filters need), then the details and snippet of
/// those few. A snippet or a speaker computed in the ranking query would be
/// computed for every match before the sort, thousands for a common word.
fn run(
    conn: &Connection,
    query: &Query<'_>,
    expression: &str,
    limit: usize,
    exact: bool,
) -> Result<Vec<Hit>, SearchError> {
    let filtered = query.agent.is_some()
        || query.channel.is_some()
        || query.since_ms.is_some()
        || query.until_ms.is_some();
    // Without filters no join is needed: FTS5 ranks on its own.
    let mut sql = String::from(if filtered {
        "SELECT x.rowid FROM message_index x \
         JOIN messages m ON m.id = x.rowid JOIN sessions s ON s.id = m.session_id \
         WHERE message_index MATCH ?1"
    } else {
        "SELECT x.rowid FROM message_index x WHERE message_index MATCH ?1"
    });
    let mut args: Vec<Sql> = vec![Sql::Text(expression.to_owned())];
    let mut filter = |clause: &str, value: Sql| {
        args.push(value);
        sql.push_str(&format!(" AND {clause} ?{}", args.len()));
    };
    if let Some(agent) = query.agent {
        filter("s.agent_id =", Sql::Integer(agent));
    }
    if let Some(channel) = query.channel {
        filter("s.channel =", Sql::Text(channel.to_owned()));
    }
    if let Some(since) = query.since_ms {
        filter("m.created_at_ms >=", Sql::Integer(since));
    }
    if let Some(until) = query.until_ms {
        filter("m.created_at_ms <", Sql::Integer(until));
    }
    args.push(Sql::Integer(limit as i64));
    sql.push_str(&format!(" ORDER BY x.rank LIMIT ?{}", args.len()));
    let ids: Vec<i64> = conn
        .prepare(&sql)
        .and_then(|mut stmt| {
            stmt.query_map(params_from_iter(args), |r| r.get(0))?
                .collect::<rusqlite::Result<_>>()
        })
        .map_err(|e| syntax(e, query.text))?;
    let mut details = conn.prepare_cached(&format!(
        "SELECT m.id, s.id, (SELECT name FROM agents WHERE id = s.agent_id), s.channel, s.chat, \
         {SPEAKER}, m.created_at_ms, snippet(message_index, 0, '[', ']', '…', 16) \
         FROM message_index \
         JOIN messages m ON m.id = message_index.rowid \
         JOIN sessions s ON s.id = m.session_id \
         LEFT JOIN inbox i ON i.id = m.inbox_id \
         WHERE message_index MATCH ?1 AND message_index.rowid = ?2"
    ))?;
    let mut hits = Vec::with_capacity(ids.len());
    for id in ids {
        let hit = details.query_row(rusqlite::params![expression, id], |r| {
            Ok(Hit {
                message: r.get(0)?,
                session: r.get(1)?,
                agent: r.get::<_, Option<String>>(2)?.unwrap_or_default(),
                channel: r.get(3)?,
                chat: r.get(4)?,
                speaker: r.get(5)?,
                at_ms: r.get(6)?,
                snippet: r.get::<_, Option<String>>(7)?.unwrap_or_default(),
                exact,
                matched: None,
                similarity: None,
            })
        })?;
        hits.push(hit);
    }
    Ok(hits)
}

/// An error from running a search. The statement around the MATCH is
/// fixed and valid, so a plain SQL error there is the query's fault
/// (FTS5 reports its syntax errors that way): it becomes
/// [`SearchError::Syntax`]; anything else (busy, I/O) stays as it is.
fn syntax(e: rusqlite::Error, query: &str) -> SearchError {
    match &e {
        rusqlite::Error::SqliteFailure(failure, message)
            if failure.code == rusqlite::ErrorCode::Unknown =>
        {
            let why = message.as_deref().unwrap_or("it does not parse");
            SearchError::Syntax {
                query: query.to_owned(),
                why: why.trim_start_matches("fts5: ").to_owned(),
            }
        }
        _ => SearchError::Sqlite(e),
    }
}

/// The query's words when it is plain words (no FTS5 syntax): letters,
/// digits and the punctuation inside words. `None` for an expression.
fn plain_words(text: &str) -> Option<Vec<String>> {
    let special = |c: char| matches!(c, '"' | '*' | '^' | ':' | '(' | ')' | '{' | '}' | '+');
    if text.chars().any(special) {
        return None;
    }
    let words: Vec<String> = text
        .split(|c: char| !c.is_alphanumeric() && c != '\'' && c != '-' && c != '_')
        .filter(|w| !w.is_empty())
        .map(str::to_owned)
        .collect();
    let operators = ["AND", "OR", "NOT", "NEAR"];
    if words.is_empty() || words.iter().any(|w| operators.contains(&w.as_str())) {
        return None;
    }
    Some(words)
}

/// `text` cut to `max` characters, marked when cut.
fn cut(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}… [cut]", &text[..at]),
        None => text.to_owned(),
    }
}
