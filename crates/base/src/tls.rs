//! TLS set-up shared by every HTTPS client in the daemon.
//!
//! rustls needs one process-wide crypto provider. hearth uses ring: aws-lc
//! would double the build time for nothing hearth needs.

/// Installs the ring provider; later calls are no-ops.
pub fn install_crypto_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}
