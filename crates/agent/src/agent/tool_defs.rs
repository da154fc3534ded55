//! The tool definitions a model request carries, built once per tool set.
//!
//! Every step of a turn sends the model every tool's name, description and
//! JSON Schema (once: the system prompt does not list them again, see
//! `agent::prompt`). Copying thirty schemas
//! out of the registry at every step was a measurable part of a turn; the
//! set only changes when the Lua catalog is swapped or a plugin sets its
//! tools (the registry's generation moves), so it is built once and shared
//! until then. A model sees each name in its wire form (`.` as `__`,
//! `tools::wire_name`), which the APIs accept.

use std::sync::{Arc, Mutex};

use crate::tools::{ToolRegistry, wire_name};
use hearth_base::caller::ToolScope;
use hearth_model::llm::ToolDef;
use hearth_script::Catalog;

/// The current tool definitions of one agent, rebuilt when the script
/// catalog changes. Each agent has its own: a sub-agent is sent only the
/// tools its scope allows (the registry refuses the rest anyway).
#[derive(Default)]
pub struct ToolDefs {
    cached: Mutex<Option<Cached>>,
}

/// What one request needs: the definitions, in the registry's order
/// (which is stable, so the prompt's prefix is too).
#[derive(Clone)]
pub struct Current {
    /// The definitions sent to the model.
    pub tools: Arc<[ToolDef]>,
    /// Their size as JSON, in characters: what they add to every call.
    pub chars: usize,
}

struct Cached {
    /// The catalog the definitions were built from (`None`: no scripts).
    catalog: Option<Arc<Catalog>>,
    /// The registry's plugin tools generation they were built from.
    generation: u64,
    current: Current,
}

impl ToolDefs {
    /// The definitions of `registry`'s tools in `scope` as they are now.
    /// An agent's scope is fixed for its runner's life.
    pub fn current(&self, registry: &ToolRegistry, scope: &ToolScope) -> Current {
        let catalog = registry.scripts().map(|s| s.catalog());
        let generation = registry.generation();
        let mut cached = self.cached.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(c) = cached.as_ref()
            && same(&c.catalog, &catalog)
            && c.generation == generation
        {
            return c.current.clone();
        }
        let mut listed = registry.list();
        listed.retain(|t| scope.allows(&t.spec.name));
        // Two names with one wire form (a Lua `a__b` and a plugin's `a.b`):
        // the model could not tell them apart, so the first (the plain
        // name, which sorts first) is the one it sees.
        let mut wire_names = std::collections::HashSet::new();
        listed.retain(|t| {
            let fresh = wire_names.insert(wire_name(&t.spec.name).into_owned());
            if !fresh {
                tracing::warn!(tool = %t.spec.name, "a tool with the same name as a model sees it comes first; this one is not offered to the model");
            }
            fresh
        });
        let tools: Arc<[ToolDef]> = listed
            .into_iter()
            .map(|t| crate::tools::offered(t.spec))
            .collect();
        let chars = serde_json::to_string(&tools[..]).map_or(0, |json| json.len());
        let current = Current { tools, chars };
        *cached = Some(Cached {
            catalog,
            generation,
            current: current.clone(),
        });
        current
    }
}

fn same(a: &Option<Arc<Catalog>>, b: &Option<Arc<Catalog>>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => Arc::ptr_eq(a, b),
        (None, None) => true,
        _ => false,
    }
}
