//! `hearth setup`'s heartbeat question: the `[heartbeat]` table it writes
//! when the owner turns it on, and the starter checklist it leaves in the
//! home for them to edit (docs/operations.md, "Heartbeat").

use std::path::Path;

use hearth_base::config::{DEFAULT_HEARTBEAT_SCHEDULE, HEARTBEAT_CHECKLIST_FILE};

/// The question asked at a terminal.
pub const QUESTION: &str = "Turn on the heartbeat (every morning at 08:00 the agent goes through \
HEARTBEAT.md and tells you only what needs you)?";

/// A checklist to start from: short, since the whole of it goes into every
/// heartbeat's prompt.
pub const STARTER_CHECKLIST: &str = "# Heartbeat checklist

Each morning, look at these and tell me only what needs me today.
Anything fine stays unsaid.

- Reminders and commitments I made that are due today or overdue.
- Scheduled jobs whose last run failed (`manage_schedule` list).
- Anything I asked you to keep an eye on.
";

/// The `[heartbeat]` table for the config.
pub fn config_table() -> String {
    format!(
        "\n[heartbeat]\n\
         # Every morning the agent reads {HEARTBEAT_CHECKLIST_FILE} in the home and speaks only\n\
         # if something needs you.\n\
         enabled = true\n\
         schedule = \"{DEFAULT_HEARTBEAT_SCHEDULE}\"\n"
    )
}

/// Writes the starter checklist into `home` unless one is there; says
/// which.
pub fn write_starter(home: &Path) -> anyhow::Result<()> {
    let path = home.join(HEARTBEAT_CHECKLIST_FILE);
    if path.exists() {
        eprintln!(
            "setup: the heartbeat reads {} (kept as it is)",
            path.display()
        );
        return Ok(());
    }
    std::fs::write(&path, STARTER_CHECKLIST)
        .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))?;
    eprintln!(
        "setup: wrote {}, the heartbeat's checklist; edit it to say what to check",
        path.display()
    );
    Ok(())
}
