//! `hearth secret set|list|rm`: the owner's secrets, on the file directly.
//!
//! No daemon is needed: the daemon notices the file changed at its next use
//! of a secret. A value is read from stdin, never from the command line
//! (where `ps` and the shell's history would show it); on a terminal it is
//! read with echo off.

use std::io::{IsTerminal, Read, Write};
use std::process::ExitCode;

use anyhow::Context;

use hearth_base::config::Config;
use hearth_base::secrets::{MAX_VALUE, Secrets};

/// `hearth secret set NAME`: the value from stdin.
pub fn set(config: &Config, name: &str) -> anyhow::Result<ExitCode> {
    // The name is checked before the value is asked for.
    hearth_base::secrets::check_name(name)?;
    crate::runtime::create_home(&config.home)?;
    let raw = if std::io::stdin().is_terminal() {
        let prompt = format!("Value for {name} (not shown as you type): ");
        let line = read_line_hidden(&prompt).context("cannot read the value from the terminal")?;
        eprintln!();
        line
    } else {
        let mut raw = Vec::new();
        // One byte past the limit is enough to know it is over.
        std::io::stdin()
            .lock()
            .take(MAX_VALUE as u64 + 2)
            .read_to_end(&mut raw)
            .context("cannot read the value from stdin")?;
        raw
    };
    let secrets = Secrets::open(&config.home);
    secrets.set(name, &raw)?;
    eprintln!("secret {name} is set (in {})", secrets.path().display());
    Ok(ExitCode::SUCCESS)
}

/// `hearth secret list`: names and when each was set, never values.
pub fn list(config: &Config, json: bool) -> anyhow::Result<ExitCode> {
    let listed = Secrets::open(&config.home).list()?;
    if json {
        outln!("{}", serde_json::to_string_pretty(&listed)?);
        return Ok(ExitCode::SUCCESS);
    }
    if listed.is_empty() {
        outln!("no secrets are set; set one with `hearth secret set NAME` (the value on stdin)");
        return Ok(ExitCode::SUCCESS);
    }
    outln!("{:<32} set", "name");
    for secret in listed {
        let when = hearth_base::time_text::timestamp(secret.set_at_ms)
            .strftime("%Y-%m-%d %H:%M:%S UTC")
            .to_string();
        outln!("{:<32} {when}", secret.name);
    }
    Ok(ExitCode::SUCCESS)
}

/// `hearth secret rm NAME`.
pub fn remove(config: &Config, name: &str) -> anyhow::Result<ExitCode> {
    Secrets::open(&config.home).remove(name)?;
    eprintln!("secret {name} is removed");
    Ok(ExitCode::SUCCESS)
}

/// The terminal's attributes before echo was turned off, for the Ctrl-C
/// handler to restore.
static SAVED: std::sync::OnceLock<libc::termios> = std::sync::OnceLock::new();

/// One line from the terminal on stdin, with echo off while it is typed,
/// after `prompt` on stderr. Ctrl-C turns echo back on before the process
/// ends.
pub(super) fn read_line_hidden(prompt: &str) -> std::io::Result<Vec<u8>> {
    let fd = libc::STDIN_FILENO;
    // SAFETY: a zeroed termios is a valid value for tcgetattr to fill.
    let mut saved: libc::termios = unsafe { std::mem::zeroed() };
    // SAFETY: tcgetattr fills the termios we own.
    if unsafe { libc::tcgetattr(fd, &mut saved) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    let saved = *SAVED.get_or_init(|| saved);
    // SAFETY: the handler only calls async-signal-safe functions.
    unsafe {
        libc::signal(
            libc::SIGINT,
            restore_and_die as *const () as libc::sighandler_t,
        )
    };
    let mut quiet = saved;
    quiet.c_lflag &= !libc::ECHO;
    // SAFETY: sets the terminal's attributes from a termios we own.
    if unsafe { libc::tcsetattr(fd, libc::TCSAFLUSH, &quiet) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // The prompt comes once echo is off: the flush above drops what was
    // typed before it, so nothing typed after the prompt is lost.
    eprint!("{prompt}");
    let _ = std::io::stderr().flush();
    let mut line = String::new();
    let read = std::io::stdin().read_line(&mut line);
    // SAFETY: restores the attributes read above, whatever the read did.
    unsafe { libc::tcsetattr(fd, libc::TCSAFLUSH, &saved) };
    read.map(|_| line.into_bytes())
}

/// SIGINT while the value is typed: echo back on, then the default action.
extern "C" fn restore_and_die(signal: libc::c_int) {
    // SAFETY: tcsetattr, signal and raise are async-signal-safe; SAVED is
    // set before this handler is installed.
    unsafe {
        if let Some(saved) = SAVED.get() {
            libc::tcsetattr(libc::STDIN_FILENO, libc::TCSANOW, saved);
        }
        libc::signal(signal, libc::SIG_DFL);
        libc::raise(signal);
    }
}
