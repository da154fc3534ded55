//! Benchmark: 1,000 inbound mails through the fake IMAP and SMTP servers,
//! and the idle memory a configured mail channel adds.
//!
//! The release daemon runs with the real mail plugin against the fake IMAP
//! server (IDLE), the fake SMTP server and the fake model. Mails go one at
//! a time, each answered before the next, every one carrying the receiving
//! server's `Authentication-Results` that vouches for its sender (else the
//! gate drops it). A relay in front of each fake notes when bytes pass:
//! the fakes keep no clock, and the relay lets the channel's own network
//! time be taken out as discord_inbound takes out the Gateway's. For each
//! mail: host overhead = (the channel connects to SMTP to send the reply −
//! the fetched mail reaches the relay on its way to the channel) − (the
//! model's answer written − the model's request arrived): the mail read,
//! the gate, the inbox, the turn, the outbox and building the reply. Left
//! out, and printed beside it: the IMAP round trips between the server's
//! `EXISTS` and the mail (DONE, SEARCH, two FETCHes) and the SMTP
//! conversation (greeting to the end of DATA), both the channel waiting on
//! its server. All must be answered once, in their threads.
//!
//! As in the other channels' benches, 1,000 mails go back to back (each
//! delivered as soon as the previous reply was taken), then
//! `bench::AFTER_IDLE` more, each after `bench::IDLE_GAP` of quiet.
//!
//! Then the idle VmRSS of the daemon with the channel idling on the inbox
//! against the same config with `enabled = false`, medians of three
//! alternating runs of five seconds.
//!
//! Run with `cargo build --release --workspace && cargo bench -p hearth-tests --bench mail_inbound`.

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use hearth_tests::fake_llm::{FakeLlm, anthropic_text};
use hearth_tests::fake_mail::{FakeImap, FakeSmtp, Sent, mail};
use hearth_tests::{Hearth, bench, plugin};

const MAILS: usize = 1000;
/// Senders the mails rotate over (ten each, so no conversation is long
/// enough to be compacted); all are allowed, so all are the owner.
const SENDERS: usize = 100;
const AGENT: &str = "agent@fake.example";
const PASSWORD: &str = "mail-bench-password";
const IDLE: Duration = Duration::from_secs(5);
const PAIRS: usize = 3;
/// The end of every mail's text: the relay knows the fetched mail by it.
const END: &str = " (end of bench mail)";

fn sender(n: usize) -> String {
    format!("sender{}@home.example", n % SENDERS)
}

/// What the receiving server says of `sender`'s mail, as tests/mail.rs's
/// VOUCHED says of the owner's.
fn vouched(sender: &str) -> String {
    format!(
        "mx.fake.example; dkim=pass header.d=home.example header.s=s1; \
         spf=pass smtp.mailfrom={sender}"
    )
}

fn config(imap: SocketAddr, smtp: SocketAddr, llm: &FakeLlm, extra: &str) -> String {
    let senders: Vec<String> = (0..SENDERS).map(|n| format!("{:?}", sender(n))).collect();
    format!(
        "[plugins.mail]\naddress = {AGENT:?}\npassword = {PASSWORD:?}\n\
         imap_host = \"127.0.0.1\"\nimap_port = {}\nimap_security = \"plain\"\n\
         smtp_host = \"127.0.0.1\"\nsmtp_port = {}\nsmtp_security = \"plain\"\n\
         allowed_senders = [{}]\n{extra}\
         [llm]\nprovider = \"anthropic\"\nmodel = \"fake-model\"\nbase_url = \"{}\"\n\
         api_key_env = \"HEARTH_BENCH_KEY\"\n",
        imap.port(),
        smtp.port(),
        senders.join(", "),
        llm.url()
    )
}

fn main() {
    let imap = FakeImap::start(AGENT, PASSWORD);
    let smtp = FakeSmtp::start(AGENT, PASSWORD);
    let llm = FakeLlm::start();
    let imap_tap = Tap::start(
        imap.addr(),
        vec![
            Watch::to_client(b" EXISTS\r\n", Mark::Exists),
            Watch::to_client(format!("{END}\r\n").as_bytes(), Mark::Fetched),
        ],
    );
    let smtp_tap = Tap::start(
        smtp.addr(),
        vec![
            Watch::to_server(b"\r\n.\r\n", Mark::DataEnd),
            // The server speaks first: its greeting starts the conversation.
            Watch::to_client(b"220 ", Mark::Greeting),
        ],
    );
    let h = Hearth::with_plugins(
        &[plugin("mail")],
        &config(imap_tap.addr, smtp_tap.addr, &llm, ""),
    );
    let mut daemon = h.bench_daemon();
    assert!(
        imap.wait_idle(Duration::from_secs(20)),
        "the channel never reached IDLE"
    );

    let mut overhead = Vec::with_capacity(MAILS);
    let mut inbound = Vec::with_capacity(MAILS);
    let mut with_smtp = Vec::with_capacity(MAILS);
    let mut imap_time = Vec::with_capacity(MAILS);
    let mut smtp_time = Vec::with_capacity(MAILS);
    let all = MAILS + bench::AFTER_IDLE;
    let whole = Instant::now();
    for n in 0..all {
        llm.push(anthropic_text(&format!("reply **{n}**")));
        if n >= MAILS {
            std::thread::sleep(bench::IDLE_GAP);
        }
        let from = sender(n);
        let raw = mail(
            &from,
            AGENT,
            &format!("bench {n}"),
            &format!("mail {n}{END}"),
        )
        .message_id(&message_id(n))
        .authentication_results(&vouched(&from))
        .build();
        imap.deliver("INBOX", &raw);
        let sent = smtp.wait_received(n + 1, Duration::from_secs(30));
        assert_eq!(sent.len(), n + 1, "mail {n} was not answered");
        let fetched = imap_tap.last(Mark::Fetched, n + 1, "the mail fetched once");
        let exists = imap_tap
            .last_before(Mark::Exists, fetched)
            .expect("the server announced the mail");
        let opened = smtp_tap.last(Mark::Opened, n + 1, "one SMTP connection per reply");
        let greeting = smtp_tap.last(Mark::Greeting, n + 1, "one greeting per connection");
        let data_end = smtp_tap.last(Mark::DataEnd, n + 1, "one message per reply");
        let model = *llm.received().last().expect("a model request");
        let answered = *llm.answered().last().expect("a model answer");
        let model_time = answered.saturating_duration_since(model);
        overhead.push(
            opened
                .saturating_duration_since(fetched)
                .saturating_sub(model_time),
        );
        inbound.push(model.saturating_duration_since(fetched));
        with_smtp.push(
            data_end
                .saturating_duration_since(fetched)
                .saturating_sub(model_time),
        );
        imap_time.push(fetched.saturating_duration_since(exists));
        smtp_time.push(data_end.saturating_duration_since(greeting));
    }
    let total = whole.elapsed();
    let sent = smtp.wait_received(all, Duration::from_secs(1));
    assert_eq!(sent.len(), all, "a mail was lost or answered twice");
    for (n, reply) in sent.iter().enumerate() {
        assert_eq!(reply.to, [sender(n)], "reply {n} went elsewhere");
        assert_eq!(
            header(reply, "In-Reply-To"),
            Some(message_id(n).as_str()),
            "reply {n} is not in its thread"
        );
    }
    assert_eq!(llm.received().len(), all, "a mail reached the model twice");
    let _ = daemon.kill();
    let _ = daemon.wait();

    println!(
        "mail inbound: {all} mails ({MAILS} back to back, {} after {} ms idle), all answered \
         once in their threads, in {:.1} s",
        bench::AFTER_IDLE,
        bench::IDLE_GAP.as_millis(),
        total.as_secs_f64()
    );
    bench::print_inbound("mail", &overhead, MAILS);
    print_spread(
        "  of which fetched to the model's request (gate, inbox, turn start)",
        &mut inbound,
    );
    print_spread(
        "  with the SMTP conversation (to the end of DATA)",
        &mut with_smtp,
    );
    print_spread(
        "left out: IMAP round trips from EXISTS to the mail",
        &mut imap_time,
    );
    print_spread(
        "left out: SMTP conversation, greeting to the end of DATA",
        &mut smtp_time,
    );

    let (on, off) = bench::idle_rss_on_off(PAIRS, IDLE, |extra| {
        let imap = FakeImap::start(AGENT, PASSWORD);
        let smtp = FakeSmtp::start(AGENT, PASSWORD);
        let llm = FakeLlm::start();
        let h = Hearth::with_plugins(
            &[plugin("mail")],
            &config(imap.addr(), smtp.addr(), &llm, extra),
        );
        let daemon = h.bench_daemon();
        if extra.is_empty() {
            assert!(imap.wait_idle(Duration::from_secs(20)));
        }
        (daemon, (imap, smtp, llm, h))
    });
    println!(
        "idle VmRSS: {:.2} MiB with the mail channel idling, {:.2} MiB with it switched off",
        on as f64 / 1024.0,
        off as f64 / 1024.0
    );
    println!(
        "figure: idle VmRSS added by an idling mail channel: {:.3} MB (target <= 5)",
        on.saturating_sub(off) as f64 * 1024.0 / 1e6
    );
}

/// Mail `n`'s Message-ID, brackets included.
fn message_id(n: usize) -> String {
    format!("<bench-{n}@home.example>")
}

/// Prints the median, p90, p99 and max of `samples` (sorted in place) in
/// milliseconds after `what`; returns the median.
fn print_spread(what: &str, samples: &mut [Duration]) -> f64 {
    samples.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let at = |q: f64| ms(samples[((samples.len() - 1) as f64 * q).round() as usize]);
    println!(
        "{what}: median {:.3} ms, p90 {:.3} ms, p99 {:.3} ms, max {:.3} ms",
        at(0.5),
        at(0.9),
        at(0.99),
        at(1.0)
    );
    at(0.5)
}

/// The value of header `name` in the head of `sent`.
fn header<'a>(sent: &'a Sent, name: &str) -> Option<&'a str> {
    let text = std::str::from_utf8(&sent.data).ok()?;
    let head = text.split("\r\n\r\n").next()?;
    head.lines()
        .find(|l| {
            l.len() > name.len()
                && l[..name.len()].eq_ignore_ascii_case(name)
                && l.as_bytes()[name.len()] == b':'
        })
        .map(|l| l[name.len() + 1..].trim())
}

/// What a relay notes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mark {
    /// The daemon connected.
    Opened,
    /// The IMAP server announced new mail.
    Exists,
    /// The whole of a fetched mail reached the daemon.
    Fetched,
    /// The SMTP server greeted the daemon.
    Greeting,
    /// The daemon ended a message's DATA.
    DataEnd,
}

/// Bytes a relay looks for, going one way.
struct Watch {
    to_server: bool,
    needle: Vec<u8>,
    mark: Mark,
}

impl Watch {
    /// Bytes from the server to the daemon.
    fn to_client(needle: &[u8], mark: Mark) -> Watch {
        Watch {
            to_server: false,
            needle: needle.to_vec(),
            mark,
        }
    }

    /// Bytes from the daemon to the server.
    fn to_server(needle: &[u8], mark: Mark) -> Watch {
        Watch {
            to_server: true,
            needle: needle.to_vec(),
            mark,
        }
    }
}

/// A TCP relay on 127.0.0.1 in front of a fake server, noting when the
/// daemon connects and when watched bytes pass. Its threads live as long
/// as the bench.
struct Tap {
    addr: SocketAddr,
    marks: Marks,
}

/// Every mark a relay made, in the order made.
type Marks = Arc<Mutex<Vec<(Mark, Instant)>>>;

impl Tap {
    fn start(upstream: SocketAddr, watches: Vec<Watch>) -> Tap {
        let listener = TcpListener::bind("127.0.0.1:0").expect("relay: bind");
        let addr = listener.local_addr().expect("relay: address");
        let marks: Marks = Arc::default();
        let watches = Arc::new(watches);
        let noting = Arc::clone(&marks);
        std::thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { continue };
                note(&noting, Mark::Opened, Instant::now());
                let _ = client.set_nodelay(true);
                let server = TcpStream::connect(upstream).expect("relay: the fake listens");
                let _ = server.set_nodelay(true);
                for (from, to, to_server) in [(&client, &server, true), (&server, &client, false)] {
                    let (from, to) = (
                        from.try_clone().expect("relay: clone"),
                        to.try_clone().expect("relay: clone"),
                    );
                    let (marks, watches) = (Arc::clone(&noting), Arc::clone(&watches));
                    std::thread::spawn(move || pump(from, to, to_server, &watches, &marks));
                }
            }
        });
        Tap { addr, marks }
    }

    /// The latest `mark`, checking that there were `count` of them.
    fn last(&self, mark: Mark, count: usize, what: &str) -> Instant {
        let marks = self.marks.lock().unwrap_or_else(PoisonError::into_inner);
        let all: Vec<Instant> = marks
            .iter()
            .filter(|(m, _)| *m == mark)
            .map(|(_, at)| *at)
            .collect();
        assert_eq!(
            all.len(),
            count,
            "{what}: {mark:?} seen {} times",
            all.len()
        );
        *all.last().expect("count is at least one")
    }

    /// The latest `mark` before `at`.
    fn last_before(&self, mark: Mark, at: Instant) -> Option<Instant> {
        let marks = self.marks.lock().unwrap_or_else(PoisonError::into_inner);
        marks
            .iter()
            .rev()
            .find(|(m, t)| *m == mark && *t <= at)
            .map(|(_, t)| *t)
    }
}

fn note(marks: &Marks, mark: Mark, at: Instant) {
    marks
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push((mark, at));
}

/// Passes bytes from `from` to `to` until either side closes, noting the
/// watched bytes going this way. The last bytes of each read are kept, so
/// a needle split between two reads is still seen (once). A mark takes
/// the time the bytes reached the relay, before they are passed on: a
/// mark is then in place before the fake or the daemon can act on them,
/// and if this thread is preempted before its write, the delay counts
/// against the host, never for it.
fn pump(mut from: TcpStream, mut to: TcpStream, to_server: bool, watches: &[Watch], marks: &Marks) {
    let watches: Vec<&Watch> = watches
        .iter()
        .filter(|w| w.to_server == to_server)
        .collect();
    let keep = watches.iter().map(|w| w.needle.len()).max().unwrap_or(1) - 1;
    let mut buf = vec![0u8; 64 * 1024];
    let mut window: Vec<u8> = Vec::new();
    loop {
        let read = match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(read) => read,
        };
        let arrived = Instant::now();
        let carried = window.len();
        window.extend_from_slice(&buf[..read]);
        let found: Vec<Mark> = watches
            .iter()
            .flat_map(|w| {
                window
                    .windows(w.needle.len())
                    .enumerate()
                    .filter(|(at, bytes)| at + w.needle.len() > carried && *bytes == w.needle)
                    .map(|_| w.mark)
                    .collect::<Vec<_>>()
            })
            .collect();
        for &mark in &found {
            note(marks, mark, arrived);
        }
        if to.write_all(&buf[..read]).is_err() {
            break;
        }
        let cut = window.len().saturating_sub(keep);
        window.drain(..cut);
    }
    // The other way learns of the close, as it would without the relay.
    let _ = to.shutdown(Shutdown::Write);
}
