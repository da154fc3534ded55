//! The confirmation gate: a tool call that asks waits here for the owner.
//!
//! `ConfirmGate::ask` stores the request, shows it on every channel that
//! can (channel events), and blocks until the owner answers or the timeout
//! passes. Answers come in through the plugins' `submit`, which hands them
//! to the [`Board`] after the router has checked that the sender is the
//! owner. The request is bound to a fingerprint of the exact tool and
//! arguments: the approval unblocks this call and nothing else.
//!
//! A call made on behalf of someone waiting elsewhere (the owner's
//! `hearth tool call`, through the control socket) runs inside
//! [`watched`]: the gate tells the [`Watch`] when its question is shown,
//! and the watcher can withdraw the question before anyone answers. A
//! watcher that can answer itself (the owner at a terminal) is asked even
//! when no channel can show the question, and its answer comes through
//! the [`Board`] like a channel's: bound to the request's id, so to the
//! exact call, and the first answer from anywhere wins. A
//! call made in a turn is withdrawn the same way when the owner stops the
//! turn (its [`CallScope`](hearth_base::scope::CallScope) is cancelled):
//! recorded as expired, decided by `stop` ([`DECIDED_BY_STOP`]).

use hearth_base::hex::hex;
use std::cell::RefCell;
use std::sync::Arc;
use std::time::Duration;

use crossbeam_channel::{Receiver, TryRecvError, bounded, never, select};
use hearth_sdk::protocol::{
    ChannelEvent, ConfirmationRequest, ConfirmationState, DECIDED_BY_STOP, DECIDED_BY_WITHDRAWAL,
};
use rusqlite::params;
use serde_json::Value;

use hearth_base::channels::answers::{Board, Reply};
use hearth_base::channels::events::ChannelEvents;
use hearth_base::scope;
use hearth_base::store::{Cold, now_ms};

/// Asks the owner, and waits.
pub struct ConfirmGate {
    board: Arc<Board>,
    events: Arc<ChannelEvents>,
    conn: Cold,
    timeout: Duration,
    mode: String,
}

/// Someone waiting for a call made on their behalf.
pub struct Watch {
    /// Told the request and the channels that show it, once it is shown.
    pub shown: Box<Shown>,
    /// Withdraws the question when a message comes or every sender is
    /// dropped (the watcher went away): the call is then not run.
    pub withdraw: Receiver<()>,
    /// The watcher answers the question itself, through the [`Board`]
    /// (the owner's terminal): it is asked even when no channel can show
    /// it.
    pub answers: bool,
}

/// What a [`Watch`] is told once its question is shown: the request and
/// the channels that show it.
pub type Shown = dyn Fn(&ConfirmationRequest, &[String]) + Send;

/// Runs `f` (a tool call) with `watch` told about, and able to withdraw,
/// any question the call asks on this thread.
pub fn watched<R>(watch: Watch, f: impl FnOnce() -> R) -> R {
    /// Clears the watch even if `f` panics: the thread (a pooled one) may
    /// run other calls later, which nobody watches.
    struct Clear;
    impl Drop for Clear {
        fn drop(&mut self) {
            WATCH.with(|w| w.borrow_mut().take());
        }
    }
    WATCH.with(|w| *w.borrow_mut() = Some(watch));
    let _clear = Clear;
    f()
}

thread_local! {
    /// The watch of the call running on this thread, if any. A thread
    /// local, so the many layers between the caller and the gate (registry,
    /// policy) need not carry it.
    static WATCH: RefCell<Option<Watch>> = const { RefCell::new(None) };
}

/// What the owner is asked about.
pub struct Question<'a> {
    /// The tool.
    pub tool: &'a str,
    /// Its exact arguments.
    pub args: &'a Value,
    /// The hash of the exact call.
    pub fingerprint: &'a str,
    /// The command line, for tools that run one.
    pub command: Option<&'a str>,
    /// Where the command runs.
    pub cwd: Option<String>,
    /// Why the policy asks.
    pub reason: &'a str,
}

/// How a question ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Answer {
    /// The owner approved; `always` asks for a standing grant.
    Approved {
        /// Who answered.
        by: String,
        /// Approve this exact call from now on, too.
        always: bool,
    },
    /// The owner denied.
    Denied {
        /// Who answered.
        by: String,
    },
    /// Nobody answered within the timeout.
    Expired,
    /// The one who asked withdrew the question before it was answered.
    Withdrawn,
    /// The owner stopped the turn the call was part of (`/stop`).
    Cancelled,
    /// No channel that can show the question is running.
    Unavailable,
    /// The question could not be recorded.
    Failed(String),
}

/// How the wait for an answer ended.
enum Waited {
    Reply(Reply),
    Withdrawn,
    Cancelled,
    TimedOut,
}

impl ConfirmGate {
    /// A gate that stores requests on `conn`, shows them through `events`,
    /// takes answers from `board` and denies after `timeout`. `mode` is
    /// shown on every card.
    pub fn new(
        board: Arc<Board>,
        events: Arc<ChannelEvents>,
        conn: Cold,
        timeout: Duration,
        mode: &str,
    ) -> ConfirmGate {
        // A request left pending by an earlier run can no longer be
        // approved: the call that waited for it is gone.
        if let Err(e) = conn.lock().execute(
            "UPDATE confirmations SET state = 'expired', decided_by = 'restart', decided_at_ms = ?1 \
             WHERE state = 'pending'",
            [now_ms()],
        ) {
            tracing::warn!("cannot expire old confirmations: {e}");
        }
        ConfirmGate {
            board,
            events,
            conn,
            timeout,
            mode: mode.to_owned(),
        }
    }

    /// How long a question waits for the owner.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Asks the owner `question` on every channel that can show it, and
    /// waits for the answer or the timeout.
    pub fn ask(&self, question: &Question) -> Answer {
        let answered_by_watcher = WATCH.with(|w| w.borrow().as_ref().is_some_and(|w| w.answers));
        if !self.events.can_confirm() && !answered_by_watcher {
            return Answer::Unavailable;
        }
        let withdrawn_already = WATCH.with(|w| {
            w.borrow()
                .as_ref()
                .is_some_and(|w| w.withdraw.try_recv() != Err(TryRecvError::Empty))
        });
        if withdrawn_already {
            return Answer::Withdrawn;
        }
        let turn = scope::current();
        if turn.as_ref().is_some_and(|s| s.is_cancelled()) {
            return Answer::Cancelled;
        }
        let at_ms = now_ms();
        let request = ConfirmationRequest {
            id: random_id(),
            tool: question.tool.to_owned(),
            args: question.args.clone(),
            command: question.command.map(str::to_owned),
            cwd: question.cwd.clone(),
            mode: Some(self.mode.clone()),
            reason: question.reason.to_owned(),
            fingerprint: question.fingerprint.to_owned(),
            at_ms,
            expires_at_ms: at_ms + self.timeout.as_millis() as i64,
        };
        if let Err(e) = self.store(&request) {
            return Answer::Failed(format!("cannot record the confirmation: {e}"));
        }
        let rx = self.board.wait(&request.id);
        // The turn's /stop withdraws the question; the sender kept here
        // keeps the channel open whatever becomes of the hook.
        let (stop_tx, stop_rx) = bounded::<()>(1);
        let hook_tx = stop_tx.clone();
        let _hook = turn.as_ref().and_then(|s| {
            s.on_cancel(Box::new(move || {
                let _ = hook_tx.try_send(());
            }))
        });
        self.events
            .broadcast(&ChannelEvent::Confirmation(request.clone()));
        let tool = question.tool;
        tracing::info!(id = %request.id, tool, fingerprint = %request.fingerprint, "waiting for the owner's approval");
        let waited = WATCH.with(|w| {
            let watch = w.borrow();
            let withdraw = match watch.as_ref() {
                Some(watch) => {
                    (watch.shown)(&request, &self.events.channels());
                    &watch.withdraw
                }
                None => &never(),
            };
            select! {
                recv(rx) -> reply => reply.map_or(Waited::TimedOut, Waited::Reply),
                recv(withdraw) -> _ => Waited::Withdrawn,
                recv(stop_rx) -> _ => Waited::Cancelled,
                default(self.timeout) => Waited::TimedOut,
            }
        });
        drop(stop_tx);
        self.board.forget(&request.id);
        let (state, by, answer) = match waited {
            Waited::Reply(Reply {
                approve: true,
                always,
                by,
            }) => (
                ConfirmationState::Approved,
                by.clone(),
                Answer::Approved { by, always },
            ),
            Waited::Reply(Reply { by, .. }) => {
                (ConfirmationState::Denied, by.clone(), Answer::Denied { by })
            }
            // The card is taken down as expired: the protocol's states
            // have no "withdrawn", and `decided_by` says who withdrew it.
            Waited::Withdrawn => (
                ConfirmationState::Expired,
                DECIDED_BY_WITHDRAWAL.to_owned(),
                Answer::Withdrawn,
            ),
            Waited::Cancelled => {
                if let Some(turn) = &turn {
                    turn.note("its approval request was withdrawn");
                }
                (
                    ConfirmationState::Expired,
                    DECIDED_BY_STOP.to_owned(),
                    Answer::Cancelled,
                )
            }
            Waited::TimedOut => (
                ConfirmationState::Expired,
                "timeout".to_owned(),
                Answer::Expired,
            ),
        };
        self.decided(&request.id, state, &by);
        tracing::info!(id = %request.id, tool, ?state, by = %by, "confirmation decided");
        answer
    }

    fn store(&self, r: &ConfirmationRequest) -> rusqlite::Result<()> {
        self.conn.lock().execute(
            "INSERT INTO confirmations (id, tool, args, command, reason, fingerprint, at_ms, \
             expires_at_ms, cwd, mode) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
            params![
                r.id,
                r.tool,
                r.args.to_string(),
                r.command,
                r.reason,
                r.fingerprint,
                r.at_ms,
                r.expires_at_ms,
                r.cwd,
                r.mode
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
        if let Err(e) = self.conn.lock().execute(
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

/// SHA-256 over the tool and its arguments, in hex. `serde_json` keeps
/// object keys sorted, so equal arguments hash equal. All 256 bits are
/// kept: a grant is bound to this hash, and a shortened one would let a
/// prepared pair of calls (one harmless, one not) collide.
pub fn fingerprint(tool: &str, args: &Value) -> String {
    let mut ctx = ring::digest::Context::new(&ring::digest::SHA256);
    ctx.update(tool.as_bytes());
    ctx.update(&[0]);
    ctx.update(args.to_string().as_bytes());
    hex(ctx.finish().as_ref())
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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use hearth_sdk::protocol::ConfirmationAnswer;

    use super::*;

    #[test]
    fn a_watcher_that_answers_is_asked_without_any_channel_and_the_first_answer_counts() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("hearth.db");
        let _store = hearth_base::store::Store::open(&db).unwrap();
        let board = Arc::new(Board::default());
        let gate = ConfirmGate::new(
            Arc::clone(&board),
            Arc::new(ChannelEvents::default()),
            Cold::open(&db).unwrap(),
            Duration::from_secs(10),
            "production",
        );
        let args = json!({ "command": "rm -r /srv/old" });
        let question = Question {
            tool: "shell_exec",
            args: &args,
            fingerprint: &fingerprint("shell_exec", &args),
            command: Some("rm -r /srv/old"),
            cwd: None,
            reason: "it deletes files",
        };
        // No channel shows confirmations, and nobody else can answer.
        assert_eq!(gate.ask(&question), Answer::Unavailable);

        let (_keep, withdraw) = bounded(1);
        let (shown_tx, shown) = bounded(1);
        let watch = Watch {
            shown: Box::new(move |request, channels| {
                let _ = shown_tx.send((request.id.clone(), channels.to_vec()));
            }),
            withdraw,
            answers: true,
        };
        let answerer = {
            let board = Arc::clone(&board);
            std::thread::spawn(move || {
                let (id, channels): (String, Vec<String>) = shown.recv().unwrap();
                assert!(channels.is_empty(), "{channels:?}");
                let answer = |approve| ConfirmationAnswer {
                    id: id.clone(),
                    sender: String::new(),
                    approve,
                    always: false,
                    reason: None,
                };
                assert!(board.answer(&answer(true), "owner via cli terminal"));
                // A later answer, from anywhere, is not counted.
                assert!(!board.answer(&answer(false), "owner"));
            })
        };
        let answer = watched(watch, || gate.ask(&question));
        answerer.join().unwrap();
        // The thread's next call is nobody's: the watch went with the call,
        // and without a channel it is refused again.
        assert!(WATCH.with(|w| w.borrow().is_none()));
        assert_eq!(gate.ask(&question), Answer::Unavailable);
        assert_eq!(
            answer,
            Answer::Approved {
                by: "owner via cli terminal".into(),
                always: false
            }
        );
        let decided: (String, String) = Cold::open(&db)
            .unwrap()
            .lock()
            .query_row("SELECT state, decided_by FROM confirmations", [], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .unwrap();
        assert_eq!(
            decided,
            ("approved".into(), "owner via cli terminal".into())
        );
    }
}
