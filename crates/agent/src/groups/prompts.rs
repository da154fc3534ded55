//! What a group's agents are told: the leader when it plans and sums up,
//! a member when it takes on a deliverable, and the reports built from
//! the tables (the failure a re-plan answers, the fallback summary).

use super::store::{Deliverable, Group, Member, Post};
use crate::agent::profiles::Profile;
use crate::agent::prompt::SystemPrompt;

/// What a member hears when it stops without reporting.
pub const NUDGE: &str = "Your deliverable is not reported complete. Go on with it; when it is \
done, call group_post with type \"complete\" and your result as the content. If you cannot go \
on, say why with group_status (state blocked, blockers).";

const LEADER: &str = "You lead an agent group of hearth, a personal assistant. The owner gave \
the group a mission. When asked to plan, break the mission into deliverables, each assigned to \
one member by name, with dependencies where one needs another's result; members work in \
parallel where the dependencies allow, one deliverable at a time each. Hand the plan in with \
the submit_plan tool, or answer with markdown that starts with a YAML frontmatter block \
(summary, and deliverables with id, title, description, assignee, depends_on). Plan; do not do \
the work yourself.";

const MEMBER: &str = "You are a member of an agent group of hearth, a personal assistant. You \
carry out one deliverable of the group's plan with your tools. Report as you go: group_status \
(working or blocked, progress, blockers), group_post (status, finding, change, question), \
group_decide for a decision the group follows, group_interface for the shared interface \
contract. When your deliverable is done, call group_post with type \"complete\" and your result \
as the content: that is what the others and the owner read. You cannot ask the owner anything.";

/// The leader's system prompt.
pub fn leader_system(profile: &Profile, leader: &Member) -> SystemPrompt {
    SystemPrompt {
        fixed: with_own(LEADER, profile, leader),
        context: String::new(),
    }
}

/// A member's system prompt: who it is (fixed), then the group's plan and
/// shared context (rebuilt at every resume, so it reads the newest
/// decisions; fixed within one run, so the run's calls share a prefix).
pub fn member_system(
    profile: &Profile,
    member: Option<&Member>,
    group: &Group,
    d: &Deliverable,
    shared: &(Vec<Deliverable>, Vec<Post>, Vec<Post>),
) -> SystemPrompt {
    let fixed = match member {
        Some(member) => with_own(MEMBER, profile, member),
        None => MEMBER.to_owned(),
    };
    let mut prompt = String::new();
    let (all, decisions, interfaces) = shared;
    prompt.push_str(&format!(
        "## The group\nGroup: {}\nMission: {}\n",
        group.name,
        group.mission.as_deref().unwrap_or_default()
    ));
    if let Some(plan) = &group.plan {
        prompt.push_str(&format!("Plan: {}\n", plan.summary));
    }
    prompt.push_str("\n## Deliverables\n");
    for x in all {
        let mine = if x.key == d.key { " (yours)" } else { "" };
        prompt.push_str(&format!(
            "- {} \"{}\" by {}: {}{mine}{}\n",
            x.key,
            x.title,
            x.assignee_name,
            x.status,
            after(&x.depends_on)
        ));
    }
    prompt.push_str(&format!("\nYour deliverable: {}\n", d.key));
    for (title, posts) in [("Decisions", decisions), ("Interface contract", interfaces)] {
        if !posts.is_empty() {
            prompt.push_str(&format!("\n## {title}\n"));
            for p in posts {
                prompt.push_str(&format!(
                    "- {} ({}): {}\n",
                    p.content,
                    p.who.as_deref().unwrap_or("hearth"),
                    p.deliverable.as_deref().unwrap_or("-")
                ));
            }
        }
    }
    SystemPrompt {
        fixed,
        context: prompt,
    }
}

/// The first message of a member's run: its assignment, and the results
/// it builds on.
pub fn assignment(group: &Group, d: &Deliverable) -> String {
    format!(
        "Your deliverable in group {}: {} \"{}\".\n\n{}\n\nShared folder: groups/{}/ under \
         $HEARTH_HOME (plan.md, assignments/, shared/).",
        group.name,
        d.key,
        d.title,
        if d.description.is_empty() {
            "(no description: the title says it)"
        } else {
            &d.description
        },
        group.name
    )
}

/// The leader's planning request: the mission, the members and their
/// roles, where a written plan goes (`plan_file`), and (in a later round)
/// what is done and why it plans again.
pub fn planning(
    group: &Group,
    members: &[Member],
    done: &[Deliverable],
    plan_file: &std::path::Path,
) -> String {
    let mut ask = format!(
        "Plan the mission of group {}. Hand the plan in with submit_plan, answer with it, or \
         write it to {} (markdown with the YAML frontmatter).\n\nMission: {}\n\n## Members\n",
        group.name,
        plan_file.display(),
        group.mission.as_deref().unwrap_or_default()
    );
    for m in members {
        let lead = if m.leader { " (leader: you)" } else { "" };
        let role = if m.role.is_empty() {
            String::new()
        } else {
            format!(": {}", m.role)
        };
        ask.push_str(&format!("- {}{lead}{role}\n", m.name));
    }
    if let Some(reason) = &group.replan_reason {
        ask.push_str(&format!("\n## Why you plan again\n{reason}\n"));
        let complete: Vec<&Deliverable> = done.iter().filter(|d| d.status == "complete").collect();
        if !complete.is_empty() {
            ask.push_str(
                "\nComplete already (a new plan may depend on these ids; do not reuse them):\n",
            );
            for d in complete {
                ask.push_str(&format!(
                    "- {} \"{}\": {}\n",
                    d.key,
                    d.title,
                    excerpt(d.result.as_deref().unwrap_or_default(), 500)
                ));
            }
        }
        ask.push_str("\nPlan only the rest of the mission.\n");
    }
    if group.plan_tries > 0 && !group.plan_errors.is_empty() {
        ask.push_str(&format!(
            "\nYour last plan was refused:\n- {}\n",
            group.plan_errors.join("\n- ")
        ));
    }
    ask
}

/// The leader's request for the final summary.
pub fn summary(group: &Group, all: &[Deliverable]) -> String {
    let mut ask = format!(
        "Every deliverable of group {} is complete. Write the final summary for the owner: what \
         was done for the mission and where the results are, in a few short paragraphs.\n\n\
         Mission: {}\n\n## Results\n",
        group.name,
        group.mission.as_deref().unwrap_or_default()
    );
    for d in all {
        ask.push_str(&format!(
            "- {} \"{}\" by {}: {}\n",
            d.key,
            d.title,
            d.assignee_name,
            excerpt(d.result.as_deref().unwrap_or_default(), 2000)
        ));
    }
    ask
}

/// A summary built from the results when the leader could not write one.
pub fn fallback_summary(group: &Group, all: &[Deliverable], why: &str) -> String {
    let mut text = format!(
        "(The leader could not write the summary: {why}. The results:)\nMission: {}\n",
        group.mission.as_deref().unwrap_or_default()
    );
    for d in all {
        text.push_str(&format!(
            "- {} \"{}\" ({}): {}\n",
            d.key,
            d.title,
            d.assignee_name,
            excerpt(d.result.as_deref().unwrap_or_default(), 500)
        ));
    }
    text
}

/// What failed and what it blocked: the reason a re-plan answers.
pub fn failure_report(all: &[Deliverable]) -> String {
    let mut text = String::from("Work failed:\n");
    for d in all.iter().filter(|d| d.status == "failed") {
        text.push_str(&format!(
            "- {} \"{}\" ({}): {}\n",
            d.key,
            d.title,
            d.assignee_name,
            d.error.as_deref().unwrap_or("no reason given")
        ));
    }
    let blocked: Vec<&str> = all
        .iter()
        .filter(|d| d.status == "blocked")
        .map(|d| d.key.as_str())
        .collect();
    if !blocked.is_empty() {
        text.push_str(&format!("Blocked by it: {}\n", blocked.join(", ")));
    }
    text
}

fn with_own(base: &str, profile: &Profile, member: &Member) -> String {
    let mut prompt = base.to_owned();
    if !profile.system_prompt.trim().is_empty() {
        prompt.push_str(&format!(
            "\n\n## Your instructions\n{}",
            profile.system_prompt.trim()
        ));
    }
    prompt.push_str(&format!("\n\n## You\nYou are {}", member.name));
    if !member.role.is_empty() {
        prompt.push_str(&format!(". Your role in the group: {}", member.role));
    }
    prompt.push('.');
    prompt
}

fn after(depends: &[String]) -> String {
    if depends.is_empty() {
        String::new()
    } else {
        format!(" (after {})", depends.join(", "))
    }
}

/// `text` cut at `chars` characters, marked when cut.
pub fn excerpt(text: &str, chars: usize) -> String {
    if text.chars().count() <= chars {
        return text.to_owned();
    }
    let head: String = text.chars().take(chars).collect();
    format!("{head}…")
}
