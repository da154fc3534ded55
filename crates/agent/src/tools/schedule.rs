//! `manage_schedule`: the agent's (and the owner's `/tool`) way to set
//! reminders and scheduled tasks.
//!
//! The answer to `add` and `update` lists the job's next three fire times
//! in the owner's zone, so the model can check that "every weekday at
//! nine" is what it wrote. A sub-agent manages only its own jobs; the main
//! agent and the owner manage anyone's.

use std::sync::Arc;

use serde_json::{Value, json};

use super::TurnContext;
use crate::agent::profiles;
use crate::scheduler::jobs::{kind_name, missed_name, parse_kind, parse_missed};
use crate::scheduler::{Job, JobChanges, Kind, Missed, NewJob, Scheduler, When};
use hearth_base::caller::Caller;
use hearth_base::schedule::{self, Schedule};
use hearth_base::store::MAIN_AGENT;
use hearth_base::time_text::local_time;
use hearth_data::people::People;

/// What `manage_schedule` works on.
pub struct ScheduleTools {
    /// The scheduler.
    pub scheduler: Arc<Scheduler>,
    /// The agents, by name.
    pub people: Arc<People>,
}

/// The tool's `help` answer.
const HELP: &str = "manage_schedule actions:
- add: kind (\"reminder\": wakes this conversation with `text` when due; \"task\": runs `text` as \
a prompt in a fresh session and delivers your answer to the owner), text, and one of: cron \
(5 fields: minute hour day-of-month month day-of-week, names like MON/JAN allowed, or @daily, \
@weekly, @monthly, @yearly, @hourly) with optional zone (IANA, default the owner's), at (\"2026-12-24 \
18:00\" local to the owner, or RFC 3339), in (\"20m\", \"2h 30m\", \"1d\"). Optional: agent (default \
you), model and token_budget (tasks), missed (\"once\" default: fire once late after downtime; \
\"skip\"; \"all\": each missed run, at most 10).
- update: id plus any of cron/zone/at/in, text, model, token_budget, missed.
- enable, disable, remove, run_now: id.
- list: every job (yours only, for a sub-agent).
Times in answers are in the owner's zone.";

impl ScheduleTools {
    /// Runs one `manage_schedule` call.
    pub fn call(
        &self,
        caller: &Caller,
        turn: Option<&TurnContext>,
        args: &Value,
    ) -> Result<Value, String> {
        let who = Who::of(caller)?;
        let action = args["action"].as_str().unwrap_or_default();
        let jobs = self.scheduler.jobs();
        match action {
            "help" => Ok(json!({ "help": HELP })),
            "list" => {
                let list = jobs.list(who.only()).map_err(|e| e.to_string())?;
                let shown: Vec<Value> = list.iter().map(|j| self.describe(j)).collect();
                Ok(json!({ "jobs": shown, "owner_zone": jobs.owner_zone() }))
            }
            "add" => {
                let new = self.new_job(&who, turn, args)?;
                let job = jobs.add(&new).map_err(|e| e.to_string())?;
                Ok(self.described_with_next(&job))
            }
            "update" => {
                let job = self.own_job(&who, args)?;
                let changes = self.changes(args)?;
                let job = jobs.update(job.id, &changes).map_err(|e| e.to_string())?;
                Ok(self.described_with_next(&job))
            }
            "enable" | "disable" => {
                let job = self.own_job(&who, args)?;
                let job = jobs
                    .set_enabled(job.id, action == "enable")
                    .map_err(|e| e.to_string())?;
                Ok(self.described_with_next(&job))
            }
            "remove" => {
                let job = self.own_job(&who, args)?;
                jobs.remove(job.id).map_err(|e| e.to_string())?;
                Ok(json!({ "removed": job.id }))
            }
            "run_now" => {
                let job = self.own_job(&who, args)?;
                let job = self.scheduler.run_now(job.id).map_err(|e| e.to_string())?;
                Ok(json!({ "fired": job.id, "job": self.describe(&job) }))
            }
            other => Err(format!(
                "field `action`: {other:?} is not an action; use help, list, add, update, enable, disable, remove or run_now"
            )),
        }
    }

    /// The job `args["id"]` names, if the caller may see it.
    fn own_job(&self, who: &Who, args: &Value) -> Result<Job, String> {
        let id = args["id"]
            .as_i64()
            .ok_or("field `id`: required, a job id from `list`")?;
        let job = self.scheduler.jobs().get(id).map_err(|e| e.to_string())?;
        match who.only() {
            Some(agent) if agent != job.agent_id => Err(format!("no job {id}; `list` shows them")),
            _ => Ok(job),
        }
    }

    fn new_job(
        &self,
        who: &Who,
        turn: Option<&TurnContext>,
        args: &Value,
    ) -> Result<NewJob, String> {
        let kind = match args["kind"].as_str() {
            None => Kind::Reminder,
            // The heartbeat is the config's, one of it at most.
            Some(k) => parse_kind(k)
                .filter(|k| *k != Kind::Heartbeat)
                .ok_or_else(|| {
                    format!(
                        "field `kind`: {k:?} is not a kind; use \"reminder\" or \"task\" (the \
                         heartbeat is set by [heartbeat] in hearth.toml)"
                    )
                })?,
        };
        let when = self
            .when(args)?
            .ok_or("one of the fields `cron`, `at` or `in` is required: when the job fires")?;
        let agent_id = match args["agent"].as_str() {
            None => who.agent.unwrap_or(MAIN_AGENT),
            Some(name) => {
                let id = self
                    .people
                    .read(|conn| profiles::id_of(conn, name))
                    .map_err(|e| format!("field `agent`: {e}"))?;
                if who.only().is_some_and(|me| me != id) {
                    return Err("field `agent`: a sub-agent schedules jobs for itself only".into());
                }
                id
            }
        };
        let conversation = turn
            .filter(|t| !t.channel.is_empty() && t.agent == agent_id)
            .map(|t| (t.channel.clone(), t.chat.clone()));
        Ok(NewJob {
            kind,
            when,
            text: args["text"].as_str().unwrap_or_default().to_owned(),
            agent_id,
            conversation,
            model: optional_str(args, "model")?,
            token_budget: args["token_budget"].as_i64(),
            missed: missed(args)?.unwrap_or(Missed::Once),
            created_by: who.agent,
        })
    }

    fn changes(&self, args: &Value) -> Result<JobChanges, String> {
        Ok(JobChanges {
            when: self.when(args)?,
            text: args["text"].as_str().map(str::to_owned),
            model: args
                .get("model")
                .map(|_| optional_str(args, "model"))
                .transpose()?,
            token_budget: args.get("token_budget").map(|v| v.as_i64()),
            missed: missed(args)?,
        })
    }

    /// The schedule the call gives: `cron` (+ `zone`), `at` or `in`.
    fn when(&self, args: &Value) -> Result<Option<When>, String> {
        let jobs = self.scheduler.jobs();
        let given: Vec<&str> = ["cron", "at", "in"]
            .into_iter()
            .filter(|k| args.get(*k).is_some_and(|v| !v.is_null()))
            .collect();
        if given.len() > 1 {
            return Err(format!(
                "fields {}: give only one of `cron`, `at` and `in`",
                given.join(", ")
            ));
        }
        let owner_zone = schedule::time_zone(jobs.owner_zone()).map_err(|e| e.to_string())?;
        let now = jobs.clock().now();
        let text = |key: &str| {
            args[key]
                .as_str()
                .ok_or(format!("field `{key}`: must be a string"))
        };
        match given.first().copied() {
            None => Ok(None),
            Some("cron") => Ok(Some(When::Cron {
                expr: text("cron")?.trim().to_owned(),
                zone: args["zone"]
                    .as_str()
                    .unwrap_or(jobs.owner_zone())
                    .trim()
                    .to_owned(),
            })),
            Some(key) => {
                let at = if key == "at" {
                    schedule::parse_instant(text("at")?, &owner_zone)
                } else {
                    schedule::parse_delay(text("in")?, now, &owner_zone)
                }
                .map_err(|e| format!("field `{key}`: {e}"))?;
                if at <= now {
                    return Err(format!(
                        "field `{key}`: {} is in the past (now is {})",
                        local_time(at.as_millisecond(), jobs.owner_zone()),
                        local_time(now.as_millisecond(), jobs.owner_zone())
                    ));
                }
                Ok(Some(When::Once(at.as_millisecond())))
            }
        }
    }

    fn describe(&self, job: &Job) -> Value {
        let zone = self.scheduler.jobs().owner_zone();
        let agent = self
            .people
            .read(|conn| profiles::get(conn, job.agent_id))
            .ok()
            .flatten()
            .map_or_else(|| format!("agent {}", job.agent_id), |p| p.name);
        json!({
            "id": job.id,
            "kind": kind_name(job.kind),
            "state": job.state(),
            "cron": job.cron,
            "zone": job.cron.as_ref().map(|_| &job.zone),
            "at": job.at_ms.map(|ms| local_time(ms, zone)),
            "text": job.text,
            "agent": agent,
            "conversation": job.channel.as_ref().map(|c| format!("{c}/{}", job.chat.as_deref().unwrap_or_default())),
            "model": job.model,
            "token_budget": job.token_budget,
            "missed": missed_name(job.missed),
            "next_run": job.next_run_ms.filter(|_| job.enabled).map(|ms| local_time(ms, zone)),
            "last_run": job.last_run_ms.map(|ms| local_time(ms, zone)),
            "last_outcome": job.last_outcome,
            "failures": job.failures,
        })
    }

    /// The job, with its next three fire times in the owner's zone.
    fn described_with_next(&self, job: &Job) -> Value {
        let zone = self.scheduler.jobs().owner_zone();
        let now = self.scheduler.jobs().clock().now();
        let next: Vec<String> = match (job.enabled, job.schedule()) {
            (true, Ok(Schedule::Once(at))) if at > now => {
                vec![local_time(at.as_millisecond(), zone)]
            }
            (true, Ok(s @ Schedule::Cron { .. })) => s
                .upcoming(now, 3)
                .iter()
                .map(|t| local_time(t.as_millisecond(), zone))
                .collect(),
            _ => Vec::new(),
        };
        let mut described = self.describe(job);
        described["next_runs"] = json!(next);
        described
    }
}

/// Who is calling, and what they may touch.
struct Who {
    /// The agent calling; `None` for the owner.
    agent: Option<i64>,
}

impl Who {
    fn of(caller: &Caller) -> Result<Who, String> {
        match caller.agent_id() {
            Some(agent) => Ok(Who { agent: Some(agent) }),
            None if !caller.is_scoped() => Ok(Who { agent: None }),
            None => Err("only the owner and the agents schedule jobs".into()),
        }
    }

    /// The one agent whose jobs this caller may touch; `None`: any.
    fn only(&self) -> Option<i64> {
        self.agent.filter(|a| *a != MAIN_AGENT)
    }
}

fn missed(args: &Value) -> Result<Option<Missed>, String> {
    args["missed"]
        .as_str()
        .map(|m| {
            parse_missed(m).ok_or_else(|| {
                format!("field `missed`: {m:?} is not a policy; use \"once\", \"skip\" or \"all\"")
            })
        })
        .transpose()
}

fn optional_str(args: &Value, key: &str) -> Result<Option<String>, String> {
    match &args[key] {
        Value::Null => Ok(None),
        Value::String(s) if !s.trim().is_empty() => Ok(Some(s.trim().to_owned())),
        _ => Err(format!("field `{key}`: must be a non-empty string or null")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scheduler::{Clock, Jobs};
    use hearth_base::caller::ToolScope;
    use hearth_base::channels::events::ChannelEvents;
    use hearth_base::config::{OwnerConfig, SchedulerConfig};
    use hearth_base::store::{Cold, Store};
    use hearth_data::router::{Gate, Router};

    fn tools(dir: &std::path::Path) -> ScheduleTools {
        let db = dir.join("hearth.db");
        let store = Store::open(&db).unwrap();
        store
            .conn()
            .execute(
                "INSERT INTO agents (id, name, created_at_ms) VALUES (2, 'helper', 0)",
                [],
            )
            .unwrap();
        let cold = Cold::open(&db).unwrap();
        let jobs = Jobs::new(
            cold.clone(),
            Clock::system(),
            SchedulerConfig::default(),
            "UTC".into(),
        );
        let router = Arc::new(Router::new(Gate::new(OwnerConfig::default(), None)));
        ScheduleTools {
            scheduler: Arc::new(Scheduler::new(
                Arc::new(jobs),
                router,
                Arc::new(ChannelEvents::default()),
            )),
            people: Arc::new(People::open(cold).unwrap()),
        }
    }

    #[test]
    fn a_sub_agent_schedules_and_sees_only_its_own_jobs() {
        let dir = tempfile::tempdir().unwrap();
        let tools = tools(dir.path());
        let main = Caller::agent(MAIN_AGENT);
        let helper = Caller::scoped_agent(2, ToolScope::from_list(&["manage_schedule".into()]));
        let add = |agent: Option<&str>| {
            let mut args = json!({"action": "add", "kind": "task", "in": "1h", "text": "x"});
            if let Some(agent) = agent {
                args["agent"] = agent.into();
            }
            args
        };
        let err = tools.call(&helper, None, &add(Some("main"))).unwrap_err();
        assert!(err.contains("for itself only"), "{err}");
        let own = tools.call(&helper, None, &add(None)).unwrap();
        assert_eq!(own["agent"], "helper");
        let mains = tools.call(&main, None, &add(None)).unwrap();
        assert_eq!(mains["agent"], "main");
        // The main agent schedules for anyone, and sees everything.
        let for_helper = tools.call(&main, None, &add(Some("helper"))).unwrap();
        assert_eq!(for_helper["agent"], "helper");
        let all = tools.call(&main, None, &json!({"action": "list"})).unwrap();
        assert_eq!(all["jobs"].as_array().unwrap().len(), 3);
        let seen = tools
            .call(&helper, None, &json!({"action": "list"}))
            .unwrap();
        assert_eq!(seen["jobs"].as_array().unwrap().len(), 2);
        let id = mains["id"].as_i64().unwrap();
        for action in ["remove", "disable", "run_now"] {
            let err = tools
                .call(&helper, None, &json!({"action": action, "id": id}))
                .unwrap_err();
            assert!(err.contains(&format!("no job {id}")), "{action}: {err}");
        }
        // A worker or a contact schedules nothing.
        let worker = Caller::worker(7, ToolScope::from_list(&["manage_schedule".into()]));
        let err = tools.call(&worker, None, &add(None)).unwrap_err();
        assert!(err.contains("only the owner and the agents"), "{err}");
    }
}
