//! `[plugins.mail]`, read strictly:
//!
//! ```toml
//! [plugins.mail]
//! address = "agent@example.org"        # the account hearth reads and sends as
//! password_secret = "MAIL_PASSWORD"    # from the secret store (an app password)
//! imap_host = "imap.example.org"       # 993: TLS; 143: STARTTLS
//! smtp_host = "smtp.example.org"       # 465: TLS; 587: STARTTLS
//! allowed_senders = ["anna@example.org"]
//! ```
//!
//! An empty table (or none) means mail is not set up: the plugin stays
//! inert. Any key means it is wanted, and then a mistake stops the start
//! with the key at fault.

use std::time::Duration;

use hearth_sdk::protocol::UnknownSender;
use serde::Deserialize;
use serde_json::Value;

/// The settings of a configured mail account.
#[derive(Clone, Debug, PartialEq)]
pub struct Settings {
    /// The account's address: replies come from it.
    pub address: String,
    /// The login name (the address unless set).
    pub username: String,
    /// The password. Never logged.
    pub password: String,
    /// Where mail is read.
    pub imap: Server,
    /// Where mail is sent.
    pub smtp: Server,
    /// Who gets in, lower-cased (the hard gate).
    pub allowed: Vec<String>,
    /// Whether a message counts only when the receiving server says DKIM
    /// or SPF passed for its sender.
    pub require_authentication: bool,
    /// The `authserv-id` whose `Authentication-Results` are believed; none:
    /// the topmost header's, the one the receiving server added last.
    pub auth_server: Option<String>,
    /// Whether new mail in `folder` reaches the agent (the channel).
    pub channel: bool,
    /// Whether the agent gets the mailbox tools.
    pub tools: bool,
    /// The folder the channel watches.
    pub folder: String,
    /// How often to look for new mail when the server has no IDLE.
    pub poll: Duration,
    /// The largest attachment saved, in bytes.
    pub max_file_bytes: u64,
    /// What a sender let in who is neither the owner nor a contact gets.
    pub unknown_sender: UnknownSender,
}

/// One server and how to reach it.
#[derive(Clone, Debug, PartialEq)]
pub struct Server {
    /// Its host name.
    pub host: String,
    /// Its port.
    pub port: u16,
    /// How the connection is protected.
    pub security: Security,
}

/// How a connection is protected.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Security {
    /// TLS from the first byte (IMAP 993, SMTP 465).
    Tls,
    /// Plain text upgraded with STARTTLS before anything is said.
    StartTls,
    /// None: only to a loopback address (a local relay, the tests).
    Plain,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Raw {
    address: Option<String>,
    username: Option<String>,
    password: Option<String>,
    imap_host: Option<String>,
    imap_port: Option<u16>,
    imap_security: Option<String>,
    smtp_host: Option<String>,
    smtp_port: Option<u16>,
    smtp_security: Option<String>,
    #[serde(default)]
    allowed_senders: Vec<String>,
    require_authentication: Option<bool>,
    auth_server: Option<String>,
    channel: Option<bool>,
    tools: Option<bool>,
    folder: Option<String>,
    poll_seconds: Option<u64>,
    max_file_bytes: Option<u64>,
    unknown_sender: Option<Value>,
}

/// Reads the table; `Ok(None)` means not configured.
pub fn parse(config: Value) -> Result<Option<Settings>, String> {
    match &config {
        Value::Null => return Ok(None),
        Value::Object(table) if table.is_empty() => return Ok(None),
        _ => {}
    }
    let raw: Raw = hearth_sdk::parse_args(config).map_err(|e| e.to_string())?;
    let address = raw
        .address
        .map(|a| a.trim().to_lowercase())
        .ok_or_else(|| {
            bad(
                "address",
                "not set: the account's address, like \"agent@example.org\"",
            )
        })?;
    if !is_address(&address) {
        return Err(bad(
            "address",
            &format!("{address:?} is not a mail address"),
        ));
    }
    let password = raw.password.filter(|p| !p.is_empty()).ok_or_else(|| {
        bad(
            "password",
            "not set: keep the (app) password with `hearth secret set MAIL_PASSWORD` and name it \
             with password_secret = \"MAIL_PASSWORD\"",
        )
    })?;
    let imap = server(
        "imap",
        raw.imap_host,
        raw.imap_port,
        raw.imap_security,
        (993, 143),
    )?;
    let smtp = server(
        "smtp",
        raw.smtp_host,
        raw.smtp_port,
        raw.smtp_security,
        (465, 587),
    )?;
    let mut allowed = Vec::new();
    for sender in &raw.allowed_senders {
        let sender = sender.trim().to_lowercase();
        if !is_address(&sender) {
            return Err(bad(
                "allowed_senders",
                &format!("{sender:?} is not a mail address (like \"anna@example.org\")"),
            ));
        }
        allowed.push(sender);
    }
    let poll = Duration::from_secs(raw.poll_seconds.unwrap_or(60));
    if poll.is_zero() {
        return Err(bad("poll_seconds", "must be at least 1"));
    }
    let unknown_sender = match raw.unknown_sender {
        None => UnknownSender::Silent,
        Some(value) => {
            UnknownSender::parse(&value).map_err(|e| format!("invalid arguments: {e}"))?
        }
    };
    Ok(Some(Settings {
        username: raw.username.unwrap_or_else(|| address.clone()),
        address,
        password,
        imap,
        smtp,
        allowed,
        require_authentication: raw.require_authentication.unwrap_or(true),
        auth_server: raw
            .auth_server
            .map(|s| s.trim().to_lowercase())
            .filter(|s| !s.is_empty()),
        channel: raw.channel.unwrap_or(true),
        tools: raw.tools.unwrap_or(true),
        folder: raw.folder.unwrap_or_else(|| "INBOX".into()),
        poll,
        max_file_bytes: raw.max_file_bytes.unwrap_or(25 << 20),
        unknown_sender,
    }))
}

/// Whether `text` looks like `local@domain`.
pub fn is_address(text: &str) -> bool {
    text.split_once('@').is_some_and(|(local, domain)| {
        !local.is_empty()
            && !domain.is_empty()
            && !domain.contains('@')
            && !text.contains(|c: char| c.is_whitespace() || c == '<' || c == '>')
    })
}

fn bad(key: &str, why: &str) -> String {
    format!("invalid arguments: {key}: {why}")
}

/// One server's settings: `kind` is `imap` or `smtp`; `ports` the TLS and
/// the STARTTLS port, which also say the default security.
fn server(
    kind: &str,
    host: Option<String>,
    port: Option<u16>,
    security: Option<String>,
    (tls_port, starttls_port): (u16, u16),
) -> Result<Server, String> {
    let host_key = format!("{kind}_host");
    let host = host
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
        .ok_or_else(|| bad(&host_key, &format!("not set: the {kind} server's name")))?;
    let security_key = format!("{kind}_security");
    let security = match security.as_deref() {
        Some("tls") => Security::Tls,
        Some("starttls") => Security::StartTls,
        Some("plain") => Security::Plain,
        Some(other) => {
            return Err(bad(
                &security_key,
                &format!("{other:?} is not one of \"tls\", \"starttls\", \"plain\""),
            ));
        }
        None if port == Some(starttls_port) => Security::StartTls,
        None => Security::Tls,
    };
    if security == Security::Plain && !is_loopback(&host) {
        return Err(bad(
            &security_key,
            &format!(
                "\"plain\" sends the password in clear text, so it is allowed only to a \
                 loopback address, not {host:?}"
            ),
        ));
    }
    let port = port.unwrap_or(match security {
        Security::StartTls => starttls_port,
        Security::Tls | Security::Plain => tls_port,
    });
    Ok(Server {
        host,
        port,
        security,
    })
}

/// Whether `host` is this machine.
pub fn is_loopback(host: &str) -> bool {
    host == "localhost"
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn table(extra: Value) -> Value {
        let mut base = json!({ "address": "Agent@Example.org", "password": "p",
            "imap_host": "imap.example.org", "smtp_host": "smtp.example.org" });
        for (k, v) in extra.as_object().into_iter().flatten() {
            base[k] = v.clone();
        }
        base
    }

    #[test]
    fn ports_say_the_security_and_plain_text_is_for_loopback_only() {
        let ok = parse(table(json!({ "smtp_port": 587 }))).unwrap().unwrap();
        assert_eq!(ok.address, "agent@example.org");
        assert_eq!(ok.username, "agent@example.org");
        assert_eq!((ok.imap.port, ok.imap.security), (993, Security::Tls));
        assert_eq!((ok.smtp.port, ok.smtp.security), (587, Security::StartTls));
        assert!(ok.require_authentication && ok.channel && ok.tools);
        let local = parse(table(json!({ "imap_host": "127.0.0.1", "imap_port": 1143,
            "imap_security": "plain" })))
        .unwrap()
        .unwrap();
        assert_eq!(local.imap.security, Security::Plain);
    }

    #[test]
    fn no_table_is_no_account_and_mistakes_name_their_key() {
        assert_eq!(parse(Value::Null), Ok(None));
        assert_eq!(parse(json!({})), Ok(None));
        for (extra, key) in [
            (json!({ "address": "nobody" }), "address"),
            (json!({ "password": "" }), "password"),
            (json!({ "imap_host": " " }), "imap_host"),
            (json!({ "imap_security": "plain" }), "imap_security"),
            (json!({ "smtp_security": "ssl" }), "smtp_security"),
            (json!({ "allowed_senders": ["anna"] }), "allowed_senders"),
            (json!({ "poll_seconds": 0 }), "poll_seconds"),
            (json!({ "imap_pasword": "x" }), "imap_pasword"),
        ] {
            let why = parse(table(extra.clone())).unwrap_err();
            assert!(
                why.starts_with("invalid arguments: ") && why.contains(key),
                "{extra}: {why}"
            );
        }
    }
}
