//! Benchmark: `hearth backup` and `hearth restore` of a lived-in home.
//!
//! A real home is filled with 10,000 stored messages and 1 GiB of media
//! (200 files of 5 MiB of random bytes, as photos and voice notes are:
//! already compressed), then backed up through the same code `hearth
//! backup` runs, and the archive is restored into an empty folder. The
//! figures are the time of each (median of three) and the archive's size
//! against what went in.
//!
//! Run with `cargo bench -p hearth --bench backup` (it needs about 3 GiB
//! of free disk under the temporary folder).

use std::time::{Duration, Instant};

use hearth::backup::Backups;
use hearth::scheduler::Clock;
use hearth::store::Store;
use serde_json::json;

const MESSAGES: i64 = 10_000;
const MEDIA_FILES: usize = 200;
const MEDIA_FILE_BYTES: usize = 5 << 20;
const ROUNDS: usize = 3;

fn main() {
    let home = tempfile::tempdir().expect("temp dir");
    fill(home.path());
    let config_path = home.path().join("hearth.toml");
    std::fs::write(
        &config_path,
        "mode = \"production\"\n[backup]\nenabled = false\n",
    )
    .expect("config");
    let config = hearth::config::load(Some(&config_path)).expect("config");
    let config = hearth::config::Config {
        home: home.path().to_owned(),
        ..config
    };
    let backups = Backups::new(&config, Clock::system());
    let mut made_times = Vec::new();
    let mut restore_times = Vec::new();
    let mut size = 0;
    for round in 0..ROUNDS {
        let out = home.path().join(format!("out-{round}"));
        let started = Instant::now();
        let made = backups.run(Some(&out)).expect("backup");
        made_times.push(started.elapsed());
        size = made.size;
        let fresh = tempfile::tempdir().expect("temp dir");
        let started = Instant::now();
        let status = std::process::Command::new(env!("CARGO_BIN_EXE_hearth"))
            .args(["restore", &made.path.display().to_string(), "--home"])
            .arg(fresh.path())
            .env("HEARTH_HOME", fresh.path())
            .stdout(std::process::Stdio::null())
            .status()
            .expect("run hearth restore");
        restore_times.push(started.elapsed());
        assert!(status.success(), "the restore failed");
        std::fs::remove_dir_all(&out).expect("remove the archive");
    }
    let median = |times: &mut Vec<Duration>| {
        times.sort();
        times[times.len() / 2].as_secs_f64()
    };
    let media = (MEDIA_FILES * MEDIA_FILE_BYTES) as f64;
    println!(
        "figure: backup of 10,000 messages and 1 GiB of media median: {:.1} s (target <= 60)",
        median(&mut made_times)
    );
    println!(
        "figure: restore of it median: {:.1} s (target <= 60)",
        median(&mut restore_times)
    );
    println!(
        "figure: archive size over the media's: {:.3} x (target <= 1.05)",
        size as f64 / media
    );
}

/// 10,000 messages in a real store, and 1 GiB of incompressible media in
/// the folders the channels and the agent write.
fn fill(home: &std::path::Path) {
    let store = Store::open(&home.join("hearth.db")).expect("store");
    {
        let tx = store.conn().unchecked_transaction().expect("tx");
        tx.execute(
            "INSERT INTO sessions (agent_id, channel, chat, started_at_ms) VALUES (1, 'telegram', '1001', 0)",
            [],
        )
        .expect("session");
        let session = tx.last_insert_rowid();
        for i in 0..MESSAGES {
            let text = format!("message {i} about the garden, the train and the budget");
            tx.execute(
                "INSERT INTO messages (session_id, role, content, created_at_ms) VALUES (?1, 'user', ?2, ?3)",
                rusqlite::params![session, json!([{ "type": "text", "text": text }]).to_string(), i],
            )
            .expect("message");
        }
        tx.commit().expect("commit");
    }
    drop(store);
    // A xorshift stream: random enough that gzip cannot shrink it, as it
    // cannot shrink a JPEG or an Opus file.
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut bytes = vec![0u8; MEDIA_FILE_BYTES];
    for n in 0..MEDIA_FILES {
        for chunk in bytes.chunks_mut(8) {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            chunk.copy_from_slice(&state.to_le_bytes()[..chunk.len()]);
        }
        let folder = ["media", "attachments/telegram", "voice"][n % 3];
        let dir = home.join(folder);
        std::fs::create_dir_all(&dir).expect("media folder");
        std::fs::write(dir.join(format!("file-{n}.bin")), &bytes).expect("media file");
    }
}
