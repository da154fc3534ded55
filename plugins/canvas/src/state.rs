//! What every HTTP handler shares: the [`Server`] state and the session
//! check. Its own file so the routes (`server`) and the handlers that
//! live elsewhere (`files`, `pages`) all read it without importing each
//! other in a circle.

use std::sync::Arc;

use axum::http::{HeaderMap, header};

use crate::auth;
use crate::hosts::Hosts;
use crate::hub::Hub;
use crate::limiter::Limiter;

/// What every handler shares.
pub struct Server {
    /// The shared state.
    pub hub: Arc<Hub>,
    /// The token and sessions.
    pub auth: auth::Auth,
    /// `$HEARTH_HOME`.
    pub home: std::path::PathBuf,
    /// `$HEARTH_HOME/shared`, served at `/files/`.
    pub shared: std::path::PathBuf,
    /// The host names requests may be addressed to.
    pub hosts: Hosts,
    /// Flips to `true` when the plugin shuts down.
    pub closing: tokio::sync::watch::Receiver<bool>,
    /// The brake on requests for pages without a session.
    pub pages: Limiter,
}

/// Whether `headers` carry a session cookie this canvas signed.
pub fn has_session(server: &Server, headers: &HeaderMap) -> bool {
    session_cookies(headers).any(|cookie| server.auth.session_valid(cookie))
}

/// The session cookie values in `headers`' `Cookie` headers.
pub fn session_cookies(headers: &HeaderMap) -> impl Iterator<Item = &str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .filter_map(auth::session_cookie)
}
