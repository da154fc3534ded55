//! The confirmation gate: a tool call that asks waits here for the owner.
//!
//! `ConfirmGate::ask` stores the request, shows it on every channel that
//! can (channel events), and blocks until the owner answers or the timeout
//! passes. Answers come in through the plugins' `submit`, which hands them
//! to the [`Board`] after the router has checked that the sender is the
//! owner. The request is bound to a fingerprint of the exact tool and
//! arguments: the approval unblocks this call and nothing else.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crossbeam_channel::{Sender, bounded};
use hearth_sdk::protocol::{ChannelEvent, ConfirmationRequest, ConfirmationState};
use rusqlite::{Connection, params};
use serde_json::Value;

use super::Refused;
use crate::router::events::ChannelEvents;
use crate::store::now_ms;

/// Where answers meet the calls waiting for them.
#[derive(Default)]
pub struct Board {
    waiting: Mutex<HashMap<String, Sender<(bool, String)>>>,
}

/// Asks the owner, and waits.
pub struct ConfirmGate {
    board: Arc<Board>,
    events: Arc<ChannelEvents>,
    conn: Mutex<Connection>,
    timeout: Duration,
}

impl Board {
    /// Hands the owner's answer to the call waiting for it. Returns whether
    /// one was waiting (an answer to a decided or unknown id is ignored).
    pub fn answer(&self, id: &str, approve: bool, by: &str) -> bool {
        let waiting = lock(&self.waiting).remove(id);
        match waiting {
            Some(tx) => tx.try_send((approve, by.to_owned())).is_ok(),
            None => false,
        }
    }
}

impl ConfirmGate {
    /// A gate that stores requests on `conn`, shows them through `events`,
    /// takes answers from `board` and denies after `timeout`.
    pub fn new(
        board: Arc<Board>,
        events: Arc<ChannelEvents>,
        conn: Connection,
        timeout: Duration,
    ) -> ConfirmGate {
        // A request left pending by an earlier run can no longer be
        // approved: the call that waited for it is gone.
        if let Err(e) = conn.execute(
            "UPDATE confirmations SET state = 'expired', decided_by = 'restart', decided_at_ms = ?1 \
             WHERE state = 'pending'",
            [now_ms()],
        ) {
            tracing::warn!("cannot expire old confirmations: {e}");
        }
        ConfirmGate {
            board,
            events,
            conn: Mutex::new(conn),
            timeout,
        }
    }

    /// Asks the owner to approve `tool` with `args`; returns once approved,
    /// or the refusal the caller shows.
    pub fn ask(
        &self,
        tool: &str,
        args: &Value,
        command: Option<&str>,
        reason: &str,
    ) -> Result<(), Refused> {
        if !self.events.can_confirm() {
            return Err(Refused(format!(
                "{tool} needs the owner's approval ({reason}), and no channel that can ask \
                 the owner is running (the canvas shows confirmations); it was not run"
            )));
        }
        let at_ms = now_ms();
        let request = ConfirmationRequest {
            id: random_id(),
            tool: tool.to_owned(),
            args: args.clone(),
            command: command.map(str::to_owned),
            reason: reason.to_owned(),
            fingerprint: fingerprint(tool, args),
            at_ms,
            expires_at_ms: at_ms + self.timeout.as_millis() as i64,
        };
        self.store(&request).map_err(|e| {
            Refused(format!(
                "{tool} was not run: cannot record the confirmation: {e}"
            ))
        })?;
        let (tx, rx) = bounded(1);
        lock(&self.board.waiting).insert(request.id.clone(), tx);
        self.events
            .broadcast(&ChannelEvent::Confirmation(request.clone()));
        tracing::info!(id = %request.id, tool, fingerprint = %request.fingerprint, "waiting for the owner's approval");
        let answer = rx.recv_timeout(self.timeout);
        lock(&self.board.waiting).remove(&request.id);
        let (state, by) = match answer {
            Ok((true, by)) => (ConfirmationState::Approved, by),
            Ok((false, by)) => (ConfirmationState::Denied, by),
            Err(_) => (ConfirmationState::Expired, "timeout".to_owned()),
        };
        self.decided(&request.id, state, &by);
        tracing::info!(id = %request.id, tool, ?state, by = %by, "confirmation decided");
        match state {
            ConfirmationState::Approved => Ok(()),
            ConfirmationState::Denied => Err(Refused(format!(
                "the owner denied running {tool}; it was not run"
            ))),
            _ => Err(Refused(format!(
                "the owner did not answer within {} s, so {tool} was not run",
                self.timeout.as_secs()
            ))),
        }
    }

    fn store(&self, r: &ConfirmationRequest) -> rusqlite::Result<()> {
        lock(&self.conn).execute(
            "INSERT INTO confirmations (id, tool, args, command, reason, fingerprint, at_ms, expires_at_ms) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            params![
                r.id,
                r.tool,
                r.args.to_string(),
                r.command,
                r.reason,
                r.fingerprint,
                r.at_ms,
                r.expires_at_ms
            ],
        )?;
        Ok(())
    }

    fn decided(&self, id: &str, state: ConfirmationState, by: &str) {
        let text = match state {
            ConfirmationState::Approved => "approved",
            ConfirmationState::Denied => "denied",
            ConfirmationState::Expired => "expired",
            ConfirmationState::Pending => "pending",
        };
        if let Err(e) = lock(&self.conn).execute(
            "UPDATE confirmations SET state = ?1, decided_by = ?2, decided_at_ms = ?3 WHERE id = ?4",
            params![text, by, now_ms(), id],
        ) {
            tracing::error!(id, "cannot record a confirmation's outcome: {e}");
        }
        self.events.broadcast(&ChannelEvent::ConfirmationDecided {
            id: id.to_owned(),
            state,
            decided_by: by.to_owned(),
        });
    }
}

/// The first 16 hex digits of SHA-256 over the tool and its arguments.
/// `serde_json` keeps object keys sorted, so equal arguments hash equal.
pub fn fingerprint(tool: &str, args: &Value) -> String {
    let mut ctx = ring::digest::Context::new(&ring::digest::SHA256);
    ctx.update(tool.as_bytes());
    ctx.update(&[0]);
    ctx.update(args.to_string().as_bytes());
    hex(&ctx.finish().as_ref()[..8])
}

/// 128 random bits as hex.
fn random_id() -> String {
    use ring::rand::SecureRandom;
    let mut bytes = [0u8; 16];
    // The system's random source does not fail on Linux once booted; were it
    // to, a time-based id is still unique within this daemon.
    if ring::rand::SystemRandom::new().fill(&mut bytes).is_err() {
        bytes[..8].copy_from_slice(&now_ms().to_le_bytes());
    }
    hex(&bytes)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}
