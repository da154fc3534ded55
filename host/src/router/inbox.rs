//! The inbox writer: a thread that stores submitted messages in batches.
//!
//! Architecture invariant: nothing is acknowledged before it is stored. A
//! plugin's `submit` waits for this thread's answer, and the answer comes
//! only after the transaction holding the message has committed. Batching
//! (one transaction for everything queued) keeps that cheap under load: 100k
//! messages from 8 threads commit in a few hundred transactions, not 100k.

use std::thread::JoinHandle;

use crossbeam_channel::{Receiver, Sender, select};
use hearth_sdk::protocol::InboundMessage;
use rusqlite::Connection;

/// The most messages committed in one transaction.
const MAX_BATCH: usize = 512;

/// Which agent takes a stored message, and who it is from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Route {
    /// The agent that takes it.
    pub agent_id: i64,
    /// The contact it came from; `None` for the owner (or an agent).
    pub contact_id: Option<i64>,
    /// The agent that sent it, for a message between agents.
    pub from_agent: Option<i64>,
    /// How many agent-to-agent hops led to it.
    pub hops: i64,
}

impl Route {
    /// The owner's message, for the main agent.
    pub const OWNER: Route = Route {
        agent_id: crate::agent::history::MAIN_AGENT,
        contact_id: None,
        from_agent: None,
        hops: 0,
    };
}

/// One message to store, and where to send the outcome.
pub struct StoreJob {
    /// The message.
    pub message: InboundMessage,
    /// Where it goes.
    pub route: Route,
    /// Receives the outcome once the transaction has committed (or failed).
    pub reply: Sender<Result<Stored, String>>,
}

/// What storing a message did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stored {
    /// A new message.
    New,
    /// Its idempotency key was already in the inbox; nothing changed.
    Duplicate,
}

/// Starts the writer. It stores jobs until `stop` is disconnected, then
/// stores what is still queued and returns.
pub fn spawn_writer(
    conn: Connection,
    jobs: Receiver<StoreJob>,
    stop: Receiver<()>,
) -> std::io::Result<JoinHandle<()>> {
    std::thread::Builder::new()
        .name("hearth-inbox".into())
        .spawn(move || {
            loop {
                let first = select! {
                    recv(jobs) -> job => match job { Ok(job) => job, Err(_) => return },
                    recv(stop) -> _ => {
                        let rest: Vec<StoreJob> = jobs.try_iter().collect();
                        for chunk in rest.chunks(MAX_BATCH) {
                            commit(&conn, chunk);
                        }
                        return;
                    }
                };
                let mut batch = Vec::with_capacity(16);
                batch.push(first);
                batch.extend(jobs.try_iter().take(MAX_BATCH - 1));
                commit(&conn, &batch);
            }
        })
}

/// Inserts one message for `route`; a known idempotency key changes
/// nothing.
pub fn insert(conn: &Connection, m: &InboundMessage, route: &Route) -> rusqlite::Result<Stored> {
    let changed = conn
        .prepare_cached(
            "INSERT OR IGNORE INTO inbox \
             (channel, idempotency_key, sender, chat, text, received_at_ms, attachments, \
              agent_id, contact_id, source, from_agent_id, hops) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
        )?
        .execute(rusqlite::params![
            m.channel,
            m.idempotency_key,
            m.sender,
            m.chat,
            m.text,
            crate::store::now_ms(),
            attachments_json(&m.attachments),
            route.agent_id,
            route.contact_id,
            if route.from_agent.is_some() {
                "agent"
            } else {
                "channel"
            },
            route.from_agent,
            route.hops,
        ])?;
    Ok(if changed == 1 {
        Stored::New
    } else {
        Stored::Duplicate
    })
}

/// The attachments column: a JSON list, or NULL when there are none.
fn attachments_json(attachments: &[hearth_sdk::protocol::Attachment]) -> Option<String> {
    if attachments.is_empty() {
        return None;
    }
    serde_json::to_string(attachments).ok()
}

/// Inserts a batch in one transaction and answers every job.
fn commit(conn: &Connection, batch: &[StoreJob]) {
    match insert_all(conn, batch) {
        Ok(outcomes) => {
            for (job, stored) in batch.iter().zip(outcomes) {
                // The submitter may have given up waiting; the message is
                // stored all the same and a resubmission is a no-op.
                let _ = job.reply.send(Ok(stored));
            }
        }
        Err(e) => {
            tracing::error!(error = %e, count = batch.len(), "cannot store inbound messages");
            for job in batch {
                let _ = job.reply.send(Err(e.to_string()));
            }
        }
    }
}

fn insert_all(conn: &Connection, batch: &[StoreJob]) -> rusqlite::Result<Vec<Stored>> {
    let tx = conn.unchecked_transaction()?;
    let outcomes = batch
        .iter()
        .map(|job| insert(&tx, &job.message, &job.route))
        .collect::<rusqlite::Result<Vec<_>>>()?;
    tx.commit()?;
    Ok(outcomes)
}
