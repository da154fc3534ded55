//! Search by words and by meaning together: the FTS5 hits (`search`)
//! and the nearest vectors (`recall`) merged by reciprocal rank fusion,
//! each list's rank r counting 1 / (60 + r), so an item both find comes
//! first and neither list's scores need to be comparable. A message
//! holding the query as an exact phrase still comes before the rest.
//!
//! The query's own vector is fetched by the caller, with a short timeout,
//! before the store is locked; when it cannot be had the search answers
//! by keyword and says why ([`Searched::fallback`]).

use std::collections::HashMap;

use rusqlite::{Connection, OptionalExtension, params};

use super::recall::Recall;
use super::search::{self, Hit, MAX_HITS, Matched, Query, SPEAKER, SearchError};
use hearth_base::embed::EmbedError;

/// The rank offset of reciprocal rank fusion (the usual 60: a list's top
/// few matter, its tail little).
const RRF_K: f64 = 60.0;
/// The characters of a hit by meaning shown as its snippet.
const SNIPPET_CHARS: i64 = 200;

/// What a search found, and how it searched.
#[derive(Debug)]
pub struct Searched {
    /// The hits, best first.
    pub hits: Vec<Hit>,
    /// Whether meaning was searched too.
    pub hybrid: bool,
    /// Why meaning was not searched, when it was configured and failed.
    pub fallback: Option<String>,
}

/// Searches the messages `query` names, by meaning too when `recall` is
/// configured and `vector` (the query's) was had.
pub fn search(
    conn: &Connection,
    query: &Query<'_>,
    recall: Option<&Recall>,
    vector: Option<Result<Vec<f32>, EmbedError>>,
) -> Result<Searched, SearchError> {
    let (Some(recall), Some(vector)) = (recall, vector) else {
        return Ok(Searched {
            hits: search::search(conn, query)?,
            hybrid: false,
            fallback: None,
        });
    };
    let limit = query.limit.clamp(1, MAX_HITS);
    // A keyword hit past `limit` could only come back by meaning, and the
    // meaning list finds it then; each keyword hit costs its snippet.
    let mut words = search::search(conn, query)?;
    let vector = match vector {
        Ok(vector) => vector,
        Err(e) => {
            words.truncate(limit);
            return Ok(Searched {
                hits: words,
                hybrid: false,
                fallback: Some(fallback_note(&e)),
            });
        }
    };
    // Filters other than the agent are applied to the details, after the
    // ranking: ask for more then.
    let filtered = query.channel.is_some() || query.since_ms.is_some() || query.until_ms.is_some();
    let pool = (limit * 3).clamp(20, MAX_HITS);
    let k = if filtered { pool * 4 } else { pool };
    let near = recall.messages_like(conn, &vector, query.agent, k)?;
    let ids: Vec<i64> = words.iter().map(|h| h.message).collect();
    let fused = fuse(&ids, &near);
    let mut by_id: HashMap<i64, Hit> = words.into_iter().map(|h| (h.message, h)).collect();
    let mut exact = Vec::new();
    let mut rest = Vec::new();
    for (id, matched, similarity) in fused {
        let mut hit = match by_id.remove(&id) {
            Some(hit) => hit,
            // Only the hits shown are read.
            None if rest.len() >= limit => continue,
            None => match details(conn, id, query)? {
                Some(hit) => hit,
                None => continue,
            },
        };
        hit.matched = Some(matched);
        hit.similarity = similarity.map(|s| (s * 1000.0).round() / 1000.0);
        if hit.exact {
            exact.push(hit);
        } else if rest.len() < limit {
            rest.push(hit);
        }
    }
    exact.extend(rest);
    exact.truncate(limit);
    Ok(Searched {
        hits: exact,
        hybrid: true,
        fallback: None,
    })
}

/// What a result says when meaning could not be searched.
pub fn fallback_note(e: &EmbedError) -> String {
    format!("searched by keyword only: the search by meaning is unavailable ({e})")
}

/// Fuses a ranked list of items found by their words with one found by
/// meaning (`(id, similarity)`, best first): each item once, best first,
/// with how it was found and its similarity.
pub fn fuse(words: &[i64], near: &[(i64, f32)]) -> Vec<(i64, Matched, Option<f32>)> {
    let mut scores: HashMap<i64, (f64, bool, Option<f32>)> = HashMap::new();
    for (rank, id) in words.iter().enumerate() {
        let entry = scores.entry(*id).or_insert((0.0, false, None));
        if !entry.1 {
            entry.0 += 1.0 / (RRF_K + rank as f64 + 1.0);
            entry.1 = true;
        }
    }
    for (rank, (id, similarity)) in near.iter().enumerate() {
        let entry = scores.entry(*id).or_insert((0.0, false, None));
        if entry.2.is_none() {
            entry.0 += 1.0 / (RRF_K + rank as f64 + 1.0);
            entry.2 = Some(*similarity);
        }
    }
    let mut fused: Vec<(i64, f64, Matched, Option<f32>)> = scores
        .into_iter()
        .map(|(id, (score, by_words, similarity))| {
            let matched = match (by_words, similarity.is_some()) {
                (true, true) => Matched::Both,
                (true, false) => Matched::Words,
                _ => Matched::Meaning,
            };
            (id, score, matched, similarity)
        })
        .collect();
    // Ties (one rank in each list) keep the words' order, then the id.
    let first_rank = |id: i64| words.iter().position(|w| *w == id).unwrap_or(usize::MAX);
    fused.sort_by(|a, b| {
        b.1.total_cmp(&a.1)
            .then_with(|| first_rank(a.0).cmp(&first_rank(b.0)))
            .then_with(|| b.0.cmp(&a.0))
    });
    fused
        .into_iter()
        .map(|(id, _, matched, similarity)| (id, matched, similarity))
        .collect()
}

/// A message found by meaning alone, as a hit, when it passes the
/// query's filters; its snippet is the start of its text.
fn details(conn: &Connection, id: i64, query: &Query<'_>) -> rusqlite::Result<Option<Hit>> {
    conn.prepare_cached(&format!(
        "SELECT m.id, s.id, (SELECT name FROM agents WHERE id = s.agent_id), s.channel, s.chat, \
         {SPEAKER}, m.created_at_ms, substr(ifnull(x.body, ''), 1, ?6), \
         length(ifnull(x.body, '')) > ?6 \
         FROM messages m JOIN sessions s ON s.id = m.session_id \
         LEFT JOIN inbox i ON i.id = m.inbox_id \
         LEFT JOIN message_index x ON x.rowid = m.id \
         WHERE m.id = ?1 AND (?2 IS NULL OR s.agent_id = ?2) AND (?3 IS NULL OR s.channel = ?3) \
         AND (?4 IS NULL OR m.created_at_ms >= ?4) AND (?5 IS NULL OR m.created_at_ms < ?5)"
    ))?
    .query_row(
        params![
            id,
            query.agent,
            query.channel,
            query.since_ms,
            query.until_ms,
            SNIPPET_CHARS
        ],
        |r| {
            let mut snippet: String = r.get(7)?;
            if r.get::<_, bool>(8)? {
                snippet.push('…');
            }
            Ok(Hit {
                message: r.get(0)?,
                session: r.get(1)?,
                agent: r.get::<_, Option<String>>(2)?.unwrap_or_default(),
                channel: r.get(3)?,
                chat: r.get(4)?,
                speaker: r.get(5)?,
                at_ms: r.get(6)?,
                snippet,
                exact: false,
                matched: Some(Matched::Meaning),
                similarity: None,
            })
        },
    )
    .optional()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fusion_puts_what_both_find_first_and_keeps_each_once() {
        let fused = fuse(&[1, 2, 3], &[(4, 0.9), (2, 0.8)]);
        let ids: Vec<i64> = fused.iter().map(|f| f.0).collect();
        assert_eq!(ids[0], 2);
        assert_eq!(fused[0].1, Matched::Both);
        assert_eq!(ids.len(), 4);
        // One rank each: the words' first keeps its place before meaning's.
        assert_eq!(&ids[1..3], &[1, 4]);
        assert_eq!(fused[2], (4, Matched::Meaning, Some(0.9)));
        assert_eq!(fused[3], (3, Matched::Words, None));
    }
}
