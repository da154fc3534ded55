//! The glue between a [`Plugin`] and the C ABI: the exported header, the
//! `extern "C"` entry points, and the panic guard around each of them.
//!
//! Architecture invariant: a panic never crosses the boundary. Every entry
//! point below runs the plugin inside `catch_unwind` and turns a panic into
//! `status::PANIC` with the panic message in the sink.

use std::ffi::c_void;
use std::mem::size_of;
use std::panic::{AssertUnwindSafe, catch_unwind};

use serde_json::Value;

use crate::abi::{self, HearthSink, HearthStr, HostApi, PluginHeader, read_versioned, status};
use crate::logging::{self, panic_message};
use crate::protocol::{self, method};
use crate::{Host, Plugin, PluginError};

/// Exports a type implementing [`Plugin`] as `hearth_plugin_v1`.
#[macro_export]
macro_rules! export_plugin {
    ($plugin:ty) => {
        /// The plugin's entry point, looked up by the host.
        #[unsafe(no_mangle)]
        pub extern "C" fn hearth_plugin_v1() -> *const $crate::abi::PluginHeader {
            static HEADER: $crate::export::StaticHeader =
                $crate::export::StaticHeader::new::<$plugin>();
            HEADER.as_ptr()
        }
    };
}

/// A plugin header that can live in a `static`.
#[repr(transparent)]
pub struct StaticHeader(PluginHeader);

// SAFETY: the header is immutable, and its pointers refer to 'static strings
// and functions.
unsafe impl Sync for StaticHeader {}

impl StaticHeader {
    /// The header for plugin type `P` in a shared library of its own: its
    /// `init` routes the library's `tracing`, `log` and panic output to the
    /// host, since the library has its own copies of those globals.
    pub const fn new<P: Plugin>() -> Self {
        Self::with_init::<P>(init::<P, true>)
    }

    /// The header for plugin type `P` linked into the host binary. The host
    /// calls it through this very function table, exactly as a loaded
    /// library; only `init` differs: it leaves the process-wide `tracing`
    /// subscriber, `log` logger and panic hook alone, because they are the
    /// host's own and the plugin's events already reach them.
    pub const fn built_in<P: Plugin>() -> Self {
        Self::with_init::<P>(init::<P, false>)
    }

    const fn with_init<P: Plugin>(init: abi::InitFn) -> Self {
        StaticHeader(PluginHeader {
            struct_size: size_of::<PluginHeader>() as u32,
            magic: abi::MAGIC,
            abi_major: abi::ABI_MAJOR,
            abi_minor: abi::ABI_MINOR,
            reserved: 0,
            name: HearthStr::from_str(P::NAME),
            version: HearthStr::from_str(P::VERSION),
            init: Some(init),
            describe: Some(describe::<P>),
            invoke: Some(invoke::<P>),
            shutdown: Some(shutdown::<P>),
        })
    }

    /// The pointer `hearth_plugin_v1` returns.
    pub fn as_ptr(&'static self) -> *const PluginHeader {
        &self.0
    }
}

/// What the state pointer handed to the host points to.
struct State<P> {
    host: HostApi,
    plugin: P,
}

/// `FORWARD_LOGS` is true in a plugin library of its own (see
/// [`StaticHeader::new`]).
unsafe extern "C" fn init<P: Plugin, const FORWARD_LOGS: bool>(
    host: *const HostApi,
    config_json: HearthStr,
    state_out: *mut *mut c_void,
    error: *mut HearthSink,
) -> i32 {
    if host.is_null() || state_out.is_null() {
        return status::INVALID;
    }
    // SAFETY: the host passes a valid API table, kept alive until shutdown.
    let api = unsafe { read_versioned(host) };
    // SAFETY: the config bytes are borrowed for this call.
    let config = unsafe { config_json.as_bytes() };
    guarded(&api, error, || {
        let host = Host::new(api);
        if FORWARD_LOGS {
            logging::install(host);
        }
        let config: Value = if config.is_empty() {
            Value::Object(Default::default())
        } else {
            serde_json::from_slice(config)
                .map_err(|e| PluginError::InvalidArguments(format!("config is not JSON: {e}")))?
        };
        let plugin = P::init(host, config)?;
        let state = Box::new(State { host: api, plugin });
        // SAFETY: checked non-null above; the host owns the slot.
        unsafe { *state_out = Box::into_raw(state).cast() };
        Ok(Vec::new())
    })
}

unsafe extern "C" fn describe<P: Plugin>(state: *mut c_void, out: *mut HearthSink) -> i32 {
    // SAFETY: the host passes back the pointer `init` produced.
    let Some(state) = (unsafe { state.cast::<State<P>>().as_ref() }) else {
        return status::INVALID;
    };
    guarded(&state.host, out, || {
        serde_json::to_vec(&state.plugin.describe()).map_err(|e| PluginError::failed(e.to_string()))
    })
}

unsafe extern "C" fn invoke<P: Plugin>(
    state: *mut c_void,
    method_name: HearthStr,
    payload_json: HearthStr,
    out: *mut HearthSink,
) -> i32 {
    // SAFETY: as in `describe`.
    let Some(state) = (unsafe { state.cast::<State<P>>().as_ref() }) else {
        return status::INVALID;
    };
    // SAFETY: both are borrowed for this call.
    let (method_name, payload) = unsafe { (method_name.as_bytes(), payload_json.as_bytes()) };
    guarded(&state.host, out, || {
        let plugin = &state.plugin;
        match method_name {
            m if m == method::TOOL_CALL.as_bytes() => {
                let call: protocol::ToolCall = parse_payload(payload)?;
                let result = plugin.run_call(call)?;
                serde_json::to_vec(&result).map_err(|e| PluginError::failed(e.to_string()))
            }
            m if m == method::TOOL_CANCEL.as_bytes() => {
                let request: protocol::CancelRequest = parse_payload(payload)?;
                let cancelled = plugin.cancel_call(&request.call_id)?;
                serde_json::to_vec(&protocol::CancelAnswer { cancelled })
                    .map_err(|e| PluginError::failed(e.to_string()))
            }
            m if m == method::PLUGIN_STATUS.as_bytes() => {
                let status = plugin.status()?;
                serde_json::to_vec(&status).map_err(|e| PluginError::failed(e.to_string()))
            }
            m if m == method::CHANNEL_SEND.as_bytes() => {
                let message: protocol::OutboundMessage = parse_payload(payload)?;
                let receipt = plugin.send(message)?;
                serde_json::to_vec(&receipt).map_err(|e| PluginError::failed(e.to_string()))
            }
            m if m == method::VIEW_INPUT.as_bytes() => {
                let input: protocol::ViewInput = parse_payload(payload)?;
                let answer = plugin.view_input(input)?;
                serde_json::to_vec(&answer).map_err(|e| PluginError::failed(e.to_string()))
            }
            m if m == method::CHANNEL_EVENT.as_bytes() => {
                let event: protocol::ChannelEvent = parse_payload(payload)?;
                plugin.event(event)?;
                Ok(b"{}".to_vec())
            }
            other => Err(PluginError::Unsupported(format!(
                "plugin {} has no method {:?}",
                P::NAME,
                String::from_utf8_lossy(other)
            ))),
        }
    })
}

unsafe extern "C" fn shutdown<P: Plugin>(state: *mut c_void) {
    if state.is_null() {
        return;
    }
    // SAFETY: the host passes back the pointer `init` produced, once, last;
    // the plugin allocated it, so the plugin frees it.
    let state = unsafe { Box::from_raw(state.cast::<State<P>>()) };
    let host = Host::new(state.host);
    if let Err(panic) = catch_unwind(AssertUnwindSafe(|| state.plugin.shutdown())) {
        host.log(
            crate::Level::Error,
            P::NAME,
            &format!("panic in shutdown: {}", panic_message(&*panic)),
        );
    }
    // Dropping the plugin may panic too; keep that on this side.
    let _ = catch_unwind(AssertUnwindSafe(move || drop(state)));
}

fn parse_payload<T: serde::de::DeserializeOwned>(payload: &[u8]) -> Result<T, PluginError> {
    serde_json::from_slice(payload).map_err(|e| PluginError::InvalidArguments(e.to_string()))
}

/// Runs `f` with panics caught, writes its bytes (or the error text) to
/// `sink`, and returns the status code.
fn guarded(
    api: &HostApi,
    sink: *mut HearthSink,
    f: impl FnOnce() -> Result<Vec<u8>, PluginError>,
) -> i32 {
    let (code, bytes) = match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(bytes)) => (status::OK, bytes),
        Ok(Err(e @ PluginError::Unsupported(_))) => (status::UNSUPPORTED, e.to_string().into()),
        Ok(Err(e @ PluginError::Refused(_))) => (status::REFUSED, e.to_string().into()),
        Ok(Err(e)) => (status::ERROR, e.to_string().into()),
        Err(panic) => (
            status::PANIC,
            format!("plugin panicked: {}", panic_message(&*panic)).into(),
        ),
    };
    if let (Some(write), false) = (api.write_result, sink.is_null() || bytes.is_empty()) {
        // SAFETY: the sink is the host's, valid for this call; the bytes are
        // borrowed for the duration of `write`, which copies them.
        unsafe {
            write(
                sink,
                HearthStr {
                    ptr: bytes.as_ptr(),
                    len: bytes.len(),
                },
            )
        };
    }
    code
}
