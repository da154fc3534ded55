//! What the owner and the channels hear of a group.
//!
//! Every change is pushed whole to the channels that show groups (the
//! canvas) and written to the shared folder. The owner's chat hears only
//! milestones: a plan ready (with an approval card on every channel that
//! shows confirmations), a plan to assign by hand, a deliverable complete
//! or failed, the mission complete or stopped; never each step.

use hearth_sdk::protocol::{ChannelEvent, ConfirmationRequest, ConfirmationState};
use serde_json::json;

use super::plan::Plan;
use super::store::{self, Group, Status};
use super::{Groups, mirror, view};
use hearth_base::store::now_ms;

/// The prefix of a plan card's id: `group-plan-<group id>-<round>`.
const CARD: &str = "group-plan-";
/// How long a plan card is shown as open: the plan waits as long as the
/// owner takes; after this a channel may drop the card, and the plan still
/// waits for `/groups NAME approve`.
const CARD_DAYS: i64 = 7;

impl Groups {
    /// After any change to group `id`: the folder and the live view.
    pub(super) fn changed(&self, id: i64) {
        self.refresh(id, true);
    }

    /// Writes the folder of group `id` (with `files`) and pushes its view
    /// to the channels that show groups.
    fn refresh(&self, id: i64, files: bool) {
        if !files && !self.events.shows_groups() {
            return;
        }
        let read = {
            let conn = self.cold.lock();
            store::by_id(&conn, id).and_then(|g| {
                Ok((
                    store::members(&conn, id)?,
                    store::deliverables(&conn, id)?,
                    store::posts(&conn, id, None, mirror::LOG_ENTRIES)?,
                    g,
                ))
            })
        };
        let (members, deliverables, posts, group) = match read {
            Ok(read) => read,
            Err(e) => {
                tracing::warn!(group = id, "cannot read a group to show it: {e}");
                return;
            }
        };
        if files {
            if let Err(e) = mirror::write(&self.dir, &group, &members, &deliverables, &posts) {
                tracing::warn!(group = %group.name, "cannot write the group's folder: {e}");
            }
        }
        if self.events.shows_groups() {
            self.events
                .group(view::of(&group, &members, &deliverables, &posts));
        }
    }

    /// At start: the view of every group not archived (a channel keeps
    /// the last one it was sent), and the cards of plans still waiting.
    /// The folders are as the last change left them.
    pub(super) fn announce_all(&self) {
        let groups = store::list(&self.cold.lock()).unwrap_or_default();
        for group in groups.into_iter().filter(|g| g.status != Status::Archived) {
            self.refresh(group.id, false);
            if group.status == Status::AwaitingApproval && group.plan_errors.is_empty() {
                if let Some(plan) = &group.plan {
                    self.card(&group, plan);
                }
            }
        }
    }

    /// Makes `change` and queues `told` for the owner in one transaction:
    /// a milestone is never lost to a crash between the two.
    pub(super) fn milestone(
        &self,
        told: &str,
        change: impl FnOnce(&rusqlite::Connection) -> Result<(), super::GroupError>,
    ) -> Result<(), super::GroupError> {
        let (channel, chat) = self.reach.owner_address_or_later();
        {
            let conn = self.cold.lock();
            store::atomic(&conn, || {
                change(&conn)?;
                hearth_data::router::outbox::enqueue(&conn, &channel, &chat, told, &[])?;
                Ok(())
            })?;
        }
        self.router.outbox_wake.notify_one();
        Ok(())
    }

    /// A message for the owner, through the outbox.
    pub(super) fn tell_owner(&self, text: &str) {
        let (channel, chat) = self.reach.owner_address_or_later();
        let stored =
            hearth_data::router::outbox::enqueue(&self.cold.lock(), &channel, &chat, text, &[]);
        match stored {
            Ok(_) => self.router.outbox_wake.notify_one(),
            Err(e) => tracing::warn!("cannot queue a group message for the owner: {e}"),
        }
    }

    /// The leader's plan passed the checks: it runs at once with
    /// `auto_execute`, else it waits for the owner.
    pub(super) fn plan_ready(&self, group: &Group, plan: Plan) -> Result<(), super::GroupError> {
        let store = |conn: &rusqlite::Connection| {
            store::store_plan(conn, group.id, Some(&plan), &[], Status::AwaitingApproval)?;
            store::post(
                conn,
                group.id,
                None,
                None,
                "system",
                "The leader's plan is ready.",
            )
        };
        if group.auto_execute {
            store(&self.cold.lock())?;
            let group = store::by_id(&self.cold.lock(), group.id)?;
            return self.approve(&group, "auto_execute");
        }
        let told = format!(
            "Group {} has a plan for its mission:\n{}\n\nApprove it with /groups {0} approve, or \
             send it back with /groups {0} reject REASON.",
            group.name,
            plan_lines(&plan)
        );
        self.milestone(&told, store)?;
        self.changed(group.id);
        let group = store::by_id(&self.cold.lock(), group.id)?;
        self.card(&group, &plan);
        Ok(())
    }

    /// The leader's tries failed: the plan waits for the owner to assign
    /// it by hand.
    pub(super) fn plan_by_hand(
        &self,
        group: &Group,
        plan: Option<Plan>,
        errors: &[String],
    ) -> Result<(), super::GroupError> {
        let shown = plan.as_ref().map(plan_lines).unwrap_or_default();
        let told = format!(
            "Group {0}'s leader could not make a valid plan. Problems:\n- {1}\n{shown}\n\nAssign \
             it by hand (/groups {0} assign ID MEMBER, or hearth groups plan {0} FILE), then \
             approve it with /groups {0} approve.",
            group.name,
            errors.join("\n- ")
        );
        self.milestone(&told, |conn| {
            store::store_plan(
                conn,
                group.id,
                plan.as_ref(),
                errors,
                Status::AwaitingApproval,
            )?;
            store::post(
                conn,
                group.id,
                None,
                None,
                "system",
                &format!(
                    "The leader's plan was refused twice; it needs assigning by hand:\n- {}",
                    errors.join("\n- ")
                ),
            )
        })?;
        self.changed(group.id);
        Ok(())
    }

    /// Shows the approval card of `group`'s current plan on every channel
    /// that shows confirmations.
    pub(super) fn card(&self, group: &Group, plan: &Plan) {
        if !self.events.can_confirm() {
            return;
        }
        let deliverables: Vec<_> = plan
            .deliverables
            .iter()
            .map(|d| json!({ "id": d.id, "title": d.title, "assignee": d.assignee, "depends_on": d.depends_on }))
            .collect();
        let args = json!({
            "group": group.name,
            "mission": group.mission,
            "summary": plan.summary,
            "deliverables": deliverables,
        });
        let now = now_ms();
        let request = ConfirmationRequest {
            id: card_id(group),
            tool: "group plan".into(),
            fingerprint: hearth_policy::confirm::fingerprint("group plan", &args),
            command: Some(plan_lines(plan)),
            args,
            cwd: None,
            mode: None,
            reason: format!(
                "group {}'s leader planned the mission: approve to start it, deny to send it back",
                group.name
            ),
            at_ms: now,
            expires_at_ms: now + CARD_DAYS * 24 * 3_600_000,
        };
        // Stored like a tool call's question, so a channel that rebuilds
        // its cards from the history (a reloaded canvas) shows it; a
        // restart shows it again under the same id.
        let stored = self.cold.lock().execute(
            "INSERT OR REPLACE INTO confirmations (id, tool, args, command, reason, fingerprint, \
             at_ms, expires_at_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            rusqlite::params![
                request.id,
                request.tool,
                request.args.to_string(),
                request.command,
                request.reason,
                request.fingerprint,
                request.at_ms,
                request.expires_at_ms
            ],
        );
        if let Err(e) = stored {
            tracing::warn!(group = %group.name, "cannot store the plan's card: {e}");
        }
        self.events.broadcast(&ChannelEvent::Confirmation(request));
    }

    /// Marks the card of `group`'s plan decided, stored and on every
    /// channel.
    pub(super) fn card_decided(&self, group: &Group, approved: bool, by: &str) {
        let state = if approved {
            ConfirmationState::Approved
        } else {
            ConfirmationState::Denied
        };
        let stored = self.cold.lock().execute(
            "UPDATE confirmations SET state = ?2, decided_by = ?3, decided_at_ms = ?4 \
             WHERE id = ?1 AND state = 'pending'",
            rusqlite::params![
                card_id(group),
                if approved { "approved" } else { "denied" },
                by,
                now_ms()
            ],
        );
        if let Err(e) = stored {
            tracing::warn!(group = %group.name, "cannot record the plan card's answer: {e}");
        }
        self.events.broadcast(&ChannelEvent::ConfirmationDecided {
            id: card_id(group),
            state,
            decided_by: by.to_owned(),
        });
    }

    /// The owner answered a card: whether it was a plan card still open.
    pub(super) fn answer_card(
        &self,
        id: &str,
        approve: bool,
        reason: Option<&str>,
        by: &str,
    ) -> bool {
        let Some((group, round)) = id
            .strip_prefix(CARD)
            .and_then(|rest| rest.split_once('-'))
            .and_then(|(g, r)| Some((g.parse::<i64>().ok()?, r.parse::<i64>().ok()?)))
        else {
            return false;
        };
        let Ok(group) = store::by_id(&self.cold.lock(), group) else {
            return false;
        };
        if group.plan_round != round || group.status != Status::AwaitingApproval {
            return false;
        }
        let outcome = if approve {
            self.approve(&group, by)
        } else {
            self.reject(&group, reason.unwrap_or_default(), by)
        };
        match outcome {
            Ok(()) => true,
            Err(e) => {
                self.tell_owner(&format!("Group {}: {e}", group.name));
                false
            }
        }
    }
}

/// The id of the card for `group`'s current plan round.
fn card_id(group: &Group) -> String {
    format!("{CARD}{}-{}", group.id, group.plan_round)
}

/// The plan in a few lines.
pub(super) fn plan_lines(plan: &Plan) -> String {
    let mut text = plan.summary.trim().to_owned();
    for d in &plan.deliverables {
        let after = if d.depends_on.is_empty() {
            String::new()
        } else {
            format!(" (after {})", d.depends_on.join(", "))
        };
        text.push_str(&format!(
            "\n- {}: {} — {}{after}",
            d.id, d.title, d.assignee
        ));
    }
    text.trim().to_owned()
}
