//! An IMAP session on the account, through the `imap` crate over
//! [`crate::wire`]: signing in, opening a folder, finding and fetching
//! messages by UID, waiting in IDLE, saving a draft.
//!
//! Every search is by UID, never by sequence number: UIDs stay put while
//! other clients delete mail, sequence numbers do not.

use std::net::TcpStream;
use std::time::Duration;

use imap::types::Flag;

use crate::config::Settings;
use crate::wire::{self, Wire};

/// Why a session failed.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// The connection could not be made.
    #[error(transparent)]
    Wire(#[from] wire::WireError),
    /// The server refused the user name or password.
    #[error("the IMAP server refused the login for {0}: {1}")]
    Login(String, String),
    /// A command failed.
    #[error("IMAP {0} failed: {1}")]
    Command(&'static str, String),
}

/// A folder as opened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Opened {
    /// Its UIDVALIDITY: while it stays, a UID names the same message.
    pub validity: u32,
    /// The UID the next message will get.
    pub next: u32,
}

/// One message's headers as listed.
pub struct Fetched {
    /// Its UID.
    pub uid: u32,
    /// Its size in bytes.
    pub size: u32,
    /// Its flags (`\Seen`...).
    pub flags: Vec<String>,
    /// What was fetched of it.
    pub bytes: Vec<u8>,
}

/// A signed-in session.
pub struct Session {
    inner: imap::Session<Wire>,
    /// The socket, to hang up from another thread.
    pub handle: TcpStream,
    idle: bool,
}

impl Session {
    /// Connects and signs in.
    pub fn open(settings: &Settings) -> Result<Session, SessionError> {
        let (wire, handle, greeted) = wire::connect(&settings.imap)?;
        let mut client = imap::Client::new(wire);
        if !greeted {
            client
                .read_greeting()
                .map_err(|e| SessionError::Command("greeting", e.to_string()))?;
        }
        let mut inner = client
            .login(&settings.username, &settings.password)
            .map_err(|(e, _)| SessionError::Login(settings.username.clone(), e.to_string()))?;
        let idle = inner
            .capabilities()
            .map(|c| c.has_str("IDLE"))
            .unwrap_or(false);
        Ok(Session {
            inner,
            handle,
            idle,
        })
    }

    /// Whether the server can push new mail (IDLE).
    pub fn can_idle(&self) -> bool {
        self.idle
    }

    /// Opens `folder` read-write (`select`) or read-only (`examine`).
    pub fn open_folder(&mut self, folder: &str, write: bool) -> Result<Opened, SessionError> {
        let mailbox = if write {
            self.inner.select(folder)
        } else {
            self.inner.examine(folder)
        }
        .map_err(|e| SessionError::Command("SELECT", e.to_string()))?;
        Ok(Opened {
            validity: mailbox.uid_validity.unwrap_or(0),
            next: mailbox.uid_next.unwrap_or(1),
        })
    }

    /// The UIDs matching `query` (IMAP SEARCH syntax), lowest first.
    pub fn search(&mut self, query: &str) -> Result<Vec<u32>, SessionError> {
        let mut uids: Vec<u32> = self
            .inner
            .uid_search(query)
            .map_err(|e| SessionError::Command("SEARCH", e.to_string()))?
            .into_iter()
            .collect();
        uids.sort_unstable();
        Ok(uids)
    }

    /// The UIDs above `after`. `UID n:*` also matches the highest message
    /// when every UID is below `n` (RFC 3501), so the answer is filtered.
    pub fn after(&mut self, after: u32) -> Result<Vec<u32>, SessionError> {
        let from = after.saturating_add(1);
        Ok(self
            .search(&format!("UID {from}:*"))?
            .into_iter()
            .filter(|&u| u > after)
            .collect())
    }

    /// Fetches `items` (a parenthesized FETCH list) of each of `uids`;
    /// `part` picks the bytes kept: `body`, `header`.
    pub fn fetch(
        &mut self,
        uids: &[u32],
        items: &str,
        header_only: bool,
    ) -> Result<Vec<Fetched>, SessionError> {
        if uids.is_empty() {
            return Ok(Vec::new());
        }
        let set: Vec<String> = uids.iter().map(u32::to_string).collect();
        let answers = self
            .inner
            .uid_fetch(set.join(","), items)
            .map_err(|e| SessionError::Command("FETCH", e.to_string()))?;
        let mut out: Vec<Fetched> = answers
            .iter()
            .filter_map(|f| {
                let bytes = if header_only { f.header() } else { f.body() };
                Some(Fetched {
                    uid: f.uid?,
                    size: f.size.unwrap_or(0),
                    flags: f.flags().iter().map(|fl| fl.to_string()).collect(),
                    bytes: bytes.unwrap_or_default().to_vec(),
                })
            })
            .collect();
        out.sort_by_key(|f| f.uid);
        Ok(out)
    }

    /// The whole message `uid`, without marking it read; `None` when there
    /// is no such message.
    pub fn message(&mut self, uid: u32) -> Result<Option<Fetched>, SessionError> {
        Ok(self
            .fetch(&[uid], "(UID FLAGS RFC822.SIZE BODY.PEEK[])", false)?
            .into_iter()
            .next())
    }

    /// Waits in IDLE up to `wait` for the folder to change; `true` when it
    /// did.
    pub fn wait(&mut self, wait: Duration) -> Result<bool, SessionError> {
        let mut handle = self.inner.idle();
        handle.timeout(wait).keepalive(false);
        let outcome = handle
            .wait_while(|response| {
                !matches!(
                    response,
                    imap::types::UnsolicitedResponse::Exists(_)
                        | imap::types::UnsolicitedResponse::Recent(_)
                )
            })
            .map_err(|e| SessionError::Command("IDLE", e.to_string()))?;
        Ok(outcome == imap::extensions::idle::WaitOutcome::MailboxChanged)
    }

    /// Keeps the session alive and lets the server report changes.
    pub fn noop(&mut self) -> Result<(), SessionError> {
        self.inner
            .noop()
            .map_err(|e| SessionError::Command("NOOP", e.to_string()))
    }

    /// The folder marked `\Drafts` (RFC 6154), else one called `Drafts`.
    pub fn drafts_folder(&mut self) -> Result<String, SessionError> {
        let names = self
            .inner
            .list(Some(""), Some("*"))
            .map_err(|e| SessionError::Command("LIST", e.to_string()))?;
        let marked = names.iter().find(|n| {
            n.attributes()
                .iter()
                .any(|a| format!("{a:?}").contains("Drafts"))
        });
        Ok(marked
            .or_else(|| {
                names
                    .iter()
                    .find(|n| n.name().eq_ignore_ascii_case("drafts"))
            })
            .map_or_else(|| "Drafts".to_owned(), |n| n.name().to_owned()))
    }

    /// Saves `raw` in `folder` as a draft.
    pub fn save_draft(&mut self, folder: &str, raw: &[u8]) -> Result<Option<u32>, SessionError> {
        let appended = self
            .inner
            .append(folder, raw)
            .flag(Flag::Draft)
            .flag(Flag::Seen)
            .finish()
            .map_err(|e| SessionError::Command("APPEND", e.to_string()))?;
        Ok(appended.uids.and_then(|u| match u.first() {
            Some(imap_proto::UidSetMember::Uid(uid)) => Some(*uid),
            _ => None,
        }))
    }

    /// Says goodbye.
    pub fn close(mut self) {
        let _ = self.inner.logout();
    }
}
