//! `hearth doctor`: the checks a newcomer runs when something is wrong.
//!
//! Each check gives one or more [`Finding`]s: OK, WARN or FAIL, what was
//! found, and for anything short of OK the fix in one line. `local` holds
//! the checks that need only the disk (the config file, the home's
//! permissions, the databases' integrity, free space, Landlock, the
//! systemd unit), which the CLI runs itself; `live` the ones only the
//! running daemon can answer (its plugins and channels' health, its MCP
//! servers, its scripts, whether its model answers), which it serves over
//! the control socket. Without a daemon the CLI loads the plugins once, as
//! `hearth check` does, and asks the model itself.

pub mod live;
pub mod local;

use serde::{Deserialize, Serialize};

/// How a check came out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    /// As it should be.
    Ok,
    /// Works, but something deserves a look.
    Warn,
    /// Broken: the fix says what to do.
    Fail,
}

impl Level {
    /// The word printed at the start of the line.
    pub fn word(self) -> &'static str {
        match self {
            Level::Ok => "OK",
            Level::Warn => "WARN",
            Level::Fail => "FAIL",
        }
    }
}

/// One line of the report.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finding {
    /// What was checked: `config`, `store`, `channel telegram`, ...
    pub check: String,
    /// How it came out.
    pub level: Level,
    /// What was found.
    pub detail: String,
    /// What to do about it (absent for OK).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
}

impl Finding {
    /// An OK finding.
    pub fn ok(check: impl Into<String>, detail: impl Into<String>) -> Finding {
        Finding {
            check: check.into(),
            level: Level::Ok,
            detail: detail.into(),
            fix: None,
        }
    }

    /// A WARN finding with its fix.
    pub fn warn(
        check: impl Into<String>,
        detail: impl Into<String>,
        fix: impl Into<String>,
    ) -> Finding {
        Finding::with_fix(Level::Warn, check.into(), detail.into(), fix.into())
    }

    /// A FAIL finding with its fix.
    pub fn fail(
        check: impl Into<String>,
        detail: impl Into<String>,
        fix: impl Into<String>,
    ) -> Finding {
        Finding::with_fix(Level::Fail, check.into(), detail.into(), fix.into())
    }

    fn with_fix(level: Level, check: String, detail: String, fix: String) -> Finding {
        Finding {
            check,
            level,
            detail,
            fix: Some(fix),
        }
    }
}

/// The worst level among `findings` (OK for none).
pub fn worst(findings: &[Finding]) -> Level {
    findings.iter().map(|f| f.level).max().unwrap_or(Level::Ok)
}

/// The report as text: one line per finding, its fix indented below.
pub fn text(findings: &[Finding]) -> String {
    let width = findings
        .iter()
        .map(|f| f.check.chars().count())
        .max()
        .unwrap_or(0);
    let mut out = String::new();
    for f in findings {
        out.push_str(&format!(
            "{:<4}  {:<width$}  {}\n",
            f.level.word(),
            f.check,
            f.detail
        ));
        if let Some(fix) = &f.fix {
            out.push_str(&format!("{:<4}  {:<width$}  fix: {fix}\n", "", ""));
        }
    }
    let (warns, fails) = findings.iter().fold((0, 0), |(w, f), x| match x.level {
        Level::Warn => (w + 1, f),
        Level::Fail => (w, f + 1),
        Level::Ok => (w, f),
    });
    out.push_str(&match (warns, fails) {
        (0, 0) => "\nall checks passed".to_owned(),
        _ => format!("\n{fails} failed, {warns} warning(s)"),
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_text_aligns_checks_and_indents_fixes() {
        let findings = [
            Finding::ok("config", "/h/hearth.toml is valid"),
            Finding::fail("store", "hearth.db: corrupt", "restore a backup"),
        ];
        let text = text(&findings);
        assert!(
            text.contains("OK    config  /h/hearth.toml is valid\n"),
            "{text}"
        );
        assert!(
            text.contains("FAIL  store   hearth.db: corrupt\n"),
            "{text}"
        );
        assert!(
            text.contains("              fix: restore a backup\n"),
            "{text}"
        );
        assert!(text.ends_with("1 failed, 0 warning(s)"), "{text}");
        assert_eq!(worst(&findings), Level::Fail);
        assert_eq!(worst(&[]), Level::Ok);
    }
}
