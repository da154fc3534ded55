//! One mail read into what the channel and the tools need: who sent it (the
//! bare address, lower-cased), its thread headers, its text (HTML made
//! plain, the quoted history and the signature cut off) and its
//! attachments. Parsing is `mail-parser`'s, which decodes every MIME part,
//! charset and encoded word.

use mail_parser::{MessageParser, MimeHeaders};

/// A mail as hearth reads it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Letter {
    /// `Message-ID`, without the angle brackets; empty when it has none.
    pub message_id: String,
    /// The sender's bare address, lower-cased; empty when none can be read.
    pub from: String,
    /// The sender's display name.
    pub from_name: Option<String>,
    /// Whether the mail names more than one sender: two `From` headers, or
    /// one with several addresses. Readers disagree on which one counts (a
    /// gate may check the first while the owner's client shows the last),
    /// the classic way to slip a forged sender past DKIM and DMARC, so the
    /// channel refuses such a mail.
    pub several_senders: bool,
    /// Every `To` and `Cc` address.
    pub to: Vec<String>,
    /// `Subject`.
    pub subject: String,
    /// `Date`, as RFC 3339.
    pub date: Option<String>,
    /// `In-Reply-To`, without brackets.
    pub in_reply_to: Option<String>,
    /// `References`, oldest first, without brackets.
    pub references: Vec<String>,
    /// The new text: plain, with the quoted history and signature cut.
    pub text: String,
    /// The whole text, as the sender's client wrote it (made plain).
    pub full_text: String,
    /// The raw value of every `Authentication-Results` header, topmost
    /// (the last hop's) first.
    pub authentication: Vec<String>,
    /// Files that came with it.
    pub files: Vec<File>,
}

/// An attachment.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct File {
    /// Its name as the sender gave it.
    pub name: String,
    /// Its media type.
    pub mime: String,
    /// Its bytes.
    pub bytes: Vec<u8>,
}

/// Reads `raw`; `None` when it is not a mail at all, or when the parser
/// gave up on it with a panic (a sender's bytes must never take the
/// channel's watcher down with them).
pub fn read(raw: &[u8]) -> Option<Letter> {
    std::panic::catch_unwind(|| parse(raw)).ok().flatten()
}

/// `read`, without the guard: the fuzz tests call it so that a panic the
/// guard would hide fails them.
pub fn parse(raw: &[u8]) -> Option<Letter> {
    let message = MessageParser::default().parse(raw)?;
    let from_headers = message
        .headers_raw()
        .filter(|(name, _)| name.eq_ignore_ascii_case("From"))
        .count();
    let several_senders =
        from_headers > 1 || message.from().is_some_and(|list| list.iter().count() > 1);
    let (from, from_name) = match message.from().and_then(|a| a.first()) {
        Some(addr) => (
            addr.address().unwrap_or_default().trim().to_lowercase(),
            addr.name().map(str::to_owned),
        ),
        None => (String::new(), None),
    };
    let mut to: Vec<String> = Vec::new();
    for list in message.to().into_iter().chain(message.cc()) {
        to.extend(
            list.iter()
                .filter_map(|a| a.address())
                .map(|a| a.trim().to_lowercase()),
        );
    }
    let ids = |value: &mail_parser::HeaderValue| -> Vec<String> {
        match value {
            mail_parser::HeaderValue::Text(t) => vec![t.to_string()],
            mail_parser::HeaderValue::TextList(list) => {
                list.iter().map(|t| t.to_string()).collect()
            }
            _ => Vec::new(),
        }
    };
    let full_text = message
        .body_text(0)
        .map(|t| t.replace("\r\n", "\n"))
        .unwrap_or_default();
    let authentication = message
        .headers_raw()
        .filter(|(name, _)| name.eq_ignore_ascii_case("Authentication-Results"))
        .map(|(_, value)| unfold(value))
        .collect();
    let files = message
        .attachments()
        .filter(|part| !part.is_message() || part.attachment_name().is_some())
        .enumerate()
        .map(|(n, part)| File {
            name: part
                .attachment_name()
                .map(str::to_owned)
                .unwrap_or_else(|| format!("attachment-{}", n + 1)),
            mime: part
                .content_type()
                .map(|c| match c.subtype() {
                    Some(sub) => format!("{}/{sub}", c.ctype()),
                    None => c.ctype().to_owned(),
                })
                .unwrap_or_else(|| "application/octet-stream".into())
                .to_lowercase(),
            bytes: part.contents().to_vec(),
        })
        .collect();
    Some(Letter {
        message_id: message.message_id().unwrap_or_default().to_owned(),
        from,
        from_name,
        several_senders,
        to,
        subject: message.subject().unwrap_or_default().trim().to_owned(),
        date: message.date().map(|d| d.to_rfc3339()),
        in_reply_to: ids(message.in_reply_to()).into_iter().next(),
        references: ids(message.references()),
        text: new_text(&full_text),
        full_text,
        authentication,
        files,
    })
}

/// `text` without the history a reply quotes below (or above) it and
/// without its signature: what the sender wrote now.
pub fn new_text(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let mut end = lines.len();
    for (n, line) in lines.iter().enumerate() {
        let t = line.trim();
        let next = lines.get(n + 1).map_or("", |l| l.trim());
        let attribution = (t.starts_with("On ") || t.starts_with("Le ") || t.starts_with("Am "))
            && (t.ends_with("wrote:")
                || t.ends_with("a écrit :")
                || t.ends_with("schrieb:")
                || (next.ends_with("wrote:") && !next.starts_with('>')));
        let outlook = t.starts_with("-----Original Message-----")
            || t.starts_with("---------- Forwarded message")
            || (t.starts_with("________________") && next.starts_with("From:"));
        if attribution || outlook || *line == "-- " {
            end = n;
            break;
        }
    }
    let mut kept: Vec<&str> = lines[..end].to_vec();
    // What is left of a quote at the end (a client that quotes without an
    // attribution line) goes too.
    while kept
        .last()
        .is_some_and(|l| l.trim().is_empty() || l.trim_start().starts_with('>'))
    {
        kept.pop();
    }
    let text = kept.join("\n");
    let text = text.trim();
    if text.is_empty() {
        // Everything was quote: a forward with nothing added, say. The
        // whole of it is better than nothing.
        return lines.join("\n").trim().to_owned();
    }
    text.to_owned()
}

/// A header value with its folding undone.
fn unfold(value: &str) -> String {
    value
        .split(['\r', '\n'])
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_new_text_is_what_comes_before_the_quote_and_the_signature() {
        for (mail, expected) in [
            (
                "Yes, do it.\n\nOn Mon, 1 Dec 2026, Anna <a@b.c> wrote:\n> shall I?",
                "Yes, do it.",
            ),
            (
                "Yes.\nOn Mon, 1 Dec 2026 at 10:00, Anna Example <a@b.c>\nwrote:\n> x",
                "Yes.",
            ),
            ("Fine\n\n-----Original Message-----\nFrom: x", "Fine"),
            ("Sure\n-- \nAnna\nSent from my phone", "Sure"),
            ("ok\n\n> old\n> older\n", "ok"),
            ("> only a quote", "> only a quote"),
            (
                "no quote at all\nsecond line",
                "no quote at all\nsecond line",
            ),
        ] {
            assert_eq!(new_text(mail), expected, "{mail:?}");
        }
    }

    #[test]
    fn a_mail_is_read_with_its_thread_and_its_files() {
        let raw = "Authentication-Results: mx.example.org; dkim=pass header.d=example.org\r\n\
            From: Anna <Anna@Example.org>\r\nTo: agent@example.org\r\nSubject: Plans\r\n\
            Message-ID: <m2@example.org>\r\nIn-Reply-To: <m1@example.org>\r\n\
            References: <m0@example.org> <m1@example.org>\r\nMIME-Version: 1.0\r\n\
            Content-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\n\
            Content-Type: text/html; charset=utf-8\r\n\r\n<p>Hello <b>there</b></p>\r\n--b\r\n\
            Content-Type: application/pdf; name=plan.pdf\r\nContent-Disposition: attachment; \
            filename=plan.pdf\r\nContent-Transfer-Encoding: base64\r\n\r\nJVBERi0=\r\n--b--\r\n";
        let letter = read(raw.as_bytes()).unwrap();
        assert_eq!(letter.from, "anna@example.org");
        assert_eq!(letter.from_name.as_deref(), Some("Anna"));
        assert_eq!(letter.message_id, "m2@example.org");
        assert_eq!(letter.in_reply_to.as_deref(), Some("m1@example.org"));
        assert_eq!(letter.references, ["m0@example.org", "m1@example.org"]);
        assert_eq!(letter.text, "Hello there");
        assert_eq!(letter.authentication.len(), 1);
        assert_eq!(letter.files.len(), 1);
        assert_eq!(letter.files[0].name, "plan.pdf");
        assert_eq!(letter.files[0].mime, "application/pdf");
        assert_eq!(letter.files[0].bytes, b"%PDF-");
    }
}
