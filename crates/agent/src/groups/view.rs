//! How a group is shown: the canvas's live view ([`GroupView`], pushed
//! as a channel event on every change) and the compact text `/groups NAME`
//! answers in a chat.

use hearth_sdk::protocol::{DeliverableView, GroupMemberView, GroupPostView, GroupView};

use super::prompts::excerpt;
use super::store::{Deliverable, Group, Member, Post, Status};

/// Comms entries a view carries.
pub const VIEW_POSTS: i64 = 50;

/// The view of a group.
pub fn of(
    group: &Group,
    members: &[Member],
    deliverables: &[Deliverable],
    posts: &[Post],
) -> GroupView {
    GroupView {
        id: group.id,
        name: group.name.clone(),
        status: group.status.as_str().to_owned(),
        mission: group.mission.clone(),
        plan_summary: group.plan.as_ref().map(|p| p.summary.clone()),
        plan_errors: group.plan_errors.clone(),
        summary: group.summary.clone(),
        members: members
            .iter()
            .map(|m| GroupMemberView {
                name: m.name.clone(),
                role: m.role.clone(),
                leader: m.leader,
                state: m.state.clone(),
                progress: m.progress.clone(),
            })
            .collect(),
        deliverables: shown_deliverables(group, deliverables),
        posts: posts
            .iter()
            .rev()
            .take(VIEW_POSTS as usize)
            .rev()
            .map(|p| GroupPostView {
                at_ms: p.at_ms,
                who: p.who.clone().unwrap_or_default(),
                deliverable: p.deliverable.clone().unwrap_or_default(),
                kind: p.kind.clone(),
                content: excerpt(&p.content, 2000),
            })
            .collect(),
    }
}

/// The deliverables as they stand; while a plan waits, the complete ones
/// and the plan's, `planned`.
fn shown_deliverables(group: &Group, deliverables: &[Deliverable]) -> Vec<DeliverableView> {
    let waiting = match (&group.plan, group.status) {
        (Some(plan), Status::AwaitingApproval) => Some(plan),
        _ => None,
    };
    let mut shown: Vec<DeliverableView> = deliverables
        .iter()
        .filter(|d| waiting.is_none() || d.status == "complete")
        .map(|d| DeliverableView {
            id: d.key.clone(),
            title: d.title.clone(),
            assignee: d.assignee_name.clone(),
            status: d.status.clone(),
            depends_on: d.depends_on.clone(),
        })
        .collect();
    if let Some(plan) = waiting {
        shown.extend(plan.deliverables.iter().map(|d| DeliverableView {
            id: d.id.clone(),
            title: d.title.clone(),
            assignee: d.assignee.clone(),
            status: "planned".into(),
            depends_on: d.depends_on.clone(),
        }));
    }
    shown
}

/// The compact text of a group, for a chat.
pub fn text(view: &GroupView) -> String {
    let mut out = format!("{} — {}\n", view.name, view.status);
    if let Some(mission) = &view.mission {
        out.push_str(&format!("Mission: {}\n", excerpt(mission, 300)));
    }
    let members: Vec<String> = view
        .members
        .iter()
        .map(|m| {
            let lead = if m.leader { "★" } else { "" };
            format!("{lead}{} ({})", m.name, m.state)
        })
        .collect();
    out.push_str(&format!("Members: {}\n", members.join(", ")));
    for d in &view.deliverables {
        let after = if d.depends_on.is_empty() {
            String::new()
        } else {
            format!(" ← {}", d.depends_on.join(", "))
        };
        out.push_str(&format!(
            "{} {} {} — {}{after}\n",
            mark(&d.status),
            d.id,
            excerpt(&d.title, 60),
            d.assignee
        ));
    }
    for e in &view.plan_errors {
        out.push_str(&format!("! {e}\n"));
    }
    if view.status == "awaiting-approval" {
        if view.plan_errors.is_empty() {
            out.push_str(&format!(
                "The plan waits for you: /groups {0} approve, or /groups {0} reject REASON\n",
                view.name
            ));
        } else {
            out.push_str(&format!(
                "Assign it by hand: /groups {0} assign ID MEMBER, then /groups {0} approve\n",
                view.name
            ));
        }
    }
    if let Some(summary) = &view.summary {
        out.push_str(&format!("Summary: {}\n", excerpt(summary, 600)));
    }
    out.trim_end().to_owned()
}

/// One line per group, for `/groups`.
pub fn list_line(group: &Group, members: usize) -> String {
    format!(
        "{} — {} ({} member{})",
        group.name,
        group.status.as_str(),
        members,
        if members == 1 { "" } else { "s" }
    )
}

fn mark(status: &str) -> &'static str {
    match status {
        "complete" => "✓",
        "running" => "▶",
        "failed" => "✗",
        "blocked" => "⊘",
        _ => "·",
    }
}
