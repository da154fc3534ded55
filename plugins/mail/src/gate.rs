//! Who gets in. A `From` header is whatever the sender typed, so a mail
//! counts as an allowed sender's only when the receiving server vouches for
//! it: its `Authentication-Results` header (RFC 8601) says DKIM passed for
//! a signature of the sender's domain, SPF passed for an envelope sender of
//! that domain, or DMARC passed for it. Anything else is dropped, silently:
//! strangers learn nothing, not even that the address is read.
//!
//! Which header is believed: a mail can carry `Authentication-Results`
//! headers written by anyone along the way (or by the sender). With
//! `auth_server` set, only headers with that `authserv-id` count (receiving
//! servers remove forged ones with their own id); without it, only the
//! topmost one, which the last hop (the receiving server) added.

use crate::letter::Letter;

/// Why a mail was not let in (for the log, never for the sender).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// The sender is not in `allowed_senders`.
    #[error("{0} is not an allowed sender")]
    Stranger(String),
    /// The mail has no readable sender.
    #[error("the mail has no sender address")]
    NoSender,
    /// The mail names more than one sender (see `Letter::several_senders`).
    #[error("the mail names more than one sender ({0} among them)")]
    SeveralSenders(String),
    /// No trusted header says the sender's domain passed.
    #[error("nothing vouches that it comes from {0} (no DKIM, SPF or DMARC pass for the domain)")]
    Unauthenticated(String),
}

/// The rules.
pub struct Gate<'a> {
    /// Allowed senders, lower-cased.
    pub allowed: &'a [String],
    /// Whether the receiving server must vouch for the sender.
    pub require_authentication: bool,
    /// The `authserv-id` to believe, lower-cased.
    pub auth_server: Option<&'a str>,
}

impl Gate<'_> {
    /// Whether `letter` gets in: one sender, and `check` passes for it.
    pub fn check_letter(&self, letter: &Letter) -> Result<(), Refusal> {
        if letter.several_senders {
            return Err(Refusal::SeveralSenders(letter.from.clone()));
        }
        self.check(&letter.from, &letter.authentication)
    }

    /// Whether a mail from `from` with these `Authentication-Results`
    /// values (topmost first) gets in.
    pub fn check(&self, from: &str, authentication: &[String]) -> Result<(), Refusal> {
        if from.is_empty() {
            return Err(Refusal::NoSender);
        }
        if !self.allowed.iter().any(|a| a == from) {
            return Err(Refusal::Stranger(from.to_owned()));
        }
        if !self.require_authentication {
            return Ok(());
        }
        let domain = from.rsplit_once('@').map_or("", |(_, d)| d);
        let trusted: Vec<&String> = match self.auth_server {
            Some(id) => authentication
                .iter()
                .filter(|h| parse(h).0.eq_ignore_ascii_case(id))
                .collect(),
            None => authentication.iter().take(1).collect(),
        };
        if trusted.iter().any(|h| vouches(h, domain)) {
            Ok(())
        } else {
            Err(Refusal::Unauthenticated(from.to_owned()))
        }
    }
}

/// Whether header value `header` says `domain` passed DKIM, SPF or DMARC.
fn vouches(header: &str, domain: &str) -> bool {
    let (_, results) = parse(header);
    results.iter().any(|r| {
        r.result == "pass"
            && match r.method.as_str() {
                "dkim" => ["header.d", "header.i"]
                    .iter()
                    .filter_map(|p| r.property(p))
                    .any(|v| aligned(v.rsplit('@').next().unwrap_or(v), domain)),
                "spf" => ["smtp.mailfrom", "smtp.from"]
                    .iter()
                    .filter_map(|p| r.property(p))
                    .any(|v| aligned(v.rsplit('@').next().unwrap_or(v), domain)),
                "dmarc" => r
                    .property("header.from")
                    .is_some_and(|v| aligned(v, domain)),
                _ => false,
            }
    })
}

/// DMARC's relaxed alignment, without the public suffix list: the same
/// domain, or the sender's a subdomain of the signer's (`mail.example.org`
/// signed by `example.org`). A signer with no dot (a bare TLD) never
/// aligns.
fn aligned(signer: &str, domain: &str) -> bool {
    let signer = signer.trim().trim_end_matches('.').to_lowercase();
    !signer.is_empty()
        && signer.contains('.')
        && (domain == signer || domain.ends_with(&format!(".{signer}")))
}

/// One `method=result` with its properties.
#[derive(Debug, PartialEq)]
struct Outcome {
    method: String,
    result: String,
    properties: Vec<(String, String)>,
}

impl Outcome {
    fn property(&self, name: &str) -> Option<&str> {
        self.properties
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Splits a header value into its `authserv-id` and its results.
fn parse(header: &str) -> (String, Vec<Outcome>) {
    let text = strip_comments(header);
    let mut parts = text.split(';');
    let id = parts
        .next()
        .and_then(|p| p.split_whitespace().next())
        .unwrap_or_default()
        .to_lowercase();
    let results = parts
        .filter_map(|part| {
            let mut words = part.split_whitespace();
            let (method, result) = words.next()?.split_once('=')?;
            let properties = words
                .filter_map(|w| w.split_once('='))
                .map(|(k, v)| (k.to_lowercase(), v.trim_matches('"').to_lowercase()))
                .collect();
            Some(Outcome {
                // `dkim/1=pass`: a method may carry a version.
                method: method.split('/').next().unwrap_or(method).to_lowercase(),
                result: result.to_lowercase(),
                properties,
            })
        })
        .collect();
    (id, results)
}

/// `text` without its `( … )` comments (which may nest and hold `;`).
fn strip_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut depth = 0usize;
    let mut quoted = false;
    let mut escaped = false;
    for c in text.chars() {
        if escaped {
            escaped = false;
            if depth == 0 {
                out.push(c);
            }
            continue;
        }
        match c {
            '\\' => escaped = true,
            '"' if depth == 0 => {
                quoted = !quoted;
                out.push(c);
            }
            '(' if !quoted => depth += 1,
            ')' if !quoted && depth > 0 => depth -= 1,
            _ if depth == 0 => out.push(c),
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALLOWED: &[&str] = &["anna@example.org"];

    fn check(from: &str, headers: &[&str], server: Option<&str>) -> Result<(), Refusal> {
        let allowed: Vec<String> = ALLOWED.iter().map(|s| s.to_string()).collect();
        let headers: Vec<String> = headers.iter().map(|s| s.to_string()).collect();
        Gate {
            allowed: &allowed,
            require_authentication: true,
            auth_server: server,
        }
        .check(from, &headers)
    }

    #[test]
    fn the_receiving_servers_word_lets_an_allowed_sender_in() {
        let a = "anna@example.org";
        let ok = [
            "mx.example.net; dkim=pass header.d=example.org header.s=s1 header.b=abc",
            "mx.example.net; spf=pass (sender IP is 192.0.2.1; ok) smtp.mailfrom=anna@example.org",
            "mx.example.net; dkim=fail header.d=example.org; dmarc=pass (p=none) header.from=example.org",
            "mx.example.net 1; dkim/1=pass header.i=@example.org",
            "mx.example.net; dkim=pass header.d=\"Example.ORG\"",
        ];
        for header in ok {
            assert_eq!(check(a, &[header], None), Ok(()), "{header}");
        }
        let refused = [
            "mx.example.net; dkim=fail header.d=example.org; spf=softfail smtp.mailfrom=example.org",
            "mx.example.net; dkim=pass header.d=evil.example",
            "mx.example.net; dkim=pass header.d=org",
            "mx.example.net; spf=pass smtp.mailfrom=anna@example.org.evil.example",
            "mx.example.net; none",
            "mx.example.net; (dkim=pass header.d=example.org)",
        ];
        for header in refused {
            assert_eq!(
                check(a, &[header], None),
                Err(Refusal::Unauthenticated(a.into())),
                "{header}"
            );
        }
        assert_eq!(check(a, &[], None), Err(Refusal::Unauthenticated(a.into())));
    }

    #[test]
    fn a_header_below_the_receiving_servers_is_not_believed() {
        let a = "anna@example.org";
        let forged = "mx.example.net; dkim=pass header.d=example.org";
        let real = "mx.example.net; dkim=none";
        assert!(check(a, &[real, forged], None).is_err());
        assert!(check(a, &[real, forged], Some("mx.example.net")).is_ok());
        assert!(check(a, &[forged], Some("mx.other.example")).is_err());
    }

    #[test]
    fn strangers_and_senderless_mail_stay_out() {
        let pass = "mx; dkim=pass header.d=evil.example";
        assert_eq!(
            check("eve@evil.example", &[pass], None),
            Err(Refusal::Stranger("eve@evil.example".into()))
        );
        assert_eq!(check("", &[pass], None), Err(Refusal::NoSender));
    }

    #[test]
    fn a_mail_naming_two_senders_stays_out() {
        let vouched = "Authentication-Results: mx.example.org; dkim=pass header.d=example.org\r\n";
        let allowed = vec!["anna@example.org".to_string()];
        let gate = Gate {
            allowed: &allowed,
            require_authentication: true,
            auth_server: None,
        };
        for (mail, several) in [
            ("From: anna@example.org\r\n", false),
            ("From: anna@example.org\r\nFrom: eve@evil.example\r\n", true),
            ("From: eve@evil.example\r\nFrom: anna@example.org\r\n", true),
            ("From: anna@example.org, eve@evil.example\r\n", true),
        ] {
            let raw = format!("{vouched}{mail}Subject: x\r\n\r\nhello\r\n");
            let letter = crate::letter::read(raw.as_bytes()).unwrap();
            assert_eq!(letter.several_senders, several, "{mail:?}");
            let verdict = gate.check_letter(&letter);
            if several {
                assert!(
                    matches!(verdict, Err(Refusal::SeveralSenders(_))),
                    "{mail:?}: {verdict:?}"
                );
            } else {
                assert_eq!(verdict, Ok(()), "{mail:?}");
            }
        }
    }
}
