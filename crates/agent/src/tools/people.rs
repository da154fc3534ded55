//! The built-in tools about people: `manage_contacts` and `send_message`
//! (the tools about agents, on the same context, are in `agent_tools`).
//!
//! They check what the tables cannot: an identity must lie inside its
//! channel's allow-list (the hard gate, which only the owner's config
//! widens); a message goes only to an enabled contact on a running channel,
//! through the outbox; only the main agent (or the owner) changes the
//! agents; agents pass messages at most `max_agent_hops` times per message
//! from a person.

use std::sync::Arc;

use hearth_sdk::protocol::Attachment;
use serde_json::{Value, json};

use super::TurnContext;
use crate::agent::profiles;
use crate::agent::templates::WorkerSpec;
use hearth_base::caller::Caller;
use hearth_data::people::contacts::{self, Changes, OWNER};
use hearth_data::people::{People, Reach, pairing};
use hearth_data::router::Router;
use hearth_data::router::outbox;

/// Runs `spawn_agent`'s workers: implemented by `agent::workers::Workers`,
/// which runs each worker's turns through the tool registry, so the
/// registry's tools hold it only as this trait.
pub trait SpawnWorkers: Send + Sync {
    /// Runs a worker of `spec` on `task` for `caller` (in `turn`, if one
    /// runs) to its end; its answer.
    fn run(
        &self,
        caller: &Caller,
        turn: Option<&TurnContext>,
        spec: &WorkerSpec,
        task: &str,
    ) -> Result<Value, String>;
}

/// What these tools work with.
pub struct PeopleTools {
    /// The contacts.
    pub people: Arc<People>,
    /// Wakes agents and the outbox.
    pub router: Arc<Router>,
    /// The owner and the running channels.
    pub reach: Arc<Reach>,
    /// `[agent] max_agent_hops`.
    pub max_hops: u32,
    /// `[agent] ask_before_messaging_contacts`.
    pub ask_before_messaging: bool,
    /// `[agent] contact_agent`: who answers a contact approved by code.
    pub contact_agent: String,
    /// Runs `spawn_agent`'s workers.
    pub workers: Arc<dyn SpawnWorkers>,
}

/// `manage_contacts`' help.
const CONTACTS_HELP: &str = "manage_contacts actions:
- list: every contact, their agent and ids, and pairing codes waiting for approval
- add {name, agent?}: a new contact (agent: the agent that answers them)
- update {name, new_name?, agent?, enabled?}
- disable {name} / enable {name}
- remove {name}
- add_identity {name, channel, id}: the id must be in that channel's allow-list
- remove_identity {name, channel, id}
- approve {code, name?, agent?}: approve a pairing code a stranger got";

impl PeopleTools {
    /// `manage_contacts`.
    pub fn manage_contacts(&self, args: &Value) -> Result<Value, String> {
        let action = args["action"].as_str().unwrap_or_default();
        let name = || field(args, "name");
        let agent = |key| -> Result<Option<i64>, String> {
            match args.get(key).and_then(Value::as_str) {
                None => Ok(None),
                Some(agent) => self
                    .people
                    .read(|conn| profiles::id_of(conn, agent))
                    .map(Some)
                    .map_err(|e| format!("field `{key}`: {e}")),
            }
        };
        let done = |what: String| Ok(json!({ "ok": true, "done": what }));
        match action {
            "help" => Ok(json!({ "help": CONTACTS_HELP })),
            "list" => {
                let (contacts, codes) = self
                    .people
                    .read(|conn| {
                        Ok::<_, rusqlite::Error>((contacts::list(conn)?, pairing::pending(conn)?))
                    })
                    .map_err(|e| e.to_string())?;
                Ok(json!({ "contacts": contacts, "pairing_codes": codes }))
            }
            "add" => {
                let name = name()?;
                let agent = agent("agent")?;
                self.people
                    .change(|conn| contacts::add(conn, name, agent))
                    .map_err(|e| e.to_string())?;
                done(format!("added {name}"))
            }
            "update" | "disable" | "enable" => {
                let name = name()?;
                let changes = Changes {
                    name: args["new_name"].as_str().map(str::to_owned),
                    agent: agent("agent")?.map(Some),
                    enabled: match action {
                        "disable" => Some(false),
                        "enable" => Some(true),
                        _ => args["enabled"].as_bool(),
                    },
                };
                self.people
                    .change(|conn| contacts::update(conn, name, &changes))
                    .map_err(|e| e.to_string())?;
                done(format!("{action}d {name}"))
            }
            "remove" => {
                let name = name()?;
                self.people
                    .change(|conn| contacts::remove(conn, name))
                    .map_err(|e| e.to_string())?;
                done(format!("removed {name}"))
            }
            "add_identity" | "remove_identity" => {
                let (name, channel, id) = (name()?, field(args, "channel")?, field(args, "id")?);
                if action == "add_identity" {
                    self.inside_hard_gate(channel, id)?;
                    self.people
                        .change(|conn| contacts::add_identity(conn, name, channel, id))
                        .map_err(|e| e.to_string())?;
                } else {
                    self.people
                        .change(|conn| contacts::remove_identity(conn, name, channel, id))
                        .map_err(|e| e.to_string())?;
                }
                done(format!("{action} {channel} {id} for {name}"))
            }
            "approve" => {
                let code = field(args, "code")?;
                let agent = match agent("agent")? {
                    Some(agent) => agent,
                    None => self
                        .people
                        .read(|conn| profiles::id_of(conn, &self.contact_agent))
                        .map_err(|e| format!("[agent] contact_agent: {e}"))?,
                };
                let name = self
                    .people
                    .change(|conn| pairing::approve(conn, code, args["name"].as_str(), Some(agent)))
                    .map_err(|e| e.to_string())?;
                done(format!("{name} is a contact now"))
            }
            other => Err(format!(
                "field `action`: unknown action {other:?}; try \"help\""
            )),
        }
    }

    /// `send_message`: to the owner, or to a contact by display name.
    pub fn send_message(&self, args: &Value) -> Result<Value, String> {
        let to = field(args, "to")?;
        let text = field(args, "text")?;
        let files = attachments(args)?;
        let (channel, chat) = if to.eq_ignore_ascii_case(OWNER) {
            self.reach.owner_address()?
        } else {
            self.contact_address(to)?
        };
        let id = self
            .people
            .read(|conn| outbox::enqueue(conn, &channel, &chat, text, &files))
            .map_err(|e| format!("the message could not be stored: {e}"))?;
        self.router.outbox_wake.notify_one();
        Ok(json!({ "ok": true, "queued": id, "channel": channel }))
    }

    /// Why `send_message` with `args` should ask the owner, if it should.
    pub fn asks(&self, args: &Value) -> Option<String> {
        let to = args["to"].as_str()?;
        (self.ask_before_messaging && !to.eq_ignore_ascii_case(OWNER))
            .then(|| format!("a message to {to}, who is not you, in your name"))
    }

    /// Refuses an id outside `channel`'s allow-list, naming the key that
    /// widens it.
    fn inside_hard_gate(&self, channel: &str, id: &str) -> Result<(), String> {
        let spec = self.reach.channels.get(channel).ok_or_else(|| {
            let running: Vec<&str> = self.reach.channels.keys().map(String::as_str).collect();
            format!(
                "field `channel`: no running channel {channel:?} (running: {})",
                running.join(", ")
            )
        })?;
        if spec.allowed.iter().any(|a| a == id) {
            return Ok(());
        }
        Err(format!(
            "refused by the hard gate: {channel} id {id:?} is not in {}; only the owner can add it there, in hearth.toml",
            spec.allowed_key
                .as_deref()
                .unwrap_or("the channel's allow-list")
        ))
    }

    /// Where a contact is reached: their first id on a running channel,
    /// inside its allow-list.
    fn contact_address(&self, name: &str) -> Result<(String, String), String> {
        let contact = self
            .people
            .read(contacts::list)
            .map_err(|e| e.to_string())?
            .into_iter()
            .find(|c| c.name.eq_ignore_ascii_case(name.trim()))
            .ok_or_else(|| {
                format!("refused by the soft gate: no contact named {name:?}; manage_contacts lists them")
            })?;
        if !contact.enabled {
            return Err(format!(
                "refused by the soft gate: {} is disabled; manage_contacts enables them",
                contact.name
            ));
        }
        let mut outside = None;
        for identity in &contact.identities {
            match self.inside_hard_gate(&identity.channel, &identity.id) {
                Ok(()) => return Ok((identity.channel.clone(), identity.id.clone())),
                Err(why) => outside = Some(why),
            }
        }
        Err(outside.unwrap_or_else(|| {
            format!(
                "{} has no id on a running channel; add one with manage_contacts add_identity",
                contact.name
            )
        }))
    }
}

/// `send_message`'s files, each checked as `attach_file` checks one.
fn attachments(args: &Value) -> Result<Vec<Attachment>, String> {
    let paths = args["attachments"].as_array().cloned().unwrap_or_default();
    paths
        .iter()
        .enumerate()
        .map(|(i, path)| {
            let described = super::attach::attach(&json!({ "path": path }))
                .map_err(|e| e.replace("field `path`", &format!("field `attachments[{i}]`")))?;
            serde_json::from_value(described["attached"].clone())
                .map_err(|e| format!("field `attachments[{i}]`: {e}"))
        })
        .collect()
}

/// A required string field, named in the error when missing.
pub(super) fn field<'a>(args: &'a Value, key: &str) -> Result<&'a str, String> {
    match args.get(key).and_then(Value::as_str).map(str::trim) {
        Some(value) if !value.is_empty() => Ok(value),
        _ => Err(format!("field `{key}`: required, a non-empty string")),
    }
}
