//! The group's shared folder, `$HEARTH_HOME/groups/NAME/`, written from
//! the tables after every change, for people and shell tools to read:
//! `plan.md`, `assignments/<id>.md`, `status/<member>.json`,
//! `comms/log.md`, `shared/decisions.md` and `shared/interfaces.md`.
//!
//! The files are a mirror, never read back as truth (the leader's own
//! `plan.md` is read once, as a plan it hands in). Each is replaced whole
//! through a temporary file, so a reader never sees half of one.

use std::path::Path;

use serde_json::json;

use super::plan;
use super::store::{Deliverable, Group, Member, Post};

/// The most comms entries in `comms/log.md`.
pub const LOG_ENTRIES: i64 = 1000;

/// Writes the folder of `group`.
pub fn write(
    root: &Path,
    group: &Group,
    members: &[Member],
    deliverables: &[Deliverable],
    posts: &[Post],
) -> std::io::Result<()> {
    let dir = root.join(&group.name);
    for sub in ["assignments", "status", "comms", "shared"] {
        std::fs::create_dir_all(dir.join(sub))?;
    }
    if let Some(p) = &group.plan {
        replace(
            &dir.join("plan.md"),
            &plan::to_markdown(p, group.mission.as_deref().unwrap_or_default()),
        )?;
    }
    for d in deliverables {
        let text = format!(
            "# {}: {}\n\nAssigned to: {}\nDepends on: {}\nStatus: {}\n\n{}\n{}{}",
            d.key,
            d.title,
            d.assignee_name,
            if d.depends_on.is_empty() {
                "nothing".to_owned()
            } else {
                d.depends_on.join(", ")
            },
            d.status,
            d.description,
            d.result
                .as_deref()
                .map(|r| format!("\n## Result\n\n{r}\n"))
                .unwrap_or_default(),
            d.error
                .as_deref()
                .map(|e| format!("\n## Error\n\n{e}\n"))
                .unwrap_or_default(),
        );
        replace(
            &dir.join("assignments")
                .join(format!("{}.md", file_name(&d.key))),
            &text,
        )?;
    }
    for m in members {
        let working_on = deliverables
            .iter()
            .find(|d| d.assignee == m.agent_id && d.status == "running")
            .map(|d| d.key.clone());
        let status = json!({
            "member": m.name,
            "role": m.role,
            "leader": m.leader,
            "state": m.state,
            "progress": m.progress,
            "blockers": m.blockers,
            "deliverable": working_on,
        });
        replace(
            &dir.join("status")
                .join(format!("{}.json", file_name(&m.name))),
            &format!("{status:#}\n"),
        )?;
    }
    let line = |p: &Post| {
        format!(
            "- {} {} [{}{}] {}\n",
            utc(p.at_ms),
            p.who.as_deref().unwrap_or("hearth"),
            p.kind,
            p.deliverable
                .as_deref()
                .map(|d| format!(" {d}"))
                .unwrap_or_default(),
            p.content.replace('\n', "\n  ")
        )
    };
    let log: String = posts.iter().map(line).collect();
    replace(
        &dir.join("comms").join("log.md"),
        &format!("# Comms log\n\n{log}"),
    )?;
    for (kind, file, title) in [
        ("decision", "decisions.md", "Decisions"),
        ("interface", "interfaces.md", "Interface contract"),
    ] {
        let body: String = posts.iter().filter(|p| p.kind == kind).map(line).collect();
        replace(
            &dir.join("shared").join(file),
            &format!("# {title}\n\n{body}"),
        )?;
    }
    Ok(())
}

/// `2026-11-27 10:04:05Z`.
fn utc(ms: i64) -> String {
    jiff::Timestamp::from_millisecond(ms)
        .map(|t| t.strftime("%Y-%m-%d %H:%M:%SZ").to_string())
        .unwrap_or_default()
}

/// A name safe as one path component.
fn file_name(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

fn replace(path: &Path, text: &str) -> std::io::Result<()> {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, text)?;
    std::fs::rename(&tmp, path)
}
