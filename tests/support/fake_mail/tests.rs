//! The fakes, spoken to byte by byte over a raw socket, as the RFCs write
//! their examples.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use base64::Engine;

use super::{FakeImap, FakeSmtp, ImapOptions, mail};

const WAIT: Duration = Duration::from_secs(5);

/// A raw client: lines out, lines and bytes in.
struct Wire {
    reader: BufReader<TcpStream>,
    writer: TcpStream,
}

impl Wire {
    fn connect(port: u16) -> Wire {
        let stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
        stream.set_read_timeout(Some(WAIT)).expect("timeout");
        Wire {
            reader: BufReader::new(stream.try_clone().expect("clone")),
            writer: stream,
        }
    }

    fn send(&mut self, text: &str) {
        self.writer
            .write_all(format!("{text}\r\n").as_bytes())
            .expect("send");
    }

    fn send_bytes(&mut self, bytes: &[u8]) {
        self.writer.write_all(bytes).expect("send");
    }

    /// One line, which must end in CRLF; returned without it.
    fn line(&mut self) -> String {
        let mut line = String::new();
        self.reader.read_line(&mut line).expect("read a line");
        assert!(line.ends_with("\r\n"), "not a CRLF line: {line:?}");
        line.truncate(line.len() - 2);
        line
    }

    fn bytes(&mut self, n: usize) -> Vec<u8> {
        let mut data = vec![0; n];
        self.reader.read_exact(&mut data).expect("read bytes");
        data
    }

    /// Lines up to and with the one tagged `tag`.
    fn until(&mut self, tag: &str) -> Vec<String> {
        let mut lines = Vec::new();
        loop {
            let line = self.line();
            let done = line.starts_with(&format!("{tag} "));
            lines.push(line);
            if done {
                return lines;
            }
        }
    }

    /// Sends `command` tagged `tag`; returns the answer's lines.
    fn command(&mut self, tag: &str, command: &str) -> Vec<String> {
        self.send(&format!("{tag} {command}"));
        self.until(tag)
    }

    /// Connects to `imap` and logs in as `ann`, password `pw`.
    fn imap(imap: &FakeImap) -> Wire {
        let mut wire = Wire::connect(imap.port());
        let greeting = wire.line();
        assert!(
            greeting.starts_with("* OK [CAPABILITY IMAP4rev1 LITERAL+ UIDPLUS AUTH=PLAIN IDLE] "),
            "{greeting}"
        );
        let login = wire.command("a0", "LOGIN ann pw");
        assert!(
            login[0].starts_with("a0 OK [CAPABILITY IMAP4rev1 "),
            "{login:?}"
        );
        wire
    }
}

/// The literal a line ends with, `{n}`: n.
fn literal_size(line: &str) -> usize {
    let open = line.rfind('{').expect("a literal");
    line[open + 1..line.len() - 1].parse().expect("its size")
}

fn three_mails(imap: &FakeImap) {
    for (i, subject) in ["one", "two", "three"].iter().enumerate() {
        let raw = mail(
            "bob@example.org",
            "ann@example.org",
            subject,
            &format!("body {i}"),
        )
        .build();
        assert_eq!(
            imap.deliver("INBOX", &raw),
            u32::try_from(i).expect("small") + 1
        );
    }
}

#[test]
fn imap_login_select_search_and_fetch() {
    let imap = FakeImap::start("ann", "s3cr\"et");
    three_mails(&imap);
    let mut wire = Wire::connect(imap.port());
    wire.line();
    assert_eq!(
        wire.command("a1", "LOGIN ann wrong"),
        ["a1 NO [AUTHENTICATIONFAILED] Invalid credentials"]
    );
    assert_eq!(
        wire.command("a2", "SELECT INBOX"),
        ["a2 BAD Please log in first"]
    );
    let login = wire.command("a3", "LOGIN \"ann\" \"s3cr\\\"et\"");
    assert!(login[0].starts_with("a3 OK "), "{login:?}");

    let select = wire.command("a4", "SELECT INBOX");
    assert_eq!(
        select,
        [
            "* FLAGS (\\Answered \\Flagged \\Deleted \\Seen \\Draft)",
            "* OK [PERMANENTFLAGS (\\Answered \\Flagged \\Deleted \\Seen \\Draft \\*)] Flags permitted",
            "* 3 EXISTS",
            "* 3 RECENT",
            "* OK [UNSEEN 1] First unseen",
            "* OK [UIDVALIDITY 1000] UIDs valid",
            "* OK [UIDNEXT 4] Predicted next UID",
            "a4 OK [READ-WRITE] Select completed",
        ]
    );
    assert_eq!(
        wire.command("a5", "SELECT Nowhere")[0],
        "a5 NO Mailbox doesn't exist: Nowhere"
    );
    wire.command("a6", "SELECT INBOX");

    // Past the highest UID, `9:*` still names the highest (RFC 3501 6.4.8).
    assert_eq!(
        wire.command("a7", "UID SEARCH UID 9:*"),
        ["* SEARCH 3", "a7 OK Search completed"]
    );
    assert_eq!(
        wire.command("a8", "UID SEARCH 2:*"),
        ["* SEARCH 2 3", "a8 OK Search completed"]
    );
    assert_eq!(
        wire.command("a9", "UID SEARCH OR SUBJECT \"ONE\" SUBJECT three UNSEEN"),
        ["* SEARCH 1 3", "a9 OK Search completed"]
    );
    assert_eq!(
        wire.command("a10", "SEARCH NOT BODY \"body 1\" SINCE 1-Jan-2000"),
        ["* SEARCH 1 3", "a10 OK Search completed"]
    );

    // A peek at two header fields: the field list echoed, the literal
    // exactly those lines and the blank line; \Seen left alone.
    wire.send("b1 UID FETCH 2 (BODY.PEEK[HEADER.FIELDS (from Subject)])");
    let fields = b"From: bob@example.org\r\nSubject: two\r\n\r\n";
    let head = wire.line();
    assert_eq!(
        head,
        format!(
            "* 2 FETCH (UID 2 BODY[HEADER.FIELDS (FROM SUBJECT)] {{{}}}",
            fields.len()
        )
    );
    assert_eq!(wire.bytes(fields.len()), fields);
    assert_eq!(wire.until("b1"), [")", "b1 OK Fetch completed"]);

    // BODY[] sets \Seen, and says so.
    let raw = imap.messages("INBOX")[1].2.clone();
    wire.send("b2 UID FETCH 2 (RFC822.SIZE BODY[])");
    let head = wire.line();
    assert_eq!(
        head,
        format!(
            "* 2 FETCH (UID 2 FLAGS (\\Seen) RFC822.SIZE {0} BODY[] {{{0}}}",
            raw.len()
        )
    );
    assert_eq!(wire.bytes(literal_size(&head)), raw);
    assert_eq!(wire.until("b2"), [")", "b2 OK Fetch completed"]);
    assert_eq!(imap.messages("INBOX")[1].1, ["\\Seen"]);

    let fetched = wire.command("b3", "FETCH 1:* (FLAGS INTERNALDATE)");
    assert_eq!(fetched.len(), 4, "{fetched:?}");
    assert!(fetched[1].starts_with("* 2 FETCH (FLAGS (\\Seen) INTERNALDATE \""));
    assert_eq!(
        wire.command("b4", "FETCH 1 ENVELOPE"),
        ["b4 BAD The fake server does not support the fetch item ENVELOPE"]
    );

    let stored = wire.command("b5", "UID STORE 1,3 +FLAGS (\\Deleted)");
    assert_eq!(stored[0], "* 1 FETCH (UID 1 FLAGS (\\Deleted))");
    assert_eq!(
        wire.command("b6", "EXPUNGE"),
        ["* 1 EXPUNGE", "* 2 EXPUNGE", "b6 OK Expunge completed"]
    );
    assert_eq!(wire.command("b7", "FROB"), ["b7 BAD Unknown command FROB"]);
    assert_eq!(
        wire.command("b8", "LOGOUT"),
        ["* BYE Logging out", "b8 OK Logout completed"]
    );

    let commands = imap.commands();
    assert_eq!(commands[0], "LOGIN ann ***");
    assert_eq!(commands[2], "LOGIN ann ***");
    assert!(commands.iter().all(|c| !c.contains("s3cr")), "{commands:?}");
}

#[test]
fn imap_append_with_a_synchronizing_literal_and_literal_plus() {
    let imap = FakeImap::start("ann", "pw");
    let mut wire = Wire::imap(&imap);
    let draft = mail("ann@example.org", "bob@example.org", "Draft", "Dear Bob").build();

    wire.send(&format!(
        "c1 APPEND \"Drafts\" (\\Draft \\seen) \"05-Mar-2024 10:00:00 +0000\" {{{}}}",
        draft.len()
    ));
    assert_eq!(wire.line(), "+ Ready for literal data");
    wire.send_bytes(&draft);
    wire.send("");
    assert_eq!(wire.line(), "c1 OK [APPENDUID 1002 1] Append completed");

    // LITERAL+: no continuation.
    wire.send_bytes(format!("c2 APPEND Drafts {{{}+}}\r\n", draft.len()).as_bytes());
    wire.send_bytes(&draft);
    wire.send("");
    assert_eq!(wire.line(), "c2 OK [APPENDUID 1002 2] Append completed");

    let drafts = imap.messages("Drafts");
    assert_eq!(drafts.len(), 2);
    assert_eq!(drafts[0].0, 1);
    assert_eq!(drafts[0].1, ["\\Draft", "\\Seen"]);
    assert_eq!(drafts[0].2, draft);
    assert!(drafts[1].1.is_empty());
    let status = wire.command("c3", "STATUS Drafts (MESSAGES UIDNEXT UIDVALIDITY UNSEEN)");
    assert_eq!(
        status[0],
        "* STATUS Drafts (MESSAGES 2 UIDNEXT 3 UIDVALIDITY 1002 UNSEEN 1)"
    );
    assert_eq!(
        wire.command("c4", "APPEND Nowhere {1+}\r\nx"),
        ["c4 NO [TRYCREATE] Mailbox doesn't exist: Nowhere"]
    );
    let fetched = wire.command("c5", "EXAMINE Drafts");
    assert_eq!(
        fetched.last().map(String::as_str),
        Some("c5 OK [READ-ONLY] Examine completed")
    );

    let list = wire.command("c6", "LIST \"\" \"*\"");
    assert_eq!(
        list,
        [
            "* LIST (\\HasNoChildren) \"/\" INBOX",
            "* LIST (\\HasNoChildren \\Sent) \"/\" Sent",
            "* LIST (\\HasNoChildren \\Drafts) \"/\" Drafts",
            "* LIST (\\HasNoChildren \\Archive) \"/\" Archive",
            "c6 OK LIST completed",
        ]
    );
}

#[test]
fn imap_idle_is_woken_by_a_delivery() {
    let imap = FakeImap::start("ann", "pw");
    three_mails(&imap);
    let mut wire = Wire::imap(&imap);
    wire.command("d1", "SELECT INBOX");
    wire.send("d2 IDLE");
    assert_eq!(wire.line(), "+ idling");
    assert!(imap.wait_idle(WAIT));
    assert_eq!(imap.idling(), 1);

    let uid = imap.deliver(
        "INBOX",
        &mail("c@example.org", "ann@example.org", "new", "hi").build(),
    );
    assert_eq!(uid, 4);
    assert_eq!(wire.line(), "* 4 EXISTS");
    assert_eq!(wire.line(), "* 4 RECENT");
    wire.send("DONE");
    assert_eq!(wire.line(), "d2 OK Idle completed");
    assert_eq!(imap.idling(), 0);

    // A NOOP tells of what came meanwhile.
    imap.deliver("INBOX", b"Subject: five\r\n\r\nfive\r\n");
    assert_eq!(
        wire.command("d3", "NOOP"),
        ["* 5 EXISTS", "* 5 RECENT", "d3 OK NOOP completed"]
    );

    // A rebuilt index ends the session; the next one sees new UIDs.
    imap.renumber("INBOX");
    wire.send("d4 NOOP");
    assert_eq!(wire.line(), "* BYE Mailbox UIDVALIDITY changed");
    let mut wire = Wire::imap(&imap);
    let select = wire.command("d5", "EXAMINE INBOX");
    assert!(
        select.contains(&"* OK [UIDVALIDITY 1004] UIDs valid".to_owned()),
        "{select:?}"
    );

    // A server restart: the connection is cut.
    imap.drop_connections();
    let mut rest = String::new();
    assert_eq!(wire.reader.read_line(&mut rest).expect("eof"), 0);
    assert_eq!(imap.logins(), 2);
}

#[test]
fn imap_idle_can_be_turned_off_and_plain_authenticate_works() {
    let options = ImapOptions {
        idle: false,
        ..ImapOptions::default()
    };
    let imap = FakeImap::start_with("ann", "pw", options);
    let mut wire = Wire::connect(imap.port());
    assert_eq!(
        wire.line(),
        "* OK [CAPABILITY IMAP4rev1 LITERAL+ UIDPLUS AUTH=PLAIN] hearth's fake IMAP server ready"
    );
    wire.send("e1 AUTHENTICATE PLAIN");
    assert_eq!(wire.line(), "+ ");
    wire.send(&super::base64().encode(b"\0ann\0pw"));
    assert!(wire.line().starts_with("e1 OK [CAPABILITY "));
    assert_eq!(wire.command("e2", "IDLE"), ["e2 BAD Unknown command IDLE"]);

    let mut again = Wire::connect(imap.port());
    again.line();
    let initial = super::base64().encode(b"\0ann\0wrong");
    assert_eq!(
        again.command("f1", &format!("AUTHENTICATE PLAIN {initial}")),
        ["f1 NO [AUTHENTICATIONFAILED] Invalid credentials"]
    );
    assert_eq!(imap.commands()[2], "AUTHENTICATE PLAIN ***");
}

#[test]
fn smtp_auth_plain_and_dot_stuffing() {
    let smtp = FakeSmtp::start("ann", "pw");
    let mut wire = Wire::connect(smtp.port());
    assert!(wire.line().starts_with("220 "));
    wire.send("MAIL FROM:<ann@example.org>");
    assert_eq!(wire.line(), "503 5.5.1 Error: send HELO/EHLO first");
    wire.send("EHLO client.example");
    let mut ehlo = vec![wire.line()];
    while ehlo.last().is_some_and(|l| l.starts_with("250-")) {
        ehlo.push(wire.line());
    }
    assert_eq!(
        ehlo,
        [
            "250-smtp.fake.example Hello client.example",
            "250-PIPELINING",
            "250-8BITMIME",
            "250-SMTPUTF8",
            "250-AUTH PLAIN LOGIN",
            "250 SIZE 10485760",
        ]
    );
    wire.send("MAIL FROM:<ann@example.org>");
    assert_eq!(wire.line(), "530 5.7.0 Authentication required");
    wire.send(&format!(
        "AUTH PLAIN {}",
        super::base64().encode(b"\0ann\0nope")
    ));
    assert_eq!(wire.line(), "535 5.7.8 Authentication credentials invalid");
    wire.send(&format!(
        "AUTH PLAIN {}",
        super::base64().encode(b"\0ann\0pw")
    ));
    assert_eq!(wire.line(), "235 2.7.0 Authentication successful");

    wire.send("MAIL FROM:<ann@example.org> BODY=8BITMIME SIZE=120");
    assert_eq!(wire.line(), "250 2.1.0 Ok");
    wire.send("RCPT TO:<bob@example.org>");
    assert_eq!(wire.line(), "250 2.1.5 Ok");
    wire.send("RCPT TO:<cy@example.org>");
    assert_eq!(wire.line(), "250 2.1.5 Ok");
    wire.send("DATA");
    assert_eq!(wire.line(), "354 End data with <CR><LF>.<CR><LF>");
    wire.send_bytes(b"Subject: dots\r\n\r\n..leading dot\r\n...\r\nend\r\n.\r\n");
    assert!(wire.line().starts_with("250 2.0.0 Ok: queued as "));

    smtp.fail_next(1, 451);
    wire.send("MAIL FROM:<ann@example.org>");
    wire.line();
    wire.send("RCPT TO:<bob@example.org>");
    wire.line();
    wire.send("DATA");
    wire.line();
    wire.send_bytes(b"Subject: again\r\n\r\nx\r\n.\r\n");
    assert_eq!(wire.line(), "451 4.3.0 Temporary failure, try again later");
    wire.send("QUIT");
    assert_eq!(wire.line(), "221 2.0.0 Bye");

    let received = smtp.wait_received(1, WAIT);
    assert_eq!(received.len(), 1);
    assert_eq!(received[0].from, "ann@example.org");
    assert_eq!(received[0].to, ["bob@example.org", "cy@example.org"]);
    assert_eq!(
        received[0].data,
        b"Subject: dots\r\n\r\n.leading dot\r\n..\r\nend\r\n"
    );
    assert!(smtp.commands().contains(&"AUTH PLAIN ***".to_owned()));
}

#[test]
fn smtp_auth_login() {
    let smtp = FakeSmtp::start("ann", "pw");
    let mut wire = Wire::connect(smtp.port());
    wire.line();
    wire.send("HELO client.example");
    assert_eq!(wire.line(), "250 smtp.fake.example");
    wire.send("AUTH LOGIN");
    assert_eq!(wire.line(), "334 VXNlcm5hbWU6");
    wire.send(&super::base64().encode(b"ann"));
    assert_eq!(wire.line(), "334 UGFzc3dvcmQ6");
    wire.send(&super::base64().encode(b"pw"));
    assert_eq!(wire.line(), "235 2.7.0 Authentication successful");
}

#[test]
fn built_mails_carry_their_headers_and_parts() {
    let raw = mail(
        "Ann <ann@example.org>",
        "bob@example.org",
        "Grüße",
        "line one\nline two",
    )
    .message_id("<m1@example.org>")
    .in_reply_to("<m0@example.org>")
    .authentication_results("mx.example.org; dkim=pass")
    .header("X-Test", "yes")
    .html("<p>line one</p>")
    .attachment("a.bin", "application/octet-stream", &[0, 1, 2, 255])
    .build();
    let text = String::from_utf8(raw).expect("utf-8");
    assert!(text.starts_with("Authentication-Results: mx.example.org; dkim=pass\r\nDate: "));
    let subject = super::base64().encode("Grüße");
    assert!(text.contains(&format!("\r\nSubject: =?UTF-8?B?{subject}?=\r\n")));
    assert!(text.contains("\r\nMessage-ID: <m1@example.org>\r\nIn-Reply-To: <m0@example.org>\r\n"));
    assert!(text.contains("\r\nMIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary="));
    assert!(text.contains("Content-Type: multipart/alternative; boundary="));
    assert!(text.contains("\r\n\r\nline one\r\nline two\r\n"));
    assert!(
        text.contains(
            "filename=\"a.bin\"\r\nContent-Transfer-Encoding: base64\r\n\r\nAAEC/w==\r\n"
        )
    );
    assert!(
        !text.replace("\r\n", "").contains('\n'),
        "bare LF in {text}"
    );

    // The fake's SUBJECT search reads the encoded word.
    let imap = FakeImap::start("ann", "pw");
    imap.deliver("INBOX", text.as_bytes());
    let mut wire = Wire::imap(&imap);
    wire.command("g1", "SELECT INBOX");
    assert_eq!(
        wire.command(
            "g2",
            "SEARCH CHARSET UTF-8 SUBJECT \"grü\" HEADER X-Test \"\""
        ),
        ["* SEARCH 1", "g2 OK Search completed"]
    );
}
