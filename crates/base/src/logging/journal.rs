//! The log in journald's native format, when systemd runs hearth.
//!
//! systemd says a service's standard error goes to the journal by setting
//! `JOURNAL_STREAM` to the stream's `device:inode`; a program that finds
//! its own standard error there may send structured entries instead
//! (systemd.exec(5)). Each event becomes one entry: `MESSAGE` (the
//! message and its fields as `key=value`, as the text log shows them),
//! `PRIORITY` from the level, `SYSLOG_IDENTIFIER=hearth`, `TARGET`, and
//! every field of the event as a field of its own, its name in capitals
//! (`plugin` → `PLUGIN`, `channel` → `CHANNEL`, `agent` → `AGENT`), so
//! `journalctl PLUGIN=telegram` finds a plugin's lines: a plugin library's
//! come through the bridge with the `plugin` field; a built-in plugin's,
//! which reach the host's subscriber directly, are known by their crate.
//!
//! Every value passes through the log's secret redaction before it is
//! encoded, as every text line does. The protocol (systemd's "Native
//! Journal Protocol"): `NAME=value` lines in one datagram to
//! `/run/systemd/journal/socket`; a value holding a newline is written as
//! `NAME`, a newline, its length as 64-bit little-endian, the bytes and a
//! newline; an entry too large for a datagram goes in a sealed memfd whose
//! descriptor is sent instead. An entry that cannot be sent at all is
//! written to standard error, which systemd also puts in the journal.

use std::io::Write;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};

use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::layer::Context;

/// journald's socket for native entries.
pub const SOCKET: &str = "/run/systemd/journal/socket";
/// Test only: another socket to send the entries to (the journal test
/// binds one and reads them). It is read only when `JOURNAL_STREAM`
/// matches standard error, that is, when hearth logs to a journal at all.
pub const TEST_SOCKET_VAR: &str = "HEARTH_TEST_JOURNAL_SOCKET";

/// Whether standard error is the journal stream systemd connected:
/// `JOURNAL_STREAM` is set and names standard error's device and inode.
pub fn stderr_is_journal() -> bool {
    let Some(stream) = std::env::var_os("JOURNAL_STREAM") else {
        return false;
    };
    let Some((dev, ino)) = stream.to_str().and_then(|s| s.split_once(':')) else {
        return false;
    };
    let (Ok(dev), Ok(ino)) = (dev.parse::<u64>(), ino.parse::<u64>()) else {
        return false;
    };
    // SAFETY: fstat writes into the zeroed struct it is given and reads
    // nothing else; fd 2 may be closed, which it reports as an error.
    let mut stat: libc::stat = unsafe { std::mem::zeroed() };
    if unsafe { libc::fstat(2, &mut stat) } != 0 {
        return false;
    }
    stat.st_dev == dev && stat.st_ino == ino
}

/// Where the entries go: the test socket when the variable names one,
/// else journald's.
pub fn socket_path() -> PathBuf {
    std::env::var_os(TEST_SOCKET_VAR)
        .filter(|p| !p.is_empty())
        .map_or_else(|| PathBuf::from(SOCKET), PathBuf::from)
}

/// The layer that sends every event to the journal.
pub struct Journal {
    socket: Option<UnixDatagram>,
    path: PathBuf,
}

impl Journal {
    /// A layer sending to `path`.
    pub fn new(path: PathBuf) -> Journal {
        Journal {
            socket: UnixDatagram::unbound().ok(),
            path,
        }
    }

    /// Sends one encoded entry: a datagram, or a memfd when it is too
    /// large for one.
    fn send(&self, entry: &[u8]) -> std::io::Result<()> {
        let Some(socket) = &self.socket else {
            return Err(std::io::Error::other("no socket"));
        };
        match socket.send_to(entry, &self.path) {
            Ok(_) => Ok(()),
            Err(e) if matches!(e.raw_os_error(), Some(libc::EMSGSIZE | libc::ENOBUFS)) => {
                send_memfd(socket, &self.path, entry)
            }
            Err(e) => Err(e),
        }
    }
}

impl<S: Subscriber> tracing_subscriber::Layer<S> for Journal {
    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        let mut fields = Fields::default();
        event.record(&mut fields);
        let meta = event.metadata();
        let entry = encode(*meta.level(), meta.target(), &fields);
        if self.send(&entry).is_err() {
            // Standard error is the journal stream too: nothing is lost,
            // only the fields.
            let line = format!("{} {}\n", meta.level(), fields.message_line());
            let _ = std::io::stderr().write_all(super::scrub(&line).as_bytes());
        }
    }
}

/// An event's message and fields, in order.
#[derive(Default)]
pub struct Fields {
    message: String,
    fields: Vec<(&'static str, String, bool)>,
}

impl Fields {
    /// The message followed by `key=value` for each field, strings quoted.
    fn message_line(&self) -> String {
        let mut line = self.message.clone();
        for (name, value, quoted) in &self.fields {
            line.push(' ');
            line.push_str(name);
            line.push('=');
            if *quoted {
                line.push_str(&format!("{value:?}"));
            } else {
                line.push_str(value);
            }
        }
        line
    }
}

impl Visit for Fields {
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.message = value.to_owned();
        } else {
            self.fields.push((field.name(), value.to_owned(), true));
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        let value = format!("{value:?}");
        if field.name() == "message" {
            self.message = value;
        } else {
            self.fields.push((field.name(), value, false));
        }
    }
}

/// One journal entry, every value redacted.
pub fn encode(level: Level, target: &str, fields: &Fields) -> Vec<u8> {
    let mut entry = Vec::with_capacity(256);
    let priority = match level {
        Level::ERROR => "3",
        Level::WARN => "4",
        Level::INFO => "6",
        _ => "7",
    };
    put(&mut entry, "MESSAGE", &super::scrub(&fields.message_line()));
    put(&mut entry, "PRIORITY", priority);
    put(&mut entry, "SYSLOG_IDENTIFIER", "hearth");
    // A plugin's line carries its own target as a field: that one is the
    // more telling.
    if !fields.fields.iter().any(|(name, ..)| *name == "target") {
        put(&mut entry, "TARGET", &super::scrub(target));
    }
    for (name, value, _) in &fields.fields {
        put(&mut entry, &field_name(name), &super::scrub(value));
    }
    // A plugin linked into hearth logs straight into the host's subscriber,
    // without the `plugin` field the bridge adds to a library's lines: its
    // crate, `hearth_plugin_<name>`, names it.
    if !fields.fields.iter().any(|(name, ..)| *name == "plugin")
        && let Some(plugin) = built_in_plugin(target)
    {
        put(&mut entry, "PLUGIN", plugin);
    }
    entry
}

/// The plugin a target's crate is, for `hearth_plugin_<name>[::...]`.
fn built_in_plugin(target: &str) -> Option<&str> {
    let krate = target.split("::").next()?;
    krate
        .strip_prefix("hearth_plugin_")
        .filter(|name| !name.is_empty())
}

/// The fields hearth sets itself, which an event's field may not replace.
const OWN: [&str; 3] = ["MESSAGE", "PRIORITY", "SYSLOG_IDENTIFIER"];

/// A field's journal name: capitals, digits and `_`, not starting with `_`
/// (those are journald's trusted fields) or a digit, at most 64 bytes.
fn field_name(name: &str) -> String {
    let mut out: String = name
        .chars()
        .map(|c| match c {
            'a'..='z' => c.to_ascii_uppercase(),
            'A'..='Z' | '0'..='9' => c,
            _ => '_',
        })
        .collect::<String>()
        .trim_start_matches('_')
        .to_owned();
    if out.is_empty()
        || out.starts_with(|c: char| c.is_ascii_digit())
        || OWN.contains(&out.as_str())
    {
        out.insert_str(0, "F_");
    }
    out.truncate(64);
    out
}

/// Appends `NAME=value\n`, or the length-prefixed form when the value
/// holds a newline.
fn put(entry: &mut Vec<u8>, name: &str, value: &str) {
    entry.extend_from_slice(name.as_bytes());
    if value.contains('\n') {
        entry.push(b'\n');
        entry.extend_from_slice(&(value.len() as u64).to_le_bytes());
    } else {
        entry.push(b'=');
    }
    entry.extend_from_slice(value.as_bytes());
    entry.push(b'\n');
}

/// Writes `entry` into a sealed memfd and sends its descriptor, the way
/// journald takes entries larger than a datagram.
fn send_memfd(socket: &UnixDatagram, path: &Path, entry: &[u8]) -> std::io::Result<()> {
    let fd = memfd(entry)?;
    send_fd(socket, path, &fd)
}

fn memfd(entry: &[u8]) -> std::io::Result<OwnedFd> {
    // SAFETY: the name is a NUL-terminated literal; the call returns a new
    // descriptor or -1.
    let raw = unsafe {
        libc::memfd_create(
            c"hearth-journal".as_ptr(),
            libc::MFD_CLOEXEC | libc::MFD_ALLOW_SEALING,
        )
    };
    if raw < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `raw` is a descriptor just created and owned by nobody else.
    let fd = unsafe { OwnedFd::from_raw_fd(raw) };
    std::fs::File::from(fd.try_clone()?).write_all(entry)?;
    // journald takes only a memfd sealed against change.
    let seals = libc::F_SEAL_SHRINK | libc::F_SEAL_GROW | libc::F_SEAL_WRITE | libc::F_SEAL_SEAL;
    // SAFETY: fcntl on a descriptor we own, with integer arguments.
    if unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_ADD_SEALS, seals) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(fd)
}

fn send_fd(socket: &UnixDatagram, path: &Path, fd: &OwnedFd) -> std::io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    // SAFETY: a zeroed sockaddr_un is valid; the path is copied in below
    // after its length is checked against the buffer.
    let mut addr: libc::sockaddr_un = unsafe { std::mem::zeroed() };
    addr.sun_family = libc::AF_UNIX as libc::sa_family_t;
    let bytes = path.as_os_str().as_bytes();
    if bytes.len() >= addr.sun_path.len() {
        return Err(std::io::Error::other(
            "the journal socket's path is too long",
        ));
    }
    for (dst, src) in addr.sun_path.iter_mut().zip(bytes) {
        *dst = *src as libc::c_char;
    }
    let fd_len = std::mem::size_of::<libc::c_int>() as u32;
    // SAFETY: CMSG_SPACE computes a size from an integer.
    let space = unsafe { libc::CMSG_SPACE(fd_len) } as usize;
    // u64 words keep the control buffer aligned for cmsghdr.
    let mut control = vec![0u64; space.div_ceil(8)];
    // SAFETY: a zeroed msghdr is valid; every pointer set below points
    // into `addr` or `control`, which outlive the sendmsg call.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_name = (&raw mut addr).cast();
    msg.msg_namelen = std::mem::size_of::<libc::sockaddr_un>() as libc::socklen_t;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = space as _;
    // SAFETY: the control buffer holds CMSG_SPACE(one int) bytes, so the
    // first header and its data fit.
    unsafe {
        let cmsg = libc::CMSG_FIRSTHDR(&msg);
        (*cmsg).cmsg_level = libc::SOL_SOCKET;
        (*cmsg).cmsg_type = libc::SCM_RIGHTS;
        (*cmsg).cmsg_len = libc::CMSG_LEN(fd_len) as _;
        std::ptr::write_unaligned(libc::CMSG_DATA(cmsg).cast::<libc::c_int>(), fd.as_raw_fd());
    }
    // SAFETY: `msg` is fully set up above; the socket is ours.
    if unsafe { libc::sendmsg(socket.as_raw_fd(), &msg, libc::MSG_NOSIGNAL) } < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Parses an entry back into (name, value) pairs, both forms.
    fn parse(mut entry: &[u8]) -> Vec<(String, String)> {
        let mut out = Vec::new();
        while !entry.is_empty() {
            let end = entry.iter().position(|b| *b == b'\n').unwrap();
            let line = &entry[..end];
            if let Some(eq) = line.iter().position(|b| *b == b'=') {
                out.push((
                    String::from_utf8(line[..eq].to_vec()).unwrap(),
                    String::from_utf8(line[eq + 1..].to_vec()).unwrap(),
                ));
                entry = &entry[end + 1..];
            } else {
                let name = String::from_utf8(line.to_vec()).unwrap();
                let len = u64::from_le_bytes(entry[end + 1..end + 9].try_into().unwrap()) as usize;
                let value = &entry[end + 9..end + 9 + len];
                assert_eq!(entry[end + 9 + len], b'\n');
                out.push((name, String::from_utf8(value.to_vec()).unwrap()));
                entry = &entry[end + 10 + len..];
            }
        }
        out
    }

    fn fields(message: &str, pairs: &[(&'static str, &str)]) -> Fields {
        Fields {
            message: message.to_owned(),
            fields: pairs
                .iter()
                .map(|(n, v)| (*n, (*v).to_owned(), true))
                .collect(),
        }
    }

    #[test]
    fn fields_become_capitals_and_newlines_take_the_binary_form() {
        let entry = encode(
            Level::WARN,
            "hearth::router::outbox",
            &fields(
                "reply not delivered\nsecond line",
                &[("channel", "telegram"), ("agent", "main"), ("_boot", "x")],
            ),
        );
        let parsed = parse(&entry);
        let get = |n: &str| parsed.iter().find(|(k, _)| k == n).map(|(_, v)| v.as_str());
        assert_eq!(
            get("MESSAGE"),
            Some(
                "reply not delivered\nsecond line channel=\"telegram\" agent=\"main\" _boot=\"x\""
            )
        );
        assert_eq!(get("PRIORITY"), Some("4"));
        assert_eq!(get("SYSLOG_IDENTIFIER"), Some("hearth"));
        assert_eq!(get("TARGET"), Some("hearth::router::outbox"));
        assert_eq!(get("CHANNEL"), Some("telegram"));
        assert_eq!(get("AGENT"), Some("main"));
        assert_eq!(get("BOOT"), Some("x"), "no trusted `_` field from an event");
    }

    #[test]
    fn a_built_in_plugins_lines_are_marked_with_its_name() {
        let entry = encode(
            Level::INFO,
            "hearth_plugin_telegram::poll",
            &fields("polling", &[]),
        );
        assert!(parse(&entry).contains(&("PLUGIN".into(), "telegram".into())));
        // A library's line carries the field already; the host's own has none.
        let entry = encode(Level::INFO, "plugin", &fields("x", &[("plugin", "echo")]));
        let plugins: Vec<_> = parse(&entry)
            .into_iter()
            .filter(|(k, _)| k == "PLUGIN")
            .collect();
        assert_eq!(plugins, [("PLUGIN".to_owned(), "echo".to_owned())]);
        let entry = encode(Level::INFO, "hearth::daemon", &fields("ready", &[]));
        assert!(!parse(&entry).iter().any(|(k, _)| k == "PLUGIN"));
    }

    #[test]
    fn field_names_are_made_valid() {
        for (name, expected) in [
            ("plugin", "PLUGIN"),
            ("startup_ms", "STARTUP_MS"),
            ("a.b-c", "A_B_C"),
            ("__x", "X"),
            ("9lives", "F_9LIVES"),
            ("message", "F_MESSAGE"),
            ("priority", "F_PRIORITY"),
        ] {
            assert_eq!(field_name(name), expected, "{name}");
        }
        assert_eq!(field_name(&"x".repeat(100)).len(), 64);
    }

    #[test]
    fn an_entry_too_large_for_a_datagram_goes_in_a_sealed_memfd() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("journal.sock");
        let server = UnixDatagram::bind(&path).unwrap();
        let journal = Journal::new(path);
        let big = "x".repeat(4 << 20);
        let entry = encode(Level::INFO, "t", &fields(&big, &[("plugin", "probe")]));
        journal.send(&entry).unwrap();

        // Receive the descriptor and read the entry from it.
        let mut data = [0u8; 16];
        let mut control = vec![0u64; 8];
        let mut iov = libc::iovec {
            iov_base: data.as_mut_ptr().cast(),
            iov_len: data.len(),
        };
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = 64;
        let n = unsafe { libc::recvmsg(server.as_raw_fd(), &mut msg, 0) };
        assert_eq!(n, 0, "the datagram itself is empty");
        let fd = unsafe {
            let cmsg = libc::CMSG_FIRSTHDR(&msg);
            assert_eq!((*cmsg).cmsg_type, libc::SCM_RIGHTS);
            std::ptr::read_unaligned(libc::CMSG_DATA(cmsg).cast::<libc::c_int>())
        };
        let seals = unsafe { libc::fcntl(fd, libc::F_GET_SEALS) };
        assert_ne!(seals & libc::F_SEAL_WRITE, 0);
        let mut file = unsafe { std::fs::File::from_raw_fd(fd) };
        // The writer's offset is shared: read from the start.
        std::io::Seek::rewind(&mut file).unwrap();
        let mut got = Vec::new();
        std::io::Read::read_to_end(&mut file, &mut got).unwrap();
        assert_eq!(got, entry);
        assert!(parse(&got).contains(&("PLUGIN".into(), "probe".into())));
    }
}
