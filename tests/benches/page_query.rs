//! Benchmark: a page's named query through the canvas, as a browser asks
//! for it: `GET /pages/<path>/queries/<name>` with the session cookie over
//! one kept-alive connection, answered with 100 rows of `agent_data.db` as
//! JSON. The time is from writing the request to reading the whole answer:
//! the canvas's routing and session check, the `page.query` host call,
//! the page's lookup, the read-only statement and both JSON encodings.
//!
//! Run with `cargo build --release --workspace && cargo bench -p hearth-tests --bench page_query`.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use hearth_tests::canvas::{self, Canvas};
use hearth_tests::{Hearth, plugin};
use serde_json::{Value, json};

const WARMUP: usize = 200;
const REQUESTS: usize = 2000;

fn main() {
    let h = Hearth::with_plugins(&[plugin("canvas")], canvas::CONFIG);
    let runtime = h.runtime();
    let canvas = Canvas::of(h.home());
    let call = |tool: &str, args: Value| {
        runtime
            .tools
            .call(tool, args)
            .unwrap_or_else(|e| panic!("{tool}: {e}"))
    };
    call(
        "execute_sql",
        json!({ "sql": "CREATE TABLE reading (id INTEGER PRIMARY KEY, room TEXT, celsius REAL, at_ms INTEGER)" }),
    );
    call(
        "execute_sql",
        json!({ "sql": "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 100) \
                        INSERT INTO reading (room, celsius, at_ms) \
                        SELECT 'room ' || (i % 7), 18 + (i % 50) / 10.0, 1700000000000 + i * 60000 FROM n" }),
    );
    call(
        "manage_pages",
        json!({ "action": "create", "path": "bench", "content": "<p>bench</p>",
                "queries": { "readings": "SELECT id, room, celsius, at_ms FROM reading WHERE at_ms >= :since ORDER BY id" } }),
    );
    let cookie = canvas.login();
    let mut stream = TcpStream::connect(canvas.addr).expect("connect to the canvas");
    stream.set_nodelay(true).expect("nodelay");
    let mut reader = BufReader::new(stream.try_clone().expect("clone the stream"));
    let request = format!(
        "GET /pages/bench/queries/readings?since=0 HTTP/1.1\r\nHost: {}\r\nCookie: {cookie}\r\n\r\n",
        canvas.addr
    );
    let mut latencies = Vec::with_capacity(REQUESTS);
    for n in 0..WARMUP + REQUESTS {
        let started = Instant::now();
        stream.write_all(request.as_bytes()).expect("send");
        let body = read_answer(&mut reader);
        let took = started.elapsed();
        if n == 0 {
            let rows: Value = serde_json::from_slice(&body).expect("JSON rows");
            assert_eq!(rows["row_count"], 100, "{rows}");
        }
        if n >= WARMUP {
            latencies.push(took);
        }
    }
    latencies.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!("named page query, 100 rows, {REQUESTS} requests on one connection:");
    println!(
        "  median {:.3} ms, p90 {:.3} ms, p99 {:.3} ms, max {:.3} ms",
        ms(latencies[REQUESTS / 2]),
        ms(latencies[REQUESTS * 9 / 10]),
        ms(latencies[REQUESTS * 99 / 100]),
        ms(latencies[REQUESTS - 1])
    );
    println!(
        "figure: named page query (100 rows) through the canvas median: {:.3} ms (target <= 2)",
        ms(latencies[REQUESTS / 2])
    );
    drop(runtime);
}

/// Reads one HTTP/1.1 answer with a `Content-Length` and returns its body;
/// panics on any other status than 200.
fn read_answer(reader: &mut BufReader<TcpStream>) -> Vec<u8> {
    let mut line = String::new();
    reader.read_line(&mut line).expect("status line");
    assert!(line.starts_with("HTTP/1.1 200"), "answered {line:?}");
    let mut length = None;
    loop {
        line.clear();
        reader.read_line(&mut line).expect("header");
        let header = line.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse::<usize>().ok();
        }
    }
    let mut body = vec![0; length.expect("a Content-Length")];
    reader.read_exact(&mut body).expect("body");
    body
}
