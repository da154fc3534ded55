//! The canvas plugin: the owner's web UI, as a channel.
//!
//! It serves a chat with streamed replies, a pane the agent draws on
//! (`canvas_show`, `canvas_remove`, `canvas_clear`) and the confirmation
//! cards, over HTTP and one WebSocket per browser, on its own tokio runtime
//! (a runtime handle never crosses the plugin boundary).
//!
//! - `settings`: `[plugins.canvas]`;
//! - `auth`: the login token, session cookies, the guess brake;
//! - `hosts`: the host names the canvas answers to;
//! - `server`: routes, the host and session checks, login, uploads;
//! - `files`: `/files` (`shared/`), never anything outside it;
//! - `ws`: one browser's WebSocket;
//! - `hub`: shared state and the broadcast to browsers;
//! - `elements`: the pane's element types and their checks;
//! - `markdown`: safe HTML from the agent's markdown;
//! - `outputs`: the live output of running tool calls;
//! - `live`: the live view (the browser's tab as the agent works) and
//!   `/view/frame`;
//! - `pages`: the agent's pages and their queries, at `/pages/`;
//! - `uploads`: files the owner attaches;
//! - `assets`: the embedded web UI (`ui/`).
//!
//! Protocol and routes are documented in `docs/canvas.md`.

pub mod assets;
pub mod auth;
pub mod elements;
pub mod files;
pub mod hosts;
pub mod hub;
pub mod limiter;
pub mod live;
pub mod markdown;
pub mod outputs;
pub mod pages;
pub mod server;
pub mod settings;
pub mod state;
pub mod uploads;
pub mod ws;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hearth_sdk::protocol::{
    ChannelEvent, ChannelSpec, ChannelState, ChannelStatus, Description, OutboundMessage,
    SendReceipt, Submission,
};
use hearth_sdk::{Host, Plugin, PluginError};
use serde_json::{Value, json};

use hub::Hub;
use settings::Settings;

/// The file in `$HEARTH_HOME` that holds the address the canvas listens
/// on, for `hearth canvas-url`.
pub const ADDRESS_FILE: &str = "canvas.addr";

/// The running canvas.
pub struct Canvas {
    hub: Arc<Hub>,
    runtime: Mutex<Option<tokio::runtime::Runtime>>,
    closing: tokio::sync::watch::Sender<bool>,
}

impl Plugin for Canvas {
    const NAME: &'static str = "canvas";
    const VERSION: &'static str = env!("CARGO_PKG_VERSION");

    fn init(host: Host, config: Value) -> Result<Self, PluginError> {
        let settings = Settings::parse(config)?;
        let info = host
            .info()
            .map_err(|e| PluginError::failed(format!("cannot ask the host where it lives: {e}")))?;
        let home = PathBuf::from(&info.home);
        let hub = Arc::new(Hub::new(
            host,
            uploads::Uploads::new(&home, settings.max_upload_bytes),
        ));
        let (closing, closed) = tokio::sync::watch::channel(false);
        if !info.serving {
            // A CLI command loaded us to list or call tools while the daemon
            // may be serving the canvas: its port is not ours to take.
            return Ok(Canvas {
                hub,
                runtime: Mutex::new(None),
                closing,
            });
        }
        let (auth, created) =
            auth::Auth::load_or_create(&home).map_err(|e| PluginError::failed(e.0))?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("hearth-canvas")
            .enable_all()
            .build()
            .map_err(|e| PluginError::failed(format!("cannot start the canvas runtime: {e}")))?;
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind(settings.listen))
            .map_err(|e| {
                PluginError::failed(format!(
                    "cannot listen on {}: {e}; set another address with [plugins.canvas] listen",
                    settings.listen
                ))
            })?;
        let address = listener
            .local_addr()
            .map_err(|e| PluginError::failed(format!("cannot read the canvas address: {e}")))?;
        write_address(&home, address);
        // `load_or_create` has just read the token; it is gone only if the
        // owner deleted it in this very moment.
        let login = login_url(address, &auth.token().unwrap_or_default());
        if created {
            tracing::info!(
                "canvas login link (shown once; `hearth canvas-url` shows it again): {login}"
            );
        }
        tracing::info!("canvas listening on http://{address}");
        let server = Arc::new(state::Server {
            hub: Arc::clone(&hub),
            auth,
            shared: home.join("shared"),
            hosts: hosts::Hosts::new(address, &settings.allowed_hosts),
            home: home.clone(),
            closing: closed.clone(),
            pages: limiter::Limiter::default(),
        });
        let app = server::router(server);
        let mut stop = closed;
        runtime.spawn(async move {
            let service = app.into_make_service_with_connect_info::<SocketAddr>();
            let served = axum::serve(listener, service)
                .with_graceful_shutdown(async move {
                    let _ = stop.changed().await;
                })
                .await;
            if let Err(e) = served {
                tracing::error!("the canvas server stopped: {e}");
            }
        });
        let _ = host.submit(&Submission::ChannelStatus(ChannelStatus {
            state: ChannelState::Up,
            detail: format!("listening on http://{address}"),
        }));
        Ok(Canvas {
            hub,
            runtime: Mutex::new(Some(runtime)),
            closing,
        })
    }

    fn describe(&self) -> Description {
        Description {
            tools: elements::tools(),
            channel: Some(ChannelSpec {
                name: hub::CHANNEL.into(),
                events: true,
                authenticates_owner: true,
                tool_output: true,
                groups: true,
                views: true,
                ..ChannelSpec::default()
            }),
        }
    }

    fn call_tool(&self, tool: &str, args: Value) -> Result<Value, PluginError> {
        match tool {
            "canvas_show" => {
                let element = elements::build(&args, || self.hub.fresh_id())?;
                let id = element.id.clone();
                self.hub.show(element);
                Ok(json!({ "shown": id, "browsers": self.hub.clients() }))
            }
            "canvas_remove" => {
                let id = args["id"].as_str().unwrap_or_default();
                if self.hub.remove(id) {
                    Ok(json!({ "removed": id }))
                } else {
                    Err(PluginError::InvalidArguments(format!(
                        "field `id`: no element {id:?} is on the canvas"
                    )))
                }
            }
            "canvas_clear" => {
                self.hub.clear();
                Ok(json!({ "cleared": true }))
            }
            other => Err(PluginError::Unsupported(format!("no tool {other:?}"))),
        }
    }

    fn send(&self, message: OutboundMessage) -> Result<SendReceipt, PluginError> {
        self.hub.deliver(&message);
        Ok(SendReceipt {
            message_id: message.key,
        })
    }

    fn event(&self, event: ChannelEvent) -> Result<(), PluginError> {
        self.hub.event(event);
        Ok(())
    }

    fn shutdown(&self) {
        let _ = self.closing.send(true);
        let runtime = self
            .runtime
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        if let Some(runtime) = runtime {
            runtime.shutdown_timeout(Duration::from_secs(2));
        }
    }
}

/// The login link for a canvas at `address`.
pub fn login_url(address: SocketAddr, token: &str) -> String {
    format!("http://{address}/login?token={token}")
}

/// Records the bound address (which differs from the setting with port 0).
fn write_address(home: &std::path::Path, address: SocketAddr) {
    if let Err(e) = std::fs::write(home.join(ADDRESS_FILE), format!("{address}\n")) {
        tracing::warn!("cannot record the canvas address: {e}");
    }
}
