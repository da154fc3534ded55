//! A turn's side of usage and budgets: each model call the turn makes is
//! recorded, and a spent budget ends the turn with a reply that says which
//! budget, how much was used and what happens next.
//!
//! That reply goes where the turn's reply goes. When that is a contact,
//! the contact hears only that the agent cannot answer now, and the owner
//! is told why (about the daily budget once a day): the owner's budgets
//! are no contact's business.

use super::Agent;
use super::history::{Claimed, Speaker};
use hearth_base::store::now_ms;
use hearth_model::llm::{ChatResponse, Llm};
use hearth_model::usage::{Call, Kind};

/// What a contact hears when a budget ends their turn.
const TO_CONTACT: &str = "I can't answer right now; please try again later.";

impl Agent {
    /// Records a model call `claimed`'s turn made in `session`.
    pub(super) fn record_call(
        &self,
        llm: &Llm,
        kind: Kind,
        session: i64,
        claimed: &Claimed,
        response: &ChatResponse,
    ) {
        let call = Call {
            agent: self.profile.id,
            session: Some(session),
            turn: Some(claimed.id),
            kind,
            provider: llm.provider(),
            model: &response.model,
        };
        self.base.usage.record(&call, &response.usage);
    }

    /// Whether `claimed`'s turn may make another model call (no budget is
    /// spent); tells no one.
    pub(super) fn may_call(&self, claimed: &Claimed) -> bool {
        self.base.usage.check(Some(claimed.id)).is_ok()
    }

    /// The reply that ends `claimed`'s turn when a budget is spent.
    pub(super) fn budget_spent(&self, claimed: &Claimed) -> Option<String> {
        let spent = self.base.usage.check(Some(claimed.id)).err()?;
        let reply = spent.reply(now_ms());
        tracing::warn!(inbox = claimed.id, agent = %self.profile.name, "{reply}");
        let Speaker::Contact(name) = &claimed.speaker else {
            return Some(reply);
        };
        if self.base.usage.tell_owner(&spent) {
            let notice = format!(
                "[hearth: {} could not answer {name} on {}. {reply}]",
                self.profile.name, claimed.channel
            );
            let (channel, chat) = self.base.reach.owner_address_or_later();
            match self.base.conversations.notice(&channel, &chat, &notice) {
                Ok(_) => self.base.router.outbox_wake.notify_one(),
                Err(e) => tracing::error!("cannot tell the owner a budget is spent: {e}"),
            }
        }
        Some(TO_CONTACT.into())
    }
}
