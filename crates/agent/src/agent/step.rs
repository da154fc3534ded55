//! One model step outside a conversation's turn, shared by `spawn_agent`'s
//! workers and the agent groups' runs: ask the model, record the call's
//! usage, and run a tool the model asked for on a blocking thread.
//!
//! Both loops are bounded and stored their own way; what a step is, is
//! the same, so it is written once.

use std::sync::Arc;

use serde_json::Value;

use super::prompt::SystemPrompt;
use crate::tools::ToolRegistry;
use hearth_base::caller::Caller;
use hearth_model::llm::{ChatRequest, Llm, Message, Role, ToolDef};
use hearth_model::usage::{Call, Kind, Meter};

/// Whose step it is, for the usage record.
pub struct Who {
    /// The agent the call counts for.
    pub agent: i64,
    /// The session it belongs to.
    pub session: i64,
    /// The turn whose count it adds to, if any.
    pub turn: Option<i64>,
    /// What kind of call.
    pub kind: Kind,
}

/// What groups an agent's requests for providers that route by a key
/// (OpenAI's `prompt_cache_key`): every conversation of one agent starts
/// with the same tools and fixed prompt.
pub fn cache_key(agent: i64) -> String {
    format!("hearth-agent-{agent}")
}

/// Asks the model once and records the call; the answer, with the tokens
/// it took in and out.
pub async fn ask(
    llm: &Llm,
    usage: &Meter,
    who: &Who,
    system: &SystemPrompt,
    messages: &[Message],
    tools: &Arc<[ToolDef]>,
) -> Result<(Message, u64), String> {
    let request = ChatRequest {
        system: system.fixed.clone(),
        context: system.context.clone(),
        cache_key: Some(cache_key(who.agent)),
        messages: messages.to_vec(),
        tools: Arc::clone(tools),
        max_tokens: llm.max_tokens(),
    };
    let response = llm
        .complete(&request)
        .await
        .map_err(|e| format!("the model failed: {e}"))?;
    usage.record(
        &Call {
            agent: who.agent,
            session: Some(who.session),
            turn: who.turn,
            kind: who.kind,
            provider: llm.provider(),
            model: &response.model,
        },
        &response.usage,
    );
    usage.watch(who.session, request, &response.usage);
    let tokens = response.usage.total();
    Ok((
        Message {
            role: Role::Assistant,
            content: response.content,
        },
        tokens,
    ))
}

/// Runs tool `name` as `caller` through the registry on a blocking thread:
/// the result's text, and whether it is an error.
pub async fn call_tool(
    tools: &Arc<ToolRegistry>,
    caller: &Caller,
    name: String,
    input: Value,
) -> (String, bool) {
    let (tools, caller) = (Arc::clone(tools), caller.clone());
    match tokio::task::spawn_blocking(move || tools.call_as(&caller, &name, input, 0)).await {
        Ok(Ok(value)) => (value.to_string(), false),
        Ok(Err(e)) => (e.to_string(), true),
        Err(e) => (format!("the tool call was lost: {e}"), true),
    }
}
