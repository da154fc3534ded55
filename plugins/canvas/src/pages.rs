//! The agent's pages: `GET /pages/<path>` and
//! `GET /pages/<path>/queries/<name>?param=value`, answered from the host
//! (`page.get`, `page.query`), which decides what a visitor without a
//! session may see.
//!
//! Every page is served with a `sandbox` Content-Security-Policy whose
//! `connect-src` reaches only the page's own queries, so its script can
//! never open the canvas's WebSocket, upload, or read `/files`, whatever
//! the agent wrote into it. A public page is sandboxed without
//! `allow-same-origin`: it runs in an opaque origin, so the owner's
//! cookie is never sent for it, and its queries answer with
//! `Access-Control-Allow-Origin: *` (they need no cookie). A private page
//! keeps its origin (its queries go with the owner's cookie) but gets no
//! popups, frames or workers, so it cannot reach the canvas's own window.
//! Requests without a session are rate-limited per address. A page backed
//! by a file is read as `/files` reads one (`files::open_within`): only
//! inside `pages/` or `shared/`, never a credential file under another name.

use std::collections::BTreeMap;
use std::io::Read;
use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::{ConnectInfo, Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use hearth_sdk::protocol::{PageAnswer, PageRequest, service};

use crate::files;
use crate::markdown;
use crate::state::{Server, has_session};

/// `GET /pages/*rest`: a page, or one of its queries.
pub async fn serve(
    State(server): State<Arc<Server>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    Path(rest): Path<String>,
    Query(params): Query<Vec<(String, String)>>,
    headers: HeaderMap,
) -> Response {
    let session = has_session(&server, &headers);
    if !session && let Err(wait) = server.pages.check(peer.ip()) {
        let mut response = text(
            StatusCode::TOO_MANY_REQUESTS,
            "too many requests: wait a minute, then try again\n",
        );
        response.headers_mut().insert(
            header::RETRY_AFTER,
            HeaderValue::from(wait.as_secs().max(1)),
        );
        return response;
    }
    let (path, query) = match rest.split_once("/queries/") {
        Some((path, name)) => (path.to_owned(), Some(name.to_owned())),
        None => (rest.clone(), None),
    };
    let service = if query.is_some() {
        service::PAGE_QUERY
    } else {
        service::PAGE_GET
    };
    let is_query = query.is_some();
    let request = PageRequest {
        path: path.clone(),
        query,
        params: params.into_iter().collect::<BTreeMap<_, _>>(),
        session,
    };
    let hub = Arc::clone(&server.hub);
    // The host's store and a query (at most 1 s) block: not on the
    // runtime's two threads.
    let answer = tokio::task::spawn_blocking(move || hub.page(service, &request)).await;
    let answer = match answer {
        Ok(Ok(answer)) => answer,
        Ok(Err(e)) => {
            tracing::warn!("{service} failed: {e}");
            return failure(is_query, StatusCode::INTERNAL_SERVER_ERROR, &e);
        }
        Err(e) => {
            return failure(
                is_query,
                StatusCode::INTERNAL_SERVER_ERROR,
                &format!("the page could not be served: {e}"),
            );
        }
    };
    match answer {
        PageAnswer::Refused { status, error } => {
            let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            let mut response = failure(is_query, status, &error);
            if is_query {
                // A public page's script may read why its query failed.
                // A refusal holds no rows, and `*` never lets a request
                // with the owner's cookie be read.
                response.headers_mut().insert(
                    header::ACCESS_CONTROL_ALLOW_ORIGIN,
                    HeaderValue::from_static("*"),
                );
            }
            response
        }
        PageAnswer::Rows { public, result } => {
            let mut response =
                ([(header::CACHE_CONTROL, "no-store")], axum::Json(result)).into_response();
            if public {
                // Read by a sandboxed page, whose origin is opaque; it
                // carries no cookie and needs none.
                response.headers_mut().insert(
                    header::ACCESS_CONTROL_ALLOW_ORIGIN,
                    HeaderValue::from_static("*"),
                );
            }
            response
        }
        PageAnswer::Page {
            mime,
            public,
            content,
            file,
        } => page(&server, &headers, &path, &mime, public, content, file).await,
    }
}

async fn page(
    server: &Server,
    headers: &HeaderMap,
    path: &str,
    mime: &str,
    public: bool,
    content: Option<String>,
    file: Option<String>,
) -> Response {
    let body: Vec<u8> = match (content, file) {
        (Some(content), _) => content.into_bytes(),
        (None, Some(file)) => match read_page_file(server, file).await {
            Ok(bytes) => bytes,
            Err(e) => {
                tracing::warn!(page = %path, "cannot serve the page's file: {e}");
                return failure(
                    false,
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "the page's file cannot be read",
                );
            }
        },
        (None, None) => return failure(false, StatusCode::NOT_FOUND, "the page is empty"),
    };
    let (content_type, body) = if mime == "text/markdown" {
        let text = String::from_utf8_lossy(&body);
        ("text/html; charset=utf-8".to_owned(), rendered(path, &text))
    } else if mime.starts_with("text/") || mime == "application/json" || mime == "image/svg+xml" {
        (format!("{mime}; charset=utf-8"), body)
    } else {
        (mime.to_owned(), body)
    };
    let csp = policy(headers, path, public);
    let mut response = (
        [
            (header::CONTENT_TYPE, content_type),
            (
                header::CACHE_CONTROL,
                if public { "no-cache" } else { "no-store" }.to_owned(),
            ),
        ],
        body,
    )
        .into_response();
    if let Ok(csp) = HeaderValue::from_str(&csp) {
        response
            .headers_mut()
            .insert(header::CONTENT_SECURITY_POLICY, csp);
    }
    response
}

/// The bytes of a page's file. The host checked the path when the page
/// was saved and again now, but the file lives where the agent writes:
/// it is opened as `/files` opens one, so a link swapped in since, or a
/// hard link to a credential, is refused here too.
async fn read_page_file(server: &Server, file: String) -> Result<Vec<u8>, String> {
    let home = server.home.clone();
    let roots = [home.join("pages"), server.shared.clone()];
    let read = tokio::task::spawn_blocking(move || {
        let (mut opened, _) = files::open_within(&roots, std::path::Path::new(&file), &home)
            .map_err(|e| e.to_string())?;
        let mut bytes = Vec::new();
        opened
            .read_to_end(&mut bytes)
            .map_err(|e| format!("cannot read it: {e}"))?;
        Ok(bytes)
    });
    read.await.map_err(|e| e.to_string())?
}

/// The Content-Security-Policy of the page at `path`.
fn policy(headers: &HeaderMap, path: &str, public: bool) -> String {
    let sandbox = if public {
        "sandbox allow-scripts allow-downloads"
    } else {
        "sandbox allow-scripts allow-same-origin allow-downloads"
    };
    // The page's own queries, by full URL: a path in a source expression
    // needs the host. A Host header that is not a plain host leaves none.
    let host = headers
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .filter(|h| plain_host(h));
    let queries = match host {
        Some(host) => {
            format!("http://{host}/pages/{path}/queries/ https://{host}/pages/{path}/queries/")
        }
        None => "'none'".to_owned(),
    };
    let own = match host {
        Some(host) => format!("'self' http://{host} https://{host}"),
        None => "'self'".to_owned(),
    };
    format!(
        "{sandbox}; default-src {own}; script-src {own} 'unsafe-inline'; \
         style-src {own} 'unsafe-inline'; img-src {own} data:; connect-src {queries}; \
         frame-src 'none'; worker-src 'none'; object-src 'none'; frame-ancestors 'none'; \
         form-action 'none'; base-uri 'none'"
    )
}

/// A host name or address with an optional port, nothing else.
fn plain_host(host: &str) -> bool {
    !host.is_empty()
        && host.len() <= 255
        && host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b':' | b'[' | b']'))
}

/// A markdown page as an HTML document.
fn rendered(path: &str, text: &str) -> Vec<u8> {
    let title = path.rsplit('/').next().unwrap_or(path);
    format!(
        "<!doctype html>\n<html><head><meta charset=\"utf-8\"><meta name=\"viewport\" \
         content=\"width=device-width, initial-scale=1\"><title>{title}</title></head>\n<body>\n{}</body></html>\n",
        markdown::to_html(text)
    )
    .into_bytes()
}

/// An error: JSON `{ "error": ... }` for a query, text for a page.
fn failure(is_query: bool, status: StatusCode, message: &str) -> Response {
    if is_query {
        (status, axum::Json(serde_json::json!({ "error": message }))).into_response()
    } else {
        text(status, &format!("{message}\n"))
    }
}

fn text(status: StatusCode, message: &str) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        message.to_owned(),
    )
        .into_response()
}
