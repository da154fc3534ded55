//! The commands on mailboxes (SELECT, LIST, STATUS, APPEND...) and on the
//! selected mailbox's messages (SEARCH, FETCH, STORE, COPY, EXPUNGE).

use std::collections::BTreeSet;

use super::session::{Done, Selected, Session, bad, seq_number};
use super::wire::{self, SeqSet, Token};
use super::{Mailbox, Message, SYSTEM_FLAGS, fetch, search};

impl Session<'_> {
    pub(super) fn select(&mut self, args: &[Token], read_only: bool, out: &mut Vec<u8>) -> Done {
        // A failed SELECT leaves no mailbox selected, too.
        self.selected = None;
        let name = one_mailbox(args)?;
        let mut state = self.shared.lock();
        let mailbox = state
            .mailbox_mut(&name)
            .ok_or(format!("NO Mailbox doesn't exist: {name}"))?;
        let mut selected = Selected {
            name: mailbox.name.clone(),
            read_only,
            validity: mailbox.validity,
            uids: Vec::new(),
            recent: BTreeSet::new(),
        };
        for message in &mut mailbox.messages {
            selected.uids.push(message.uid);
            if message.recent {
                selected.recent.insert(message.uid);
                message.recent = read_only;
            }
        }
        let mut flags: Vec<String> = SYSTEM_FLAGS.iter().map(|f| (*f).to_owned()).collect();
        for message in &mailbox.messages {
            for flag in &message.flags {
                if !flags.iter().any(|f| f.eq_ignore_ascii_case(flag)) {
                    flags.push(flag.clone());
                }
            }
        }
        let permanent = if read_only {
            String::new()
        } else {
            format!("{} \\*", flags.join(" "))
        };
        let mut lines = vec![
            format!("* FLAGS ({})", flags.join(" ")),
            format!("* OK [PERMANENTFLAGS ({permanent})] Flags permitted"),
            format!("* {} EXISTS", selected.uids.len()),
            format!("* {} RECENT", selected.recent.len()),
        ];
        if let Some(first) = mailbox.messages.iter().position(|m| !m.has_flag("\\Seen")) {
            lines.push(format!("* OK [UNSEEN {}] First unseen", first + 1));
        }
        lines.push(format!(
            "* OK [UIDVALIDITY {}] UIDs valid",
            mailbox.validity
        ));
        lines.push(format!(
            "* OK [UIDNEXT {}] Predicted next UID",
            mailbox.uid_next
        ));
        for line in lines {
            out.extend_from_slice(line.as_bytes());
            out.extend_from_slice(b"\r\n");
        }
        drop(state);
        self.selected = Some(selected);
        Ok(if read_only {
            "OK [READ-ONLY] Examine completed".into()
        } else {
            "OK [READ-WRITE] Select completed".into()
        })
    }

    pub(super) fn create(&mut self, args: &[Token]) -> Done {
        let name = one_mailbox(args)?;
        let mut state = self.shared.lock();
        if state.mailbox(&name).is_some() {
            return Err("NO [ALREADYEXISTS] Mailbox already exists".into());
        }
        let validity = state.new_validity();
        state.mailboxes.push(Mailbox::new(&name, None, validity));
        Ok("OK Create completed".into())
    }

    /// LIST (or LSUB: every mailbox counts as subscribed) with `*` and `%`
    /// wildcards; the hierarchy delimiter is `/`.
    pub(super) fn list(&mut self, args: &[Token], verb: &str, out: &mut Vec<u8>) -> Done {
        let [reference, pattern] = args else {
            return Err(bad(&format!("{verb} takes a reference and a pattern")));
        };
        let (Some(reference), Some(pattern)) = (reference.text(), pattern.text()) else {
            return Err(bad("Expected strings"));
        };
        if pattern.is_empty() {
            out.extend_from_slice(format!("* {verb} (\\Noselect) \"/\" \"\"\r\n").as_bytes());
            return Ok(format!("OK {verb} completed"));
        }
        let pattern = format!("{reference}{pattern}");
        for mailbox in &self.shared.lock().mailboxes {
            let name = &mailbox.name;
            let hit = if name == "INBOX" {
                wildcard(pattern.to_ascii_uppercase().as_bytes(), b"INBOX")
            } else {
                wildcard(pattern.as_bytes(), name.as_bytes())
            };
            if hit {
                let attributes = match mailbox.special_use {
                    Some(special) => format!("\\HasNoChildren {special}"),
                    None => "\\HasNoChildren".to_owned(),
                };
                let line = format!("* {verb} ({attributes}) \"/\" {}\r\n", wire::astring(name));
                out.extend_from_slice(line.as_bytes());
            }
        }
        Ok(format!("OK {verb} completed"))
    }

    pub(super) fn status(&mut self, args: &[Token], out: &mut Vec<u8>) -> Done {
        let [mailbox, Token::List(items)] = args else {
            return Err(bad("STATUS takes a mailbox and a list of items"));
        };
        let name = mailbox.text().ok_or(bad("Expected a mailbox name"))?;
        let state = self.shared.lock();
        let mailbox = state
            .mailbox(&name)
            .ok_or(format!("NO Mailbox doesn't exist: {name}"))?;
        let count =
            |keep: fn(&Message) -> bool| mailbox.messages.iter().filter(|m| keep(m)).count();
        let mut values = Vec::new();
        for item in items {
            let item = item.atom().unwrap_or_default().to_ascii_uppercase();
            let value = match item.as_str() {
                "MESSAGES" => mailbox.messages.len(),
                "RECENT" => count(|m| m.recent),
                "UNSEEN" => count(|m| !m.has_flag("\\Seen")),
                "UIDNEXT" => mailbox.uid_next as usize,
                "UIDVALIDITY" => mailbox.validity as usize,
                _ => return Err(bad(&format!("Unknown status item {item}"))),
            };
            values.push(format!("{item} {value}"));
        }
        let line = format!(
            "* STATUS {} ({})\r\n",
            wire::astring(&mailbox.name),
            values.join(" ")
        );
        out.extend_from_slice(line.as_bytes());
        Ok("OK Status completed".into())
    }

    /// APPEND mailbox [(flags)] ["date-time"] literal.
    pub(super) fn append(&mut self, args: &[Token]) -> Done {
        let Some((mailbox, rest)) = args.split_first() else {
            return Err(bad("APPEND takes a mailbox and a message"));
        };
        let Some((Token::Str(raw), options)) = rest.split_last() else {
            return Err(bad("APPEND's message must be a literal"));
        };
        let name = mailbox.text().ok_or(bad("Expected a mailbox name"))?;
        let (mut flags, mut date) = (None, None);
        for option in options {
            match option {
                Token::List(list) if flags.is_none() && date.is_none() => {
                    flags = Some(parse_flags(list)?);
                }
                Token::Str(text) if date.is_none() => {
                    let text = String::from_utf8_lossy(text);
                    date = Some(
                        wire::normalize_date_time(&text)
                            .ok_or(bad(&format!("Invalid date-time {text}")))?,
                    );
                }
                _ => return Err(bad("Invalid APPEND arguments")),
            }
        }
        let mut state = self.shared.lock();
        let mailbox = state
            .mailbox_mut(&name)
            .ok_or(format!("NO [TRYCREATE] Mailbox doesn't exist: {name}"))?;
        let date = date.unwrap_or_else(wire::now_date_time);
        let uid = mailbox.append(raw.clone(), flags.unwrap_or_default(), date);
        let validity = mailbox.validity;
        self.shared.changed.notify_all();
        Ok(if self.shared.options.uidplus {
            format!("OK [APPENDUID {validity} {uid}] Append completed")
        } else {
            "OK Append completed".into()
        })
    }

    /// CLOSE: expunges `\Deleted` messages quietly (unless read-only) and
    /// deselects.
    pub(super) fn close(&mut self) -> Done {
        if let Some(selected) = self.selected.take()
            && !selected.read_only
            && let Some(mailbox) = self.shared.lock().mailbox_mut(&selected.name)
        {
            mailbox.messages.retain(|m| !m.has_flag("\\Deleted"));
        }
        Ok("OK Close completed".into())
    }

    /// EXPUNGE, or UID EXPUNGE set (UIDPLUS): removes the `\Deleted`
    /// messages of the view, each announced as `* n EXPUNGE`.
    pub(super) fn expunge(&mut self, args: &[Token], by_uid: bool, out: &mut Vec<u8>) -> Done {
        let set = match (by_uid, args) {
            (false, []) => None,
            (true, [set]) => Some(parse_set(set)?),
            _ => return Err(bad("Invalid EXPUNGE arguments")),
        };
        let shared = self.shared;
        let selected = self.selected.as_mut().ok_or(bad("No mailbox selected"))?;
        if selected.read_only {
            return Err("NO Mailbox is read-only".into());
        }
        let star = selected.stars().uid;
        let mut state = shared.lock();
        let Some(mailbox) = state.mailbox_mut(&selected.name) else {
            return Ok("OK Expunge completed".into());
        };
        let mut i = 0;
        while let Some(&uid) = selected.uids.get(i) {
            let deleted = mailbox.find(uid).is_some_and(|m| m.has_flag("\\Deleted"));
            if deleted && set.as_ref().is_none_or(|s| s.contains(uid, star)) {
                mailbox.messages.retain(|m| m.uid != uid);
                selected.uids.remove(i);
                selected.recent.remove(&uid);
                out.extend_from_slice(format!("* {} EXPUNGE\r\n", i + 1).as_bytes());
            } else {
                i += 1;
            }
        }
        Ok("OK Expunge completed".into())
    }

    pub(super) fn search(&mut self, args: &[Token], by_uid: bool, out: &mut Vec<u8>) -> Done {
        let mut criteria = args;
        if let [Token::Atom(word), charset, rest @ ..] = args
            && word.eq_ignore_ascii_case("CHARSET")
        {
            let charset = charset.text().unwrap_or_default();
            if !charset.eq_ignore_ascii_case("UTF-8") && !charset.eq_ignore_ascii_case("US-ASCII") {
                return Err("NO [BADCHARSET (UTF-8 US-ASCII)] Unsupported charset".into());
            }
            criteria = rest;
        }
        let key = search::parse(criteria).map_err(|e| bad(&e))?;
        let selected = self.selected.as_ref().ok_or(bad("No mailbox selected"))?;
        let state = self.shared.lock();
        let mut found = Vec::new();
        if let Some(mailbox) = state.mailbox(&selected.name) {
            let stars = selected.stars();
            for (i, &uid) in selected.uids.iter().enumerate() {
                let Some(message) = mailbox.find(uid) else {
                    continue;
                };
                let seq = seq_number(i + 1);
                let candidate = search::Candidate {
                    seq,
                    message,
                    recent: selected.recent.contains(&uid),
                };
                if search::matches(&key, &candidate, &stars) {
                    found.push(if by_uid { uid } else { seq });
                }
            }
        }
        let mut line = String::from("* SEARCH");
        for n in found {
            line.push_str(&format!(" {n}"));
        }
        out.extend_from_slice(line.as_bytes());
        out.extend_from_slice(b"\r\n");
        Ok("OK Search completed".into())
    }

    pub(super) fn fetch(&mut self, args: &[Token], by_uid: bool, out: &mut Vec<u8>) -> Done {
        let [set, items @ ..] = args else {
            return Err(bad("FETCH takes a set and items"));
        };
        let set = parse_set(set)?;
        let items = fetch::parse(items).map_err(|e| bad(&e))?;
        let shared = self.shared;
        let selected = self.selected.as_ref().ok_or(bad("No mailbox selected"))?;
        let sets_seen = !selected.read_only && items.iter().any(fetch::Item::sets_seen);
        let mut state = shared.lock();
        let Some(mailbox) = state.mailbox_mut(&selected.name) else {
            return Ok("OK Fetch completed".into());
        };
        for (seq, uid) in selected.chosen(mailbox, &set, by_uid) {
            let Some(message) = mailbox.find_mut(uid) else {
                continue;
            };
            let seen_now = sets_seen && !message.has_flag("\\Seen");
            if seen_now {
                message.set_flag("\\Seen", true);
            }
            let flags = selected.flag_list(message);
            fetch::render(out, seq, message, &flags, &items, by_uid, seen_now);
        }
        Ok("OK Fetch completed".into())
    }

    /// STORE set (+|-)FLAGS[.SILENT] (flags).
    pub(super) fn store(&mut self, args: &[Token], by_uid: bool, out: &mut Vec<u8>) -> Done {
        let [set, action, flags @ ..] = args else {
            return Err(bad("STORE takes a set, an action and flags"));
        };
        let set = parse_set(set)?;
        let action = action.atom().unwrap_or_default().to_ascii_uppercase();
        let (action, silent) = match action.strip_suffix(".SILENT") {
            Some(action) => (action.to_owned(), true),
            None => (action, false),
        };
        if !matches!(action.as_str(), "FLAGS" | "+FLAGS" | "-FLAGS") {
            return Err(bad(&format!("Unknown STORE action {action}")));
        }
        let flags = match flags {
            [Token::List(list)] => parse_flags(list)?,
            _ => parse_flags(flags)?,
        };
        let shared = self.shared;
        let selected = self.selected.as_ref().ok_or(bad("No mailbox selected"))?;
        if selected.read_only {
            return Err("NO Mailbox is read-only".into());
        }
        let mut state = shared.lock();
        let Some(mailbox) = state.mailbox_mut(&selected.name) else {
            return Ok("OK Store completed".into());
        };
        for (seq, uid) in selected.chosen(mailbox, &set, by_uid) {
            let Some(message) = mailbox.find_mut(uid) else {
                continue;
            };
            match action.as_str() {
                "FLAGS" => message.flags = flags.clone(),
                "+FLAGS" => flags.iter().for_each(|f| message.set_flag(f, true)),
                _ => flags.iter().for_each(|f| message.set_flag(f, false)),
            }
            if !silent {
                let uid_part = if by_uid {
                    format!("UID {uid} ")
                } else {
                    String::new()
                };
                let line = format!(
                    "* {seq} FETCH ({uid_part}FLAGS {})\r\n",
                    selected.flag_list(message)
                );
                out.extend_from_slice(line.as_bytes());
            }
        }
        Ok("OK Store completed".into())
    }

    /// COPY set mailbox: the copies keep their flags and INTERNALDATE.
    pub(super) fn copy(&mut self, args: &[Token], by_uid: bool) -> Done {
        let [set, destination] = args else {
            return Err(bad("COPY takes a set and a mailbox"));
        };
        let set = parse_set(set)?;
        let name = destination.text().ok_or(bad("Expected a mailbox name"))?;
        let selected = self.selected.as_ref().ok_or(bad("No mailbox selected"))?;
        let mut state = self.shared.lock();
        if state.mailbox(&name).is_none() {
            return Err(format!("NO [TRYCREATE] Mailbox doesn't exist: {name}"));
        }
        let copies: Vec<(u32, Vec<u8>, Vec<String>, String)> = match state.mailbox(&selected.name) {
            Some(source) => selected
                .chosen(source, &set, by_uid)
                .into_iter()
                .filter_map(|(_, uid)| source.find(uid))
                .map(|m| {
                    (
                        m.uid,
                        m.raw.clone(),
                        m.flags.clone(),
                        m.internal_date.clone(),
                    )
                })
                .collect(),
            None => Vec::new(),
        };
        let destination = state.mailbox_mut(&name).ok_or(bad("Mailbox vanished"))?;
        let (mut from, mut to) = (Vec::new(), Vec::new());
        for (uid, raw, flags, date) in copies {
            from.push(uid);
            to.push(destination.append(raw, flags, date));
        }
        let validity = destination.validity;
        self.shared.changed.notify_all();
        Ok(if self.shared.options.uidplus && !from.is_empty() {
            format!(
                "OK [COPYUID {validity} {} {}] Copy completed",
                wire::format_set(&from),
                wire::format_set(&to)
            )
        } else {
            "OK Copy completed".into()
        })
    }
}

/// The one mailbox name a command takes.
fn one_mailbox(args: &[Token]) -> Result<String, String> {
    match args {
        [name] => name.text().ok_or(bad("Expected a mailbox name")),
        _ => Err(bad("Expected one mailbox name")),
    }
}

fn parse_set(token: &Token) -> Result<SeqSet, String> {
    token
        .atom()
        .and_then(SeqSet::parse)
        .ok_or(bad("Invalid message set"))
}

/// Flags as a client wrote them: system flags in their canonical spelling,
/// keywords as they are; `\Recent`, which no client may set, left out.
fn parse_flags(tokens: &[Token]) -> Result<Vec<String>, String> {
    let mut flags: Vec<String> = Vec::new();
    for token in tokens {
        let flag = token.atom().ok_or(bad("Expected a flag"))?;
        let flag = match flag.strip_prefix('\\') {
            Some(name) if name.eq_ignore_ascii_case("Recent") => continue,
            Some(name) => SYSTEM_FLAGS
                .iter()
                .find(|f| f[1..].eq_ignore_ascii_case(name))
                .map(|f| (*f).to_owned())
                .ok_or(bad(&format!("Invalid system flag {flag}")))?,
            None => flag.to_owned(),
        };
        if !flags.iter().any(|f| f.eq_ignore_ascii_case(&flag)) {
            flags.push(flag);
        }
    }
    Ok(flags)
}

/// Whether `name` matches a LIST pattern: `*` matches anything, `%`
/// anything but the delimiter `/`.
fn wildcard(pattern: &[u8], name: &[u8]) -> bool {
    match pattern.split_first() {
        None => name.is_empty(),
        Some((b'*', rest)) => (0..=name.len()).any(|i| wildcard(rest, &name[i..])),
        Some((b'%', rest)) => (0..=name.len())
            .take_while(|&i| i == 0 || name[i - 1] != b'/')
            .any(|i| wildcard(rest, &name[i..])),
        Some((c, rest)) => name.first() == Some(c) && wildcard(rest, &name[1..]),
    }
}
