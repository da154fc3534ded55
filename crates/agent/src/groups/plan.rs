//! A group's plan: a summary and deliverables (id, title, description,
//! assignee, dependencies), read from the leader's markdown with a YAML
//! frontmatter block or from its `submit_plan` call, and checked before
//! anyone acts on it.
//!
//! The frontmatter is parsed with a real YAML parser; the checks
//! (`validate`) list every problem at once, each naming the deliverable
//! and field, because the leader gets one more try with that list and the
//! owner sees the same list when the second try fails too.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

/// The largest plan text read (frontmatter and all).
pub const MAX_PLAN_BYTES: usize = 64 * 1024;
/// The most deliverables a plan may have.
pub const MAX_DELIVERABLES: usize = 50;

/// A plan as the leader wrote it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Plan {
    /// What the group will do, in a few sentences.
    #[serde(default)]
    pub summary: String,
    /// The deliverables.
    #[serde(default)]
    pub deliverables: Vec<Deliverable>,
}

/// One deliverable of a plan.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Deliverable {
    /// Unique in the group (`D1`).
    pub id: String,
    /// A short title.
    #[serde(default)]
    pub title: String,
    /// What "done" means.
    #[serde(default)]
    pub description: String,
    /// The member who does it, by agent name.
    #[serde(default)]
    pub assignee: String,
    /// The ids of the deliverables that must be complete first.
    #[serde(default, alias = "dependencies", alias = "depends")]
    pub depends_on: Vec<String>,
}

/// What a plan is checked against.
pub struct Context<'a> {
    /// The members' agent names.
    pub members: &'a [String],
    /// Deliverables already complete from an earlier round, by id: a new
    /// plan may depend on them but not reuse their ids.
    pub complete: &'a BTreeSet<String>,
}

/// Reads a plan from markdown that starts with (or contains) a YAML
/// frontmatter block between `---` lines.
pub fn from_markdown(text: &str) -> Result<Plan, String> {
    if text.len() > MAX_PLAN_BYTES {
        return Err(format!(
            "the plan is {} bytes, over the {MAX_PLAN_BYTES}-byte limit",
            text.len()
        ));
    }
    let yaml = frontmatter(text).ok_or(
        "no YAML frontmatter block: the plan must start with a line `---`, the YAML \
         (summary, deliverables), and a closing line `---`",
    )?;
    yaml_serde::from_str::<Plan>(yaml).map_err(|e| format!("the plan's YAML: {e}"))
}

/// Reads a plan from `submit_plan`'s arguments.
pub fn from_json(value: &serde_json::Value) -> Result<Plan, String> {
    serde_path_to_error::deserialize(value)
        .map_err(|e| format!("field `{}`: {}", e.path(), e.inner()))
}

/// Every problem with `plan`, empty when it may run.
pub fn validate(plan: &Plan, context: &Context) -> Vec<String> {
    let mut errors = Vec::new();
    if plan.deliverables.is_empty() {
        errors.push("the plan has no deliverables: it needs at least one".to_owned());
    }
    if plan.deliverables.len() > MAX_DELIVERABLES {
        errors.push(format!(
            "the plan has {} deliverables, over the limit of {MAX_DELIVERABLES}",
            plan.deliverables.len()
        ));
    }
    if plan.summary.chars().count() > 4000 {
        errors.push("`summary` is over 4,000 characters".to_owned());
    }
    let mut ids = BTreeSet::new();
    for (i, d) in plan.deliverables.iter().enumerate() {
        let at = if d.id.trim().is_empty() {
            format!("deliverable {}", i + 1)
        } else {
            format!("deliverable {}", d.id)
        };
        if d.id.trim().is_empty() || d.id.len() > 40 || d.id.chars().any(char::is_whitespace) {
            errors.push(format!(
                "{at}: `id` must be 1 to 40 characters without spaces"
            ));
        } else if !ids.insert(d.id.as_str()) {
            errors.push(format!("{at}: the id is used twice"));
        } else if context.complete.contains(&d.id) {
            errors.push(format!(
                "{at}: {} is already complete; give new work a new id",
                d.id
            ));
        }
        if d.title.trim().is_empty() {
            errors.push(format!("{at}: `title` is empty"));
        } else if d.title.chars().count() > 200 {
            errors.push(format!("{at}: `title` is over 200 characters"));
        }
        if d.description.chars().count() > 8000 {
            errors.push(format!("{at}: `description` is over 8,000 characters"));
        }
        if d.depends_on.len() > MAX_DELIVERABLES {
            errors.push(format!(
                "{at}: `depends_on` names over {MAX_DELIVERABLES} ids"
            ));
        }
        if !context
            .members
            .iter()
            .any(|m| m.eq_ignore_ascii_case(d.assignee.trim()))
        {
            errors.push(format!(
                "{at}: assignee {:?} is not a member (members: {})",
                d.assignee,
                context.members.join(", ")
            ));
        }
    }
    for d in &plan.deliverables {
        for dep in &d.depends_on {
            if dep == &d.id {
                errors.push(format!("deliverable {}: it depends on itself", d.id));
            } else if !ids.contains(dep.as_str()) && !context.complete.contains(dep) {
                errors.push(format!(
                    "deliverable {}: dependency {dep:?} is not a deliverable of the plan",
                    d.id
                ));
            }
        }
    }
    if let Some(cycle) = cycle(plan) {
        errors.push(format!(
            "the dependencies form a cycle: {}",
            cycle.join(" → ")
        ));
    }
    errors
}

/// The plan as markdown with its frontmatter: what `plan.md` holds.
pub fn to_markdown(plan: &Plan, mission: &str) -> String {
    let yaml = yaml_serde::to_string(plan).unwrap_or_default();
    let mut body = format!(
        "---\n{yaml}---\n\n# Mission\n\n{mission}\n\n# Plan\n\n{}\n",
        plan.summary
    );
    for d in &plan.deliverables {
        let after = if d.depends_on.is_empty() {
            String::new()
        } else {
            format!(" (after {})", d.depends_on.join(", "))
        };
        body.push_str(&format!(
            "\n## {}: {}\n\nAssigned to {}{after}.\n\n{}\n",
            d.id, d.title, d.assignee, d.description
        ));
    }
    body
}

/// The frontmatter's YAML: between a `---` line and the next one. Leading
/// prose (a model's "Here is the plan:") is skipped.
fn frontmatter(text: &str) -> Option<&str> {
    let mut offset = 0;
    let mut start = None;
    for line in text.split_inclusive('\n') {
        let bare = line.trim_end();
        if bare == "---" {
            match start {
                None => start = Some(offset + line.len()),
                Some(s) => return Some(&text[s..offset]),
            }
        }
        offset += line.len();
    }
    None
}

/// A cycle among the plan's dependencies, as ids, if there is one.
fn cycle(plan: &Plan) -> Option<Vec<String>> {
    let edges: BTreeMap<&str, Vec<&str>> = plan
        .deliverables
        .iter()
        .map(|d| {
            (
                d.id.as_str(),
                d.depends_on.iter().map(String::as_str).collect(),
            )
        })
        .collect();
    // Depth-first, with the path kept: 0 unseen, 1 on the path, 2 done.
    let mut state: BTreeMap<&str, u8> = BTreeMap::new();
    fn visit<'a>(
        id: &'a str,
        edges: &BTreeMap<&'a str, Vec<&'a str>>,
        state: &mut BTreeMap<&'a str, u8>,
        path: &mut Vec<&'a str>,
    ) -> Option<Vec<String>> {
        match state.get(id) {
            Some(2) => return None,
            Some(1) => {
                let from = path.iter().position(|p| *p == id).unwrap_or(0);
                let mut cycle: Vec<String> = path[from..].iter().map(|s| (*s).to_owned()).collect();
                cycle.push(id.to_owned());
                return Some(cycle);
            }
            _ => {}
        }
        state.insert(id, 1);
        path.push(id);
        for next in edges.get(id).into_iter().flatten() {
            if edges.contains_key(next) && *next != id {
                if let Some(found) = visit(next, edges, state, path) {
                    return Some(found);
                }
            }
        }
        path.pop();
        state.insert(id, 2);
        None
    }
    let mut path = Vec::new();
    edges
        .keys()
        .find_map(|id| visit(id, &edges, &mut state, &mut path))
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = "Here is my plan.\n---\nsummary: Build it\ndeliverables:\n  - id: D1\n    title: Design\n    assignee: ada\n  - id: D2\n    title: Build\n    assignee: bob\n    depends_on: [D1]\n---\n# Notes\n";

    fn members() -> Vec<String> {
        vec!["ada".into(), "bob".into()]
    }

    fn check(plan: &Plan) -> Vec<String> {
        validate(
            plan,
            &Context {
                members: &members(),
                complete: &BTreeSet::new(),
            },
        )
    }

    #[test]
    fn markdown_with_frontmatter_is_read_and_written_back() {
        let plan = from_markdown(GOOD).unwrap();
        assert_eq!(plan.deliverables.len(), 2);
        assert_eq!(plan.deliverables[1].depends_on, ["D1"]);
        assert!(check(&plan).is_empty());
        let again = from_markdown(&to_markdown(&plan, "the mission")).unwrap();
        assert_eq!(again, plan);
    }

    #[test]
    fn each_problem_is_named() {
        let cases: [(&str, &str); 7] = [
            ("deliverables: []", "no deliverables"),
            (
                "deliverables:\n  - {id: D1, title: x, assignee: carol}",
                "assignee \"carol\" is not a member",
            ),
            (
                "deliverables:\n  - {id: D1, title: x, assignee: ada, depends_on: [D9]}",
                "dependency \"D9\" is not a deliverable",
            ),
            (
                "deliverables:\n  - {id: A, title: x, assignee: ada, depends_on: [B]}\n  - {id: B, title: y, assignee: bob, depends_on: [A]}",
                "cycle: A → B → A",
            ),
            (
                "deliverables:\n  - {id: D1, title: x, assignee: ada}\n  - {id: D1, title: y, assignee: ada}",
                "the id is used twice",
            ),
            (
                "deliverables:\n  - {id: D1, title: x, assignee: ada, depends_on: [D1]}",
                "depends on itself",
            ),
            (
                "deliverables:\n  - {id: D1, assignee: ada}",
                "`title` is empty",
            ),
        ];
        for (yaml, expected) in cases {
            let plan = from_markdown(&format!("---\n{yaml}\n---\n")).unwrap();
            let errors = check(&plan);
            assert!(
                errors.iter().any(|e| e.contains(expected)),
                "{yaml}: {errors:?}"
            );
        }
    }

    #[test]
    fn bad_yaml_and_hostile_input_are_refused_clearly() {
        let cases: [(&str, &str); 5] = [
            ("no frontmatter at all", "no YAML frontmatter"),
            ("---\nsummary: [unclosed\n---\n", "the plan's YAML"),
            (
                "---\nsummary: x\nbudget: 5\n---\n",
                "unknown field `budget`",
            ),
            (
                "---\ndeliverables:\n  - {id: D1, title: x, assignee: ada, depends_on: D2}\n---\n",
                "the plan's YAML",
            ),
            (
                "---\na: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: [*c, *c, *c, *c, *c, *c, *c, *c, *c]\n---\n",
                "the plan's YAML",
            ),
        ];
        for (text, expected) in cases {
            let error = from_markdown(text).unwrap_err();
            assert!(error.contains(expected), "{text}: {error}");
        }
        let huge = format!("---\nsummary: {}\n---\n", "x".repeat(MAX_PLAN_BYTES));
        assert!(from_markdown(&huge).unwrap_err().contains("over the"));
    }

    #[test]
    fn a_later_round_may_depend_on_completed_work_but_not_reuse_its_id() {
        let complete: BTreeSet<String> = ["D1".to_owned()].into();
        let plan = from_markdown(
            "---\ndeliverables:\n  - {id: D5, title: x, assignee: ada, depends_on: [D1]}\n  - {id: D1, title: y, assignee: bob}\n---\n",
        )
        .unwrap();
        let errors = validate(
            &plan,
            &Context {
                members: &members(),
                complete: &complete,
            },
        );
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(errors[0].contains("already complete"));
    }

    #[test]
    fn submit_plan_arguments_name_the_bad_field() {
        let error = from_json(&serde_json::json!({
            "summary": "s",
            "deliverables": [{ "id": "D1", "title": "t", "assignee": 5 }]
        }))
        .unwrap_err();
        assert!(error.contains("deliverables[0].assignee"), "{error}");
    }
}
