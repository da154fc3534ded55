//! Benchmark: what the browser costs the owner in time and tokens, against
//! real Chromium and a page served on 127.0.0.1.
//!
//! - cold start to first snapshot: a browser plugin with no browser
//!   running opens the page and returns its snapshot (Chromium started,
//!   its proxy, the tab, the load, the DOM walk);
//! - a warm snapshot of a page of 2,000 elements (headings, paragraphs,
//!   a table, 300 links, 40 buttons, a form), the browser already up;
//! - that snapshot's size in tokens (four bytes to a token, as the
//!   prompt benchmarks count).
//!
//! Medians of `HEARTH_BENCH_ROUNDS` rounds (default 7 cold, 21 warm).

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::thread;
use std::time::{Duration, Instant};

use hearth_browser::Browser;
use hearth_browser::config::Settings;
use serde_json::{Value, json};

fn main() {
    if hearth_browser::launch::find_executable(None).is_err() {
        eprintln!("browser bench: no Chromium on PATH (apt install chromium)");
        std::process::exit(2);
    }
    let rounds: usize = std::env::var("HEARTH_BENCH_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(7);
    let port = serve(big_page());
    let url = format!("http://127.0.0.1:{port}/");
    let settings = || {
        Settings::parse(json!({ "allow_hosts": [format!("127.0.0.1:{port}")] })).expect("settings")
    };

    let mut cold = Vec::new();
    for _ in 0..rounds {
        let home = tempfile::tempdir().expect("home");
        let browser = Browser::new(settings(), home.path().to_owned(), Vec::new());
        let started = Instant::now();
        let shown = browser
            .call(json!({ "action": "open", "url": url }), false)
            .expect("open");
        cold.push(started.elapsed());
        assert!(text(&shown).contains("Row 1999"), "the page was read");
        browser.session().stop();
    }

    let home = tempfile::tempdir().expect("home");
    let browser = Browser::new(settings(), home.path().to_owned(), Vec::new());
    browser
        .call(json!({ "action": "open", "url": url }), false)
        .expect("open");
    let mut warm = Vec::new();
    let mut size = 0;
    for _ in 0..rounds * 3 {
        let started = Instant::now();
        let shown = browser
            .call(json!({ "action": "snapshot" }), false)
            .expect("snapshot");
        warm.push(started.elapsed());
        size = text(&shown).len();
    }
    let elements = browser
        .call(
            json!({ "action": "eval", "js": "document.querySelectorAll('body *').length" }),
            false,
        )
        .expect("count")["value"]
        .as_u64()
        .unwrap_or(0);
    browser.session().stop();

    println!("page: {elements} elements, snapshot {size} bytes");
    println!(
        "figure: cold start to first snapshot (median of {rounds}): {:.0} ms (target <= 2000)",
        median(&mut cold).as_secs_f64() * 1000.0
    );
    println!(
        "figure: warm snapshot of a 2,000-element page (median of {}): {:.1} ms (target <= 300)",
        warm.len(),
        median(&mut warm).as_secs_f64() * 1000.0
    );
    println!(
        "figure: that snapshot in tokens (4 bytes each): {} tokens (target <= 4000)",
        size.div_ceil(4)
    );
}

fn text(value: &Value) -> &str {
    value.as_str().unwrap_or_default()
}

fn median(times: &mut [Duration]) -> Duration {
    times.sort();
    times[times.len() / 2]
}

/// A page of about 2,000 elements, like a long listing: a header with
/// navigation, a table of 200 rows (each with a link and a button every
/// fifth row), and a form.
fn big_page() -> String {
    let mut html = String::from("<!doctype html><title>Listing</title><body><header><nav>");
    for i in 0..100 {
        html.push_str(&format!("<a href='/section/{i}'>Section {i}</a> "));
    }
    html.push_str("</nav></header><main><h1>Everything we sell</h1><table>");
    for i in 0..200 {
        html.push_str(&format!(
            "<tr><td><span>Row {}</span></td><td><a href='/item/{i}'>Item {i}</a></td>\
             <td><b>{} EUR</b></td><td>{}</td></tr>",
            i * 10 + 9,
            i * 3 + 1,
            if i % 5 == 0 {
                format!("<button>Add {i}</button>")
            } else {
                "<i>in stock</i>".to_owned()
            }
        ));
    }
    html.push_str("</table><form>");
    for i in 0..20 {
        html.push_str(&format!("<label>Field {i} <input name=f{i}></label>"));
    }
    html.push_str("</form>");
    for i in 0..100 {
        html.push_str(&format!("<p>Paragraph {i} with <em>some</em> words.</p>"));
    }
    html.push_str("</main></body>");
    html
}

/// Serves `body` to every request on 127.0.0.1; returns the port.
fn serve(body: String) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let body = body.clone();
            thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().expect("clone"));
                let mut line = String::new();
                while reader.read_line(&mut line).unwrap_or(0) > 2 {
                    line.clear();
                }
                let mut stream = stream;
                let _ = write!(
                    stream,
                    "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
            });
        }
    });
    port
}
