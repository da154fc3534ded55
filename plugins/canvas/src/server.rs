//! The HTTP side: routes, the host and session checks in front of them,
//! the login exchange and uploads.
//!
//! Every request must be addressed to a host the canvas serves (`hosts`):
//! anything else is answered 421 before any route runs, so a page on
//! another site that rebinds its name to this machine gets no login, no
//! cookie and no WebSocket. Without a valid session cookie only `/login`,
//! the two files the login page needs and the agent's public pages
//! (`pages`) are served; a page request is redirected to `/login` and
//! anything else answers 401. Every response carries a strict
//! Content-Security-Policy; files from `/files` (`files`) and the agent's
//! pages get a sandboxing one, so an HTML file the agent wrote cannot run
//! script as the canvas.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::extract::ws::WebSocketUpgrade;
use axum::extract::{ConnectInfo, DefaultBodyLimit, Form, Query, Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use futures_util::StreamExt;
use tokio::io::AsyncWriteExt;

use crate::assets::{self, Asset};
use crate::auth::{self, Login};
use crate::files;
use crate::pages;
use crate::state::{Server, has_session, session_cookies};
use crate::uploads;
use crate::ws;

/// The largest WebSocket message a browser may send.
pub const MAX_WS_MESSAGE: usize = 1 << 20;
/// The most browsers connected at once.
const MAX_CLIENTS: usize = 1000;

const CSP: &str = "default-src 'self'; img-src 'self' data: https:; media-src 'self' https:; \
    style-src 'self'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'; \
    base-uri 'none'; form-action 'self'";
const FILES_CSP: &str = "sandbox; default-src 'none'; img-src 'self' data:; media-src 'self'; \
    style-src 'unsafe-inline'; frame-ancestors 'none'";

/// The routes.
pub fn router(server: Arc<Server>) -> Router {
    let protected = Router::new()
        .route("/", get(index))
        .route("/app.js", get(asset))
        .route("/app.css", get(asset))
        .route("/ws", get(websocket))
        .route("/upload", post(upload).layer(DefaultBodyLimit::disable()))
        .route("/files/{*path}", get(files::serve))
        .route("/view/frame", get(view_frame))
        .fallback(not_found)
        .layer(middleware::from_fn_with_state(
            Arc::clone(&server),
            require_session,
        ));
    Router::new()
        .route(
            "/login",
            get(login_get)
                .post(login_post)
                .layer(DefaultBodyLimit::max(4096)),
        )
        .route("/login.css", get(asset))
        .route("/favicon.svg", get(asset))
        .route("/pages/{*rest}", get(pages::serve))
        .merge(protected)
        .layer(middleware::from_fn_with_state(
            Arc::clone(&server),
            require_host,
        ))
        .layer(middleware::from_fn(security_headers))
        .with_state(server)
}

/// Refuses a request addressed to a host the canvas does not serve, before
/// any route (the login included) sees it.
async fn require_host(State(server): State<Arc<Server>>, request: Request, next: Next) -> Response {
    if server.hosts.admits(request.headers(), request.uri()) {
        return next.run(request).await;
    }
    // Debug, not warn: a rebinding page can send these by the thousand.
    tracing::debug!(host = ?request.headers().get(header::HOST), "canvas request for a host it does not serve");
    (
        StatusCode::MISDIRECTED_REQUEST,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        "This canvas does not serve this host name. Open the address `hearth canvas-url` \
         prints, or add the name (with its port) to [plugins.canvas] allowed_hosts.\n",
    )
        .into_response()
}

async fn require_session(
    State(server): State<Arc<Server>>,
    request: Request,
    next: Next,
) -> Response {
    if has_session(&server, request.headers()) {
        return next.run(request).await;
    }
    let wants_page = request.method() == Method::GET
        && request
            .headers()
            .get(header::ACCEPT)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.contains("text/html"));
    if wants_page {
        redirect("/login")
    } else {
        (
            StatusCode::UNAUTHORIZED,
            "log in first: run `hearth canvas-url` for the link\n",
        )
            .into_response()
    }
}

async fn security_headers(request: Request, next: Next) -> Response {
    let files = request.uri().path().starts_with("/files/");
    let mut response = next.run(request).await;
    let headers = response.headers_mut();
    let csp = if files { FILES_CSP } else { CSP };
    // A page of the agent's comes with its own, sandboxing, policy.
    if !headers.contains_key(header::CONTENT_SECURITY_POLICY) {
        headers.insert(
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static(csp),
        );
    }
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    response
}

/// `GET /view/frame`: the live view's newest image.
async fn view_frame(State(server): State<Arc<Server>>) -> Response {
    match server.hub.live.image() {
        Some((mime, image)) => (
            [
                (header::CONTENT_TYPE, mime),
                (header::CACHE_CONTROL, "no-store".to_owned()),
            ],
            image,
        )
            .into_response(),
        None => (StatusCode::NOT_FOUND, "no view is shown").into_response(),
    }
}

async fn index() -> Response {
    page(StatusCode::OK, &assets::INDEX)
}

async fn asset(request: Request) -> Response {
    match assets::by_path(request.uri().path()) {
        Some((asset, _)) => serve(StatusCode::OK, &asset, "no-cache"),
        None => not_found().await,
    }
}

async fn not_found() -> Response {
    (StatusCode::NOT_FOUND, "not found\n").into_response()
}

async fn login_get(
    State(server): State<Arc<Server>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    match query.get("token") {
        Some(token) => login(&server, peer, token),
        None => page(StatusCode::OK, &assets::LOGIN),
    }
}

async fn login_post(
    State(server): State<Arc<Server>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    Form(form): Form<HashMap<String, String>>,
) -> Response {
    login(&server, peer, form.get("token").map_or("", String::as_str))
}

fn login(server: &Server, peer: SocketAddr, token: &str) -> Response {
    match server.auth.login(peer.ip(), token) {
        Login::Granted(cookie) => {
            let mut response = redirect("/");
            let value = format!(
                "{}={cookie}; HttpOnly; SameSite=Strict; Path=/; Max-Age=31536000",
                auth::COOKIE
            );
            if let Ok(value) = HeaderValue::from_str(&value) {
                response.headers_mut().insert(header::SET_COOKIE, value);
            }
            response
        }
        Login::Refused => {
            tracing::warn!(peer = %peer.ip(), "canvas login with a wrong token");
            login_page(StatusCode::UNAUTHORIZED, "That token is not right.")
        }
        Login::NoToken => login_page(
            StatusCode::SERVICE_UNAVAILABLE,
            "The canvas has no login token now: restart the daemon to make a new one.",
        ),
        Login::Throttled(wait) => {
            let mut response = login_page(
                StatusCode::TOO_MANY_REQUESTS,
                "Too many wrong tokens: wait a minute, then try again.",
            );
            response.headers_mut().insert(
                header::RETRY_AFTER,
                HeaderValue::from(wait.as_secs().max(1)),
            );
            response
        }
    }
}

async fn websocket(
    State(server): State<Arc<Server>>,
    headers: HeaderMap,
    upgrade: WebSocketUpgrade,
) -> Response {
    if !server.hosts.same_origin(&headers) {
        tracing::warn!(
            origin = ?headers.get(header::ORIGIN),
            "canvas WebSocket refused: foreign or missing Origin"
        );
        return (StatusCode::FORBIDDEN, "cross-origin WebSocket refused\n").into_response();
    }
    if server.hub.clients() >= MAX_CLIENTS {
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            "too many browsers connected\n",
        )
            .into_response();
    }
    let (hub, closing) = (Arc::clone(&server.hub), server.closing.clone());
    // The cookies that let this socket in, checked again while it is open.
    let cookies: Vec<String> = session_cookies(&headers).map(str::to_owned).collect();
    let still_valid: ws::StillValid = Box::new(move || {
        cookies
            .iter()
            .any(|cookie| server.auth.session_valid(cookie))
    });
    upgrade
        .max_message_size(MAX_WS_MESSAGE)
        .max_frame_size(MAX_WS_MESSAGE)
        .on_upgrade(move |socket| ws::session(socket, hub, closing, still_valid))
}

async fn upload(
    State(server): State<Arc<Server>>,
    Query(query): Query<HashMap<String, String>>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    // A browser always sends Origin with a POST: one from another origin,
    // or from a sandboxed page (`null`), is not the canvas's own.
    if headers.contains_key(header::ORIGIN) && !server.hosts.same_origin(&headers) {
        tracing::warn!(origin = ?headers.get(header::ORIGIN), "canvas upload refused: foreign Origin");
        return failure(StatusCode::FORBIDDEN, "cross-origin upload refused");
    }
    let name = query.get("name").map_or("file", String::as_str);
    let mime = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("application/octet-stream");
    let uploads = &server.hub.uploads;
    let (partial, mut attachment) = match uploads.plan(name, mime) {
        Ok(plan) => plan,
        Err(e) => {
            return failure(
                StatusCode::INTERNAL_SERVER_ERROR,
                &format!("cannot store uploads: {e}"),
            );
        }
    };
    // The record button's uploads say they are voice messages.
    attachment.voice = query.get("voice").is_some_and(|v| v == "1");
    let written = write_body(body, &partial, uploads.max_bytes).await;
    match written {
        Ok(size) => attachment.size = size,
        Err((status, message)) => {
            let _ = tokio::fs::remove_file(&partial).await;
            return failure(status, &message);
        }
    }
    if let Err(e) = uploads.complete(&partial, &attachment) {
        let _ = std::fs::remove_file(&partial);
        return failure(
            StatusCode::INTERNAL_SERVER_ERROR,
            &format!("cannot store the upload: {e}"),
        );
    }
    axum::Json(uploads::public(&attachment)).into_response()
}

async fn write_body(
    body: Body,
    path: &std::path::Path,
    max: u64,
) -> Result<u64, (StatusCode, String)> {
    let internal = |e: std::io::Error| {
        (
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("cannot write the upload: {e}"),
        )
    };
    let mut file = tokio::fs::File::create(path).await.map_err(internal)?;
    let mut stream = body.into_data_stream();
    let mut size = 0u64;
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| {
            (
                StatusCode::BAD_REQUEST,
                format!("the upload broke off: {e}"),
            )
        })?;
        size += chunk.len() as u64;
        if size > max {
            return Err((
                StatusCode::PAYLOAD_TOO_LARGE,
                format!("the file is over the {max}-byte upload limit"),
            ));
        }
        file.write_all(&chunk).await.map_err(internal)?;
    }
    file.flush().await.map_err(internal)?;
    Ok(size)
}

/// The login page with `message` (fixed text, never user input) shown
/// above the form.
fn login_page(status: StatusCode, message: &str) -> Response {
    let html = String::from_utf8_lossy(assets::LOGIN.body).replace(
        "<!--status-->",
        &format!("<p class=\"error\" role=\"alert\">{message}</p>"),
    );
    (
        status,
        [
            (header::CONTENT_TYPE, assets::LOGIN.mime),
            (header::CACHE_CONTROL, "no-store"),
        ],
        html,
    )
        .into_response()
}

fn page(status: StatusCode, asset: &Asset) -> Response {
    serve(status, asset, "no-store")
}

fn serve(status: StatusCode, asset: &Asset, cache: &'static str) -> Response {
    (
        status,
        [
            (header::CONTENT_TYPE, asset.mime),
            (header::CACHE_CONTROL, cache),
        ],
        asset.body,
    )
        .into_response()
}

fn redirect(to: &'static str) -> Response {
    (StatusCode::SEE_OTHER, [(header::LOCATION, to)]).into_response()
}

fn failure(status: StatusCode, message: &str) -> Response {
    (status, axum::Json(serde_json::json!({ "error": message }))).into_response()
}
