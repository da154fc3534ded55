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

use lettre::message::header::ContentType;
use lettre::message::{Attachment, Mailbox, MultiPart, SinglePart};
use lettre::transport::smtp::authentication::Credentials;
use lettre::{Message, SmtpTransport, Transport};

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

/// Sends `message` through the account's SMTP server.
pub fn send(settings: &Settings, message: &Message) -> Result<(), OutboxError> {
    let server = &settings.smtp;
    let transient = |e: &dyn std::fmt::Display| OutboxError::Transient(e.to_string());
    let builder = match server.security {
        Security::Tls => SmtpTransport::relay(&server.host).map_err(|e| transient(&e))?,
        Security::StartTls => {
            SmtpTransport::starttls_relay(&server.host).map_err(|e| transient(&e))?
        }
        Security::Plain => SmtpTransport::builder_dangerous(&server.host),
    };
    let transport = builder
        .port(server.port)
        .credentials(Credentials::new(
            settings.username.clone(),
            settings.password.clone(),
        ))
        .timeout(Some(Duration::from_secs(60)))
        .build();
    match transport.send(message) {
        Ok(_) => Ok(()),
        Err(e) if e.is_permanent() => Err(OutboxError::Refused(e.to_string())),
        Err(e) => Err(OutboxError::Transient(e.to_string())),
    }
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
