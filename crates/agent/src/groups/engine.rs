//! The daemon's groups task: from what the tables say, it starts the
//! leader's planning, the deliverables whose dependencies are complete
//! (one at a time per member, different members in parallel), resumes
//! work a restart cut short, re-plans after a failure once the running
//! work settles, and has the leader sum up when everything is complete.
//!
//! The task keeps only which jobs it runs now; everything else is read
//! from the tables on each pass, so a pass after a restart finds the same
//! work a pass before it would have.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::run::{self, Ended, Handled, Run};
use super::store::{self, Deliverable, Group, Status};
use super::{Groups, lock, plan, prompts, tools};
use hearth_model::llm::{Llm, Message, Role};

/// How often the task looks even when nothing woke it, while a group is
/// active (with none, it sleeps until a change wakes it: every change goes
/// through the daemon and pokes it).
const PASS: Duration = Duration::from_secs(60);
/// Reminders a member gets when it stops without reporting its
/// deliverable complete, before the deliverable fails.
const NUDGES: u32 = 2;
/// Plan checks that may fail in a round before the owner assigns by hand.
const PLAN_TRIES: i64 = 2;

/// Work the task runs.
#[derive(Clone, Debug, Hash, PartialEq, Eq)]
pub(super) enum Job {
    /// The leader plans group `.0`.
    Plan(i64),
    /// A member works on deliverable `.1` of group `.0`.
    Deliverable(i64, String),
    /// The leader sums up group `.0`.
    Summary(i64),
}

impl Groups {
    /// The task: a pass whenever something changes, and every minute while
    /// a group is active.
    pub async fn run(self: Arc<Self>) {
        self.announce_all();
        loop {
            match self.pass() {
                Ok(0) => self.wake.notified().await,
                Ok(_) => {
                    let _ = tokio::time::timeout(PASS, self.wake.notified()).await;
                }
                Err(e) => {
                    tracing::error!("the groups' pass failed: {e}");
                    let _ = tokio::time::timeout(PASS, self.wake.notified()).await;
                }
            }
        }
    }

    /// One look at every active group; one group's trouble does not hold
    /// up the others. Returns how many are active.
    fn pass(self: &Arc<Self>) -> Result<usize, super::GroupError> {
        let groups = store::active(&self.cold.lock())?;
        let active = groups.len();
        for group in groups {
            match group.status {
                Status::Planning => self.start(Job::Plan(group.id)),
                Status::Executing => {
                    if let Err(e) = self.advance(&group) {
                        tracing::error!(group = %group.name, "cannot advance the group: {e}");
                    }
                }
                _ => {}
            }
        }
        Ok(active)
    }

    /// Starts the deliverables that may start, resumes those a restart
    /// cut short, and settles the group when nothing more can run.
    fn advance(self: &Arc<Self>, group: &Group) -> Result<(), super::GroupError> {
        let all = store::deliverables(&self.cold.lock(), group.id)?;
        if !all.is_empty() && all.iter().all(|d| d.status == "complete") {
            self.start(Job::Summary(group.id));
            return Ok(());
        }
        for d in all.iter().filter(|d| d.status == "running") {
            self.start(Job::Deliverable(group.id, d.key.clone()));
        }
        let complete: BTreeSet<&str> = all
            .iter()
            .filter(|d| d.status == "complete")
            .map(|d| d.key.as_str())
            .collect();
        let mut busy = self.busy_agents()?;
        let mut started = false;
        for d in all.iter().filter(|d| d.status == "pending") {
            let ready = d.depends_on.iter().all(|k| complete.contains(k.as_str()));
            if ready && busy.insert(d.assignee) {
                store::start_deliverable(&self.cold.lock(), group, d)?;
                started = true;
                self.start(Job::Deliverable(group.id, d.key.clone()));
            }
        }
        if started {
            self.changed(group.id);
        }
        let running = all.iter().any(|d| d.status == "running") || started;
        let failed: Vec<&Deliverable> = all.iter().filter(|d| d.status == "failed").collect();
        let waiting = all.iter().any(|d| {
            d.status == "pending" && d.depends_on.iter().all(|k| complete.contains(k.as_str()))
        });
        if !running && !waiting && !failed.is_empty() {
            self.replan_after_failure(group, &all)?;
        }
        Ok(())
    }

    /// The agents working on a deliverable now, in any executing group (a
    /// group archived mid-work holds no one).
    fn busy_agents(&self) -> Result<BTreeSet<i64>, super::GroupError> {
        let conn = self.cold.lock();
        let mut stmt = conn.prepare_cached(
            "SELECT DISTINCT d.assignee FROM group_deliverables d JOIN groups g ON g.id = d.group_id \
             WHERE d.status = 'running' AND g.status = 'executing'",
        )?;
        let busy = stmt
            .query_map([], |r| r.get(0))?
            .collect::<rusqlite::Result<_>>()?;
        Ok(busy)
    }

    /// Runs `job` unless it runs already; the next pass follows its end.
    fn start(self: &Arc<Self>, job: Job) {
        if !lock(&self.active).insert(job.clone()) {
            return;
        }
        let groups = Arc::clone(self);
        tokio::spawn(async move {
            let outcome = match &job {
                Job::Plan(group) => groups.plan(*group).await,
                Job::Deliverable(group, key) => groups.work(*group, key).await,
                Job::Summary(group) => groups.sum_up(*group).await,
            };
            if let Err(e) = outcome {
                tracing::error!(?job, "a group's work failed: {e}");
            }
            lock(&groups.active).remove(&job);
            groups.poke();
        });
    }

    /// The model for `agent`'s runs: the configured one, or its override.
    fn model_for(&self, model: Option<&str>) -> Result<Arc<Llm>, String> {
        let connected = self
            .connected
            .get()
            .ok_or("groups run only in the daemon")?;
        let llm = connected.llm.clone()?;
        Ok(match model {
            Some(model) => Arc::new(llm.with_model(model)),
            None => llm,
        })
    }

    fn registry(&self) -> Result<Arc<crate::tools::ToolRegistry>, String> {
        self.connected
            .get()
            .and_then(|c| c.tools.upgrade())
            .ok_or_else(|| "the daemon is stopping".to_owned())
    }

    /// The leader plans (or plans again) the group's mission.
    async fn plan(self: &Arc<Self>, id: i64) -> Result<(), super::GroupError> {
        let (group, members, deliverables) = {
            let conn = self.cold.lock();
            let group = store::by_id(&conn, id)?;
            (
                group.clone(),
                store::members(&conn, id)?,
                store::deliverables(&conn, id)?,
            )
        };
        if group.status != Status::Planning {
            return Ok(());
        }
        let Some(leader) = members.iter().find(|m| m.leader).cloned() else {
            return self.planning_failed(&group, "the group has no leader");
        };
        let profile = store::agent_named(&self.cold.lock(), &leader.name)?;
        let (llm, tools) = match (self.model_for(profile.model.as_deref()), self.registry()) {
            (Ok(llm), Ok(tools)) => (llm, tools),
            (Err(why), _) | (_, Err(why)) => return self.planning_failed(&group, &why),
        };
        let session = self.new_session(
            leader.agent_id,
            &format!("{}/plan-{}", group.name, group.plan_round),
        )?;
        let plan_file = self.dir.join(&group.name).join("plan.md");
        let ask = prompts::planning(&group, &members, &deliverables, &plan_file);
        let mut messages = vec![Message::user_text(ask)];
        run::store(&self.cold, session, &messages[0]);
        let written_before = modified(&plan_file);
        let run = Run {
            llm: &llm,
            tools: &tools,
            caller: profile.caller(),
            scope: profile.scope(),
            usage: &self.usage,
            cold: &self.cold,
            agent: leader.agent_id,
            session,
            system: prompts::leader_system(&profile, &leader),
            own: vec![tools::submit_plan_def()],
            max_steps: self.config.max_steps,
            token_budget: self.config.token_budget,
        };
        // What the leader's tries came to: the accepted plan, or the last
        // refused one and its problems.
        let mut accepted: Option<plan::Plan> = None;
        let mut refused: (Option<plan::Plan>, Vec<String>) = (None, Vec::new());
        loop {
            let mut handler = |name: &str, args: &serde_json::Value| -> Option<Handled> {
                if name != tools::SUBMIT_PLAN {
                    return None;
                }
                let (plan, errors) = self.judge(&group, plan::from_json(args));
                if errors.is_empty() {
                    accepted = plan;
                    return Some(Handled {
                        result: Ok(
                            serde_json::json!({ "ok": true, "next": "the plan goes to the owner" }),
                        ),
                        stop: true,
                    });
                }
                let tries = self.refuse(id);
                refused = (plan, errors.clone());
                Some(Handled {
                    result: Err(tools::refusal(&errors, tries < PLAN_TRIES)),
                    stop: tries >= PLAN_TRIES,
                })
            };
            match run.drive(&mut messages, &mut handler).await {
                Ended::Stopped => break,
                Ended::Answered(text) => {
                    let candidate = plan::from_markdown(&text).or_else(|e| {
                        if modified(&plan_file) != written_before {
                            let written = std::fs::read_to_string(&plan_file).unwrap_or_default();
                            plan::from_markdown(&written)
                        } else {
                            Err(e)
                        }
                    });
                    let (plan, errors) = self.judge(&group, candidate);
                    if errors.is_empty() {
                        accepted = plan;
                        break;
                    }
                    let tries = self.refuse(id);
                    refused = (plan, errors.clone());
                    if tries >= PLAN_TRIES {
                        break;
                    }
                    let again = Message::user_text(tools::refusal(&errors, true));
                    run::store(&self.cold, session, &again);
                    messages.push(again);
                }
                Ended::Bound(bound) => {
                    return self.planning_failed(&group, &format!("the leader hit {bound}"));
                }
                Ended::Failed(why) => return self.planning_failed(&group, &why),
            }
        }
        match accepted {
            Some(plan) => self.plan_ready(&group, plan),
            None => self.plan_by_hand(&group, refused.0, &refused.1),
        }
    }

    /// A member works on its deliverable: afresh, or going on from its
    /// stored session after a restart.
    async fn work(self: &Arc<Self>, id: i64, key: &str) -> Result<(), super::GroupError> {
        let (group, d, members) = {
            let conn = self.cold.lock();
            let group = store::by_id(&conn, id)?;
            let d = store::deliverables(&conn, id)?
                .into_iter()
                .find(|d| d.key == key);
            (group, d, store::members(&conn, id)?)
        };
        let Some(d) = d.filter(|d| d.status == "running" && group.status == Status::Executing)
        else {
            return Ok(());
        };
        let Some(session) = d.session_id else {
            return self.fail(&group, &d, "it has no session");
        };
        let profile = store::agent_named(&self.cold.lock(), &d.assignee_name)?;
        let member = members.iter().find(|m| m.agent_id == d.assignee).cloned();
        let (llm, tools) = match (self.model_for(profile.model.as_deref()), self.registry()) {
            (Ok(llm), Ok(tools)) => (llm, tools),
            (Err(why), _) | (_, Err(why)) => return self.fail(&group, &d, &why),
        };
        let mut messages = run::load(&self.cold, session);
        if messages.is_empty() {
            let first = Message::user_text(prompts::assignment(&group, &d));
            run::store(&self.cold, session, &first);
            messages.push(first);
        } else if messages.last().is_some_and(|m| m.role == Role::Assistant) {
            let nudge = Message::user_text(prompts::NUDGE.to_owned());
            run::store(&self.cold, session, &nudge);
            messages.push(nudge);
        }
        let shared = {
            let conn = self.cold.lock();
            (
                store::deliverables(&conn, id)?,
                store::posts(&conn, id, Some("decision"), 50)?,
                store::posts(&conn, id, Some("interface"), 50)?,
            )
        };
        let run = Run {
            llm: &llm,
            tools: &tools,
            caller: profile.caller(),
            scope: profile.scope(),
            usage: &self.usage,
            cold: &self.cold,
            agent: d.assignee,
            session,
            system: prompts::member_system(&profile, member.as_ref(), &group, &d, &shared),
            own: tools::member_defs(),
            max_steps: self.config.max_steps,
            token_budget: self.config.token_budget,
        };
        let deadline = Instant::now() + Duration::from_millis(self.config.deliverable_timeout_ms);
        let mut nudges = 0;
        loop {
            let mut handler =
                |name: &str, args: &serde_json::Value| self.member_tool(&group, &d, name, args);
            let ended = match tokio::time::timeout_at(
                deadline.into(),
                run.drive(&mut messages, &mut handler),
            )
            .await
            {
                Ok(ended) => ended,
                Err(_) => Ended::Bound(format!(
                    "its wall-clock limit of {} s ([groups] deliverable_timeout_ms)",
                    self.config.deliverable_timeout_ms / 1000
                )),
            };
            match ended {
                Ended::Stopped => return Ok(()),
                Ended::Answered(_) if nudges < NUDGES => {
                    nudges += 1;
                    let nudge = Message::user_text(prompts::NUDGE.to_owned());
                    run::store(&self.cold, session, &nudge);
                    messages.push(nudge);
                }
                Ended::Answered(_) => {
                    return self.fail(
                        &group,
                        &d,
                        "its member stopped without reporting it complete (group_post type complete)",
                    );
                }
                Ended::Bound(bound) => {
                    return self.fail(&group, &d, &format!("its member hit {bound}"));
                }
                Ended::Failed(why) => return self.fail(&group, &d, &why),
            }
        }
    }

    /// The leader writes the final summary; the group is complete.
    async fn sum_up(self: &Arc<Self>, id: i64) -> Result<(), super::GroupError> {
        let (group, members, deliverables) = {
            let conn = self.cold.lock();
            (
                store::by_id(&conn, id)?,
                store::members(&conn, id)?,
                store::deliverables(&conn, id)?,
            )
        };
        if group.status != Status::Executing {
            return Ok(());
        }
        let ask = prompts::summary(&group, &deliverables);
        let written = match members.iter().find(|m| m.leader) {
            Some(leader) => self.leader_text(&group, leader, &ask).await,
            None => Err("the group has no leader".to_owned()),
        };
        let summary = written.unwrap_or_else(|why| {
            tracing::warn!(group = %group.name, "the leader wrote no summary: {why}");
            prompts::fallback_summary(&group, &deliverables, &why)
        });
        let told = format!("Group {} completed its mission.\n\n{summary}", group.name);
        self.milestone(&told, |conn| {
            store::complete(conn, id, &summary)?;
            store::post(conn, id, None, None, "system", "The mission is complete.")
        })?;
        self.changed(id);
        Ok(())
    }

    /// The leader's answer to `ask`, without tools, in a session of its own.
    async fn leader_text(
        &self,
        group: &Group,
        leader: &store::Member,
        ask: &str,
    ) -> Result<String, String> {
        let profile =
            store::agent_named(&self.cold.lock(), &leader.name).map_err(|e| e.to_string())?;
        let llm = self.model_for(profile.model.as_deref())?;
        let tools = self.registry()?;
        let session = self
            .new_session(leader.agent_id, &format!("{}/summary", group.name))
            .map_err(|e| e.to_string())?;
        let mut messages = vec![Message::user_text(ask.to_owned())];
        run::store(&self.cold, session, &messages[0]);
        let run = Run {
            llm: &llm,
            tools: &tools,
            caller: profile.caller(),
            scope: hearth_base::caller::ToolScope::from_list(&[]),
            usage: &self.usage,
            cold: &self.cold,
            agent: leader.agent_id,
            session,
            system: prompts::leader_system(&profile, leader),
            own: Vec::new(),
            max_steps: 2,
            token_budget: self.config.token_budget,
        };
        match run.drive(&mut messages, &mut |_, _| None).await {
            Ended::Answered(text) if !text.trim().is_empty() => Ok(text.trim().to_owned()),
            Ended::Answered(_) => Err("the summary was empty".into()),
            Ended::Stopped => Err("the summary run stopped".into()),
            Ended::Bound(b) => Err(format!("the leader hit {b}")),
            Ended::Failed(why) => Err(why),
        }
    }

    /// After a failure, once nothing runs: the leader plans the rest.
    fn replan_after_failure(
        &self,
        group: &Group,
        all: &[Deliverable],
    ) -> Result<(), super::GroupError> {
        let reason = prompts::failure_report(all);
        {
            let conn = self.cold.lock();
            store::replan(&conn, group.id, &reason)?;
            store::post(
                &conn,
                group.id,
                None,
                None,
                "system",
                "Work settled after a failure: the leader plans the rest.",
            )?;
        }
        self.changed(group.id);
        self.poke();
        Ok(())
    }

    /// A plan as read (or why it could not be), checked against the group
    /// as it is now: the plan, and every problem with it.
    fn judge(
        &self,
        group: &Group,
        read: Result<plan::Plan, String>,
    ) -> (Option<plan::Plan>, Vec<String>) {
        match read {
            Ok(plan) => {
                let errors = store::check_plan(&self.cold.lock(), group, &plan)
                    .unwrap_or_else(|e| vec![format!("the plan could not be checked: {e}")]);
                (Some(plan), errors)
            }
            Err(e) => (None, vec![e]),
        }
    }

    /// Counts a refused plan; returns the tries so far.
    fn refuse(&self, group: i64) -> i64 {
        store::plan_refused(&self.cold.lock(), group).unwrap_or(PLAN_TRIES)
    }

    /// A deliverable failed: its member errored, what waits on it is
    /// blocked, the leader and the owner are told.
    fn fail(&self, group: &Group, d: &Deliverable, why: &str) -> Result<(), super::GroupError> {
        let told = format!(
            "Group {}: {} \"{}\" failed ({}): {why}",
            group.name, d.key, d.title, d.assignee_name
        );
        self.milestone(&told, |conn| {
            store::finish_deliverable(conn, group.id, d, Err(why))?;
            store::post(
                conn,
                group.id,
                None,
                Some(&d.key),
                "system",
                &format!(
                    "{} ({}) failed: {why}. What depends on it is blocked; the leader will plan \
                     the rest once the running work settles.",
                    d.key, d.assignee_name
                ),
            )
        })?;
        self.changed(group.id);
        Ok(())
    }

    /// The leader could not plan: the mission stops; the owner is told.
    fn planning_failed(&self, group: &Group, why: &str) -> Result<(), super::GroupError> {
        let told = format!(
            "Group {} could not plan its mission: {why}. Give it the mission again when this is fixed.",
            group.name
        );
        self.milestone(&told, |conn| {
            store::set_status(conn, group.id, Status::Failed)?;
            store::post(
                conn,
                group.id,
                None,
                None,
                "system",
                &format!("Planning failed: {why}"),
            )
        })?;
        self.changed(group.id);
        Ok(())
    }

    fn new_session(&self, agent: i64, chat: &str) -> Result<i64, super::GroupError> {
        let conn = self.cold.lock();
        conn.execute(
            "INSERT INTO sessions (agent_id, channel, chat, started_at_ms) VALUES (?1, 'group', ?2, ?3)",
            rusqlite::params![agent, chat, hearth_base::store::now_ms()],
        )?;
        Ok(conn.last_insert_rowid())
    }
}

/// When a file was last written, if it exists.
fn modified(path: &std::path::Path) -> Option<std::time::SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}
