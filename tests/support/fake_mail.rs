//! A fake mail provider for the mail channel's tests: an IMAP4rev1 server
//! (RFC 3501, with IDLE from RFC 2177, LITERAL+ from RFC 7888 and UIDPLUS's
//! `APPENDUID`/`COPYUID` from RFC 4315) and an SMTP submission server
//! (RFC 5321 with AUTH from RFC 4954), each on 127.0.0.1 on a port of its
//! own, in plain text, one thread per connection.
//!
//! A real client talks to them (the `imap` crate, whose parser is strict, and
//! `lettre`), so what they write is byte-exact to the RFCs. A test:
//!
//! - puts mail in a mailbox with [`FakeImap::deliver`] (an idling session
//!   hears `* n EXISTS` at once) and reads the mailboxes back with
//!   [`FakeImap::messages`] (drafts the client APPENDed, flags it stored);
//! - shakes the client with [`FakeImap::drop_connections`] (a server
//!   restart) and [`FakeImap::renumber`] (a rebuilt index: new UIDVALIDITY);
//! - reads what the client sent through SMTP with [`FakeSmtp::wait_received`]
//!   and makes deliveries fail with [`FakeSmtp::fail_next`];
//! - writes the mails it delivers with [`mail`], a small message builder.
//!
//! The code: `fake_mail/imap.rs` holds the IMAP server's state and the
//! test's handle; under `fake_mail/imap/`, `session.rs` is one connection
//! (login, IDLE, keeping its view of the mailbox), `commands.rs` the
//! commands, `wire.rs` the syntax (literals, tokens, sequence sets, dates),
//! `message.rs` reading a stored message, `search.rs` SEARCH's keys and
//! `fetch.rs` FETCH's items. `fake_mail/smtp.rs` is the SMTP server,
//! `fake_mail/build.rs` the mail builder, `fake_mail/tests.rs` the fakes'
//! own tests.

mod build;
mod imap;
mod smtp;
#[cfg(test)]
mod tests;

pub use build::{MailBuilder, mail};
pub use imap::{FakeImap, ImapOptions};
pub use smtp::{FakeSmtp, Sent};

use std::sync::{Mutex, MutexGuard, PoisonError};

/// Locks `mutex`, going on past a panic in another thread (a test fake
/// keeps serving whatever a failed assertion left behind).
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Base64 as RFC 4648 writes it, padded: what SASL and MIME use.
fn base64() -> base64::engine::GeneralPurpose {
    base64::engine::general_purpose::STANDARD
}
