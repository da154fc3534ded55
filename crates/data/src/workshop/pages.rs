//! The pages the agent publishes: stored in the `pages` table, served by
//! the canvas at `/pages/<path>`, each with named read-only queries on
//! `agent_data.db` that its script fetches as JSON.
//!
//! Everything is checked when a page is saved, so a bad page never
//! reaches a browser: the path's characters, the MIME type against an
//! allow-list, the size, a file's place (under `$HEARTH_HOME/pages` or
//! `shared`, after following links), and each query (it must prepare and
//! SQLite must judge it read-only). A file is checked again each time it
//! is served. Every save and deletion is a version (`versions`, kind
//! `page`) holding the whole page record, so any earlier page can be
//! restored.
//!
//! Architecture invariant: a page's query never writes. It is checked at
//! save, and it runs on the connection opened read-only, whose statements
//! are refused before they run when SQLite judges them writing.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use hearth_sdk::protocol::{PageAnswer, PageRequest};
use rusqlite::{OptionalExtension, params};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::data::{Access, AgentData, Bounds, DataError};
use super::versions::{Kind, Version, Versions};
use hearth_base::store::{Cold, now_ms};

/// The pages table, on the store's cold connection.
pub struct Pages {
    cold: Cold,
    versions: Versions,
    home: PathBuf,
}

/// One page, as stored.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Page {
    /// `reports/weekly`; served at `/pages/reports/weekly`.
    pub path: String,
    /// Its MIME type, from [`MIMES`].
    pub mime: String,
    /// The text, unless it is served from `file`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    /// A file under `$HEARTH_HOME`, relative to it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// Served without a session.
    pub public: bool,
    /// Query name -> SQL.
    pub queries: BTreeMap<String, String>,
}

/// What a create or update sets; `None` keeps the current value (or the
/// default, for a create).
#[derive(Clone, Debug, Default)]
pub struct PageChange {
    /// The MIME type.
    pub mime: Option<String>,
    /// The text (replaces a file).
    pub content: Option<String>,
    /// A file under `$HEARTH_HOME` (replaces the text).
    pub file: Option<String>,
    /// Served without a session.
    pub public: Option<bool>,
    /// The whole set of named queries.
    pub queries: Option<BTreeMap<String, String>>,
}

/// A page in a listing.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PageSummary {
    /// Its path.
    pub path: String,
    /// Where the canvas serves it.
    pub url: String,
    /// Its MIME type.
    pub mime: String,
    /// Served without a session.
    pub public: bool,
    /// Its query names.
    pub queries: Vec<String>,
    /// Who saved it last.
    pub author: String,
    /// When, in ms since the epoch.
    pub updated_at_ms: i64,
}

/// Why a page was not saved, found or served.
#[derive(Debug, thiserror::Error)]
pub enum PageError {
    /// The path breaks the rules.
    #[error(
        "field `path`: {path:?} {why} (1 to {MAX_PATH} characters of a-z 0-9 - _ . /, segments not empty, no `..`, no segment `queries`)"
    )]
    Path {
        /// The path given.
        path: String,
        /// Which rule it breaks.
        why: &'static str,
    },
    /// The MIME type is not on the allow-list.
    #[error("field `mime`: {0:?} is not allowed; use one of {list}", list = mime_list())]
    Mime(String),
    /// Both or neither of `content` and `file`.
    #[error("fields `content` and `file`: {0}")]
    Source(&'static str),
    /// The content is over the limit.
    #[error("field `content`: {0} bytes, over the {MAX_CONTENT}-byte limit")]
    TooLarge(usize),
    /// An image type was given as text.
    #[error(
        "field `content`: {0} is binary; save the image under $HEARTH_HOME/pages and give `file`"
    )]
    Binary(String),
    /// The file is not one a page may serve.
    #[error("field `file`: {file:?} {why}")]
    File {
        /// The file given.
        file: String,
        /// What is wrong with it.
        why: String,
    },
    /// More queries than allowed.
    #[error("field `queries`: {0} queries, at most {MAX_QUERIES}")]
    TooManyQueries(usize),
    /// A query name breaks the rules.
    #[error("field `queries`: the name {0:?} is not 1 to 40 characters of a-z 0-9 _")]
    QueryName(String),
    /// A query does not prepare, or writes.
    #[error("query `{name}`: {error}")]
    Query {
        /// The query's name.
        name: String,
        /// Why it was refused.
        error: DataError,
    },
    /// `create` of a page that exists.
    #[error("page {0:?} exists already: use action `update`")]
    Exists(String),
    /// No page at that path.
    #[error("no page {0:?}: `list` shows the pages there are")]
    NotFound(String),
    /// No such version of the page, or one that cannot be restored.
    #[error("field `version`: {0}")]
    Version(String),
    /// The page has no query of that name.
    #[error("page {path:?} has no query {name:?}")]
    NoQuery {
        /// The page.
        path: String,
        /// The name asked for.
        name: String,
    },
    /// The store failed.
    #[error("the store failed: {0}")]
    Store(#[from] rusqlite::Error),
}

/// The longest path.
pub const MAX_PATH: usize = 200;
/// The most text a page holds, in bytes.
pub const MAX_CONTENT: usize = 512 << 10;
/// The largest file a page serves, in bytes.
pub const MAX_FILE: u64 = 8 << 20;
/// The most named queries a page has.
pub const MAX_QUERIES: usize = 20;
/// The MIME types a page may have; the last four only as a `file`.
pub const MIMES: [&str; 11] = [
    "text/html",
    "text/markdown",
    "text/plain",
    "text/css",
    "text/javascript",
    "application/json",
    "image/svg+xml",
    "image/png",
    "image/jpeg",
    "image/gif",
    "image/webp",
];
/// The directories under `$HEARTH_HOME` a page's file may be in.
pub const FILE_DIRS: [&str; 2] = ["pages", "shared"];

impl Pages {
    /// The pages of the daemon whose home is `home`, stored on `cold`.
    pub fn new(cold: Cold, home: &Path) -> Pages {
        Pages {
            versions: Versions::new(cold.clone()),
            cold,
            home: home.to_owned(),
        }
    }

    /// Creates the page at `path`; `data` checks its queries.
    pub fn create(
        &self,
        path: &str,
        change: PageChange,
        author: &str,
        data: &AgentData,
    ) -> Result<Page, PageError> {
        check_path(path)?;
        if self.load(path)?.is_some() {
            return Err(PageError::Exists(path.to_owned()));
        }
        let page = Page {
            path: path.to_owned(),
            mime: change.mime.clone().unwrap_or_else(|| "text/html".into()),
            content: None,
            file: None,
            public: false,
            queries: BTreeMap::new(),
        };
        let page = self.apply(page, change, data)?;
        self.save(&page, author, "created")?;
        Ok(page)
    }

    /// Changes what `change` sets on the page at `path`.
    pub fn update(
        &self,
        path: &str,
        change: PageChange,
        author: &str,
        data: &AgentData,
    ) -> Result<Page, PageError> {
        let page = self.get(path)?;
        let page = self.apply(page, change, data)?;
        self.save(&page, author, "updated")?;
        Ok(page)
    }

    /// Deletes the page at `path` (its versions stay).
    pub fn delete(&self, path: &str, author: &str) -> Result<(), PageError> {
        let gone = self
            .cold
            .lock()
            .execute("DELETE FROM pages WHERE path = ?1", [path])?;
        if gone == 0 {
            return Err(PageError::NotFound(path.to_owned()));
        }
        self.versions
            .record(Kind::Page, path, None, author, "deleted")?;
        Ok(())
    }

    /// Every version of the page at `path` (it may be deleted now),
    /// oldest first.
    pub fn history(&self, path: &str) -> Result<Vec<Version>, PageError> {
        let history = self.versions.history(Kind::Page, path)?;
        if history.is_empty() {
            return Err(PageError::NotFound(path.to_owned()));
        }
        Ok(history)
    }

    /// Saves version `version` of the page at `path` as its newest, checked
    /// as any save is (a file it names must still be in place, its
    /// queries must still prepare); a deleted page comes back.
    pub fn rollback(
        &self,
        path: &str,
        version: i64,
        author: &str,
        data: &AgentData,
    ) -> Result<Page, PageError> {
        let record = match self.versions.content(Kind::Page, path, version)? {
            Some(Some(record)) => record,
            Some(None) => {
                return Err(PageError::Version(format!(
                    "version {version} of {path:?} is its deletion; use action `delete`"
                )));
            }
            None => {
                return Err(PageError::Version(format!(
                    "{path:?} has no version {version}; action `history` lists them"
                )));
            }
        };
        let old: Page = serde_json::from_str(&record).map_err(|e| {
            PageError::Version(format!("version {version} of {path:?} is unreadable: {e}"))
        })?;
        let base = Page {
            path: path.to_owned(),
            mime: old.mime.clone(),
            content: None,
            file: None,
            public: old.public,
            queries: BTreeMap::new(),
        };
        let change = PageChange {
            mime: Some(old.mime),
            content: old.content,
            file: old.file,
            public: Some(old.public),
            queries: Some(old.queries),
        };
        let page = self.apply(base, change, data)?;
        self.save(&page, author, &format!("rollback to version {version}"))?;
        Ok(page)
    }

    /// Every page, by path.
    pub fn list(&self) -> Result<Vec<PageSummary>, PageError> {
        let conn = self.cold.lock();
        let mut stmt = conn.prepare_cached(
            "SELECT path, mime, public, queries, author, updated_at_ms FROM pages ORDER BY path",
        )?;
        let rows = stmt.query_map([], |r| {
            let path: String = r.get(0)?;
            let queries: String = r.get(3)?;
            Ok(PageSummary {
                url: url(&path),
                path,
                mime: r.get(1)?,
                public: r.get(2)?,
                queries: parse_queries(&queries).into_keys().collect(),
                author: r.get(4)?,
                updated_at_ms: r.get(5)?,
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// The page at `path`.
    pub fn get(&self, path: &str) -> Result<Page, PageError> {
        self.load(path)?
            .ok_or_else(|| PageError::NotFound(path.to_owned()))
    }

    /// Answers a channel's `page.get` or `page.query` (a query when
    /// `request.query` is set). Without a session, a private page and a
    /// page that does not exist answer alike (401), so visitors cannot
    /// probe which private pages there are.
    pub fn answer(&self, request: &PageRequest, data: &AgentData) -> PageAnswer {
        let refused = |status: u16, error: String| PageAnswer::Refused { status, error };
        let page = match self.load(&request.path) {
            Ok(Some(page)) if page.public || request.session => page,
            Ok(None) if request.session => {
                return refused(404, format!("no page {:?}", request.path));
            }
            Ok(_) => {
                return refused(
                    401,
                    "log in first: this page needs the owner's session".into(),
                );
            }
            Err(e) => return refused(500, e.to_string()),
        };
        let Some(name) = &request.query else {
            return match self.source(&page) {
                Ok((content, file)) => PageAnswer::Page {
                    mime: page.mime,
                    public: page.public,
                    content,
                    file,
                },
                Err(e) => refused(500, e.to_string()),
            };
        };
        let Some(sql) = page.queries.get(name) else {
            return refused(
                404,
                PageError::NoQuery {
                    path: page.path,
                    name: name.clone(),
                }
                .to_string(),
            );
        };
        let params: Map<String, Value> = request
            .params
            .iter()
            .map(|(k, v)| (k.clone(), Value::String(v.clone())))
            .collect();
        match data.run(Access::ReadOnly, sql, &Value::Object(params), Bounds::PAGE) {
            Ok(rows) => PageAnswer::Rows {
                public: page.public,
                result: json!({
                    "columns": rows.columns,
                    "rows": rows.objects(),
                    "row_count": rows.rows.len(),
                    "truncated": rows.truncated,
                }),
            },
            Err(e) => refused(400, format!("query `{name}`: {e}")),
        }
    }

    fn load(&self, path: &str) -> Result<Option<Page>, PageError> {
        let conn = self.cold.lock();
        let mut stmt = conn.prepare_cached(
            "SELECT path, mime, content, file, public, queries FROM pages WHERE path = ?1",
        )?;
        let page = stmt
            .query_row([path], |r| {
                let queries: String = r.get(5)?;
                Ok(Page {
                    path: r.get(0)?,
                    mime: r.get(1)?,
                    content: r.get(2)?,
                    file: r.get(3)?,
                    public: r.get(4)?,
                    queries: parse_queries(&queries),
                })
            })
            .optional()?;
        Ok(page)
    }

    /// `page` with `change` applied and everything checked.
    fn apply(
        &self,
        mut page: Page,
        change: PageChange,
        data: &AgentData,
    ) -> Result<Page, PageError> {
        match (change.content, change.file) {
            (Some(_), Some(_)) => return Err(PageError::Source("give one, not both")),
            (Some(content), None) => {
                page.content = Some(content);
                page.file = None;
            }
            (None, Some(file)) => {
                page.file = Some(file);
                page.content = None;
            }
            (None, None) => {}
        }
        if let Some(mime) = change.mime {
            page.mime = mime;
        }
        if let Some(public) = change.public {
            page.public = public;
        }
        if let Some(queries) = change.queries {
            page.queries = queries;
        }
        if !MIMES.contains(&page.mime.as_str()) {
            return Err(PageError::Mime(page.mime));
        }
        match (&page.content, &page.file) {
            (Some(content), _) => {
                if content.len() > MAX_CONTENT {
                    return Err(PageError::TooLarge(content.len()));
                }
                if is_binary(&page.mime) {
                    return Err(PageError::Binary(page.mime));
                }
            }
            (None, Some(file)) => {
                let resolved = self.resolve(file)?;
                // Stored relative to the home, as resolved: a link is
                // followed once, now, and checked again at each serve.
                let relative = resolved
                    .strip_prefix(self.canonical_home(file)?)
                    .unwrap_or(&resolved)
                    .to_string_lossy()
                    .into_owned();
                page.file = Some(relative);
            }
            (None, None) => return Err(PageError::Source("a page needs one of them")),
        }
        if page.queries.len() > MAX_QUERIES {
            return Err(PageError::TooManyQueries(page.queries.len()));
        }
        for (name, sql) in &page.queries {
            if !valid_query_name(name) {
                return Err(PageError::QueryName(name.clone()));
            }
            let query_error = |error| PageError::Query {
                name: name.clone(),
                error,
            };
            if !data.is_read_only(sql).map_err(query_error)? {
                return Err(query_error(DataError::WritesInReadOnly));
            }
        }
        Ok(page)
    }

    fn save(&self, page: &Page, author: &str, note: &str) -> Result<(), PageError> {
        let now = now_ms();
        let queries = serde_json::to_string(&page.queries).unwrap_or_else(|_| "{}".into());
        self.cold.lock().execute(
            "INSERT INTO pages (path, mime, content, file, public, queries, author, created_at_ms, updated_at_ms) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?8) \
             ON CONFLICT (path) DO UPDATE SET mime = ?2, content = ?3, file = ?4, public = ?5, \
             queries = ?6, author = ?7, updated_at_ms = ?8",
            params![page.path, page.mime, page.content, page.file, page.public, queries, author, now],
        )?;
        // The whole record: a rollback restores queries and flags too.
        let record = serde_json::to_string(page).unwrap_or_default();
        self.versions
            .record(Kind::Page, &page.path, Some(&record), author, note)?;
        Ok(())
    }

    /// The text, or the checked absolute file, to serve.
    fn source(&self, page: &Page) -> Result<(Option<String>, Option<String>), PageError> {
        match (&page.content, &page.file) {
            (Some(content), _) => Ok((Some(content.clone()), None)),
            (None, Some(file)) => {
                let resolved = self.resolve(file)?;
                Ok((None, Some(resolved.to_string_lossy().into_owned())))
            }
            (None, None) => Err(PageError::Source("the stored page has neither")),
        }
    }

    fn canonical_home(&self, file: &str) -> Result<PathBuf, PageError> {
        self.home.canonicalize().map_err(|e| PageError::File {
            file: file.to_owned(),
            why: format!("cannot be checked: $HEARTH_HOME does not resolve: {e}"),
        })
    }

    /// `file` (relative to `$HEARTH_HOME`, or absolute) with every link
    /// followed, if it is a regular file within the size limit inside one
    /// of [`FILE_DIRS`].
    fn resolve(&self, file: &str) -> Result<PathBuf, PageError> {
        let bad = |why: String| PageError::File {
            file: file.to_owned(),
            why,
        };
        let home = self.canonical_home(file)?;
        let resolved = home
            .join(file)
            .canonicalize()
            .map_err(|e| bad(format!("does not resolve: {e}")))?;
        let inside = FILE_DIRS
            .iter()
            .filter_map(|dir| home.join(dir).canonicalize().ok())
            .any(|dir| resolved.starts_with(dir));
        if !inside {
            return Err(bad(format!(
                "is not inside $HEARTH_HOME/{} (after following links)",
                FILE_DIRS.join(" or $HEARTH_HOME/")
            )));
        }
        let meta = resolved
            .metadata()
            .map_err(|e| bad(format!("cannot be read: {e}")))?;
        if !meta.is_file() {
            return Err(bad("is not a regular file".into()));
        }
        if meta.len() > MAX_FILE {
            return Err(bad(format!(
                "is {} bytes, over the {MAX_FILE}-byte limit",
                meta.len()
            )));
        }
        Ok(resolved)
    }
}

/// Where the canvas serves the page at `path`.
pub fn url(path: &str) -> String {
    format!("/pages/{path}")
}

/// Checks a page path against the rules in [`PageError::Path`].
pub fn check_path(path: &str) -> Result<(), PageError> {
    let why = if path.is_empty() || path.len() > MAX_PATH {
        Some("is not 1 to 200 characters long")
    } else if !path
        .bytes()
        .all(|b| matches!(b, b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'/'))
    {
        Some("has a character outside a-z 0-9 - _ . /")
    } else if path.starts_with('/') || path.ends_with('/') || path.contains("//") {
        Some("has an empty segment")
    } else if path.split('/').any(|s| s == ".." || s == ".") {
        Some("has a `.` or `..` segment")
    } else if path.split('/').any(|s| s == "queries") {
        Some("has a segment `queries`, which names a page's queries")
    } else {
        None
    };
    match why {
        Some(why) => Err(PageError::Path {
            path: path.to_owned(),
            why,
        }),
        None => Ok(()),
    }
}

fn valid_query_name(name: &str) -> bool {
    (1..=40).contains(&name.len())
        && name
            .bytes()
            .all(|b| matches!(b, b'a'..=b'z' | b'0'..=b'9' | b'_'))
}

fn is_binary(mime: &str) -> bool {
    mime.starts_with("image/") && mime != "image/svg+xml"
}

fn mime_list() -> String {
    MIMES.join(", ")
}

/// Stored queries; the column is only ever written from a map.
fn parse_queries(text: &str) -> BTreeMap<String, String> {
    serde_json::from_str(text).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_follow_the_rules() {
        for good in ["a", "reports/weekly", "x-1_2.html", "a/b/c.json"] {
            assert!(check_path(good).is_ok(), "{good}");
        }
        let long = "a".repeat(201);
        for bad in [
            "",
            long.as_str(),
            "/a",
            "a/",
            "a//b",
            "A",
            "a b",
            "../x",
            "a/../b",
            "a/./b",
            "a/queries",
            "queries/x",
            "caf\u{e9}",
        ] {
            let error = check_path(bad).unwrap_err().to_string();
            assert!(error.starts_with("field `path`"), "{bad}: {error}");
        }
    }
}
