//! The web UI, compiled into the plugin: no files to install, no CDN, no
//! build step. Edit `ui/` and rebuild.

/// One embedded file.
pub struct Asset {
    /// Its media type.
    pub mime: &'static str,
    /// Its bytes.
    pub body: &'static [u8],
}

/// The app page.
pub const INDEX: Asset = Asset {
    mime: "text/html; charset=utf-8",
    body: include_bytes!("../ui/index.html"),
};

/// The login page.
pub const LOGIN: Asset = Asset {
    mime: "text/html; charset=utf-8",
    body: include_bytes!("../ui/login.html"),
};

/// The assets a page loads, by path. `public` ones are served without a
/// session (the login page needs them).
pub fn by_path(path: &str) -> Option<(Asset, bool)> {
    Some(match path {
        "/app.js" => (
            Asset {
                mime: "text/javascript; charset=utf-8",
                body: include_bytes!("../ui/app.js"),
            },
            false,
        ),
        "/app.css" => (
            Asset {
                mime: "text/css; charset=utf-8",
                body: include_bytes!("../ui/app.css"),
            },
            false,
        ),
        "/login.css" => (
            Asset {
                mime: "text/css; charset=utf-8",
                body: include_bytes!("../ui/login.css"),
            },
            true,
        ),
        "/favicon.svg" => (
            Asset {
                mime: "image/svg+xml",
                body: include_bytes!("../ui/favicon.svg"),
            },
            true,
        ),
        _ => return None,
    })
}
