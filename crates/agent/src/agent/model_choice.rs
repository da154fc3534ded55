//! Which model the owner's conversation uses: `/model` in chat and
//! `hearth model` at the terminal show the choices and switch among them.
//!
//! The choice is the main agent's row in `agents` (its `model` column),
//! read at every turn (`Agent::llm_now`), so it survives a restart and a
//! switch from the terminal takes effect at the next message without one.
//! Only models the config names can be chosen (`[llm] model` and its
//! `fallback_models`): they share the provider, address and key, and
//! the owner's budgets and prices know them.

use rusqlite::Connection;

use super::profiles;
use hearth_base::store::MAIN_AGENT;

/// What `/model ARG` and `hearth model ARG` do with `arg` (trimmed):
/// empty shows the choices; `default` goes back to `[llm] model`; a
/// configured model's name switches to it. The answer is the text to show;
/// an error says what was wrong.
pub fn answer(
    conn: &Connection,
    choices: &[String],
    arg: &str,
    how: &str,
) -> Result<String, String> {
    let arg = arg.trim();
    let Some(default) = choices.first() else {
        return Err("no model is configured ([llm] model)".into());
    };
    let stored = |e: rusqlite::Error| format!("the choice could not be stored: {e}");
    match arg {
        "" => {
            let chosen = profiles::model_of(conn, MAIN_AGENT)
                .map_err(stored)?
                .filter(|m| choices.contains(m));
            let now = chosen.as_deref().unwrap_or(default);
            let mut out = format!("Model: {now}");
            if chosen.is_none() || now == default {
                out.push_str(" ([llm] model)");
            }
            out.push_str("\nConfigured:");
            for m in choices {
                out.push_str(&format!("\n- {m}"));
            }
            out.push_str(&format!(
                "\n{how} NAME switches to one; {how} default goes back to [llm] model."
            ));
            Ok(out)
        }
        "default" => {
            profiles::choose_main_model(conn, None).map_err(stored)?;
            Ok(format!(
                "Model: {default} ([llm] model) from the next message."
            ))
        }
        name if choices.iter().any(|m| m == name) => {
            let value = (name != default).then_some(name);
            profiles::choose_main_model(conn, value).map_err(stored)?;
            Ok(format!(
                "Model: {name} from the next message (its prompt cache starts afresh)."
            ))
        }
        other => Err(format!(
            "{other:?} is not a configured model (configured: {}); add it to [llm] \
             fallback_models to choose it",
            choices.join(", ")
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_owner_switches_among_the_configured_models_only() {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch("CREATE TABLE agents (id INTEGER PRIMARY KEY, model TEXT, updated_at_ms INTEGER); INSERT INTO agents (id) VALUES (1);").unwrap();
        let choices = vec!["big".to_string(), "small".to_string()];
        let shown = answer(&conn, &choices, "", "/model").unwrap();
        assert!(shown.starts_with("Model: big ([llm] model)"), "{shown}");
        assert!(shown.contains("- small"), "{shown}");
        answer(&conn, &choices, " small ", "/model").unwrap();
        assert_eq!(
            profiles::model_of(&conn, MAIN_AGENT).unwrap().as_deref(),
            Some("small")
        );
        assert!(
            answer(&conn, &choices, "", "/model")
                .unwrap()
                .starts_with("Model: small\n")
        );
        let refused = answer(&conn, &choices, "huge", "/model").unwrap_err();
        assert!(
            refused.contains("\"huge\" is not a configured model (configured: big, small)"),
            "{refused}"
        );
        answer(&conn, &choices, "default", "/model").unwrap();
        assert_eq!(profiles::model_of(&conn, MAIN_AGENT).unwrap(), None);
        assert!(answer(&conn, &[], "", "/model").is_err());
    }
}
