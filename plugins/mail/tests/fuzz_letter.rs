//! Fuzzing what a mail server hands the channel: raw mails mutated as
//! bytes, and hostile mails built to break a MIME reader (broken MIME,
//! huge and endless headers, bad transfer encodings and charsets, deep
//! nested multiparts and attached mails, NULs, boundaries that never
//! close), fed to `letter::read` and `letter::new_text`, and what they
//! read to the gate with `Authentication-Results` values made at random.
//! Properties: no panic (the parser is called without the guard
//! `letter::read` puts around it, so a panic fails the case); each case within a time bound; what is read is
//! consistent (a lower-cased bare sender, the new text no longer than the
//! whole); a mail naming several senders never gets in; and the gate never lets in a sender that is not allowed,
//! whatever the headers say, nor an allowed one that no trusted header
//! says passed for its domain.

use std::time::{Duration, Instant};

use hearth_fuzz::{Rng, Target};
use hearth_mail::gate::{Gate, Refusal};
use hearth_mail::letter::{self, Letter};

const ANNA: &str = "anna@home.example";
const EVE: &str = "eve@evil.example";
/// What the receiving server says of Anna's mail (tests/mail.rs's VOUCHED).
const VOUCHED: &str = "mx.fake.example; dkim=pass header.d=home.example header.s=s1; \
    spf=pass smtp.mailfrom=anna@home.example";
/// The most one case may take. The driver's watchdog catches a true hang
/// only after a minute; a parse of at most 256 KiB that takes seconds is
/// already the quadratic blow-up a hostile sender would use to stall the
/// channel, so it fails here (generously: CI machines are slow and shared).
const BOUND: Duration = Duration::from_secs(5);

/// Mails as servers deliver them: plain, multipart, encoded, attached.
const SEEDS: &[&str] = &[
    "Authentication-Results: mx.fake.example; dkim=pass header.d=home.example\r\n\
     From: Anna <anna@home.example>\r\nTo: agent@fake.example\r\nSubject: Hello\r\n\
     Message-ID: <1@home.example>\r\nDate: Tue, 01 Dec 2026 10:00:00 +0000\r\n\
     MIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nHi!\r\n\r\n\
     On Mon, 30 Nov 2026, Agent <agent@fake.example> wrote:\r\n> before\r\n-- \r\nAnna\r\n",
    "Authentication-Results: mx.fake.example; spf=pass smtp.mailfrom=anna@home.example\r\n\
     From: anna@home.example\r\nTo: agent@fake.example\r\n\
     Subject: =?UTF-8?B?w6l0w6k=?= =?ISO-8859-1?Q?caf=E9?=\r\nMessage-ID: <2@home.example>\r\n\
     In-Reply-To: <1@fake.example>\r\nReferences: <0@home.example> <1@fake.example>\r\n\
     MIME-Version: 1.0\r\nContent-Type: multipart/alternative; boundary=\"alt\"\r\n\r\n\
     --alt\r\nContent-Type: text/plain; charset=iso-8859-1\r\n\
     Content-Transfer-Encoding: quoted-printable\r\n\r\nd=E9j=E0 vu=\r\n soft break\r\n\
     --alt\r\nContent-Type: text/html; charset=utf-8\r\n\r\n<p>d&eacute;j&agrave; <b>vu</b></p>\r\n\
     --alt--\r\n",
    "Authentication-Results: mx.fake.example; dmarc=pass header.from=home.example\r\n\
     From: \"Anna (home)\" <Anna@Home.Example>\r\nTo: agent@fake.example\r\nSubject: Files\r\n\
     MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=mix\r\n\r\npreamble\r\n\
     --mix\r\nContent-Type: multipart/alternative; boundary=alt\r\n\r\n--alt\r\n\
     Content-Type: text/plain\r\n\r\nsee attached\r\n--alt--\r\n--mix\r\n\
     Content-Type: application/pdf; name=plan.pdf\r\n\
     Content-Disposition: attachment; filename*=utf-8''pl%C3%A4n.pdf\r\n\
     Content-Transfer-Encoding: base64\r\n\r\nJVBERi0xLjQK\r\n--mix\r\n\
     Content-Type: message/rfc822\r\n\r\nFrom: eve@evil.example\r\nSubject: inner\r\n\r\n\
     inner text\r\n--mix--\r\nepilogue\r\n",
    "Authentication-Results: mx.fake.example; dkim=pass header.d=evil.example\r\n\
     Authentication-Results: mx.fake.example; dkim=pass header.d=home.example\r\n\
     From: \"anna@home.example\" <eve@evil.example>\r\nSender: anna@home.example\r\n\
     Reply-To: anna@home.example\r\nSubject: let me in\r\n\r\nforged\r\n",
    "From: anna@home.example\r\nSubject: no vouching\r\nContent-Type: text/html\r\n\r\n\
     <html><body><div>one<br>two</div><script>x</script></body></html>\r\n",
    // What the first long run found: a `debug_assert!(false)` in
    // mail-parser 0.11.9 that reads on correctly after it (the workspace
    // builds mail-parser without debug assertions: see Cargo.toml), kept
    // so every run passes through it.
    "Content-Type:multipart;boundary=mix\n\n--mixContent-Type:message/rfc822\n\n\
     o\nContent-Type:message/rfc822\n\n\n--mix--",
];

/// Pieces of mail syntax the mutations insert.
const TOKENS: &[&str] = &[
    "\r\n",
    "\r\n\r\n",
    "\r\n ",
    "From: ",
    "From: anna@home.example\r\n",
    "From: eve@evil.example\r\n",
    "Sender: anna@home.example\r\n",
    "<anna@home.example>",
    "<eve@evil.example>",
    "\"anna@home.example\"",
    "Authentication-Results: ",
    "Content-Type: multipart/mixed; boundary=",
    "Content-Type: multipart/alternative; boundary=\"b\"\r\n\r\n",
    "Content-Type: message/rfc822\r\n\r\n",
    "Content-Type: text/html; charset=",
    "Content-Transfer-Encoding: base64\r\n",
    "Content-Transfer-Encoding: quoted-printable\r\n",
    "Content-Disposition: attachment; filename=",
    "--b\r\n",
    "--b--\r\n",
    "--mix\r\n",
    "--alt\r\n",
    "=?UTF-8?B?",
    "=?UTF-8?Q?",
    "=?x-unknown?Q?=FF?=",
    "?=",
    "=\r\n",
    "=FF",
    "charset=utf-7",
    "charset=\"\"",
    "boundary=\"\"",
    "dkim=pass header.d=home.example",
    "spf=pass smtp.mailfrom=anna@home.example",
    "dmarc=pass header.from=home.example",
    "Message-ID: <",
    "In-Reply-To: <",
    "References: ",
    "On Mon, 1 Dec 2026, Anna wrote:\r\n",
    "-- \r\n",
    "> ",
    "\0",
];

/// Pieces of `Authentication-Results` values, forged and real.
const RESULTS: &[&str] = &[
    "mx.fake.example",
    "mx.fake.example 1",
    "MX.FAKE.EXAMPLE",
    "mx.other.example",
    "home.example",
    ";",
    " ",
    "dkim=pass",
    "dkim/1=pass",
    "DKIM=PASS",
    "dkim=fail",
    "spf=pass",
    "spf=softfail",
    "dmarc=pass",
    "arc=pass",
    "none",
    "header.d=home.example",
    "header.d=\"home.example\"",
    "header.d=Home.Example.",
    "header.d=example",
    "header.d=evil.example",
    "header.d=home.example.evil.example",
    "header.i=@home.example",
    "smtp.mailfrom=anna@home.example",
    "smtp.mailfrom=eve@evil.example",
    "smtp.mailfrom=@home.example",
    "header.from=home.example",
    "header.from=evil.example",
    "(",
    ")",
    "(dkim=pass header.d=home.example)",
    "\"",
    "\\",
    "=",
    "\0",
    "\r\n",
    "\u{202E}",
    "hоme.example",
];

/// Who a mail may say it is from: the allowed sender, spelled rightly and
/// wrongly, and strangers that look like her.
const SENDERS: &[&str] = &[
    ANNA,
    "ANNA@HOME.EXAMPLE",
    " anna@home.example ",
    EVE,
    "anna@home.example.evil.example",
    "anna@evil.example",
    "anna+x@home.example",
    "аnna@home.example",
    "anna@home.example\0",
    "anna@home.example@evil.example",
    "",
    "@home.example",
    "home.example",
];

/// The gate of a channel that allows only Anna, believing the topmost
/// header or only `mx.fake.example`'s.
fn gate<'a>(allowed: &'a [String], require_authentication: bool, server: bool) -> Gate<'a> {
    Gate {
        allowed,
        require_authentication,
        auth_server: server.then_some("mx.fake.example"),
    }
}

/// Checks the gate's rules for a mail from `from` carrying `headers`
/// (topmost first), under each way the gate may be set.
fn check_gate(from: &str, headers: &[String]) {
    let allowed = vec![ANNA.to_owned()];
    for (require, server) in [(true, false), (true, true), (false, false)] {
        let verdict = gate(&allowed, require, server).check(from, headers);
        if from != ANNA {
            assert!(
                verdict.is_err(),
                "{from:?} let in (authentication {require}, server {server}) by {headers:?}"
            );
            if !from.is_empty() {
                assert_eq!(verdict, Err(Refusal::Stranger(from.to_owned())));
            }
            continue;
        }
        assert!(
            require || verdict.is_ok(),
            "the allowed sender kept out with no authentication asked: {verdict:?}"
        );
        if verdict.is_ok() && require {
            // Which headers the gate may believe: the topmost, or those of
            // the server named (here any that names it anywhere, so never
            // fewer than the gate believes). One of them must say a method
            // passed, for the domain, outside any comment.
            let trusted: Vec<&String> = if server {
                headers
                    .iter()
                    .filter(|h| h.to_lowercase().contains("mx.fake.example"))
                    .collect()
            } else {
                headers.iter().take(1).collect()
            };
            assert!(
                trusted.iter().any(|h| {
                    let plain = without_comments(&h.to_lowercase());
                    plain.contains("pass") && plain.contains("home.example")
                }),
                "let in on nobody's word: {headers:?} (server {server})"
            );
        }
    }
}

/// `text` without `( … )` comments, nesting counted, quotes ignored: an
/// over-approximation of what the gate reads (it keeps quoted
/// parentheses), so a pass found only inside a comment still fails.
fn without_comments(text: &str) -> String {
    let mut depth = 0usize;
    let mut escaped = false;
    let mut out = String::new();
    for c in text.chars() {
        match c {
            _ if escaped => {
                escaped = false;
                if depth == 0 {
                    out.push(c);
                }
            }
            '\\' => escaped = true,
            '(' => depth += 1,
            ')' if depth > 0 => depth -= 1,
            _ if depth == 0 => out.push(c),
            _ => {}
        }
    }
    // A quoted `(` the gate did not count as a comment: keep what follows,
    // so the check errs towards finding the pass, never against.
    if text.contains('"') {
        out.push_str(text);
    }
    out
}

/// Reads `raw` as the channel does and checks what comes out; then the
/// gate with what was read, and with a stranger's address.
fn check_mail(raw: &[u8]) -> Option<Letter> {
    let started = Instant::now();
    let read = letter::parse(raw);
    let lossy = String::from_utf8_lossy(raw);
    let text = letter::new_text(&lossy);
    assert!(text.len() <= lossy.len(), "new_text grew its input");
    if let Some(letter) = &read {
        assert_eq!(letter.from, letter.from.trim().to_lowercase());
        assert_eq!(letter.text, letter::new_text(&letter.full_text));
        assert!(letter.text.len() <= letter.full_text.len());
        check_gate(&letter.from, &letter.authentication);
        check_gate(EVE, &letter.authentication);
        if letter.several_senders {
            let allowed = [letter.from.clone()];
            assert!(
                gate(&allowed, false, false).check_letter(letter).is_err(),
                "a mail naming several senders got in"
            );
        }
    }
    let took = started.elapsed();
    assert!(took < BOUND, "{} bytes took {took:?}", raw.len());
    read
}

#[test]
fn any_bytes_read_as_a_mail_keep_the_reader_and_the_gate_within_their_rules() {
    let mut target = Target::new("mail_letter").tokens(TOKENS);
    for seed in SEEDS {
        target = target.seed(*seed);
    }
    target.run(|input, _rng: &mut Rng| {
        check_mail(input);
    });
}

#[test]
fn hostile_mails_are_read_in_bounded_time_and_a_stranger_never_gets_in() {
    Target::new("mail_hostile")
        .generator(hostile)
        .run(|input, _rng: &mut Rng| {
            // Every hostile mail's real sender is Eve, however Anna's
            // address is dressed up around hers.
            if let Some(letter) = check_mail(input) {
                assert_ne!(
                    letter.from,
                    ANNA,
                    "Eve's mail read as Anna's: {:?}",
                    String::from_utf8_lossy(&input[..input.len().min(400)])
                );
            }
        });
}

#[test]
fn no_authentication_results_let_a_stranger_or_an_unvouched_sender_in() {
    Target::new("mail_gate")
        .generator(|rng| {
            // One sender, then one header value a line.
            let mut out = rng.choose(SENDERS).to_owned();
            for _ in 0..rng.below(5) {
                out.push('\n');
                if rng.one_in(6) {
                    out.push_str(VOUCHED);
                    continue;
                }
                for _ in 0..rng.below(12) {
                    out.push_str(rng.choose(RESULTS));
                    if rng.one_in(2) {
                        out.push(' ');
                    }
                }
            }
            out.into_bytes()
        })
        .run(|input, rng: &mut Rng| {
            let text = String::from_utf8_lossy(input);
            let mut lines = text.split('\n');
            let from = lines.next().unwrap_or_default().to_owned();
            let headers: Vec<String> = lines.map(str::to_owned).collect();
            let started = Instant::now();
            check_gate(&from, &headers);
            // The same values as the mail's headers, through the reader.
            let raw = with_headers(&from, &headers, rng);
            check_mail(&raw);
            assert!(started.elapsed() < BOUND);
        });
}

/// A mail from `from` with `headers` as its `Authentication-Results`,
/// topmost first, folded at random as servers fold long ones.
fn with_headers(from: &str, headers: &[String], rng: &mut Rng) -> Vec<u8> {
    let mut out = String::new();
    for value in headers {
        let value = if rng.one_in(3) {
            value.replacen("; ", ";\r\n\t", 3)
        } else {
            value.clone()
        };
        out.push_str(&format!("Authentication-Results: {value}\r\n"));
    }
    out.push_str(&format!(
        "From: <{from}>\r\nTo: agent@fake.example\r\nSubject: s\r\n\r\nbody\r\n"
    ));
    out.into_bytes()
}

/// A mail from Eve built to break a MIME reader: one or more of huge
/// headers, endless folding, deep nesting, boundaries that never close,
/// bad encodings, NULs; Anna's address only where it does not name the
/// sender (a display name, a comment, an encoded word, other headers).
fn hostile(rng: &mut Rng) -> Vec<u8> {
    let mut out = Vec::new();
    for _ in 0..rng.below(4) {
        let forged = format!("Authentication-Results: {VOUCHED}\r\n");
        out.extend_from_slice(forged.as_bytes());
    }
    let from = match rng.below(7) {
        0 => format!("From: {EVE}\r\n"),
        1 => format!("From: \"{ANNA}\" <{EVE}>\r\n"),
        2 => format!("From: =?UTF-8?Q?anna=40home.example?= <{EVE}>\r\n"),
        3 => format!("From: {EVE} ({ANNA})\r\n"),
        4 => format!("From: \"Anna <{ANNA}>\" <{EVE}>\r\n"),
        5 => format!(
            "From: \"{}\" <{EVE}>\r\n",
            "a".repeat(rng.between(1, 100_000))
        ),
        _ => format!("From:\r\n \"{ANNA}\"\r\n <{EVE}>\r\n"),
    };
    out.extend_from_slice(from.as_bytes());
    for _ in 0..rng.below(3) {
        out.extend_from_slice(
            rng.choose(&[
                "Sender: anna@home.example\r\n",
                "Reply-To: anna@home.example\r\n",
                "Return-Path: <anna@home.example>\r\n",
                "Resent-From: anna@home.example\r\n",
                "X-Original-From: anna@home.example\r\n",
            ])
            .as_bytes(),
        );
    }
    match rng.below(6) {
        0 => {
            let value = "x".repeat(rng.between(1000, 200_000));
            out.extend_from_slice(format!("Subject: {value}\r\n").as_bytes());
        }
        1 => {
            for n in 0..rng.between(100, 5000) {
                out.extend_from_slice(format!("X-Header-{n}: value {n}\r\n").as_bytes());
            }
        }
        2 => {
            out.extend_from_slice(b"Subject: start\r\n");
            out.extend_from_slice(&b" folded\r\n".repeat(rng.between(100, 20_000)));
        }
        3 => {
            let words = "=?UTF-8?B?////?= =?utf-8?q?=ZZ?= =?x-nothing?B?AAAA?= =?UTF-8??=";
            out.extend_from_slice(format!("Subject: {}\r\n", words.repeat(500)).as_bytes());
        }
        4 => {
            let params = "; a=\"b\"".repeat(rng.between(100, 10_000));
            out.extend_from_slice(format!("X-Params: x{params}\r\n").as_bytes());
        }
        _ => out.extend_from_slice(b"Subject: plain\r\n"),
    }
    out.extend_from_slice(b"MIME-Version: 1.0\r\n");
    // The body starts with its own `Content-Type` and the blank line that
    // ends the mail's headers.
    let head = out.len();
    body(rng, &mut out, 0);
    let body_starts = out[head..]
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map_or(out.len(), |at| head + at + 4);
    // Now and then, NULs and bytes no charset has, anywhere in the body.
    // Not in the headers: there a CR or a NUL in the blank line that ends
    // them makes the attached mail's `From: anna@...` a second `From` of
    // the mail itself, and then it does name Anna (the mutated-bytes
    // target puts them in headers too).
    for _ in 0..rng.below(8) {
        let at = rng.between(body_starts, out.len());
        let bytes: &[u8] = rng.choose(&[
            &b"\0"[..],
            b"\xff\xfe",
            b"\r",
            b"\n",
            b"\x80\x80",
            b"\0\0\0\0",
        ]);
        out.splice(at..at, bytes.iter().copied());
    }
    out
}

/// A body (headers from Content-Type on, then content) at nesting `depth`.
fn body(rng: &mut Rng, out: &mut Vec<u8>, depth: usize) {
    // Deep enough to find a reader that recurses, and no bigger than the
    // driver would keep: past it, every part is a leaf.
    let deep = depth > 300 || out.len() > hearth_fuzz::MAX_INPUT;
    match if deep { 5 } else { rng.below(8) } {
        // Multipart, each part a body of its own.
        0 | 1 => {
            let boundary = if rng.one_in(4) {
                // The same boundary at every level: which close is whose?
                "b".to_owned()
            } else {
                format!("b{depth}")
            };
            let kind = rng.choose(&["mixed", "alternative", "related", "digest", "report"]);
            out.extend_from_slice(
                format!("Content-Type: multipart/{kind}; boundary=\"{boundary}\"\r\n\r\n")
                    .as_bytes(),
            );
            for _ in 0..rng.between(1, 3) {
                out.extend_from_slice(format!("--{boundary}\r\n").as_bytes());
                let deeper = depth + 1 + rng.below(50);
                body(rng, out, deeper);
            }
            if !rng.one_in(3) {
                out.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
            }
        }
        // Boundaries that never end: opened again and again, never closed.
        2 => {
            out.extend_from_slice(b"Content-Type: multipart/mixed; boundary=x\r\n\r\n");
            let part = if rng.one_in(2) {
                &b"--x\r\n"[..]
            } else {
                b"--x\r\nContent-Type: text/plain\r\n\r\nhi\r\n"
            };
            out.extend_from_slice(&part.repeat(rng.between(100, 20_000)));
        }
        // A mail inside the mail, maybe a forged one from Anna.
        3 => {
            out.extend_from_slice(b"Content-Type: message/rfc822\r\n\r\n");
            if rng.one_in(2) {
                out.extend_from_slice(
                    format!("From: {ANNA}\r\nAuthentication-Results: {VOUCHED}\r\n").as_bytes(),
                );
            }
            let deeper = depth + 1 + rng.below(50);
            body(rng, out, deeper);
        }
        // Transfer encodings that do not decode.
        4 => {
            let (encoding, content) = rng.choose(&[
                ("base64", "####====AAAA=\r\nQUJD\0\r\n===\r\n"),
                ("base64", "QUJDRA"),
                ("quoted-printable", "=\r\n=G1=F=\r\n=FF=00=0D=0A trailing="),
                ("x-uuencode", "begin 644 f\r\n`\r\nend\r\n"),
                ("8bit", "\u{FEFF}\u{202E}plain"),
                ("bogus", "???"),
            ]);
            let charset = rng.choose(&[
                "utf-8",
                "utf-7",
                "iso-2022-jp",
                "x-none",
                "\"\"",
                "utf-16",
                "gb18030",
            ]);
            let subtype = rng.choose(&["plain", "html", "calendar", "enriched"]);
            out.extend_from_slice(
                format!(
                    "Content-Type: text/{subtype}; charset={charset}\r\n\
                     Content-Transfer-Encoding: {encoding}\r\n\r\n"
                )
                .as_bytes(),
            );
            out.extend_from_slice(content.repeat(rng.between(1, 2000)).as_bytes());
            out.extend_from_slice(b"\r\n");
        }
        // Text, sometimes HTML nested deep.
        _ => {
            if rng.one_in(2) {
                out.extend_from_slice(b"Content-Type: text/html\r\n\r\n");
                let n = rng.between(1, 5000);
                out.extend_from_slice("<div><b>".repeat(n).as_bytes());
                out.extend_from_slice(b"hello");
                out.extend_from_slice(b"<table><tr><td>".repeat(n / 2).as_slice());
            } else {
                out.extend_from_slice(b"Content-Type: text/plain\r\n\r\n");
                out.extend_from_slice(
                    b"hello\r\n> quoted\r\n"
                        .repeat(rng.between(1, 3000))
                        .as_slice(),
                );
            }
            out.extend_from_slice(b"\r\n");
        }
    }
}
