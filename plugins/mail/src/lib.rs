//! E-mail: a channel (the owner writes to the agent's address and gets the
//! answer in the same thread) and the owner's mailbox as tools, over IMAP
//! and SMTP, built like the other channels: durable, honest about its
//! health, behind the same two gates and the same approvals.
//!
//! - `config`: `[plugins.mail]`;
//! - `wire`: the IMAP connection (TLS, STARTTLS, plain only to loopback);
//! - `imap_session`: sign in, open a folder, search and fetch by UID, IDLE;
//! - `letter`: a mail read into its sender, thread, text and files;
//! - `gate`: allowed senders, and the receiving server's word that the
//!   sender is who the `From` says (DKIM, SPF or DMARC);
//! - `watch`: the channel's loop, with its durable cursor;
//! - `outbox`: replies, cards and drafts built and sent over SMTP;
//! - `tools`: `mail` and `mail_send`;
//! - `account`: what they share.
//!
//! Architecture invariant: mail from anyone the gate does not let in
//! reaches nothing: not the host, not the log's info level with its text,
//! not an answer. A mail's words reach the model only as a message from an
//! authenticated allowed sender, or as a tool result marked untrusted.

pub mod account;
pub mod config;
pub mod gate;
pub mod imap_session;
pub mod letter;
pub mod outbox;
pub mod tools;
pub mod watch;
pub mod wire;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use hearth_sdk::protocol::{
    ChannelEvent, ChannelSpec, ConfirmationRequest, Description, OutboundMessage, SendReceipt,
};
use hearth_sdk::{Host, Plugin, PluginError};
use serde_json::Value;

use account::{Account, lock};
use outbox::{Draft, OutboxError};

pub use watch::CHANNEL;

/// The plugin: inert when `[plugins.mail]` is empty.
pub struct Mail {
    running: Option<Running>,
}

struct Running {
    account: Arc<Account>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl Plugin for Mail {
    const NAME: &'static str = "mail";
    const VERSION: &'static str = env!("CARGO_PKG_VERSION");

    fn init(host: Host, config: Value) -> Result<Self, PluginError> {
        let Some(settings) = config::parse(config).map_err(|why| {
            PluginError::InvalidArguments(why.trim_start_matches("invalid arguments: ").to_owned())
        })?
        else {
            tracing::debug!("mail: not configured ([plugins.mail] is empty)");
            return Ok(Mail { running: None });
        };
        if settings.channel && settings.allowed.is_empty() {
            tracing::warn!("mail: allowed_senders is empty, so every mail is dropped");
        }
        let info = host
            .info()
            .map_err(|e| PluginError::failed(format!("cannot ask the host where it lives: {e}")))?;
        let _ = rustls::crypto::ring::default_provider().install_default();
        let account = Arc::new(Account {
            host,
            files_dir: PathBuf::from(&info.home).join("attachments").join(CHANNEL),
            settings,
            stop: AtomicBool::new(false),
            socket: Mutex::new(None),
            cards: Mutex::default(),
            last_sender: Mutex::new(None),
        });
        let running = Running {
            account: Arc::clone(&account),
            thread: Mutex::new(None),
        };
        if info.serving && account.settings.channel {
            let thread = std::thread::Builder::new()
                .name("hearth-mail".into())
                .spawn(move || watch::run(&account))
                .map_err(|e| PluginError::failed(format!("cannot start its thread: {e}")))?;
            *lock(&running.thread) = Some(thread);
        }
        Ok(Mail {
            running: Some(running),
        })
    }

    fn describe(&self) -> Description {
        let Some(running) = &self.running else {
            return Description::default();
        };
        let settings = &running.account.settings;
        Description {
            tools: if settings.tools {
                tools::specs(&running.account)
            } else {
                Vec::new()
            },
            channel: settings.channel.then(|| ChannelSpec {
                name: CHANNEL.into(),
                events: true,
                owners: settings.allowed.clone(),
                allowed: settings.allowed.clone(),
                allowed_key: Some("plugins.mail.allowed_senders".into()),
                unknown_sender: settings.unknown_sender,
                ..ChannelSpec::default()
            }),
        }
    }

    fn call_tool(&self, tool: &str, args: Value) -> Result<Value, PluginError> {
        let running = self.running()?;
        if !running.account.settings.tools {
            return Err(PluginError::Unsupported(
                "the mailbox tools are off (tools = false)".into(),
            ));
        }
        tools::call(&running.account, tool, args)
    }

    fn send(&self, message: OutboundMessage) -> Result<SendReceipt, PluginError> {
        let account = &self.running()?.account;
        let to = message.chat.trim().to_lowercase();
        let thread = account.thread(&to).unwrap_or_default();
        let domain = account
            .settings
            .address
            .rsplit_once('@')
            .map_or("localhost", |(_, d)| d)
            .to_owned();
        let draft = Draft {
            to: vec![to],
            subject: outbox::reply_subject(&thread.subject),
            body: message.text.clone(),
            // The outbox may send a reply again after a crash: the same
            // Message-ID lets the owner's client show it once.
            message_id: message
                .key
                .as_ref()
                .map(|k| format!("{}@{domain}", hearth_sdk::files::safe_file_name(k))),
            in_reply_to: (!thread.message_id.is_empty()).then(|| thread.message_id.clone()),
            references: thread.references.clone(),
            files: message
                .attachments
                .iter()
                .map(|a| (a.name.clone(), a.mime.clone(), a.path.clone()))
                .collect(),
            ..Draft::default()
        };
        let built = outbox::build(&account.settings, &draft).map_err(to_plugin_error)?;
        outbox::send(&account.settings, &built).map_err(to_plugin_error)?;
        Ok(SendReceipt {
            message_id: draft.message_id,
        })
    }

    fn event(&self, event: ChannelEvent) -> Result<(), PluginError> {
        let Some(running) = &self.running else {
            return Ok(());
        };
        if let ChannelEvent::Confirmation(request) = event {
            show_card(&running.account, &request);
        }
        Ok(())
    }

    fn shutdown(&self) {
        if let Some(running) = &self.running {
            running.account.stop.store(true, Ordering::Relaxed);
            if let Some(socket) = lock(&running.account.socket).as_ref() {
                wire::hang_up(socket);
            }
            if let Some(thread) = lock(&running.thread).take() {
                let _ = thread.join();
            }
        }
    }
}

impl Mail {
    fn running(&self) -> Result<&Running, PluginError> {
        self.running
            .as_ref()
            .ok_or_else(|| PluginError::failed("mail is not configured ([plugins.mail])"))
    }
}

/// A mail that cannot be built, or that the server refused for good (a
/// 5xx: no such mailbox, policy), is refused for good, so the host's outbox
/// does not send it twenty times; a transient failure is tried again.
fn to_plugin_error(e: OutboxError) -> PluginError {
    match e {
        OutboxError::Build(_) | OutboxError::File(..) => {
            PluginError::InvalidArguments(e.to_string())
        }
        OutboxError::Refused(_) => PluginError::Refused(e.to_string()),
        OutboxError::Transient(_) => PluginError::Failed(e.to_string()),
    }
}

/// Mails `request` as a card to the owner's address the last message came
/// from; a reply whose first word is yes or no answers it. Unshown, the
/// request is denied at its timeout: failing closed.
fn show_card(account: &Account, request: &ConfirmationRequest) {
    let Some(to) = lock(&account.last_sender).clone() else {
        tracing::warn!("mail: no owner's address to mail a confirmation to yet");
        return;
    };
    let what = request
        .command
        .clone()
        .unwrap_or_else(|| serde_json::to_string_pretty(&request.args).unwrap_or_default());
    let what: String = what.chars().take(6000).collect();
    let domain = account
        .settings
        .address
        .rsplit_once('@')
        .map_or("localhost", |(_, d)| d);
    let id = format!(
        "card-{}@{domain}",
        hearth_sdk::files::safe_file_name(&request.id)
    );
    let thread = account.thread(&to).unwrap_or_default();
    let draft = Draft {
        to: vec![to],
        subject: format!("Approve {}?", request.tool),
        body: format!(
            "hearth asks before running **{}**:\n\n```\n{}\n```\n\n{}\n\nReply **yes** to \
             approve, **always** to approve this exact call from now on, or **no** to deny.",
            request.tool,
            what.replace("```", "'''"),
            request.reason
        ),
        message_id: Some(id.clone()),
        in_reply_to: (!thread.message_id.is_empty()).then(|| thread.message_id.clone()),
        references: thread.references,
        ..Draft::default()
    };
    let sent = outbox::build(&account.settings, &draft)
        .and_then(|message| outbox::send(&account.settings, &message));
    match sent {
        Ok(()) => {
            lock(&account.cards).insert(id, request.id.clone());
        }
        Err(e) => tracing::error!("mail: cannot mail a confirmation card: {e}"),
    }
}
