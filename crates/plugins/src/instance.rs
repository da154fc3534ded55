//! A plugin that passed `init`: its state pointer, its description, and safe
//! wrappers around `invoke` and `shutdown`.
//!
//! A plugin that panics (the SDK reports `PANIC`) is disabled: its state may
//! be half-updated, so no further call reaches it, while every other plugin
//! and the daemon carry on.

use std::ffi::c_void;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, RwLock};

use hearth_sdk::abi::{DescribeFn, HearthStr, InvokeFn, ShutdownFn, status};
use hearth_sdk::protocol::{
    CancelAnswer, CancelRequest, ChannelStatus, Description, PluginStatus, ToolSpec, method,
};
use serde_json::Value;

use super::activity::Activity;
use super::bridge::{Bridge, PluginContext};
use super::loader::Library;
use super::running::Tracked;
use super::sink::{MAX_RESULT_BYTES, Sink};
use hearth_base::channels::{CallError, Channel};
use hearth_base::scope::CallScope;

/// A loaded, initialised plugin.
pub struct ActivePlugin {
    /// Its name.
    pub name: String,
    /// Its version.
    pub version: String,
    /// The file it came from.
    pub path: PathBuf,
    describe_fn: DescribeFn,
    invoke_fn: InvokeFn,
    shutdown_fn: ShutdownFn,
    state: StatePtr,
    ctx: &'static PluginContext,
    description: Description,
    /// The tools `describe` declared, shared with every registry rebuild.
    described_tools: Arc<Vec<ToolSpec>>,
    fault: Mutex<Option<String>>,
    /// `true` once `shutdown` ran. Calls hold the read side, so shutdown
    /// waits for calls in flight and no call starts after it.
    shut: RwLock<bool>,
}

/// Why a call into a plugin failed.
#[derive(Debug, Clone, thiserror::Error)]
pub enum InvokeError {
    /// The plugin is disabled (after a panic) or shut down.
    #[error("plugin {plugin} is unavailable: {reason}")]
    Unavailable {
        /// The plugin.
        plugin: String,
        /// Why.
        reason: String,
    },
    /// The plugin answered with an error.
    #[error("{message}")]
    Failed {
        /// The plugin.
        plugin: String,
        /// Its message.
        message: String,
    },
    /// The plugin refused the call for good (`HEARTH_REFUSED`): the same
    /// call again cannot succeed.
    #[error("{message}")]
    Refused {
        /// The plugin.
        plugin: String,
        /// Its message.
        message: String,
    },
    /// The plugin panicked; it is now disabled.
    #[error("plugin {plugin} crashed ({message}); it is disabled until hearth restarts")]
    Panicked {
        /// The plugin.
        plugin: String,
        /// The panic message.
        message: String,
    },
    /// The answer was over the size cap or not what the protocol says.
    #[error("plugin {plugin} answered badly: {why}")]
    BadAnswer {
        /// The plugin.
        plugin: String,
        /// What was wrong.
        why: String,
    },
}

/// Why `init` or `describe` failed.
#[derive(Debug, thiserror::Error)]
#[error("{path}: plugin {name}: {why}")]
pub struct StartError {
    /// The file.
    pub path: PathBuf,
    /// The plugin.
    pub name: String,
    /// What happened.
    pub why: String,
}

struct StatePtr(*mut c_void);

// SAFETY: the ABI requires plugins to accept calls from any thread, and
// several `invoke`s at once.
unsafe impl Send for StatePtr {}
// SAFETY: as above.
unsafe impl Sync for StatePtr {}

impl ActivePlugin {
    /// Runs `init` with `settings`, then `describe`.
    pub(super) fn start(
        library: Library,
        bridge: &std::sync::Arc<Bridge>,
        settings: &Value,
    ) -> Result<ActivePlugin, StartError> {
        let fail = |why: String| StartError {
            path: library.path.clone(),
            name: library.name.clone(),
            why,
        };
        let (ctx, api) = bridge.api_for(&library.name);
        let config = settings.to_string();
        let mut state: *mut c_void = std::ptr::null_mut();
        let mut error = Sink::default();
        let h = &library.header;
        let (Some(init), Some(describe_fn), Some(invoke_fn), Some(shutdown_fn)) =
            (h.init, h.describe, h.invoke, h.shutdown)
        else {
            return Err(fail("the header lacks a function".into()));
        };
        // SAFETY: `api` is leaked (valid forever); the config and the sink
        // outlive the call; the loader checked the header.
        let code = unsafe {
            init(
                api,
                HearthStr::from_str(&config),
                &mut state,
                error.as_ptr(),
            )
        };
        if code != status::OK {
            let text = error.into_text();
            return Err(fail(match code {
                status::PANIC => format!("init crashed: {text}"),
                _ if text.is_empty() => format!("init failed with status {code}"),
                _ => format!("init failed: {text}"),
            }));
        }
        let mut plugin = ActivePlugin {
            name: library.name.clone(),
            version: library.version.clone(),
            path: library.path.clone(),
            describe_fn,
            invoke_fn,
            shutdown_fn,
            state: StatePtr(state),
            ctx,
            description: Description::default(),
            described_tools: Arc::default(),
            fault: Mutex::new(None),
            shut: RwLock::new(false),
        };
        match plugin.describe() {
            Ok(description) => {
                ctx.set_channel(description.channel.as_ref());
                plugin.described_tools = Arc::new(description.tools.clone());
                plugin.description = description;
                Ok(plugin)
            }
            Err(why) => {
                plugin.shutdown();
                Err(fail(format!("describe failed: {why}")))
            }
        }
    }

    /// The tools and channel it declared.
    pub fn description(&self) -> &Description {
        &self.description
    }

    /// The tools it offers now: the list it last set at run time
    /// (`tools.set`), else the one `describe` gave.
    pub fn tools(&self) -> Arc<Vec<ToolSpec>> {
        self.ctx
            .tools()
            .unwrap_or_else(|| Arc::clone(&self.described_tools))
    }

    /// The health of the parts it runs (`plugin.status`); `None` when it
    /// reports none, `Err` when it failed to answer.
    pub fn status(&self) -> Result<Option<PluginStatus>, InvokeError> {
        match self.invoke_coded(method::PLUGIN_STATUS, b"{}") {
            Ok(answer) => {
                serde_json::from_slice(&answer)
                    .map(Some)
                    .map_err(|e| InvokeError::BadAnswer {
                        plugin: self.name.clone(),
                        why: format!("its status is not valid: {e}"),
                    })
            }
            // Not every plugin has parts to report; an older one does not
            // know the method at all.
            Err((status::UNSUPPORTED, _)) => Ok(None),
            Err((_, e)) => Err(e),
        }
    }

    /// Why it was disabled at run time, if it was.
    pub fn fault(&self) -> Option<String> {
        self.fault.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// The last health its channel reported.
    pub fn channel_status(&self) -> Option<ChannelStatus> {
        self.ctx.channel_status()
    }

    /// What its channel did last (messages in, replies out, the age of
    /// its health).
    pub fn channel_activity(&self) -> Activity {
        self.ctx.channel_activity()
    }

    /// Tracks a call about to be made in `scope`: gives it an id, routes
    /// its output to the scope, and asks the plugin to stop it when the
    /// scope is cancelled.
    pub fn track(self: &Arc<Self>, scope: Arc<CallScope>) -> Tracked {
        let plugin = Arc::clone(self);
        self.ctx
            .running()
            .track(scope, move |call_id| plugin.cancel_call(call_id))
    }

    /// Asks the plugin to stop the call `call_id`; logs what it said.
    pub fn cancel_call(&self, call_id: &str) {
        let request = CancelRequest {
            call_id: call_id.to_owned(),
        };
        let payload = serde_json::to_vec(&request).unwrap_or_default();
        match self.invoke(method::TOOL_CANCEL, &payload) {
            Ok(answer) => {
                let cancelled = serde_json::from_slice::<CancelAnswer>(&answer)
                    .map(|a| a.cancelled)
                    .unwrap_or(false);
                tracing::info!(plugin = %self.name, call_id, cancelled, "asked the plugin to stop a call");
            }
            Err(InvokeError::Failed { message, .. }) => {
                tracing::info!(plugin = %self.name, call_id, "the plugin cannot stop its calls: {message}");
            }
            Err(e) => {
                tracing::warn!(plugin = %self.name, call_id, "cannot ask the plugin to stop a call: {e}")
            }
        }
    }

    /// Calls `invoke(method, payload)` and returns the answer's bytes.
    pub fn invoke(&self, method: &str, payload: &[u8]) -> Result<Vec<u8>, InvokeError> {
        self.invoke_coded(method, payload).map_err(|(_, e)| e)
    }

    /// [`ActivePlugin::invoke`], with the status code of a failure.
    fn invoke_coded(&self, method: &str, payload: &[u8]) -> Result<Vec<u8>, (i32, InvokeError)> {
        let shut = self.shut.read().unwrap_or_else(|p| p.into_inner());
        if *shut {
            return Err((status::ERROR, self.unavailable("it has shut down".into())));
        }
        if let Some(fault) = self.fault() {
            return Err((status::ERROR, self.unavailable(fault)));
        }
        let invoke = self.invoke_fn;
        let mut out = Sink::default();
        let payload = HearthStr {
            ptr: payload.as_ptr(),
            len: payload.len(),
        };
        // SAFETY: the state came from init and the plugin is not shut down
        // (we hold the read lock); the strings and sink outlive the call.
        let code = unsafe {
            invoke(
                self.state.0,
                HearthStr::from_str(method),
                payload,
                out.as_ptr(),
            )
        };
        let plugin = self.name.clone();
        match code {
            status::OK => out.into_bytes().ok_or((
                status::ERROR,
                InvokeError::BadAnswer {
                    plugin,
                    why: format!("the answer is over {MAX_RESULT_BYTES} bytes"),
                },
            )),
            status::PANIC => {
                let message = out.into_text();
                tracing::error!(plugin = %self.name, "plugin crashed and is now disabled: {message}");
                *self.fault.lock().unwrap_or_else(|p| p.into_inner()) =
                    Some(format!("disabled after a crash: {message}"));
                Err((code, InvokeError::Panicked { plugin, message }))
            }
            status::REFUSED => Err((
                code,
                InvokeError::Refused {
                    plugin,
                    message: out.into_text(),
                },
            )),
            _ => Err((
                code,
                InvokeError::Failed {
                    plugin,
                    message: out.into_text(),
                },
            )),
        }
    }

    /// Calls the plugin's `shutdown` once; later calls do nothing. Waits for
    /// calls in flight.
    pub(super) fn shutdown(&self) {
        let mut shut = self.shut.write().unwrap_or_else(|p| p.into_inner());
        if std::mem::replace(&mut *shut, true) {
            return;
        }
        // SAFETY: called once, after every other call has returned.
        unsafe { (self.shutdown_fn)(self.state.0) };
    }

    fn describe(&self) -> Result<Description, String> {
        let describe = self.describe_fn;
        let mut out = Sink::default();
        // SAFETY: as in `invoke`.
        let code = unsafe { describe(self.state.0, out.as_ptr()) };
        if code != status::OK {
            return Err(format!("status {code}: {}", out.into_text()));
        }
        let bytes = out.into_bytes().ok_or("the description is too large")?;
        serde_json::from_slice(&bytes).map_err(|e| format!("the description is not valid: {e}"))
    }

    fn unavailable(&self, reason: String) -> InvokeError {
        InvokeError::Unavailable {
            plugin: self.name.clone(),
            reason,
        }
    }
}

/// The outbox and channel events deliver to a plugin through this, and
/// know nothing else of plugins.
impl crate::views::Shows for ActivePlugin {
    fn name(&self) -> &str {
        &self.name
    }

    fn view_input(&self, payload: &[u8]) -> Result<Vec<u8>, String> {
        self.invoke(hearth_sdk::protocol::method::VIEW_INPUT, payload)
            .map_err(|e| e.to_string())
    }
}

impl Channel for ActivePlugin {
    fn spec(&self) -> Option<&hearth_sdk::protocol::ChannelSpec> {
        self.description().channel.as_ref()
    }

    fn call(&self, method: &str, payload: &[u8]) -> Result<Vec<u8>, CallError> {
        let answer = self.invoke(method, payload).map_err(|e| match e {
            InvokeError::Refused { message, .. } => CallError::Refused(message),
            other => CallError::Failed(other.to_string()),
        });
        // Every reply the outbox delivers passes here; a send the plugin
        // refused (and the outbox retries) is not one that went out.
        if answer.is_ok() && method == hearth_sdk::protocol::method::CHANNEL_SEND {
            self.ctx.sent();
        }
        answer
    }
}
