//! One runner per enabled agent, kept in line with the `agents` table.
//!
//! The main agent's runner starts with the daemon and never changes (its
//! identity comes from the config). Sub-agents' runners start, restart and
//! stop as `manage_agents` changes their rows: the tool notifies
//! `Router::agents_changed`, and [`Runners::supervise`] reads the table
//! again. A runner stopped mid-turn leaves its message in flight; the next
//! runner of that agent re-runs it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::task::JoinHandle;

use hearth_agent::agent::profiles::{self, Profile};
use hearth_agent::agent::{Agent, AgentBase};
use hearth_data::people::People;

/// The agents' runner tasks.
pub struct Runners {
    base: AgentBase,
    people: Arc<People>,
    running: Mutex<HashMap<i64, (Profile, JoinHandle<()>)>>,
}

impl Runners {
    /// Runners for the agents on `base`; none is started yet.
    pub fn new(base: AgentBase, people: Arc<People>) -> Arc<Runners> {
        Arc::new(Runners {
            base,
            people,
            running: Mutex::new(HashMap::new()),
        })
    }

    /// Starts `main`'s runner, and one per enabled sub-agent.
    pub fn start(self: &Arc<Self>, main: Arc<Agent>) {
        let profile = main.profile.clone();
        let task = Arc::clone(&main).spawn();
        self.lock().insert(profile.id, (profile, task));
        self.sync();
    }

    /// Brings the runners in line with the table whenever an agent
    /// changes, until aborted.
    pub async fn supervise(self: Arc<Self>) {
        loop {
            self.base.router.agents_changed.notified().await;
            self.sync();
        }
    }

    /// Stops every runner.
    pub fn stop(&self) {
        for (_, (_, task)) in self.lock().drain() {
            task.abort();
        }
    }

    /// Starts the runners of new or changed enabled sub-agents, and stops
    /// those of disabled or deleted ones.
    fn sync(&self) {
        let profiles = match self.people.read(profiles::list) {
            Ok(p) => p,
            Err(e) => {
                tracing::error!("cannot read the agents: {e}");
                return;
            }
        };
        let mut running = self.lock();
        let wanted: HashMap<i64, Profile> = profiles
            .into_iter()
            .filter(|p| p.enabled && !p.is_main())
            .map(|p| (p.id, p))
            .collect();
        running.retain(|id, (profile, task)| {
            let keep = profile.is_main() || wanted.get(id) == Some(profile);
            if !keep {
                tracing::info!(agent = %profile.name, "agent runner stopped");
                task.abort();
            }
            keep
        });
        for (id, profile) in wanted {
            if running.contains_key(&id) {
                continue;
            }
            tracing::info!(agent = %profile.name, "agent runner started");
            let agent = Arc::new(Agent::new(&self.base, profile.clone()));
            running.insert(id, (profile, agent.spawn()));
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<i64, (Profile, JoinHandle<()>)>> {
        self.running.lock().unwrap_or_else(|p| p.into_inner())
    }
}
