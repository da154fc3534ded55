//! Opening a plugin file and checking its header, before any of its code
//! beyond the entry point runs.
//!
//! Architecture invariant: native plugins are never unloaded. The library
//! handle is leaked on purpose: code that may still be referenced (a thread
//! the plugin forgot, a TLS destructor) must never be unmapped under it.

use std::path::{Path, PathBuf};

use hearth_sdk::abi::{self, EntryFn, HeaderPrefix, PluginHeader, read_versioned};

/// A library whose header passed every check.
pub struct Library {
    /// The file.
    pub path: PathBuf,
    /// The header, copied with `min(size, ours)`.
    pub header: PluginHeader,
    /// The plugin's name from the header.
    pub name: String,
    /// The plugin's version from the header.
    pub version: String,
}

/// Why a file was not accepted as a plugin. Each message names the file and
/// says what to do.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The file is not there.
    #[error("{path}: no such file; fix `plugins.paths` or build the plugin")]
    Missing {
        /// The file.
        path: PathBuf,
    },
    /// Writable by every user: anyone could swap the code hearth runs.
    #[error("{path}: refused because it is world-writable; run `chmod o-w` on it")]
    WorldWritable {
        /// The file.
        path: PathBuf,
    },
    /// `dlopen` failed: not a library, wrong architecture, missing symbols.
    #[error("{path}: cannot load it as a shared library: {reason}")]
    Open {
        /// The file.
        path: PathBuf,
        /// The loader's message.
        reason: String,
    },
    /// The library does not export the entry point.
    #[error(
        "{path}: not a hearth plugin: it does not export `{symbol}` \
         (build it with hearth_sdk::export_plugin! or define it as in hearth.h)"
    )]
    NoEntryPoint {
        /// The file.
        path: PathBuf,
        /// The missing symbol.
        symbol: &'static str,
    },
    /// The entry point returned null or a header without the magic number.
    #[error("{path}: `hearth_plugin_v1` returned no valid plugin header ({why})")]
    BadHeader {
        /// The file.
        path: PathBuf,
        /// What was wrong.
        why: String,
    },
    /// Built against another ABI major.
    #[error(
        "{path}: built for plugin ABI {plugin_major}.{plugin_minor}, but this hearth speaks \
         ABI {host_major}.{host_minor}; rebuild the plugin against hearth-sdk (or hearth.h) \
         for ABI {host_major}.x"
    )]
    MajorMismatch {
        /// The file.
        path: PathBuf,
        /// The plugin's major.
        plugin_major: u16,
        /// The plugin's minor.
        plugin_minor: u16,
        /// The host's major.
        host_major: u16,
        /// The host's minor.
        host_minor: u16,
    },
    /// Built against a newer minor than the host knows.
    #[error(
        "{path}: built for plugin ABI {plugin_major}.{plugin_minor}, newer than this hearth's \
         ABI {host_major}.{host_minor}; upgrade hearth, or rebuild the plugin against ABI \
         {host_major}.{host_minor}"
    )]
    MinorTooNew {
        /// The file.
        path: PathBuf,
        /// The plugin's major.
        plugin_major: u16,
        /// The plugin's minor.
        plugin_minor: u16,
        /// The host's major.
        host_major: u16,
        /// The host's minor.
        host_minor: u16,
    },
}

/// Opens `path`, finds `hearth_plugin_v1` and checks the header it returns.
pub fn open(path: &Path) -> Result<Library, LoadError> {
    let meta = std::fs::metadata(path).map_err(|_| LoadError::Missing {
        path: path.to_owned(),
    })?;
    {
        use std::os::unix::fs::PermissionsExt;
        if meta.permissions().mode() & 0o002 != 0 {
            return Err(LoadError::WorldWritable {
                path: path.to_owned(),
            });
        }
    }
    // RTLD_NOW surfaces unresolved symbols here, with the file named, instead
    // of as a crash at the first call; RTLD_LOCAL keeps plugins' symbols
    // from colliding with each other.
    // SAFETY: loading a library runs its initialisers; plugins are trusted
    // code by design (docs/plugins.md).
    let lib = unsafe {
        libloading::os::unix::Library::open(
            Some(path),
            libloading::os::unix::RTLD_NOW | libloading::os::unix::RTLD_LOCAL,
        )
    }
    .map_err(|e| LoadError::Open {
        path: path.to_owned(),
        reason: e.to_string(),
    })?;
    // SAFETY: the symbol's type is fixed by the ABI.
    let entry: EntryFn = match unsafe { lib.get::<EntryFn>(abi::ENTRY_SYMBOL.as_bytes()) } {
        Ok(symbol) => *symbol,
        Err(_) => {
            std::mem::forget(lib);
            return Err(LoadError::NoEntryPoint {
                path: path.to_owned(),
                symbol: abi::ENTRY_SYMBOL,
            });
        }
    };
    std::mem::forget(lib);
    // SAFETY: the entry point takes nothing and returns a static header.
    let ptr = unsafe { entry() };
    check_header(path, ptr)
}

/// Validates the header at `ptr` (a loaded library's, or a built-in
/// plugin's) in the order that keeps every read safe: the always-present
/// prefix first, then the size, then the rest.
pub fn check_header(path: &Path, ptr: *const PluginHeader) -> Result<Library, LoadError> {
    let bad = |why: String| LoadError::BadHeader {
        path: path.to_owned(),
        why,
    };
    if ptr.is_null() {
        return Err(bad("null pointer".into()));
    }
    // SAFETY: every version of the header starts with this prefix.
    let prefix = unsafe { ptr.cast::<HeaderPrefix>().read_unaligned() };
    if prefix.magic != abi::MAGIC {
        return Err(bad(format!(
            "magic 0x{:08x}, expected 0x{:08x}",
            prefix.magic,
            abi::MAGIC
        )));
    }
    let versions = (
        prefix.abi_major,
        prefix.abi_minor,
        abi::ABI_MAJOR,
        abi::ABI_MINOR,
    );
    let (plugin_major, plugin_minor, host_major, host_minor) = versions;
    if plugin_major != host_major {
        return Err(LoadError::MajorMismatch {
            path: path.to_owned(),
            plugin_major,
            plugin_minor,
            host_major,
            host_minor,
        });
    }
    if plugin_minor > host_minor {
        return Err(LoadError::MinorTooNew {
            path: path.to_owned(),
            plugin_major,
            plugin_minor,
            host_major,
            host_minor,
        });
    }
    // Version 1.0 already had every field up to `shutdown`; a smaller header
    // is corrupt, not old.
    if (prefix.struct_size as usize) < std::mem::size_of::<PluginHeader>() {
        return Err(bad(format!(
            "struct_size {} is smaller than ABI 1.0's {}",
            prefix.struct_size,
            std::mem::size_of::<PluginHeader>()
        )));
    }
    // SAFETY: the plugin declared `struct_size` readable bytes.
    let header = unsafe { read_versioned(ptr) };
    let missing = [
        ("init", header.init.is_none()),
        ("describe", header.describe.is_none()),
        ("invoke", header.invoke.is_none()),
        ("shutdown", header.shutdown.is_none()),
    ];
    if let Some((which, _)) = missing.iter().find(|(_, none)| *none) {
        return Err(bad(format!("function `{which}` is null")));
    }
    // SAFETY: the header's strings are static in the plugin.
    let (name, version) = unsafe { (header.name.as_bytes(), header.version.as_bytes()) };
    let name = std::str::from_utf8(name)
        .ok()
        .filter(|n| valid_name(n))
        .ok_or_else(|| bad("the name must be 1-64 characters of a-z, 0-9, `_` and `-`".into()))?
        .to_owned();
    let version = String::from_utf8_lossy(version).into_owned();
    Ok(Library {
        path: path.to_owned(),
        header,
        name,
        version,
    })
}

/// Plugin names become config keys and log fields: keep them plain.
fn valid_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-')
}
