//! Which agents are working right now, for the channels' status.
//!
//! The channels show the main agent's state as before (Telegram's and
//! Signal's "typing…" follow it); beside it, the canvas lists the other
//! agents and the workers with a turn running. One tracker is shared by
//! every runner, so each announcement carries the whole picture.

use std::collections::BTreeMap;
use std::sync::Mutex;

/// The agents at work, shared by every runner.
#[derive(Default)]
pub struct Activity {
    model: Option<String>,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    main_busy: bool,
    /// Other agents and workers at work, with how many turns each runs.
    working: BTreeMap<String, u32>,
}

/// What the channels are told.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Snapshot {
    /// Whether the main agent runs a turn.
    pub main_busy: bool,
    /// The other agents and workers at work, by name.
    pub working: Vec<String>,
}

impl Activity {
    /// A tracker for agents whose main one uses `model`.
    pub fn new(model: Option<String>) -> Activity {
        Activity {
            model,
            state: Mutex::default(),
        }
    }

    /// The main agent's model, shown beside its state.
    pub fn model(&self) -> Option<&str> {
        self.model.as_deref()
    }

    /// Records that the main agent started or finished a turn.
    pub fn main(&self, busy: bool) -> Snapshot {
        let mut state = self.lock();
        state.main_busy = busy;
        snapshot(&state)
    }

    /// Records that `name` (a sub-agent, a worker) started or finished.
    pub fn other(&self, name: &str, busy: bool) -> Snapshot {
        let mut state = self.lock();
        if busy {
            *state.working.entry(name.to_owned()).or_default() += 1;
        } else if let Some(count) = state.working.get_mut(name) {
            *count -= 1;
            if *count == 0 {
                state.working.remove(name);
            }
        }
        snapshot(&state)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

fn snapshot(state: &State) -> Snapshot {
    Snapshot {
        main_busy: state.main_busy,
        working: state.working.keys().cloned().collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_picture_counts_each_agents_turns() {
        let activity = Activity::default();
        assert_eq!(activity.other("worker 1", true).working, ["worker 1"]);
        assert_eq!(
            activity.other("shopping", true).working,
            ["shopping", "worker 1"]
        );
        assert!(activity.main(true).main_busy);
        assert_eq!(activity.other("worker 1", false).working, ["shopping"]);
        let last = activity.other("shopping", false);
        assert_eq!(
            last,
            Snapshot {
                main_busy: true,
                working: vec![]
            }
        );
        assert!(activity.other("never started", false).working.is_empty());
    }
}
