//! Who asks for a tool call, and which tools they may ask for.
//!
//! The audit records the caller's label; the registry checks the caller's
//! tool scope before anything else, for every source of call: the model's
//! tool use, `/tool`, and a Lua tool's `hearth.tool` inside a call made by
//! a scoped agent (the scope travels with [`Caller::through`]). It sits
//! in the foundation because the policy, the Lua worker pool and the agent
//! all carry it, and the pool needs nothing else of the policy.

use std::collections::BTreeSet;
use std::sync::Arc;

/// Who asked for a tool call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Caller {
    label: String,
    scope: ToolScope,
    agent: Option<i64>,
}

/// The tools a caller may use.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum ToolScope {
    /// Every tool: the owner, the main agent.
    #[default]
    All,
    /// Only these (a sub-agent's whitelist, a worker's template), by name.
    Only(Arc<BTreeSet<String>>),
}

impl ToolScope {
    /// A scope from a whitelist: `["*"]` is every tool.
    pub fn from_list(names: &[String]) -> ToolScope {
        if names.iter().any(|n| n == "*") {
            ToolScope::All
        } else {
            ToolScope::Only(Arc::new(names.iter().cloned().collect()))
        }
    }

    /// Whether `tool` is in the scope. A Lua tool `skill.tool` is allowed
    /// when the list names it, or names `skill.*`.
    pub fn allows(&self, tool: &str) -> bool {
        match self {
            ToolScope::All => true,
            ToolScope::Only(names) => {
                names.contains(tool)
                    || tool
                        .split_once('.')
                        .is_some_and(|(skill, _)| names.contains(&format!("{skill}.*")))
            }
        }
    }

    /// This scope with `tool` added (a sub-agent always has its reply tool).
    pub fn with(&self, tool: &str) -> ToolScope {
        match self {
            ToolScope::All => ToolScope::All,
            ToolScope::Only(names) => {
                let mut names = (**names).clone();
                names.insert(tool.to_owned());
                ToolScope::Only(Arc::new(names))
            }
        }
    }
}

impl Caller {
    /// The main agent, or any agent with every tool.
    pub fn agent(id: i64) -> Caller {
        Caller::scoped_agent(id, ToolScope::All)
    }

    /// Agent `id`, limited to `scope`.
    pub fn scoped_agent(id: i64, scope: ToolScope) -> Caller {
        Caller {
            label: format!("agent {id}"),
            scope,
            agent: Some(id),
        }
    }

    /// Delegated worker `id`, limited to `scope`.
    pub fn worker(id: i64, scope: ToolScope) -> Caller {
        Caller {
            label: format!("worker {id}"),
            scope,
            agent: None,
        }
    }

    /// The owner, typing `/tool` on a channel.
    pub fn owner(channel: &str) -> Caller {
        Caller::labelled(format!("owner via {channel}"))
    }

    /// A contact, typing `/tool` in a sub-agent's conversation: never
    /// more than `scope`, the scope of the agent that answers them.
    pub fn contact(name: &str, channel: &str, scope: &ToolScope) -> Caller {
        Caller {
            label: format!("contact {name} via {channel}"),
            scope: scope.clone(),
            agent: None,
        }
    }

    /// The owner's `hearth tool call`, run by the daemon through its
    /// control socket.
    pub fn owner_cli() -> Caller {
        Caller::owner("cli")
    }

    /// Someone at this machine: `hearth tool call`, or a program that
    /// embeds the runtime.
    pub fn local() -> Caller {
        Caller::labelled("local".into())
    }

    /// A Lua tool called on behalf of `self`: same scope.
    pub fn through(&self, lua_tool: &str) -> Caller {
        Caller {
            label: format!("{} > lua {lua_tool}", self.label),
            scope: self.scope.clone(),
            agent: self.agent,
        }
    }

    /// The agent making the call (through any Lua tools), if an agent is;
    /// `None` for the owner and this machine.
    pub fn agent_id(&self) -> Option<i64> {
        self.agent
    }

    /// Whether the caller is limited to a list of tools (a sub-agent, a
    /// worker, a contact): such a caller never reaches what belongs to the
    /// owner alone, such as the owner's memory.
    pub fn is_scoped(&self) -> bool {
        self.scope != ToolScope::All
    }

    /// Whether the caller may use `tool`.
    pub fn may_use(&self, tool: &str) -> bool {
        self.scope.allows(tool)
    }

    /// As text, for the audit.
    pub fn as_str(&self) -> &str {
        &self.label
    }

    fn labelled(label: String) -> Caller {
        Caller {
            label,
            scope: ToolScope::All,
            agent: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scope_allows_what_it_lists_and_nothing_else() {
        let scope = ToolScope::from_list(&["echo".into(), "notes.*".into()]);
        for (tool, allowed) in [
            ("echo", true),
            ("notes.add", true),
            ("notes", false),
            ("shell_exec", false),
            ("echo2", false),
            ("notesx.add", false),
        ] {
            assert_eq!(scope.allows(tool), allowed, "{tool}");
        }
        assert!(ToolScope::from_list(&["*".into()]).allows("shell_exec"));
        assert!(!ToolScope::from_list(&[]).allows("echo"));
        // Adding a tool (a sub-agent's reply tool) adds that one only.
        let with = scope.with("send_agent_message");
        assert!(with.allows("send_agent_message") && with.allows("echo"));
        assert!(!with.allows("shell_exec"));
        assert_eq!(ToolScope::All.with("x"), ToolScope::All);
    }

    #[test]
    fn the_scope_travels_through_lua() {
        let caller = Caller::scoped_agent(2, ToolScope::from_list(&["notes.*".into()]));
        let nested = caller.through("notes.add");
        assert!(!nested.may_use("shell_exec"));
        assert_eq!(nested.as_str(), "agent 2 > lua notes.add");
    }
}
