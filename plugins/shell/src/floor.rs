//! Production mode's kernel floor for the commands this plugin starts: the
//! host sends it with every `shell_exec` and `process_start` call the
//! owner did not approve ([`hearth_sdk::protocol::Floor`]), and the
//! command runs under it or not at all.
//!
//! The ruleset is built in the parent ([`hearth_sdk::floor`]) from the
//! entries beside each protected path as they are now, and kept until one
//! of the directories it was planned from changes
//! ([`hearth_sdk::floor::Cache`]); the child only restricts itself with
//! the descriptor.

use hearth_sdk::PluginError;
use std::sync::Arc;

use hearth_sdk::floor::{self, Cache, FloorError, Prepared};
use hearth_sdk::protocol::Floor;

/// Prepares `floor` for one call: `None` when the call carries none, or
/// when the kernel has no Landlock at all (the command then runs
/// unconfined, as the daemon said at start). Any other failure refuses the
/// call: a floor the host asked for is never silently dropped.
pub fn prepare(cache: &Cache, floor: Option<&Floor>) -> Result<Option<Arc<Prepared>>, PluginError> {
    let Some(floor) = floor else {
        return Ok(None);
    };
    match cache.prepare(floor) {
        Ok(prepared) => Ok(Some(prepared)),
        Err(FloorError::Unavailable(why)) => {
            tracing::warn!("the command runs without the kernel floor: {why}");
            Ok(None)
        }
        Err(e) => Err(PluginError::failed(format!(
            "the command was not run: it must run under the kernel floor, which cannot be \
             applied ({e})"
        ))),
    }
}

/// The `floor` field of results: what the command ran under.
pub fn describe(prepared: &Prepared) -> String {
    if prepared.scopes_signals() {
        format!(
            "landlock ABI {}: protected paths read-only, signals scoped",
            prepared.abi
        )
    } else {
        format!(
            "landlock ABI {}: protected paths read-only (signals not scoped before ABI {})",
            prepared.abi,
            floor::SIGNAL_SCOPE_ABI
        )
    }
}
