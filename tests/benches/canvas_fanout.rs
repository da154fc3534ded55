//! Benchmark: the canvas with many browsers, and what a first page load
//! weighs.
//!
//! - Fan-out: 200 WebSocket clients are connected to the canvas (the real
//!   plugin, loaded into a hearth runtime in this process). Each update is
//!   a `canvas_show` call through the tool registry; its latency is from the
//!   call to the moment the last of the 200 clients has read the frame.
//! - First load: the bytes a browser fetches to show the app after logging
//!   in (page, script, style, icon, and the `hello` frame of an empty
//!   home), headers included.
//!
//! Run with `cargo build --release --workspace && cargo bench -p hearth-tests --bench canvas_fanout`.

use std::io::Read;
use std::net::TcpStream;
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

use hearth_tests::canvas::{self, Canvas};
use hearth_tests::{Hearth, plugin};
use serde_json::json;

const CLIENTS: usize = 200;
const UPDATES: usize = 300;

fn main() {
    let h = Hearth::with_plugins(&[plugin("canvas")], canvas::CONFIG);
    let runtime = h.runtime();
    let canvas = Canvas::of(h.home());

    let first_load = first_load_bytes(&canvas);

    // One thread reads every client, through poll(2): 200 reader threads
    // on a two-core machine would measure the scheduler, not the canvas.
    let mut clients: Vec<(TcpStream, Vec<u8>)> = (0..CLIENTS)
        .map(|_| {
            let (ws, _) = canvas.connect();
            let stream = ws.into_stream();
            stream.set_nonblocking(true).expect("nonblocking");
            (stream, Vec::new())
        })
        .collect();

    let mut latencies = Vec::with_capacity(UPDATES);
    for n in 0..UPDATES {
        let args = json!({ "type": "progress", "id": "bench", "data": { "label": "bench", "value": n, "max": UPDATES } });
        // The data's keys are sorted, so `value` closes the object.
        let marker = format!("\"value\":{n}}}");
        let started = Instant::now();
        runtime
            .tools
            .call("canvas_show", args)
            .expect("canvas_show");
        let mut waiting: Vec<usize> = (0..CLIENTS).collect();
        while !waiting.is_empty() {
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "update {n} did not arrive"
            );
            poll_readable(&clients, &waiting);
            waiting.retain(|&i| {
                let (stream, seen) = &mut clients[i];
                let mut chunk = [0u8; 4096];
                while let Ok(read) = stream.read(&mut chunk) {
                    if read == 0 {
                        break;
                    }
                    seen.extend_from_slice(&chunk[..read]);
                }
                let found = seen.windows(marker.len()).any(|w| w == marker.as_bytes());
                if found {
                    seen.clear();
                }
                !found
            });
        }
        latencies.push(started.elapsed());
    }
    latencies.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!("canvas fan-out to {CLIENTS} clients over {UPDATES} updates:");
    println!(
        "  median {:.3} ms, p90 {:.3} ms, p99 {:.3} ms, max {:.3} ms",
        ms(latencies[UPDATES / 2]),
        ms(latencies[UPDATES * 9 / 10]),
        ms(latencies[UPDATES * 99 / 100]),
        ms(latencies[UPDATES - 1])
    );
    println!(
        "first page load: {first_load} bytes ({:.1} KB)",
        first_load as f64 / 1000.0
    );
    println!(
        "figure: canvas update to 200 browsers median: {:.3} ms (target <= 5)",
        ms(latencies[UPDATES / 2])
    );
    println!(
        "figure: canvas first page load: {:.1} KB (target < 300)",
        first_load as f64 / 1000.0
    );
    drop(runtime);
}

/// Waits until one of the `waiting` clients has bytes to read.
fn poll_readable(clients: &[(TcpStream, Vec<u8>)], waiting: &[usize]) {
    let mut fds: Vec<libc::pollfd> = waiting
        .iter()
        .map(|&i| libc::pollfd {
            fd: clients[i].0.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    // SAFETY: `fds` is a valid array of `fds.len()` pollfd structs that
    // outlives the call.
    unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, 100) };
}

/// Bytes on the wire for the app's first load, headers included.
fn first_load_bytes(canvas: &Canvas) -> usize {
    let cookie = canvas.login();
    let mut total = 0;
    for path in ["/", "/app.js", "/app.css", "/favicon.svg"] {
        let answer = canvas.get(path, Some(&cookie));
        assert_eq!(answer.status, 200, "{path}");
        let head: usize = answer
            .headers
            .iter()
            .map(|(n, v)| n.len() + v.len() + 4)
            .sum();
        total += head + answer.body.len() + 20;
    }
    let (_ws, hello) = canvas.connect();
    total + hello.to_string().len()
}
