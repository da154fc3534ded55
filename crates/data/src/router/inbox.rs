//! The inbox writer: stores submitted messages, on the submitter's thread
//! when nobody else is storing, else batched by a thread of its own.
//!
//! Architecture invariant: nothing is acknowledged before it is stored. A
//! plugin's `submit` returns only after the transaction holding its message
//! has committed. A lone message is stored on the submitter's own thread
//! ([`Inbox::try_store_now`]), which spares it two thread hand-offs; when
//! the connection is busy, submissions queue for the writer thread, which
//! stores everything queued in one transaction: 100k messages from 8
//! threads commit in a few hundred transactions, not 100k.
//!
//! A new message wakes its agent right after the commit, before the
//! submitter hears back: the agent's runner and the channel go on in
//! parallel.
//!
//! A failed commit (a full disk: SQLite answers `SQLITE_FULL` and rolls the
//! transaction back) answers every submission with the error, and the
//! bridge tells the channel to keep the message and submit it again. While
//! it keeps failing, the error is logged once a minute with how many
//! messages were refused meanwhile, not once per retry.

use std::sync::{Arc, Mutex, TryLockError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender, select};
use hearth_sdk::protocol::InboundMessage;
use rusqlite::Connection;

use super::Router;

/// The most messages committed in one transaction.
const MAX_BATCH: usize = 512;
/// How often a storage failure that goes on is logged again.
const REPEAT_LOG_EVERY: Duration = Duration::from_secs(60);

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
        agent_id: hearth_base::store::MAIN_AGENT,
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

/// The inbox's connection, shared by the writer thread and by submitters
/// that find it free: a lone message is stored on the submitter's own
/// thread, without two thread hand-offs (to the writer and back), and the
/// writer batches only when submissions queue up behind each other.
#[derive(Clone)]
pub struct Inbox {
    shared: Arc<Mutex<Shared>>,
    router: Arc<Router>,
}

/// What the writer and the submitters share.
struct Shared {
    conn: Connection,
    health: Health,
}

impl Inbox {
    /// Stores `message` for `route` now, on this thread, if nobody else is
    /// storing: `None` when the connection is busy (queue it for the
    /// writer instead). A new message's agent is woken before this
    /// returns.
    pub fn try_store_now(
        &self,
        message: &InboundMessage,
        route: Route,
    ) -> Option<Result<Stored, String>> {
        let mut shared = match self.shared.try_lock() {
            Ok(shared) => shared,
            Err(TryLockError::WouldBlock) => return None,
            Err(TryLockError::Poisoned(p)) => p.into_inner(),
        };
        let outcome = store(&mut shared, &self.router, &[(message, route)]);
        Some(outcome.map(|stored| stored[0]))
    }
}

/// Starts the writer. It stores jobs until `stop` is disconnected, then
/// stores what is still queued and returns; each new message wakes its
/// agent through `router`. The [`Inbox`] stores on the caller's thread
/// when the writer is idle.
pub fn spawn_writer(
    conn: Connection,
    jobs: Receiver<StoreJob>,
    stop: Receiver<()>,
    router: Arc<Router>,
) -> std::io::Result<(JoinHandle<()>, Inbox)> {
    let inbox = Inbox {
        shared: Arc::new(Mutex::new(Shared {
            conn,
            health: Health::default(),
        })),
        router,
    };
    let writer = inbox.clone();
    let handle = std::thread::Builder::new()
        .name("hearth-inbox".into())
        .spawn(move || {
            loop {
                let first = select! {
                    recv(jobs) -> job => match job { Ok(job) => job, Err(_) => return },
                    recv(stop) -> _ => {
                        let rest: Vec<StoreJob> = jobs.try_iter().collect();
                        for chunk in rest.chunks(MAX_BATCH) {
                            writer.commit(chunk);
                        }
                        return;
                    }
                };
                let mut batch = Vec::with_capacity(16);
                batch.push(first);
                batch.extend(jobs.try_iter().take(MAX_BATCH - 1));
                writer.commit(&batch);
            }
        })?;
    Ok((handle, inbox))
}

impl Inbox {
    /// Stores a batch of queued jobs in one transaction and answers each.
    fn commit(&self, batch: &[StoreJob]) {
        let mut shared = self.shared.lock().unwrap_or_else(|p| p.into_inner());
        let items: Vec<(&InboundMessage, Route)> =
            batch.iter().map(|j| (&j.message, j.route)).collect();
        match store(&mut shared, &self.router, &items) {
            Ok(outcomes) => {
                for (job, stored) in batch.iter().zip(outcomes) {
                    // The submitter may have given up waiting; the message is
                    // stored all the same and a resubmission is a no-op.
                    let _ = job.reply.send(Ok(stored));
                }
            }
            Err(e) => {
                for job in batch {
                    let _ = job.reply.send(Err(e.clone()));
                }
            }
        }
    }
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
            hearth_base::store::now_ms(),
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

/// Whether storing has been failing, for logging a lasting failure
/// without flooding the log.
#[derive(Default)]
struct Health {
    /// When the current run of failures began.
    failing_since: Option<Instant>,
    /// When it was last logged.
    logged: Option<Instant>,
    /// Messages refused since then.
    refused: usize,
}

/// Inserts `items` in one transaction and wakes the agents of the new
/// messages; a failure is logged (once a minute while it lasts) and
/// returned for every item.
fn store(
    shared: &mut Shared,
    router: &Router,
    items: &[(&InboundMessage, Route)],
) -> Result<Vec<Stored>, String> {
    let health = &mut shared.health;
    match insert_all(&shared.conn, items) {
        Ok(outcomes) => {
            if let Some(since) = health.failing_since.take() {
                tracing::info!(
                    failed_for_s = since.elapsed().as_secs(),
                    "inbound messages are stored again"
                );
                *health = Health::default();
            }
            for ((message, route), stored) in items.iter().zip(&outcomes) {
                if *stored == Stored::New {
                    router.stored(message, route.agent_id);
                }
            }
            Ok(outcomes)
        }
        Err(e) => {
            let now = Instant::now();
            health.failing_since.get_or_insert(now);
            health.refused += items.len();
            if health
                .logged
                .is_none_or(|at| now.duration_since(at) >= REPEAT_LOG_EVERY)
            {
                tracing::error!(
                    error = %e,
                    refused = health.refused,
                    "cannot store inbound messages; they are refused, not acknowledged, \
                     and the channels submit them again until storing works (is the disk full?)"
                );
                health.logged = Some(now);
                health.refused = 0;
            }
            Err(e.to_string())
        }
    }
}

fn insert_all(
    conn: &Connection,
    items: &[(&InboundMessage, Route)],
) -> rusqlite::Result<Vec<Stored>> {
    let tx = conn.unchecked_transaction()?;
    let outcomes = items
        .iter()
        .map(|(message, route)| insert(&tx, message, route))
        .collect::<rusqlite::Result<Vec<_>>>()?;
    tx.commit()?;
    Ok(outcomes)
}
