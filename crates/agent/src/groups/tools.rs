//! The group's own tools, offered only inside group runs and answered by
//! the engine: the leader's `submit_plan`, and the members' reports
//! `group_status`, `group_post`, `group_decide` and `group_interface`.
//!
//! A member's `group_post` of type `complete` marks its deliverable
//! complete with the post as its result, and ends its run.

use serde_json::{Value, json};

use super::Groups;
use super::run::Handled;
use super::store::{self, Deliverable, Group};
use hearth_model::llm::ToolDef;

/// The leader's tool for handing in a plan.
pub const SUBMIT_PLAN: &str = "submit_plan";
/// The longest post, decision or interface text.
const MAX_TEXT: usize = 20_000;

/// `submit_plan`'s definition.
pub fn submit_plan_def() -> ToolDef {
    ToolDef {
        name: SUBMIT_PLAN.into(),
        description: "Hands in the group's plan: a summary and the deliverables, each with a \
                      unique id, a title, a description of what done means, the member it is \
                      assigned to (by name) and the ids it depends on. It is checked at once; \
                      problems come back as the error."
            .into(),
        parameters: json!({
            "type": "object",
            "properties": {
                "summary": { "type": "string", "maxLength": 4000 },
                "deliverables": {
                    "type": "array",
                    "maxItems": super::plan::MAX_DELIVERABLES,
                    "items": {
                        "type": "object",
                        "properties": {
                            "id": { "type": "string", "maxLength": 40 },
                            "title": { "type": "string", "maxLength": 200 },
                            "description": { "type": "string", "maxLength": 8000 },
                            "assignee": { "type": "string", "maxLength": 40 },
                            "depends_on": { "type": "array", "items": { "type": "string" } }
                        },
                        "required": ["id", "title", "assignee"]
                    }
                }
            },
            "required": ["summary", "deliverables"]
        }),
    }
}

/// The members' tools.
pub fn member_defs() -> Vec<ToolDef> {
    let text = |about: &str| json!({ "type": "string", "minLength": 1, "maxLength": MAX_TEXT, "description": about });
    vec![
        ToolDef {
            name: "group_status".into(),
            description: "Reports where you stand on your deliverable: working or blocked, your \
                          progress in a line, and what blocks you."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "state": { "type": "string", "enum": ["working", "blocked"] },
                    "progress": { "type": "string", "maxLength": 500 },
                    "blockers": { "type": "string", "maxLength": 2000 }
                },
                "required": ["state"]
            }),
        },
        ToolDef {
            name: "group_post".into(),
            description: "Posts to the group's comms log: a status, a finding, a change others \
                          should know of, a question, or (type complete, with your result as the \
                          content) the end of your deliverable."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "type": { "type": "string", "enum": ["status", "finding", "change", "question", "complete"] },
                    "content": text("what you post; for complete, your deliverable's result")
                },
                "required": ["type", "content"]
            }),
        },
        ToolDef {
            name: "group_decide".into(),
            description: "Records a decision the whole group follows (shared/decisions.md).".into(),
            parameters: json!({
                "type": "object",
                "properties": { "text": text("the decision and why") },
                "required": ["text"]
            }),
        },
        ToolDef {
            name: "group_interface".into(),
            description: "Adds to the group's shared interface contract (shared/interfaces.md): \
                          names, formats, paths, APIs others build against."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": { "text": text("the interface") },
                "required": ["text"]
            }),
        },
    ]
}

/// The error a refused plan gets: every problem, and whether another try
/// is left.
pub fn refusal(errors: &[String], again: bool) -> String {
    let list: Vec<String> = errors.iter().map(|e| format!("- {e}")).collect();
    let next = if again {
        "Fix every problem and hand in the whole plan once more (this is your last try)."
    } else {
        "That was the last try: the plan goes to the owner to be assigned by hand."
    };
    format!("The plan was refused:\n{}\n{next}", list.join("\n"))
}

impl Groups {
    /// Answers a member's group tool; `None` for any other tool.
    pub(super) fn member_tool(
        &self,
        group: &Group,
        d: &Deliverable,
        name: &str,
        args: &Value,
    ) -> Option<Handled> {
        let text = |field: &str| -> Result<String, String> {
            let value = args[field].as_str().unwrap_or_default().trim();
            if value.is_empty() {
                return Err(format!("field `{field}`: required, and not empty"));
            }
            Ok(value.chars().take(MAX_TEXT).collect())
        };
        let result = match name {
            "group_status" => {
                let state = match args["state"].as_str() {
                    Some(state @ ("working" | "blocked")) => Ok(state),
                    _ => Err("field `state`: expected \"working\" or \"blocked\"".to_owned()),
                };
                state.and_then(|state| {
                    let progress = args["progress"].as_str().map(short);
                    let blockers = args["blockers"].as_str().map(short);
                    let conn = self.cold.lock();
                    store::set_member_state(
                        &conn,
                        group.id,
                        d.assignee,
                        state,
                        Some(progress.as_deref().unwrap_or_default()),
                        Some(blockers.as_deref().unwrap_or_default()),
                    )
                    .and_then(|()| {
                        let line = match (&progress, &blockers) {
                            (_, Some(b)) if state == "blocked" => format!("blocked: {b}"),
                            (Some(p), _) => format!("{state}: {p}"),
                            _ => state.to_owned(),
                        };
                        store::post(
                            &conn,
                            group.id,
                            Some(d.assignee),
                            Some(&d.key),
                            "status",
                            &line,
                        )
                    })
                    .map(|()| json!({ "ok": true }))
                    .map_err(|e| e.to_string())
                })
            }
            "group_post" => match (args["type"].as_str(), text("content")) {
                (Some("complete"), Ok(result)) => {
                    let told = format!(
                        "Group {}: {} \"{}\" is complete ({}).",
                        group.name, d.key, d.title, d.assignee_name
                    );
                    let done = self.milestone(&told, |conn| {
                        store::finish_deliverable(conn, group.id, d, Ok(&result))?;
                        store::post(
                            conn,
                            group.id,
                            Some(d.assignee),
                            Some(&d.key),
                            "complete",
                            &result,
                        )
                    });
                    return Some(match done {
                        Ok(()) => {
                            self.changed(group.id);
                            Handled {
                                result: Ok(
                                    json!({ "ok": true, "deliverable": d.key, "status": "complete" }),
                                ),
                                stop: true,
                            }
                        }
                        Err(e) => Handled {
                            result: Err(e.to_string()),
                            stop: false,
                        },
                    });
                }
                (Some(kind @ ("status" | "finding" | "change" | "question")), Ok(content)) => {
                    self.own_post(group, d, kind, &content)
                }
                (_, Err(e)) => Err(e),
                (other, _) => Err(format!(
                    "field `type`: {other:?} is not one of status, finding, change, question, complete"
                )),
            },
            "group_decide" | "group_interface" => text("text").and_then(|t| {
                let kind = if name == "group_decide" {
                    "decision"
                } else {
                    "interface"
                };
                self.own_post(group, d, kind, &t)
            }),
            _ => return None,
        };
        if result.is_ok() {
            self.changed(group.id);
        }
        Some(Handled {
            result,
            stop: false,
        })
    }
}

impl Groups {
    /// A member's post of `kind` about its deliverable, as a tool's result.
    fn own_post(
        &self,
        group: &Group,
        d: &Deliverable,
        kind: &str,
        text: &str,
    ) -> Result<Value, String> {
        store::post(
            &self.cold.lock(),
            group.id,
            Some(d.assignee),
            Some(&d.key),
            kind,
            text,
        )
        .map(|()| json!({ "ok": true }))
        .map_err(|e| e.to_string())
    }
}

/// A status line, at most 500 characters.
fn short(text: &str) -> String {
    text.trim().chars().take(500).collect()
}
