//! The fake IMAP4rev1 server: its mailboxes and the test's handle on them
//! ([`FakeImap`]). Each connection is a `Session` (`imap/session.rs`) on a
//! thread of its own; the commands it runs are in `imap/commands.rs`.
//!
//! Each session keeps its own view of the selected mailbox (the UIDs its
//! sequence numbers stand for), as a real server does: messages delivered
//! meanwhile join the view, announced by `* n EXISTS`, when the session is
//! told, that is at the end of each command and at once while it idles;
//! messages expunged elsewhere leave it with `* n EXPUNGE` (never during
//! FETCH, STORE or SEARCH, RFC 3501 section 7.4.1).

mod commands;
mod fetch;
mod message;
mod search;
mod session;
mod wire;

use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

use super::lock;
use crate::http_server::{accept_each, wait_until};

/// The first UIDVALIDITY; each new mailbox, and each renumbering, takes
/// the next number.
const FIRST_UIDVALIDITY: u32 = 1000;
/// How often an idling session looks for news to push.
const IDLE_POLL: Duration = Duration::from_millis(20);
/// The system flags a client may store, as SELECT lists them.
const SYSTEM_FLAGS: [&str; 5] = ["\\Answered", "\\Flagged", "\\Deleted", "\\Seen", "\\Draft"];
/// The mailboxes every fake starts with, and their special use (RFC 6154).
const MAILBOXES: [(&str, Option<&str>); 4] = [
    ("INBOX", None),
    ("Sent", Some("\\Sent")),
    ("Drafts", Some("\\Drafts")),
    ("Archive", Some("\\Archive")),
];

/// What the fake IMAP server offers; all of it by default.
#[derive(Debug, Clone)]
pub struct ImapOptions {
    /// IDLE (RFC 2177); without it, IDLE is an unknown command and not in
    /// the capabilities, and a client must poll.
    pub idle: bool,
    /// UIDPLUS (RFC 4315): APPEND answers `[APPENDUID v uid]`, COPY
    /// `[COPYUID ...]`, and UID EXPUNGE exists.
    pub uidplus: bool,
    /// LITERAL+ (RFC 7888): `{n+}` literals need no continuation; without
    /// it, a command with one is answered BAD.
    pub literal_plus: bool,
}

impl Default for ImapOptions {
    fn default() -> ImapOptions {
        ImapOptions {
            idle: true,
            uidplus: true,
            literal_plus: true,
        }
    }
}

/// The running fake IMAP server, on 127.0.0.1 in plain text. It stops
/// listening, and closes its sessions, when dropped.
pub struct FakeImap {
    addr: SocketAddr,
    shared: Arc<Shared>,
    acceptor: Option<JoinHandle<()>>,
}

struct Shared {
    user: String,
    password: String,
    options: ImapOptions,
    state: Mutex<State>,
    changed: Condvar,
    stopping: AtomicBool,
}

#[derive(Default)]
struct State {
    mailboxes: Vec<Mailbox>,
    next_validity: u32,
    /// Every command line, tag stripped, passwords hidden.
    commands: Vec<String>,
    logins: usize,
    /// Sessions in IDLE now.
    idling: usize,
    /// Every open connection, by id, to close them all at once.
    connections: Vec<(u64, TcpStream)>,
    next_connection: u64,
}

struct Mailbox {
    name: String,
    /// Its special-use attribute, `\Sent` say.
    special_use: Option<&'static str>,
    validity: u32,
    uid_next: u32,
    /// By UID, ascending.
    messages: Vec<Message>,
}

/// A stored message.
struct Message {
    uid: u32,
    /// Its flags, system flags in their canonical spelling; never `\Recent`,
    /// which belongs to a session.
    flags: Vec<String>,
    raw: Vec<u8>,
    /// `dd-Mon-yyyy hh:mm:ss +zzzz`.
    internal_date: String,
    /// No session has seen it yet: the next one to does holds it as
    /// `\Recent`.
    recent: bool,
}

impl Message {
    fn has_flag(&self, flag: &str) -> bool {
        self.flags.iter().any(|f| f.eq_ignore_ascii_case(flag))
    }

    fn set_flag(&mut self, flag: &str, on: bool) {
        let has = self.has_flag(flag);
        if on && !has {
            self.flags.push(flag.to_owned());
        } else if !on && has {
            self.flags.retain(|f| !f.eq_ignore_ascii_case(flag));
        }
    }
}

impl Mailbox {
    fn new(name: &str, special_use: Option<&'static str>, validity: u32) -> Mailbox {
        Mailbox {
            name: name.to_owned(),
            special_use,
            validity,
            uid_next: 1,
            messages: Vec::new(),
        }
    }

    fn find(&self, uid: u32) -> Option<&Message> {
        let i = self.messages.binary_search_by_key(&uid, |m| m.uid).ok()?;
        self.messages.get(i)
    }

    fn find_mut(&mut self, uid: u32) -> Option<&mut Message> {
        let i = self.messages.binary_search_by_key(&uid, |m| m.uid).ok()?;
        self.messages.get_mut(i)
    }

    /// Stores a new message; returns its UID.
    fn append(&mut self, raw: Vec<u8>, flags: Vec<String>, internal_date: String) -> u32 {
        let uid = self.uid_next;
        self.uid_next += 1;
        self.messages.push(Message {
            uid,
            flags,
            raw,
            internal_date,
            recent: true,
        });
        uid
    }
}

impl State {
    fn mailbox(&self, name: &str) -> Option<&Mailbox> {
        self.mailboxes.iter().find(|m| same_mailbox(&m.name, name))
    }

    fn mailbox_mut(&mut self, name: &str) -> Option<&mut Mailbox> {
        self.mailboxes
            .iter_mut()
            .find(|m| same_mailbox(&m.name, name))
    }

    fn new_validity(&mut self) -> u32 {
        let validity = self.next_validity;
        self.next_validity += 1;
        validity
    }
}

/// Whether two mailbox names are the same: INBOX in any case, others
/// exactly.
fn same_mailbox(a: &str, b: &str) -> bool {
    a == b || (a.eq_ignore_ascii_case("INBOX") && b.eq_ignore_ascii_case("INBOX"))
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        lock(&self.state)
    }

    fn stopping(&self) -> bool {
        self.stopping.load(Ordering::SeqCst)
    }

    /// The capability list, as the greeting, CAPABILITY and a login give it.
    fn capabilities(&self) -> String {
        let mut caps = vec!["IMAP4rev1"];
        if self.options.literal_plus {
            caps.push("LITERAL+");
        }
        if self.options.uidplus {
            caps.push("UIDPLUS");
        }
        caps.push("AUTH=PLAIN");
        if self.options.idle {
            caps.push("IDLE");
        }
        caps.join(" ")
    }
}

impl FakeImap {
    /// Starts a server with every option, taking `user` and `password`.
    pub fn start(user: &str, password: &str) -> FakeImap {
        FakeImap::start_with(user, password, ImapOptions::default())
    }

    /// Starts a server offering what `options` says.
    pub fn start_with(user: &str, password: &str, options: ImapOptions) -> FakeImap {
        let listener = TcpListener::bind("127.0.0.1:0").expect("fake IMAP: bind");
        let addr = listener.local_addr().expect("fake IMAP: address");
        let mut state = State {
            next_validity: FIRST_UIDVALIDITY,
            ..State::default()
        };
        for (name, special_use) in MAILBOXES {
            let validity = state.new_validity();
            state
                .mailboxes
                .push(Mailbox::new(name, special_use, validity));
        }
        let shared = Arc::new(Shared {
            user: user.to_owned(),
            password: password.to_owned(),
            options,
            state: Mutex::new(state),
            changed: Condvar::new(),
            stopping: AtomicBool::new(false),
        });
        let accepting = Arc::clone(&shared);
        let acceptor = std::thread::Builder::new()
            .name("fake-imap-accept".into())
            .spawn(move || accept_each(&listener, &accepting, Shared::stopping, session::serve))
            .expect("fake IMAP: spawn");
        FakeImap {
            addr,
            shared,
            acceptor: Some(acceptor),
        }
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// Its address, 127.0.0.1 and the port.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Delivers `raw` (a whole RFC 5322 message) to `mailbox`, received
    /// now; returns its UID. Sessions idling on the mailbox hear
    /// `* n EXISTS` and `* n RECENT` at once; others at their next command.
    pub fn deliver(&self, mailbox: &str, raw: &[u8]) -> u32 {
        self.deliver_at(mailbox, raw, &wire::now_date_time())
    }

    /// As [`FakeImap::deliver`], with the INTERNALDATE `internal_date`,
    /// `dd-Mon-yyyy hh:mm:ss +zzzz` (for SINCE and BEFORE searches).
    pub fn deliver_at(&self, mailbox: &str, raw: &[u8], internal_date: &str) -> u32 {
        let date = wire::normalize_date_time(internal_date)
            .unwrap_or_else(|| panic!("fake IMAP: {internal_date:?} is no INTERNALDATE"));
        let mut state = self.shared.lock();
        let uid = mailbox_mut(&mut state, mailbox).append(raw.to_vec(), Vec::new(), date);
        self.shared.changed.notify_all();
        uid
    }

    /// The messages of `mailbox`, by UID: (UID, flags, the raw message).
    /// The flags never hold `\Recent`.
    pub fn messages(&self, mailbox: &str) -> Vec<(u32, Vec<String>, Vec<u8>)> {
        let mut state = self.shared.lock();
        mailbox_mut(&mut state, mailbox)
            .messages
            .iter()
            .map(|m| (m.uid, m.flags.clone(), m.raw.clone()))
            .collect()
    }

    /// The UIDVALIDITY of `mailbox`.
    pub fn uid_validity(&self, mailbox: &str) -> u32 {
        mailbox_mut(&mut self.shared.lock(), mailbox).validity
    }

    /// What a server does when it rebuilds its index: `mailbox` gets a new
    /// UIDVALIDITY and its messages new UIDs, from 1. A session that has
    /// it selected is told `* BYE Mailbox UIDVALIDITY changed` and closed
    /// (as Dovecot does), so the client must select it again.
    pub fn renumber(&self, mailbox: &str) {
        let mut state = self.shared.lock();
        let validity = state.new_validity();
        let mailbox = mailbox_mut(&mut state, mailbox);
        mailbox.validity = validity;
        for (message, uid) in mailbox.messages.iter_mut().zip(1..) {
            message.uid = uid;
        }
        mailbox.uid_next = u32::try_from(mailbox.messages.len()).expect("message count") + 1;
        self.shared.changed.notify_all();
    }

    /// Every command line received, in order, without its tag; LOGIN's
    /// and AUTHENTICATE's secrets are `***`. A literal's bytes are not in
    /// it (an APPEND reads `APPEND "Drafts" (\Draft) {312}`).
    pub fn commands(&self) -> Vec<String> {
        self.shared.lock().commands.clone()
    }

    /// How many logins (LOGIN or AUTHENTICATE) succeeded.
    pub fn logins(&self) -> usize {
        self.shared.lock().logins
    }

    /// Waits until at least `n` logins have succeeded.
    pub fn wait_logins(&self, n: usize, timeout: Duration) -> bool {
        let state = self.shared.lock();
        wait_until(&self.shared.changed, state, timeout, |s| s.logins >= n).1
    }

    /// Waits until some session is in IDLE; false if none is by `timeout`.
    pub fn wait_idle(&self, timeout: Duration) -> bool {
        let state = self.shared.lock();
        wait_until(&self.shared.changed, state, timeout, |s| s.idling > 0).1
    }

    /// How many sessions are in IDLE now.
    pub fn idling(&self) -> usize {
        self.shared.lock().idling
    }

    /// Closes every open session at once, without a word, as a server
    /// restart looks to its clients. The server goes on listening.
    pub fn drop_connections(&self) {
        let connections = std::mem::take(&mut self.shared.lock().connections);
        for (_, stream) in connections {
            // Already closed by the client is as good.
            let _ = stream.shutdown(Shutdown::Both);
        }
    }
}

impl Drop for FakeImap {
    fn drop(&mut self) {
        self.shared.stopping.store(true, Ordering::SeqCst);
        self.drop_connections();
        let woken = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
        if let (Ok(_), Some(acceptor)) = (woken, self.acceptor.take()) {
            // The accept loop never panics; a failed join has nothing to report.
            let _ = acceptor.join();
        }
    }
}

/// The mailbox a test named, which must exist.
fn mailbox_mut<'s>(state: &'s mut State, name: &str) -> &'s mut Mailbox {
    state
        .mailbox_mut(name)
        .unwrap_or_else(|| panic!("fake IMAP: there is no mailbox {name:?}"))
}
