//! One IMAP connection: reading commands, refusing those the state does
//! not allow, logging in, IDLE, and keeping the session's view of its
//! selected mailbox up to date. The commands on mailboxes and messages are
//! in `commands.rs`.

use std::collections::BTreeSet;
use std::io::{self, BufRead, BufReader, Write};
use std::net::TcpStream;

use base64::Engine;

use super::wire::{self, RawCommand, SeqSet, Token};
use super::{IDLE_POLL, Mailbox, Message, Shared, search};

/// Serves one connection, registered so that `drop_connections` can end it.
pub(super) fn serve(stream: TcpStream, shared: &Shared) -> io::Result<()> {
    let id = {
        let mut state = shared.lock();
        state.next_connection += 1;
        let id = state.next_connection;
        state.connections.push((id, stream.try_clone()?));
        id
    };
    let result = Session::new(shared, stream).and_then(|mut session| session.run());
    shared.lock().connections.retain(|(c, _)| *c != id);
    result
}

/// One client connection and where it is in the protocol.
pub(super) struct Session<'a> {
    pub(super) shared: &'a Shared,
    pub(super) reader: BufReader<TcpStream>,
    pub(super) out: TcpStream,
    pub(super) authenticated: bool,
    pub(super) selected: Option<Selected>,
}

/// The selected mailbox, as this session sees it.
pub(super) struct Selected {
    pub(super) name: String,
    pub(super) read_only: bool,
    /// Its UIDVALIDITY when selected: a change closes the session.
    pub(super) validity: u32,
    /// The UIDs sequence numbers stand for: `uids[0]` is message 1.
    pub(super) uids: Vec<u32>,
    /// The messages that are `\Recent` to this session.
    pub(super) recent: BTreeSet<u32>,
}

impl Selected {
    /// What `*` stands for: the highest sequence number and UID.
    pub(super) fn stars(&self) -> search::Stars {
        search::Stars {
            seq: seq_number(self.uids.len()),
            uid: self.uids.last().copied().unwrap_or(0),
        }
    }

    /// The messages of the view that `set` names, still in `mailbox`, as
    /// (sequence number, UID).
    pub(super) fn chosen(&self, mailbox: &Mailbox, set: &SeqSet, by_uid: bool) -> Vec<(u32, u32)> {
        let stars = self.stars();
        self.uids
            .iter()
            .enumerate()
            .map(|(i, &uid)| (seq_number(i + 1), uid))
            .filter(|&(seq, uid)| {
                if by_uid {
                    set.contains(uid, stars.uid)
                } else {
                    set.contains(seq, stars.seq)
                }
            })
            .filter(|&(_, uid)| mailbox.find(uid).is_some())
            .collect()
    }

    /// A message's flags as FETCH writes them, `\Recent` included.
    pub(super) fn flag_list(&self, message: &Message) -> String {
        let mut flags = message.flags.clone();
        if self.recent.contains(&message.uid) {
            flags.push("\\Recent".into());
        }
        format!("({})", flags.join(" "))
    }
}

/// A position in a view as a sequence number.
pub(super) fn seq_number(position: usize) -> u32 {
    u32::try_from(position).expect("fewer than 2^32 messages")
}

/// What a command ends with: the tagged response's status and text (`OK
/// Fetch completed`), the same whether it succeeded or not, so `?` can
/// return a failure early.
pub(super) type Done = Result<String, String>;

pub(super) fn bad(text: &str) -> String {
    format!("BAD {text}")
}

impl<'a> Session<'a> {
    fn new(shared: &'a Shared, stream: TcpStream) -> io::Result<Session<'a>> {
        Ok(Session {
            shared,
            reader: BufReader::new(stream.try_clone()?),
            out: stream,
            authenticated: false,
            selected: None,
        })
    }

    fn run(&mut self) -> io::Result<()> {
        let greeting = format!(
            "* OK [CAPABILITY {}] hearth's fake IMAP server ready\r\n",
            self.shared.capabilities()
        );
        self.out.write_all(greeting.as_bytes())?;
        while let Some(raw) = wire::read_command(&mut self.reader, &mut self.out)? {
            if !self.command(raw)? {
                return Ok(());
            }
        }
        Ok(())
    }

    /// Runs one command; false when the session is over.
    fn command(&mut self, raw: RawCommand) -> io::Result<bool> {
        let tokens = match wire::tokenize(&raw.bytes) {
            Ok(tokens) => tokens,
            Err(error) => {
                self.record(&raw, None);
                let tag = raw.first_line.split(' ').next().unwrap_or_default();
                let tag = if tag.is_empty() { "*" } else { tag };
                return self.reply(&format!("{tag} BAD {error}\r\n"));
            }
        };
        self.record(&raw, Some(&tokens));
        let (tag, name, args) = match tokens.as_slice() {
            [Token::Atom(tag), Token::Atom(name), args @ ..] => {
                (tag.as_str(), name.to_ascii_uppercase(), args)
            }
            [Token::Atom(tag), ..] => return self.reply(&format!("{tag} BAD Missing command\r\n")),
            _ => return self.reply("* BAD Missing tag\r\n"),
        };
        if raw.unwanted_literal_plus && !self.shared.options.literal_plus {
            return self.reply(&format!("{tag} BAD LITERAL+ is not offered\r\n"));
        }
        let (name, args, by_uid) = match (name.as_str(), args) {
            ("UID", [Token::Atom(inner), rest @ ..]) => (inner.to_ascii_uppercase(), rest, true),
            _ => (name, args, false),
        };
        if let Some(refusal) = self.refusal(&name, by_uid) {
            return self.reply(&format!("{tag} {refusal}\r\n"));
        }
        let mut out = Vec::new();
        let done = match name.as_str() {
            "LOGOUT" => {
                return self
                    .reply(&format!(
                        "* BYE Logging out\r\n{tag} OK Logout completed\r\n"
                    ))
                    .map(|_| false);
            }
            "IDLE" => return self.idle(tag),
            "AUTHENTICATE" => self.authenticate(args)?,
            _ => self.dispatch(&name, args, by_uid, &mut out),
        };
        let text = done.unwrap_or_else(|failure| failure);
        let expunges_allowed = by_uid || !matches!(name.as_str(), "FETCH" | "STORE" | "SEARCH");
        let alive = self.sync(&mut out, expunges_allowed);
        if alive {
            out.extend_from_slice(format!("{tag} {text}\r\n").as_bytes());
        }
        self.out.write_all(&out)?;
        Ok(alive)
    }

    /// Writes `text`; the session goes on.
    fn reply(&mut self, text: &str) -> io::Result<bool> {
        self.out.write_all(text.as_bytes())?;
        Ok(true)
    }

    /// Logs the command line, its secrets hidden.
    fn record(&self, raw: &RawCommand, tokens: Option<&[Token]>) {
        let line = raw.first_line.split_once(' ').map_or("", |(_, rest)| rest);
        let word = line
            .split(' ')
            .next()
            .unwrap_or_default()
            .to_ascii_uppercase();
        let line = match (word.as_str(), tokens) {
            ("LOGIN", Some([_, _, user, ..])) => {
                format!(
                    "LOGIN {} ***",
                    wire::astring(&user.text().unwrap_or_default())
                )
            }
            ("LOGIN", _) => "LOGIN ***".to_owned(),
            ("AUTHENTICATE", Some([_, _, mechanism, _, ..])) => {
                format!("AUTHENTICATE {} ***", mechanism.text().unwrap_or_default())
            }
            _ => line.to_owned(),
        };
        self.shared.lock().commands.push(line);
    }

    /// Why `name` cannot run now, as a tagged response's text; `None`
    /// when it can.
    fn refusal(&self, name: &str, by_uid: bool) -> Option<String> {
        let options = &self.shared.options;
        let unknown = Some(bad(&format!("Unknown command {name}")));
        if by_uid {
            let uid_command = matches!(name, "FETCH" | "SEARCH" | "STORE" | "COPY")
                || (name == "EXPUNGE" && options.uidplus);
            if !uid_command {
                return unknown;
            }
        }
        let needs = match name {
            "CAPABILITY" | "NOOP" | "LOGOUT" => return None,
            "LOGIN" | "AUTHENTICATE" if self.authenticated => {
                return Some(bad("Already logged in"));
            }
            "LOGIN" | "AUTHENTICATE" => return None,
            "IDLE" if !options.idle => return unknown,
            "SELECT" | "EXAMINE" | "CREATE" | "LIST" | "LSUB" | "STATUS" | "APPEND" | "IDLE" => {
                false
            }
            "CHECK" | "CLOSE" | "EXPUNGE" | "SEARCH" | "FETCH" | "STORE" | "COPY" => true,
            _ => return unknown,
        };
        if !self.authenticated {
            Some(bad("Please log in first"))
        } else if needs && self.selected.is_none() {
            Some(bad("No mailbox selected"))
        } else {
            None
        }
    }

    /// The commands that need nothing but their arguments and the state.
    fn dispatch(&mut self, name: &str, args: &[Token], by_uid: bool, out: &mut Vec<u8>) -> Done {
        match name {
            "CAPABILITY" => {
                let line = format!("* CAPABILITY {}\r\n", self.shared.capabilities());
                out.extend_from_slice(line.as_bytes());
                Ok("OK Capability completed".into())
            }
            "NOOP" => Ok("OK NOOP completed".into()),
            "CHECK" => Ok("OK Check completed".into()),
            "LOGIN" => match args {
                [user, password] => self.log_in(
                    &user.text().ok_or(bad("Expected a user name"))?,
                    &password.text().ok_or(bad("Expected a password"))?,
                ),
                _ => Err(bad("LOGIN takes a user name and a password")),
            },
            "SELECT" => self.select(args, false, out),
            "EXAMINE" => self.select(args, true, out),
            "CREATE" => self.create(args),
            "LIST" => self.list(args, "LIST", out),
            "LSUB" => self.list(args, "LSUB", out),
            "STATUS" => self.status(args, out),
            "APPEND" => self.append(args),
            "CLOSE" => self.close(),
            "EXPUNGE" => self.expunge(args, by_uid, out),
            "SEARCH" => self.search(args, by_uid, out),
            "FETCH" => self.fetch(args, by_uid, out),
            "STORE" => self.store(args, by_uid, out),
            "COPY" => self.copy(args, by_uid),
            _ => Err(bad(&format!("Unknown command {name}"))),
        }
    }

    fn log_in(&mut self, user: &str, password: &str) -> Done {
        if user != self.shared.user || password != self.shared.password {
            return Err("NO [AUTHENTICATIONFAILED] Invalid credentials".into());
        }
        self.authenticated = true;
        self.shared.lock().logins += 1;
        self.shared.changed.notify_all();
        Ok(format!(
            "OK [CAPABILITY {}] Logged in",
            self.shared.capabilities()
        ))
    }

    /// AUTHENTICATE PLAIN (RFC 4616), with the response after a `+ `
    /// continuation or given at once (SASL-IR's initial response).
    fn authenticate(&mut self, args: &[Token]) -> io::Result<Done> {
        let mechanism = args.first().and_then(Token::atom).unwrap_or_default();
        if !mechanism.eq_ignore_ascii_case("PLAIN") {
            return Ok(Err("NO Unsupported authentication mechanism".into()));
        }
        let response = match args.get(1) {
            Some(initial) => initial.text().unwrap_or_default(),
            None => {
                self.out.write_all(b"+ \r\n")?;
                let mut line = Vec::new();
                if self.reader.read_until(b'\n', &mut line)? == 0 {
                    return Err(io::ErrorKind::UnexpectedEof.into());
                }
                wire::trim_crlf(&mut line);
                String::from_utf8_lossy(&line).into_owned()
            }
        };
        if response == "*" {
            return Ok(Err(bad("Authentication canceled")));
        }
        let decoded = match response.as_str() {
            "=" => Vec::new(),
            _ => match crate::fake_mail::base64().decode(response.trim()) {
                Ok(decoded) => decoded,
                Err(_) => return Ok(Err(bad("Invalid base64 in the response"))),
            },
        };
        let parts: Vec<&[u8]> = decoded.split(|&b| b == 0).collect();
        let [authz, user, password] = parts.as_slice() else {
            return Ok(Err("NO [AUTHENTICATIONFAILED] Invalid credentials".into()));
        };
        if !authz.is_empty() && authz != user {
            return Ok(Err("NO [AUTHENTICATIONFAILED] Invalid credentials".into()));
        }
        let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        Ok(self.log_in(&text(user), &text(password)))
    }

    /// IDLE (RFC 2177): `+ idling`, then news pushed as it comes, until
    /// the client writes DONE.
    fn idle(&mut self, tag: &str) -> io::Result<bool> {
        self.out.write_all(b"+ idling\r\n")?;
        let idling = Idling::start(self.shared);
        self.reader.get_ref().set_read_timeout(Some(IDLE_POLL))?;
        let mut line = Vec::new();
        let ended = loop {
            let mut news = Vec::new();
            let alive = self.sync(&mut news, true);
            self.out.write_all(&news)?;
            if !alive {
                break None;
            }
            match self.reader.read_until(b'\n', &mut line) {
                Ok(0) => break None,
                Ok(_) if line.ends_with(b"\n") => break Some(line),
                // Part of a line: the rest comes with the next read.
                Ok(_) => {}
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                    ) => {}
                Err(e) => return Err(e),
            }
        };
        drop(idling);
        self.reader.get_ref().set_read_timeout(None)?;
        let Some(mut line) = ended else {
            return Ok(false);
        };
        wire::trim_crlf(&mut line);
        let mut out = Vec::new();
        let alive = self.sync(&mut out, true);
        if alive {
            let text = if line.eq_ignore_ascii_case(b"DONE") {
                "OK Idle completed"
            } else {
                "BAD Expected DONE"
            };
            out.extend_from_slice(format!("{tag} {text}\r\n").as_bytes());
        }
        self.out.write_all(&out)?;
        Ok(alive)
    }

    /// Brings the view of the selected mailbox up to date, writing to
    /// `out` what changed: `* n EXPUNGE` for messages gone (when
    /// `expunges_allowed`), `* n EXISTS` and `* n RECENT` for new ones.
    /// False when the mailbox's UIDVALIDITY changed: `out` then ends with
    /// `* BYE` and the session must close.
    fn sync(&mut self, out: &mut Vec<u8>, expunges_allowed: bool) -> bool {
        let Some(selected) = self.selected.as_mut() else {
            return true;
        };
        let mut state = self.shared.lock();
        let Some(mailbox) = state.mailbox_mut(&selected.name) else {
            return true;
        };
        if mailbox.validity != selected.validity {
            out.extend_from_slice(b"* BYE Mailbox UIDVALIDITY changed\r\n");
            return false;
        }
        if expunges_allowed {
            let mut i = 0;
            while let Some(&uid) = selected.uids.get(i) {
                if mailbox.find(uid).is_none() {
                    selected.uids.remove(i);
                    selected.recent.remove(&uid);
                    out.extend_from_slice(format!("* {} EXPUNGE\r\n", i + 1).as_bytes());
                } else {
                    i += 1;
                }
            }
        }
        let last = selected.uids.last().copied().unwrap_or(0);
        let before = selected.uids.len();
        for message in mailbox.messages.iter_mut().filter(|m| m.uid > last) {
            selected.uids.push(message.uid);
            if message.recent {
                selected.recent.insert(message.uid);
                message.recent = selected.read_only;
            }
        }
        if selected.uids.len() > before {
            let recent = selected
                .recent
                .iter()
                .filter(|uid| selected.uids.contains(uid))
                .count();
            let lines = format!("* {} EXISTS\r\n* {recent} RECENT\r\n", selected.uids.len());
            out.extend_from_slice(lines.as_bytes());
        }
        true
    }
}

/// Counts a session as idling while it lives.
struct Idling<'a>(&'a Shared);

impl<'a> Idling<'a> {
    fn start(shared: &'a Shared) -> Idling<'a> {
        shared.lock().idling += 1;
        shared.changed.notify_all();
        Idling(shared)
    }
}

impl Drop for Idling<'_> {
    fn drop(&mut self) {
        self.0.lock().idling -= 1;
        self.0.changed.notify_all();
    }
}
