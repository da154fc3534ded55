//! A small builder of the mails a test delivers: RFC 5322 with MIME, CRLF
//! line ends, the headers a real mail carries.
//!
//! ```ignore
//! let raw = mail("ann@example.org", "me@example.org", "Hello", "Hi!\nAnn")
//!     .message_id("<1@example.org>")
//!     .authentication_results("mx.example.org; dkim=pass header.d=example.org")
//!     .attachment("notes.txt", "text/plain", b"the notes")
//!     .build();
//! ```

use std::sync::atomic::{AtomicU64, Ordering};

use base64::Engine;

/// Makes each built mail's Message-ID and boundaries unique.
static BUILT: AtomicU64 = AtomicU64::new(0);

/// A mail being built: [`mail`] starts one, [`MailBuilder::build`] writes it.
#[derive(Debug, Clone)]
pub struct MailBuilder {
    from: String,
    to: String,
    subject: String,
    text: String,
    html: Option<String>,
    message_id: Option<String>,
    in_reply_to: Option<String>,
    date: Option<String>,
    authentication_results: Vec<String>,
    headers: Vec<(String, String)>,
    attachments: Vec<(String, String, Vec<u8>)>,
}

/// A plain-text mail from `from` to `to` (addresses, or `Name <address>`).
pub fn mail(from: &str, to: &str, subject: &str, body: &str) -> MailBuilder {
    MailBuilder {
        from: from.to_owned(),
        to: to.to_owned(),
        subject: subject.to_owned(),
        text: body.to_owned(),
        html: None,
        message_id: None,
        in_reply_to: None,
        date: None,
        authentication_results: Vec::new(),
        headers: Vec::new(),
        attachments: Vec::new(),
    }
}

impl MailBuilder {
    /// Its Message-ID, brackets included (`<id@host>`); else a unique one.
    pub fn message_id(mut self, id: &str) -> MailBuilder {
        self.message_id = Some(id.to_owned());
        self
    }

    /// Makes it a reply to `id` (brackets included): `In-Reply-To` and
    /// `References`, as a mail client writes them.
    pub fn in_reply_to(mut self, id: &str) -> MailBuilder {
        self.in_reply_to = Some(id.to_owned());
        self
    }

    /// Its `Date:` value (RFC 5322, `Tue, 05 Mar 2024 10:00:00 +0000`);
    /// else now.
    pub fn date(mut self, date: &str) -> MailBuilder {
        self.date = Some(date.to_owned());
        self
    }

    /// Adds an `Authentication-Results:` header (RFC 8601) with `value`
    /// at the top, where the receiving server puts it; the last one added
    /// comes first, as each server on the way adds its own above.
    pub fn authentication_results(mut self, value: &str) -> MailBuilder {
        self.authentication_results.insert(0, value.to_owned());
        self
    }

    /// Adds a header after the usual ones.
    pub fn header(mut self, name: &str, value: &str) -> MailBuilder {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    /// Adds an HTML version: the body becomes `multipart/alternative`, the
    /// text first, then the HTML.
    pub fn html(mut self, html: &str) -> MailBuilder {
        self.html = Some(html.to_owned());
        self
    }

    /// Attaches a file (base64): the mail becomes `multipart/mixed`, the
    /// body first, then the attachments in order.
    pub fn attachment(mut self, name: &str, mime: &str, bytes: &[u8]) -> MailBuilder {
        self.attachments
            .push((name.to_owned(), mime.to_owned(), bytes.to_vec()));
        self
    }

    /// The mail, CRLF line ends throughout.
    pub fn build(&self) -> Vec<u8> {
        let n = BUILT.fetch_add(1, Ordering::Relaxed) + 1;
        let mut head = String::new();
        for value in &self.authentication_results {
            head.push_str(&format!("Authentication-Results: {value}\r\n"));
        }
        let date = self.date.clone().unwrap_or_else(|| {
            jiff::Timestamp::now()
                .strftime("%a, %d %b %Y %H:%M:%S +0000")
                .to_string()
        });
        let message_id = self
            .message_id
            .clone()
            .unwrap_or_else(|| format!("<fake-{}-{n}@mail.fake.example>", std::process::id()));
        head.push_str(&format!("Date: {date}\r\n"));
        head.push_str(&format!("From: {}\r\n", self.from));
        head.push_str(&format!("To: {}\r\n", self.to));
        head.push_str(&format!("Subject: {}\r\n", encode_header(&self.subject)));
        head.push_str(&format!("Message-ID: {message_id}\r\n"));
        if let Some(parent) = &self.in_reply_to {
            head.push_str(&format!(
                "In-Reply-To: {parent}\r\nReferences: {parent}\r\n"
            ));
        }
        for (name, value) in &self.headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        head.push_str("MIME-Version: 1.0\r\n");

        let mut body = self.body_part(n);
        if !self.attachments.is_empty() {
            let boundary = format!("=_fake_mixed_{n}");
            let mut parts = vec![body];
            for (name, mime, bytes) in &self.attachments {
                let mut part = format!(
                    "Content-Type: {mime}; name=\"{name}\"\r\n\
                     Content-Disposition: attachment; filename=\"{name}\"\r\n\
                     Content-Transfer-Encoding: base64\r\n\r\n"
                )
                .into_bytes();
                part.extend_from_slice(&wrapped_base64(bytes));
                parts.push(part);
            }
            body = multipart("mixed", &boundary, &parts);
        }
        let mut out = head.into_bytes();
        out.extend_from_slice(&body);
        out
    }

    /// The text, or the text and the HTML as alternatives: headers (from
    /// Content-Type on), blank line, content.
    fn body_part(&self, n: u64) -> Vec<u8> {
        let text = text_part("plain", &self.text);
        match &self.html {
            None => text,
            Some(html) => {
                let boundary = format!("=_fake_alt_{n}");
                multipart("alternative", &boundary, &[text, text_part("html", html)])
            }
        }
    }
}

/// A `text/<subtype>` part in UTF-8, 8bit unless it is all ASCII.
fn text_part(subtype: &str, content: &str) -> Vec<u8> {
    let encoding = if content.is_ascii() { "7bit" } else { "8bit" };
    let mut part = format!(
        "Content-Type: text/{subtype}; charset=utf-8\r\nContent-Transfer-Encoding: {encoding}\r\n\r\n"
    )
    .into_bytes();
    part.extend_from_slice(crlf(content).as_bytes());
    part
}

/// A multipart entity of `parts`, each with its own headers.
fn multipart(subtype: &str, boundary: &str, parts: &[Vec<u8>]) -> Vec<u8> {
    let mut out =
        format!("Content-Type: multipart/{subtype}; boundary=\"{boundary}\"\r\n\r\n").into_bytes();
    for part in parts {
        out.extend_from_slice(format!("--{boundary}\r\n").as_bytes());
        out.extend_from_slice(part);
        if !part.ends_with(b"\r\n") {
            out.extend_from_slice(b"\r\n");
        }
    }
    out.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
    out
}

/// `text` with every line ending in CRLF, the last one too.
fn crlf(text: &str) -> String {
    let mut out: String = text
        .replace("\r\n", "\n")
        .split('\n')
        .collect::<Vec<_>>()
        .join("\r\n");
    if !out.ends_with("\r\n") {
        out.push_str("\r\n");
    }
    out
}

/// Base64 in lines of 76 characters (RFC 2045).
fn wrapped_base64(bytes: &[u8]) -> Vec<u8> {
    let encoded = super::base64().encode(bytes);
    let mut out = Vec::new();
    for line in encoded.as_bytes().chunks(76) {
        out.extend_from_slice(line);
        out.extend_from_slice(b"\r\n");
    }
    out
}

/// A header value as an RFC 2047 encoded word when it is not ASCII.
fn encode_header(value: &str) -> String {
    if value.is_ascii() {
        value.to_owned()
    } else {
        format!("=?UTF-8?B?{}?=", super::base64().encode(value))
    }
}
