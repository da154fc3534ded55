//! The plugin C ABI, version 1.1: the Rust mirror of `sdk/include/hearth.h`.
//!
//! This module is the only place where the layout of the boundary is
//! written down in Rust. Both the host and the SDK build on it, and a test
//! (`sdk/tests/header_matches.rs`) compiles the C header against the sizes,
//! offsets and constants given here, so the two can never drift apart.
//!
//! Architecture invariant: no Rust type crosses the boundary. Everything here
//! is `#[repr(C)]`, an integer, a raw pointer or an `Option` of an
//! `extern "C"` function pointer (which has the same layout as a nullable C
//! function pointer).

use std::ffi::c_void;
use std::mem::{MaybeUninit, size_of};

/// `"HRTH"`: the field after `struct_size` in every plugin header.
pub const MAGIC: u32 = 0x4852_5448;
/// Plugins with another major are refused.
pub const ABI_MAJOR: u16 = 1;
/// Plugins with a newer minor than the host's are refused.
pub const ABI_MINOR: u16 = 1;
/// The one symbol a plugin exports, without a trailing NUL.
pub const ENTRY_SYMBOL: &str = "hearth_plugin_v1";

/// Status codes returned across the boundary, in both directions.
pub mod status {
    /// Success; a sink holds the JSON result.
    pub const OK: i32 = 0;
    /// Failure; a sink holds a UTF-8 message.
    pub const ERROR: i32 = 1;
    /// The method or service is not known.
    pub const UNSUPPORTED: i32 = 2;
    /// The plugin caught an internal crash (a Rust panic).
    pub const PANIC: i32 = 3;
    /// The host queue stayed full for the whole wait bound, or storing
    /// failed (a full disk); retry later.
    pub const BUSY: i32 = 4;
    /// The host is shutting down and takes nothing more.
    pub const CLOSED: i32 = 5;
    /// The payload was malformed; the host log says why.
    pub const INVALID: i32 = 6;
    /// (Since 1.1, from a plugin) refused for good: the same call again
    /// cannot succeed, so the host does not retry it (a mail server's
    /// 5xx for a reply's recipient).
    pub const REFUSED: i32 = 7;
}

/// Log levels for [`HostApi::log`].
pub mod level {
    /// An error.
    pub const ERROR: u32 = 1;
    /// A warning.
    pub const WARN: u32 = 2;
    /// Information.
    pub const INFO: u32 = 3;
    /// Debugging detail.
    pub const DEBUG: u32 = 4;
    /// Very verbose detail.
    pub const TRACE: u32 = 5;
}

/// Borrowed UTF-8 bytes, valid for the duration of one call.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct HearthStr {
    /// First byte; may be null when `len` is 0.
    pub ptr: *const u8,
    /// Length in bytes.
    pub len: usize,
}

/// A host-owned buffer that a plugin appends to with [`HostApi::write_result`].
#[repr(C)]
pub struct HearthSink {
    _opaque: [u8; 0],
    _not_send_or_unpin: std::marker::PhantomData<(*mut u8, std::marker::PhantomPinned)>,
}

/// `void (*)(void *user, HearthStr bytes)`: receives a host-call answer.
pub type ReceiveFn = unsafe extern "C" fn(user: *mut c_void, bytes: HearthStr);
/// `HearthHostApi.log`.
pub type LogFn =
    unsafe extern "C" fn(ctx: *mut c_void, level: u32, target: HearthStr, message: HearthStr);
/// `HearthHostApi.submit`.
pub type SubmitFn = unsafe extern "C" fn(ctx: *mut c_void, event_json: HearthStr) -> i32;
/// `HearthHostApi.call`.
pub type CallFn = unsafe extern "C" fn(
    ctx: *mut c_void,
    service: HearthStr,
    request_json: HearthStr,
    user: *mut c_void,
    receive: Option<ReceiveFn>,
) -> i32;
/// `HearthHostApi.write_result`.
pub type WriteResultFn = unsafe extern "C" fn(sink: *mut HearthSink, bytes: HearthStr);

/// What the host offers a plugin; valid from `init` until `shutdown` returns.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct HostApi {
    /// `size_of::<HostApi>()` as the host compiled it.
    pub struct_size: u32,
    /// The host's ABI major.
    pub abi_major: u16,
    /// The host's ABI minor.
    pub abi_minor: u16,
    /// Opaque host context, passed back to every callback.
    pub ctx: *mut c_void,
    /// Forward one log record.
    pub log: Option<LogFn>,
    /// Submit an inbound event.
    pub submit: Option<SubmitFn>,
    /// Call a host service.
    pub call: Option<CallFn>,
    /// Append bytes to a host sink.
    pub write_result: Option<WriteResultFn>,
}

/// `HearthPlugin.init`.
pub type InitFn = unsafe extern "C" fn(
    host: *const HostApi,
    config_json: HearthStr,
    state_out: *mut *mut c_void,
    error: *mut HearthSink,
) -> i32;
/// `HearthPlugin.describe`.
pub type DescribeFn = unsafe extern "C" fn(state: *mut c_void, out: *mut HearthSink) -> i32;
/// `HearthPlugin.invoke`.
pub type InvokeFn = unsafe extern "C" fn(
    state: *mut c_void,
    method: HearthStr,
    payload_json: HearthStr,
    out: *mut HearthSink,
) -> i32;
/// `HearthPlugin.shutdown`.
pub type ShutdownFn = unsafe extern "C" fn(state: *mut c_void);
/// The type of `hearth_plugin_v1`.
pub type EntryFn = unsafe extern "C" fn() -> *const PluginHeader;

/// What a plugin exports through `hearth_plugin_v1`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct PluginHeader {
    /// `size_of::<PluginHeader>()` as the plugin compiled it.
    pub struct_size: u32,
    /// Always [`MAGIC`].
    pub magic: u32,
    /// The ABI major the plugin was built against.
    pub abi_major: u16,
    /// The ABI minor the plugin was built against.
    pub abi_minor: u16,
    /// Zero; keeps the layout explicit on every platform.
    pub reserved: u32,
    /// The plugin's name (static UTF-8).
    pub name: HearthStr,
    /// The plugin's version (static UTF-8).
    pub version: HearthStr,
    /// Build the state from the config JSON.
    pub init: Option<InitFn>,
    /// Describe tools and channel.
    pub describe: Option<DescribeFn>,
    /// Run one method.
    pub invoke: Option<InvokeFn>,
    /// Stop and free the state.
    pub shutdown: Option<ShutdownFn>,
}

/// The first fields of every plugin header, present in every version: what
/// the host reads before it trusts `struct_size`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct HeaderPrefix {
    /// See [`PluginHeader::struct_size`].
    pub struct_size: u32,
    /// See [`PluginHeader::magic`].
    pub magic: u32,
    /// See [`PluginHeader::abi_major`].
    pub abi_major: u16,
    /// See [`PluginHeader::abi_minor`].
    pub abi_minor: u16,
}

/// A struct that starts with a `u32` holding its own size and whose all-zero
/// bit pattern is valid, so it can be read with [`read_versioned`].
///
/// # Safety
/// Implementors must be `#[repr(C)]`, start with `struct_size: u32`, and
/// consist only of integers, raw pointers, `HearthStr`s and `Option`s of
/// function pointers.
pub unsafe trait Versioned: Copy {}

// SAFETY: both are repr(C), start with struct_size, and hold only integers,
// raw pointers and optional function pointers.
unsafe impl Versioned for HostApi {}
// SAFETY: as above.
unsafe impl Versioned for PluginHeader {}

/// Copies `min(*ptr.struct_size, size_of::<T>())` bytes from `ptr` into a
/// zeroed `T`: fields a shorter (older) struct lacks read as zero/`None`, and
/// fields a longer (newer) struct has are ignored.
///
/// # Safety
/// `ptr` must point to a readable struct of the family `T` whose first
/// `struct_size` bytes are valid.
pub unsafe fn read_versioned<T: Versioned>(ptr: *const T) -> T {
    let mut out = MaybeUninit::<T>::zeroed();
    // SAFETY: every Versioned type starts with a u32 size field.
    let declared = unsafe { ptr.cast::<u32>().read_unaligned() } as usize;
    let n = declared.min(size_of::<T>());
    // SAFETY: the caller promises `declared` readable bytes; `out` holds
    // size_of::<T>() bytes, and n is at most both.
    unsafe { std::ptr::copy_nonoverlapping(ptr.cast::<u8>(), out.as_mut_ptr().cast::<u8>(), n) };
    // SAFETY: zero is a valid bit pattern for every field (Versioned's contract).
    unsafe { out.assume_init() }
}

impl HearthStr {
    /// Borrows a Rust string for the duration of a call.
    pub const fn from_str(s: &str) -> Self {
        HearthStr {
            ptr: s.as_ptr(),
            len: s.len(),
        }
    }

    /// An empty string (null pointer, zero length).
    pub const fn empty() -> Self {
        HearthStr {
            ptr: std::ptr::null(),
            len: 0,
        }
    }

    /// Views the bytes.
    ///
    /// # Safety
    /// `ptr` must point to `len` readable bytes that outlive `'a` (or be null
    /// with `len == 0`).
    pub unsafe fn as_bytes<'a>(self) -> &'a [u8] {
        if self.ptr.is_null() || self.len == 0 {
            &[]
        } else {
            // SAFETY: guaranteed by the caller.
            unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
        }
    }
}
