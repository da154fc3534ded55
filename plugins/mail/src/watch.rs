//! The channel: new mail in the watched folder, through the gate, to the
//! host. The server pushes new mail with IDLE where it can; otherwise the
//! folder is looked at every `poll_seconds`. A dropped connection is made
//! again with backoff; a refused login is said plainly and tried again
//! slowly (the owner may be changing the password).
//!
//! Architecture invariant: the cursor (UIDVALIDITY and the highest UID
//! handled) moves only once its message is stored, dropped by the gate, or
//! judged unreadable for good, so a kill at any point loses nothing; and
//! the message's `Message-ID` is its idempotency key, so a message handled
//! again (after a kill between storing and saving the cursor, or after the
//! server renumbered the folder) is stored once.

use std::time::Duration;

use hearth_sdk::files::safe_file_name;
use hearth_sdk::protocol::{
    Attachment, ChannelState, ConfirmationAnswer, InboundMessage, Submission,
};

use crate::account::{Account, Cursor, Thread, lock};
use crate::gate::Gate;
use crate::imap_session::{Session, SessionError};
use crate::letter::{self, Letter};

/// The channel's name.
pub const CHANNEL: &str = "mail";
/// How long one IDLE lasts before it is renewed (RFC 2177 asks for less
/// than 29 minutes).
const IDLE_FOR: Duration = Duration::from_secs(20 * 60);
/// The longest wait between two failed connections.
const MOST_BACKOFF: Duration = Duration::from_secs(120);
/// How long a refused login waits before it is tried again.
const LOGIN_RETRY: Duration = Duration::from_secs(300);
/// The largest mail fetched whole; a bigger one gets in as its headers
/// and a note.
const MAX_MAIL_BYTES: u32 = 40 << 20;

/// Watches until the plugin stops.
pub fn run(account: &Account) {
    let mut backoff = Duration::from_secs(1);
    while !account.stopping() {
        // A panic in the IMAP client (its parser meeting a server it did
        // not expect) must not end the channel without a word: it counts
        // as a dropped connection.
        let session = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| watch(account)))
            .unwrap_or_else(|_| {
                Err(SessionError::Command(
                    "session",
                    "the IMAP client failed on the server's answer".into(),
                ))
            });
        match session {
            Ok(()) => return,
            Err(_) if account.stopping() => return,
            Err(e @ SessionError::Login(..)) => {
                tracing::error!("mail: {e}");
                account.health(
                    ChannelState::Down,
                    format!("{e}: check username and password_secret"),
                );
                account.sleep(LOGIN_RETRY);
            }
            Err(e) => {
                tracing::warn!("mail: {e}; connecting again in {} s", backoff.as_secs());
                account.health(ChannelState::Degraded, format!("{e}; connecting again"));
                account.sleep(backoff);
                backoff = (backoff * 2).min(MOST_BACKOFF);
            }
        }
    }
}

/// One session: until the plugin stops (`Ok`) or the connection fails.
fn watch(account: &Account) -> Result<(), SessionError> {
    let settings = &account.settings;
    let mut session = Session::open(settings)?;
    if let Ok(socket) = session.handle.try_clone() {
        *lock(&account.socket) = Some(socket);
    }
    // Read-only: the channel never changes the owner's folder.
    let opened = session.open_folder(&settings.folder, false)?;
    let mut cursor = match account.cursor() {
        // The first start: what is there already is not the owner
        // talking now.
        None => {
            let first = Cursor {
                validity: opened.validity,
                uid: opened.next.saturating_sub(1),
                at_s: now_s(),
            };
            account.save_cursor(first);
            first
        }
        Some(saved) if saved.validity != opened.validity => {
            tracing::warn!(
                "mail: {} was renumbered (UIDVALIDITY {} -> {}); looking again at mail since the \
                 last one handled",
                settings.folder,
                saved.validity,
                opened.validity
            );
            let since = imap_date(saved.at_s - 86_400);
            let again = session.search(&format!("SINCE {since}"))?;
            let mut cursor = Cursor {
                validity: opened.validity,
                uid: 0,
                at_s: saved.at_s,
            };
            if !take_all(account, &mut session, &mut cursor, &again)? {
                return Ok(());
            }
            cursor.uid = cursor.uid.max(opened.next.saturating_sub(1));
            account.save_cursor(cursor);
            cursor
        }
        Some(saved) => saved,
    };
    let how = if session.can_idle() {
        "new mail pushed (IDLE)".to_owned()
    } else {
        format!("looking every {} s", settings.poll.as_secs())
    };
    account.health(
        ChannelState::Up,
        format!("reading {} of {}, {how}", settings.folder, settings.address),
    );
    tracing::info!("mail: reading {} of {}", settings.folder, settings.address);
    while !account.stopping() {
        let new = session.after(cursor.uid)?;
        if !take_all(account, &mut session, &mut cursor, &new)? {
            return Ok(());
        }
        if session.can_idle() {
            session.wait(IDLE_FOR)?;
        } else {
            account.sleep(settings.poll);
            session.noop()?;
        }
    }
    session.close();
    Ok(())
}

/// Handles `uids` in order, moving the cursor past each; `false` when the
/// host is closing (the cursor stays before the message not stored).
fn take_all(
    account: &Account,
    session: &mut Session,
    cursor: &mut Cursor,
    uids: &[u32],
) -> Result<bool, SessionError> {
    if uids.is_empty() {
        return Ok(true);
    }
    let sizes = session.fetch(uids, "(UID RFC822.SIZE)", false)?;
    for listed in sizes {
        let whole = listed.size <= MAX_MAIL_BYTES;
        let fetched = if whole {
            session.message(listed.uid)?
        } else {
            session
                .fetch(&[listed.uid], "(UID RFC822.SIZE BODY.PEEK[HEADER])", true)?
                .into_iter()
                .next()
        };
        let Some(fetched) = fetched else {
            // Deleted since the search: nothing to take.
            continue;
        };
        let at_s = now_s();
        match letter::read(&fetched.bytes) {
            Some(mut letter) => {
                if !whole {
                    letter.text = format!(
                        "(This mail is {} MB, more than hearth reads; only its headers got \
                         through.)",
                        listed.size >> 20
                    );
                }
                if !take(account, cursor.validity, listed.uid, letter) {
                    return Ok(false);
                }
            }
            None => tracing::warn!(uid = listed.uid, "mail: not a readable mail; skipped"),
        }
        *cursor = Cursor {
            validity: cursor.validity,
            uid: cursor.uid.max(listed.uid),
            at_s,
        };
        account.save_cursor(*cursor);
    }
    Ok(true)
}

/// One mail through the gate to the host; `false` when the host is
/// closing.
fn take(account: &Account, validity: u32, uid: u32, letter: Letter) -> bool {
    let settings = &account.settings;
    let gate = Gate {
        allowed: &settings.allowed,
        require_authentication: settings.require_authentication,
        auth_server: settings.auth_server.as_deref(),
    };
    if let Err(why) = gate.check_letter(&letter) {
        tracing::info!(uid, "mail: dropped: {why}");
        return true;
    }
    if let Some(answer) = card_answer(account, &letter) {
        return account.submit(&Submission::Confirmation(answer));
    }
    let key = if letter.message_id.is_empty() {
        format!("{validity}:{uid}")
    } else {
        letter.message_id.clone()
    };
    let (attachments, left_out) = save_files(account, &key, &letter);
    let mut text = if letter.in_reply_to.is_none() && !letter.subject.is_empty() {
        format!("Subject: {}\n\n{}", letter.subject, letter.text)
    } else {
        letter.text.clone()
    };
    for note in left_out {
        text.push_str(&format!("\n\n({note})"));
    }
    let message = InboundMessage {
        channel: CHANNEL.into(),
        idempotency_key: key.clone(),
        sender: letter.from.clone(),
        chat: Some(letter.from.clone()),
        text,
        attachments,
        sender_name: letter.from_name.clone(),
    };
    // The thread and the sender first: the host may start the turn, and
    // send its reply or a card, before `submit` returns.
    let mut references = letter.references.clone();
    if !letter.message_id.is_empty() {
        references.push(letter.message_id.clone());
    }
    account.save_thread(
        &letter.from,
        &Thread {
            message_id: letter.message_id.clone(),
            references,
            subject: letter.subject.clone(),
        },
    );
    *lock(&account.last_sender) = Some(letter.from.clone());
    account.submit(&Submission::Message(message))
}

/// The answer a reply to a card gives: its first word, yes or no.
fn card_answer(account: &Account, letter: &Letter) -> Option<ConfirmationAnswer> {
    let parent = letter.in_reply_to.as_ref()?;
    let id = lock(&account.cards).get(parent).cloned()?;
    let word: String = letter
        .text
        .split_whitespace()
        .next()
        .unwrap_or_default()
        .trim_matches(|c: char| !c.is_alphanumeric())
        .to_lowercase();
    let (approve, always) = match word.as_str() {
        "yes" | "y" | "approve" | "approved" | "ok" => (true, false),
        "always" => (true, true),
        "no" | "n" | "deny" | "denied" => (false, false),
        _ => return None,
    };
    Some(ConfirmationAnswer {
        id,
        sender: letter.from.clone(),
        approve,
        always,
        reason: None,
    })
}

/// Saves the mail's files under the attachments folder; a file too big
/// or that cannot be written is left out, with a note saying why.
fn save_files(account: &Account, key: &str, letter: &Letter) -> (Vec<Attachment>, Vec<String>) {
    let mut out = Vec::new();
    let mut left_out = Vec::new();
    if letter.files.is_empty() {
        return (out, left_out);
    }
    if let Err(e) = std::fs::create_dir_all(&account.files_dir) {
        tracing::warn!("mail: cannot make {}: {e}", account.files_dir.display());
        left_out.push("the attachments could not be saved".to_owned());
        return (out, left_out);
    }
    let stem = safe_file_name(key);
    for (n, file) in letter.files.iter().enumerate() {
        let most = account.settings.max_file_bytes;
        if file.bytes.len() as u64 > most {
            left_out.push(format!(
                "{} was not saved: it is {} bytes, over the {most}-byte max_file_bytes",
                file.name,
                file.bytes.len()
            ));
            continue;
        }
        let path = account
            .files_dir
            .join(format!("{stem}-{n}-{}", safe_file_name(&file.name)));
        match std::fs::write(&path, &file.bytes) {
            Ok(()) => out.push(Attachment {
                id: format!("{key}#{n}"),
                name: file.name.clone(),
                mime: file.mime.clone(),
                size: file.bytes.len() as u64,
                path: path.display().to_string(),
                voice: false,
                ..Attachment::default()
            }),
            Err(e) => {
                tracing::warn!("mail: cannot save {}: {e}", path.display());
                left_out.push(format!("{} could not be saved", file.name));
            }
        }
    }
    (out, left_out)
}

fn now_s() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

/// `at_s` as an IMAP date (`1-Dec-2026`).
pub fn imap_date(at_s: i64) -> String {
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    // Days since the epoch to a civil date (Howard Hinnant's algorithm).
    let z = at_s.div_euclid(86_400) + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{day}-{}-{year}", MONTHS[(month - 1) as usize])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_written_the_imap_way() {
        assert_eq!(imap_date(0), "1-Jan-1970");
        assert_eq!(imap_date(1_796_083_200), "1-Dec-2026");
        assert_eq!(imap_date(951_782_400), "29-Feb-2000");
    }
}
