//! The main agent's identity, versioned: every edit (by the agent or the
//! owner) and every rollback is a new version with its time and author,
//! and the newest version is the text at the top of the prompt.
//!
//! The identity file in the config (or the built-in text) seeds version 1
//! on the first start; after that the table is the truth, and the file is
//! not read again.

use std::sync::RwLock;

use rusqlite::{Connection, OptionalExtension, params};
use serde::Serialize;

use hearth_base::store::{Cold, now_ms};

/// The longest identity, in characters.
pub const MAX_IDENTITY_CHARS: usize = 40_000;
/// The longest text one edit adds, in characters.
pub const MAX_EDIT_CHARS: usize = 8_000;

/// One version, as listed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Version {
    /// Its number, from 1.
    pub version: i64,
    /// Who made it: `config`, `owner`, or an agent.
    pub author: String,
    /// What the edit was.
    pub note: String,
    /// When (ms).
    pub at_ms: i64,
    /// Its length in characters.
    pub chars: usize,
}

/// Why an edit was refused.
#[derive(Debug, thiserror::Error)]
pub enum IdentityError {
    /// A field is empty, too long, or unknown.
    #[error("field `{field}`: {why}")]
    Invalid {
        /// The field.
        field: &'static str,
        /// What is wrong.
        why: String,
    },
    /// No such version.
    #[error("field `version`: no version {0}; identity_history lists them")]
    Unknown(i64),
    /// SQLite failed.
    #[error("the identity store failed: {0}")]
    Sqlite(#[from] rusqlite::Error),
}

/// The versioned identity, with the newest text cached for the prompt.
pub struct Identity {
    cold: Cold,
    current: RwLock<String>,
}

impl Identity {
    /// Opens the versions on `cold`, seeding version 1 with what `seed`
    /// gives when there is none yet (it is not called otherwise).
    pub fn open(cold: Cold, seed: impl FnOnce() -> String) -> rusqlite::Result<Identity> {
        let current = {
            let conn = cold.lock();
            match newest(&conn)? {
                Some(text) => text,
                None => {
                    let seed = seed();
                    conn.execute(
                        "INSERT INTO identity_versions (version, text, author, note, created_at_ms) \
                         VALUES (1, ?1, 'config', 'the first version', ?2)",
                        params![seed, now_ms()],
                    )?;
                    seed
                }
            }
        };
        Ok(Identity {
            cold,
            current: RwLock::new(current),
        })
    }

    /// The text in use.
    pub fn current(&self) -> String {
        self.current
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Appends `text` as a new paragraph.
    pub fn append(&self, text: &str, author: &str) -> Result<Version, IdentityError> {
        let text = checked(text)?;
        let next = format!("{}\n\n{text}", self.current().trim_end());
        self.store(&next, author, "appended an observation")
    }

    /// Replaces the body of the markdown section headed `section` (up to
    /// the next heading of the same or a higher level) with `text`; a
    /// section that does not exist is added at the end.
    pub fn replace_section(
        &self,
        section: &str,
        text: &str,
        author: &str,
    ) -> Result<Version, IdentityError> {
        let text = checked(text)?;
        let name = section.trim().trim_start_matches('#').trim();
        if name.is_empty() || name.contains('\n') {
            return Err(IdentityError::Invalid {
                field: "section",
                why: "required, a heading's text on one line".into(),
            });
        }
        let next = with_section(&self.current(), name, text);
        self.store(&next, author, &format!("replaced section {name:?}"))
    }

    /// Makes version `version`'s text the newest version.
    pub fn rollback(&self, version: i64, author: &str) -> Result<Version, IdentityError> {
        let text: String = self
            .cold
            .lock()
            .query_row(
                "SELECT text FROM identity_versions WHERE version = ?1",
                [version],
                |r| r.get(0),
            )
            .optional()?
            .ok_or(IdentityError::Unknown(version))?;
        self.store(&text, author, &format!("rollback to version {version}"))
    }

    /// Every version, newest first.
    pub fn history(&self) -> Result<Vec<Version>, IdentityError> {
        let conn = self.cold.lock();
        let mut stmt = conn.prepare_cached(
            "SELECT version, author, note, created_at_ms, text FROM identity_versions \
             ORDER BY version DESC",
        )?;
        let rows = stmt.query_map([], |r| {
            Ok(Version {
                version: r.get(0)?,
                author: r.get(1)?,
                note: r.get(2)?,
                at_ms: r.get(3)?,
                chars: r.get::<_, String>(4)?.chars().count(),
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// Version `version`'s text.
    pub fn show(&self, version: i64) -> Result<String, IdentityError> {
        self.cold
            .lock()
            .query_row(
                "SELECT text FROM identity_versions WHERE version = ?1",
                [version],
                |r| r.get(0),
            )
            .optional()?
            .ok_or(IdentityError::Unknown(version))
    }

    fn store(&self, text: &str, author: &str, note: &str) -> Result<Version, IdentityError> {
        let chars = text.chars().count();
        if chars > MAX_IDENTITY_CHARS {
            return Err(IdentityError::Invalid {
                field: "text",
                why: format!(
                    "the identity would be {chars} characters, more than the {MAX_IDENTITY_CHARS} \
                     allowed; replace a section instead of appending"
                ),
            });
        }
        let at_ms = now_ms();
        let version: i64 = {
            let conn = self.cold.lock();
            conn.query_row(
                "INSERT INTO identity_versions (version, text, author, note, created_at_ms) \
                 VALUES ((SELECT ifnull(max(version), 0) + 1 FROM identity_versions), ?1, ?2, ?3, ?4) \
                 RETURNING version",
                params![text, author, note, at_ms],
                |r| r.get(0),
            )?
        };
        *self.current.write().unwrap_or_else(|p| p.into_inner()) = text.to_owned();
        Ok(Version {
            version,
            author: author.to_owned(),
            note: note.to_owned(),
            at_ms,
            chars,
        })
    }
}

fn newest(conn: &Connection) -> rusqlite::Result<Option<String>> {
    conn.query_row(
        "SELECT text FROM identity_versions ORDER BY version DESC LIMIT 1",
        [],
        |r| r.get(0),
    )
    .optional()
}

fn checked(text: &str) -> Result<&str, IdentityError> {
    let text = text.trim();
    let chars = text.chars().count();
    if chars == 0 {
        return Err(IdentityError::Invalid {
            field: "text",
            why: "required, a non-empty string".into(),
        });
    }
    if chars > MAX_EDIT_CHARS {
        return Err(IdentityError::Invalid {
            field: "text",
            why: format!("{chars} characters, more than the {MAX_EDIT_CHARS} one edit may add"),
        });
    }
    Ok(text)
}

/// `identity` with the section headed `name` holding `body`.
fn with_section(identity: &str, name: &str, body: &str) -> String {
    let lines: Vec<&str> = identity.lines().collect();
    let heading = |line: &str| -> Option<(usize, String)> {
        let level = line.chars().take_while(|c| *c == '#').count();
        (level > 0 && line[level..].starts_with(' '))
            .then(|| (level, line[level..].trim().to_owned()))
    };
    let Some((start, level)) = lines.iter().enumerate().find_map(|(i, l)| {
        heading(l).and_then(|(level, text)| text.eq_ignore_ascii_case(name).then_some((i, level)))
    }) else {
        return format!("{}\n\n## {name}\n\n{body}\n", identity.trim_end());
    };
    let end = lines
        .iter()
        .enumerate()
        .skip(start + 1)
        .find_map(|(i, l)| heading(l).filter(|(lvl, _)| *lvl <= level).map(|_| i))
        .unwrap_or(lines.len());
    let mut out: Vec<String> = lines[..=start].iter().map(|l| (*l).to_owned()).collect();
    out.push(String::new());
    out.push(body.to_owned());
    if end < lines.len() {
        out.push(String::new());
        out.extend(lines[end..].iter().map(|l| (*l).to_owned()));
    }
    out.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_section_is_replaced_up_to_the_next_heading_of_its_level() {
        let identity = "You are Ada.\n\n## Tone\nBrief.\n### Detail\nNone.\n## Owner\nSam.\n";
        let cases = [
            (
                "Tone",
                "Warm and brief.",
                "You are Ada.\n\n## Tone\n\nWarm and brief.\n\n## Owner\nSam.",
            ),
            (
                "owner",
                "Sam, in Berlin.",
                "You are Ada.\n\n## Tone\nBrief.\n### Detail\nNone.\n## Owner\n\nSam, in Berlin.",
            ),
            (
                "Habits",
                "Tea at four.",
                "You are Ada.\n\n## Tone\nBrief.\n### Detail\nNone.\n## Owner\nSam.\n\n## Habits\n\nTea at four.\n",
            ),
        ];
        for (name, body, want) in cases {
            assert_eq!(with_section(identity, name, body), want, "{name}");
        }
    }
}
