//! Mail out: a reply, a confirmation card or a draft built as a MIME message
//! (plain text with an HTML alternative from the Markdown, files attached),
//! and sent through the account's SMTP server with `lettre`, over TLS from
//! the first byte or after STARTTLS (plain text only to loopback, which the
//! config enforces).
//!
//! A reply stays in its thread: `In-Reply-To` names the message it answers
//! and `References` carries the thread's ids, so every mail client files
//! it under the owner's message.

use std::time::Duration;

use lettre::Address;
use lettre::Message;
use lettre::message::header::ContentType;
use lettre::message::{Attachment, Mailbox, MultiPart, SinglePart};
use lettre::transport::smtp::authentication::{Credentials, DEFAULT_MECHANISMS};
use lettre::transport::smtp::client::{SmtpConnection, TlsParameters};
use lettre::transport::smtp::commands::{Data, Mail, Rcpt};
use lettre::transport::smtp::extension::{ClientId, Extension, MailBodyParameter, MailParameter};

use crate::config::{Security, Settings};

/// A mail to build.
#[derive(Clone, Debug, Default)]
pub struct Draft {
    /// Recipients.
    pub to: Vec<String>,
    /// Copies.
    pub cc: Vec<String>,
    /// Blind copies: in the envelope only (lettre leaves the header out).
    pub bcc: Vec<String>,
    /// The subject.
    pub subject: String,
    /// The text, Markdown.
    pub body: String,
    /// Its own `Message-ID`, without brackets; none: one is made.
    pub message_id: Option<String>,
    /// The message it answers, without brackets.
    pub in_reply_to: Option<String>,
    /// The thread, oldest first, without brackets.
    pub references: Vec<String>,
    /// Files: (name, media type, path).
    pub files: Vec<(String, String, String)>,
}

/// Why a mail could not be built or sent.
#[derive(Debug, thiserror::Error)]
pub enum OutboxError {
    /// An address or header was not valid.
    #[error("the mail cannot be built: {0}")]
    Build(String),
    /// An attachment could not be read.
    #[error("cannot read the attachment {0}: {1}")]
    File(String, std::io::Error),
    /// The server refused it for now (4xx, or the connection failed): the
    /// host's outbox tries again.
    #[error("the SMTP server did not take the mail for now: {0}")]
    Transient(String),
    /// The server refused it for good (5xx).
    #[error("the SMTP server refused the mail: {0}")]
    Refused(String),
}

/// Builds `draft` from `settings.address` as MIME bytes.
pub fn build(settings: &Settings, draft: &Draft) -> Result<Message, OutboxError> {
    let bad = |e: &dyn std::fmt::Display| OutboxError::Build(e.to_string());
    let from: Mailbox = settings.address.parse().map_err(|e| bad(&e))?;
    let mut builder = Message::builder().from(from).subject(draft.subject.clone());
    for to in &draft.to {
        builder = builder.to(to.parse().map_err(|e| bad(&e))?);
    }
    for cc in &draft.cc {
        builder = builder.cc(cc.parse().map_err(|e| bad(&e))?);
    }
    for bcc in &draft.bcc {
        builder = builder.bcc(bcc.parse().map_err(|e| bad(&e))?);
    }
    let domain = settings
        .address
        .rsplit_once('@')
        .map_or("localhost", |(_, d)| d);
    let id = draft
        .message_id
        .clone()
        .unwrap_or_else(|| format!("hearth-{}@{domain}", unique()));
    builder = builder.message_id(Some(format!("<{id}>")));
    if let Some(parent) = &draft.in_reply_to {
        builder = builder.in_reply_to(format!("<{parent}>"));
    }
    if !draft.references.is_empty() {
        let thread: Vec<String> = draft.references.iter().map(|r| format!("<{r}>")).collect();
        builder = builder.references(thread.join(" "));
    }
    let text = MultiPart::alternative_plain_html(draft.body.clone(), to_html(&draft.body));
    let body = if draft.files.is_empty() {
        text
    } else {
        let mut mixed = MultiPart::mixed().multipart(text);
        for (name, mime, path) in &draft.files {
            let bytes = std::fs::read(path).map_err(|e| OutboxError::File(name.clone(), e))?;
            let kind = ContentType::parse(mime)
                .unwrap_or_else(|_| ContentType::parse("application/octet-stream").expect("valid"));
            let part: SinglePart = Attachment::new(name.clone()).body(bytes, kind);
            mixed = mixed.singlepart(part);
        }
        mixed
    };
    builder.multipart(body).map_err(|e| bad(&e))
}

/// Sends `message` through the account's SMTP server: one connection, one
/// transaction, then `QUIT`.
///
/// lettre's own `SmtpTransport` writes a message and the five bytes that
/// end it (`CRLF.CRLF`) as two writes on a socket with Nagle's algorithm
/// on; the second then waits for the server to acknowledge the first,
/// which it delays (40 ms on Linux) since it has nothing to say before the
/// end. So the transaction is driven here through lettre's
/// `SmtpConnection`, with the data and its end in one write.
pub fn send(settings: &Settings, message: &Message) -> Result<(), OutboxError> {
    let server = &settings.smtp;
    let classify = |e: lettre::transport::smtp::Error| {
        if e.is_permanent() {
            OutboxError::Refused(e.to_string())
        } else {
            OutboxError::Transient(e.to_string())
        }
    };
    let tls = match server.security {
        Security::Plain => None,
        Security::Tls | Security::StartTls => Some(
            TlsParameters::new(server.host.clone())
                .map_err(|e| OutboxError::Transient(e.to_string()))?,
        ),
    };
    let hello = ClientId::default();
    let wrapper = tls.as_ref().filter(|_| server.security == Security::Tls);
    let mut conn = SmtpConnection::connect(
        (server.host.as_str(), server.port),
        Some(Duration::from_secs(60)),
        &hello,
        wrapper,
        None,
    )
    .map_err(classify)?;
    let outcome = transact(&mut conn, settings, tls.as_ref(), &hello, message);
    match outcome {
        Ok(()) => {
            // The mail is taken; a failed goodbye changes nothing.
            let _ = conn.quit();
            Ok(())
        }
        Err(e) => {
            conn.abort();
            Err(classify(e))
        }
    }
}

/// STARTTLS when asked, the login, and the mail: `MAIL`, a `RCPT` per
/// recipient, `DATA`, then the dot-stuffed data with its end.
fn transact(
    conn: &mut SmtpConnection,
    settings: &Settings,
    tls: Option<&TlsParameters>,
    hello: &ClientId,
    message: &Message,
) -> Result<(), lettre::transport::smtp::Error> {
    if settings.smtp.security == Security::StartTls
        && let Some(tls) = tls
    {
        conn.starttls(tls, hello)?;
    }
    let credentials = Credentials::new(settings.username.clone(), settings.password.clone());
    conn.auth(DEFAULT_MECHANISMS, &credentials)?;
    let envelope = message.envelope();
    let data = message.formatted();
    let info = conn.server_info();
    let mut options = Vec::new();
    let non_ascii = |a: &Address| !AsRef::<str>::as_ref(a).is_ascii();
    if envelope
        .from()
        .into_iter()
        .chain(envelope.to())
        .any(non_ascii)
        && info.supports_feature(Extension::SmtpUtfEight)
    {
        options.push(MailParameter::SmtpUtfEight);
    }
    if !data.is_ascii() && info.supports_feature(Extension::EightBitMime) {
        options.push(MailParameter::Body(MailBodyParameter::EightBitMime));
    }
    conn.command(Mail::new(envelope.from().cloned(), options))?;
    for to in envelope.to() {
        conn.command(Rcpt::new(to.clone(), Vec::new()))?;
    }
    conn.command(Data)?;
    match String::from_utf8(stuffed(&data)) {
        Ok(text) => conn.command(text),
        // Not text (lettre's builder never makes such a mail): lettre's
        // own two writes.
        Err(_) => conn.message(&data),
    }
    .map(|_| ())
}

/// `data` made transparent (RFC 5321 section 4.5.2: a line that starts
/// with a dot gets one more) and ended with `CRLF.CRLF`, as lettre ends it.
fn stuffed(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len() + 16);
    let mut line_start = true;
    for (i, &b) in data.iter().enumerate() {
        if line_start && b == b'.' {
            out.push(b'.');
        }
        out.push(b);
        line_start = b == b'\n' && i > 0 && data[i - 1] == b'\r';
    }
    out.extend_from_slice(b"\r\n.\r\n");
    out
}

/// `subject` as a reply's: one `Re: ` in front.
pub fn reply_subject(subject: &str) -> String {
    let bare = subject.trim();
    if bare.len() >= 3 && bare[..3].eq_ignore_ascii_case("re:") {
        bare.to_owned()
    } else if bare.is_empty() {
        "Re: your message".to_owned()
    } else {
        format!("Re: {bare}")
    }
}

/// Markdown as HTML for the alternative part.
fn to_html(markdown: &str) -> String {
    let mut html = String::new();
    let options =
        pulldown_cmark::Options::ENABLE_TABLES | pulldown_cmark::Options::ENABLE_STRIKETHROUGH;
    pulldown_cmark::html::push_html(
        &mut html,
        pulldown_cmark::Parser::new_ext(markdown, options),
    );
    html
}

/// A value unique in this process and unlikely to repeat across runs.
fn unique() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!("{now:x}.{}", N.fetch_add(1, Ordering::Relaxed))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_is_made_transparent_and_ended_in_one_piece() {
        let cases: [(&str, &str); 5] = [
            ("a\r\nb\r\n", "a\r\nb\r\n\r\n.\r\n"),
            (".hidden\r\n", "..hidden\r\n\r\n.\r\n"),
            ("a\r\n.\r\nb", "a\r\n..\r\nb\r\n.\r\n"),
            ("a.b\r\n..\r\n", "a.b\r\n...\r\n\r\n.\r\n"),
            // A bare LF does not start a line, as in lettre's own codec.
            ("a\n.b", "a\n.b\r\n.\r\n"),
        ];
        for (data, sent) in cases {
            assert_eq!(
                String::from_utf8(stuffed(data.as_bytes())).unwrap(),
                sent,
                "{data:?}"
            );
        }
    }

    #[test]
    fn a_reply_keeps_one_re_and_its_thread() {
        assert_eq!(reply_subject("Plans"), "Re: Plans");
        assert_eq!(reply_subject("RE: Plans"), "RE: Plans");
        assert_eq!(reply_subject(""), "Re: your message");
        let settings = crate::config::parse(serde_json::json!({ "address": "agent@example.org",
            "password": "p", "imap_host": "127.0.0.1", "imap_security": "plain",
            "smtp_host": "127.0.0.1", "smtp_security": "plain" }))
        .unwrap()
        .unwrap();
        let draft = Draft {
            to: vec!["anna@example.org".into()],
            subject: "Re: Plans".into(),
            body: "**Yes.**".into(),
            in_reply_to: Some("m2@example.org".into()),
            references: vec!["m1@example.org".into(), "m2@example.org".into()],
            message_id: Some("r1@example.org".into()),
            ..Draft::default()
        };
        let raw = String::from_utf8(build(&settings, &draft).unwrap().formatted()).unwrap();
        for header in [
            "In-Reply-To: <m2@example.org>",
            "References: <m1@example.org> <m2@example.org>",
            "Message-ID: <r1@example.org>",
            "From: agent@example.org",
        ] {
            assert!(raw.contains(header), "{header} in\n{raw}");
        }
        assert!(raw.contains("<strong>Yes.</strong>"));
    }
}
