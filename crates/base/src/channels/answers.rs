//! Where the owner's answers meet the calls waiting for them: the
//! confirmation gate (policy) waits on the [`Board`] for a question's id,
//! and the router and the owner's terminal (the control socket) hand it
//! the answers that came in. It sits below both so that the router, which
//! only hands answers on, does not depend on the policy that asks.
//!
//! Architecture invariant: the board only matches an answer to the id it
//! was asked under. Whether the sender is the owner is checked before an
//! answer gets here (the router's gate, the control token); what the
//! answer allows is the gate's business.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, OnceLock};

use crossbeam_channel::{Receiver, Sender, bounded};
use hearth_sdk::protocol::ConfirmationAnswer;

/// Where answers meet the calls waiting for them.
#[derive(Default)]
pub struct Board {
    waiting: Mutex<HashMap<String, Sender<Reply>>>,
    /// Takes answers no blocked call waits for (a group plan's card):
    /// whether it knew the id.
    otherwise: OnceLock<Otherwise>,
}

/// A taker of answers no blocked call waits for (the answer, who gave
/// it): whether it knew the id.
pub type Otherwise = Box<dyn Fn(&ConfirmationAnswer, &str) -> bool + Send + Sync>;

/// An answer on its way from a channel to the waiting call.
#[derive(Debug, PartialEq, Eq)]
pub struct Reply {
    /// Whether the owner approved.
    pub approve: bool,
    /// Whether the owner asked for the same call to be allowed from now on.
    pub always: bool,
    /// Who answered, as the audit records it.
    pub by: String,
}

impl Board {
    /// Hands the owner's answer to the call waiting for it. Returns whether
    /// one was waiting (an answer to a decided or unknown id is ignored).
    pub fn answer(&self, answer: &ConfirmationAnswer, by: &str) -> bool {
        let waiting = lock(&self.waiting).remove(&answer.id);
        match waiting {
            Some(tx) => tx
                .try_send(Reply {
                    approve: answer.approve,
                    always: answer.always,
                    by: by.to_owned(),
                })
                .is_ok(),
            None => self.otherwise.get().is_some_and(|take| take(answer, by)),
        }
    }

    /// Sets where answers go that no blocked call waits for.
    pub fn otherwise(&self, take: Otherwise) {
        let _ = self.otherwise.set(take);
    }

    /// Waits for the first answer to question `id`: the receiver gets it.
    /// An earlier wait for the same id is replaced.
    pub fn wait(&self, id: &str) -> Receiver<Reply> {
        let (tx, rx) = bounded(1);
        lock(&self.waiting).insert(id.to_owned(), tx);
        rx
    }

    /// Stops waiting for question `id`: a later answer to it is ignored
    /// (or goes to [`Board::otherwise`]).
    pub fn forget(&self, id: &str) {
        lock(&self.waiting).remove(id);
    }
}

/// A poisoned lock still guards a usable map: a panic elsewhere must not
/// stop answers from arriving.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(id: &str, approve: bool) -> ConfirmationAnswer {
        ConfirmationAnswer {
            id: id.into(),
            sender: String::new(),
            approve,
            always: false,
            reason: None,
        }
    }

    #[test]
    fn an_answer_reaches_the_call_waiting_under_its_id_once() {
        let board = Board::default();
        let rx = board.wait("q1");
        assert!(!board.answer(&answer("q2", true), "owner"), "another id");
        assert!(board.answer(&answer("q1", true), "owner"));
        assert!(
            !board.answer(&answer("q1", false), "owner"),
            "the first counts"
        );
        let reply = rx.try_recv().unwrap();
        assert_eq!(
            reply,
            Reply {
                approve: true,
                always: false,
                by: "owner".into()
            }
        );
    }

    #[test]
    fn a_forgotten_question_takes_no_answer() {
        let board = Board::default();
        let rx = board.wait("q1");
        board.forget("q1");
        assert!(!board.answer(&answer("q1", true), "owner"));
        assert!(rx.try_recv().is_err());
    }

    #[test]
    fn an_answer_no_call_waits_for_goes_to_whoever_takes_the_others() {
        let board = Board::default();
        assert!(
            !board.answer(&answer("plan-1", true), "owner"),
            "nobody takes it"
        );
        let (tx, taken) = bounded(4);
        board.otherwise(Box::new(move |a, by| {
            let _ = tx.send((a.id.clone(), by.to_owned()));
            a.id == "plan-1"
        }));
        assert!(board.answer(&answer("plan-1", true), "owner"));
        assert!(!board.answer(&answer("other", true), "owner"));
        let seen: Vec<(String, String)> = taken.try_iter().collect();
        assert_eq!(
            seen,
            [
                ("plan-1".to_owned(), "owner".to_owned()),
                ("other".to_owned(), "owner".to_owned())
            ]
        );
    }
}
