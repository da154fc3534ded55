//! The sandbox of the helper programs the host starts on its own (media
//! conversion with ffmpeg): one slot for the whole process. Policy fills
//! it when it installs a home's confinement (the credentials hidden);
//! whoever starts a helper (the model side's speech) takes it from here,
//! so it needs the sandbox, not the policy that decides what it hides.
//!
//! Until policy installs one (a CLI command with no runtime), helpers
//! still get a session of their own and the seccomp filter.

use std::sync::{Arc, LazyLock, Mutex};

use hearth_sdk::sandbox::Helpers;

/// The helpers' sandbox as last installed.
pub fn sandbox() -> Arc<Helpers> {
    Arc::clone(&lock())
}

/// Replaces the helpers' sandbox (policy's `roots::install`).
pub fn install(helpers: Helpers) {
    *lock() = Arc::new(helpers);
}

static INSTALLED: LazyLock<Mutex<Arc<Helpers>>> =
    LazyLock::new(|| Mutex::new(Arc::new(Helpers::new(&[]))));

/// A poisoned slot still holds a usable sandbox.
fn lock() -> std::sync::MutexGuard<'static, Arc<Helpers>> {
    INSTALLED.lock().unwrap_or_else(|p| p.into_inner())
}
