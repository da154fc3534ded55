//! `hearth model [NAME | default]`: the model the owner's conversation
//! uses, and switching among the configured ones, from the terminal. It
//! writes the same choice `/model` does (the main agent's row), which a
//! running daemon reads at the next message; see
//! `hearth_agent::agent::model_choice`.

use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use hearth_agent::agent::model_choice;
use hearth_base::config::Config;
use hearth_base::store;
use rusqlite::Connection;

/// Shows or sets the choice; an unknown model is refused with the list.
pub fn run(config: &Config, name: Option<&str>) -> anyhow::Result<ExitCode> {
    let Some(llm) = &config.llm else {
        anyhow::bail!("no model is configured: add [llm] to the config");
    };
    let path = config.home.join(store::FILE_NAME);
    anyhow::ensure!(
        path.exists(),
        "{} does not exist yet: start the daemon once (`hearth run`), then choose",
        path.display()
    );
    let conn =
        Connection::open(&path).with_context(|| format!("cannot open {}", path.display()))?;
    // The daemon may be writing: wait for it rather than fail.
    conn.busy_timeout(Duration::from_secs(5))?;
    let choices = hearth_model::llm::choices(llm);
    match model_choice::answer(&conn, &choices, name.unwrap_or(""), "hearth model") {
        Ok(text) => {
            println!("{text}");
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => {
            eprintln!("hearth model: {e}");
            Ok(ExitCode::from(2))
        }
    }
}
