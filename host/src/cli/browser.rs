//! `hearth browser login URL`: the owner logs in to a site by hand, in a
//! visible Chromium on the agent's own browser profile, so the agent's
//! browser is logged in afterwards without the model ever seeing the
//! password (or the second factor, or the captcha).
//!
//! The profile can be open in one Chromium at a time. The agent's, if one
//! runs, is stopped first (it starts again on the agent's next call); it
//! is found by the profile's lock and checked to be a Chromium before it
//! is signalled, so a reused process id is never hit.

use std::path::Path;
use std::process::{Command, ExitCode};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

use hearth_base::config::Config;
use hearth_browser::{config::Settings, launch};

/// `hearth browser login URL`.
pub fn login(config: &Config, url: &str) -> anyhow::Result<ExitCode> {
    if !(url.starts_with("https://") || url.starts_with("http://")) {
        bail!("{url:?} is not an http(s) address; give the login page's address");
    }
    if std::env::var_os("DISPLAY").is_none() && std::env::var_os("WAYLAND_DISPLAY").is_none() {
        bail!(
            "there is no display here (DISPLAY and WAYLAND_DISPLAY are unset): run this in the \
             machine's desktop session, or over `ssh -X`, so the browser window can open; or \
             open the canvas (`hearth canvas-url`), type {url} under its Browser view and log \
             in there"
        );
    }
    let settings = config
        .plugins
        .entries
        .get("browser")
        .map(|entry| entry.settings.clone())
        .unwrap_or_else(|| serde_json::json!({}));
    let settings = Settings::parse(settings).map_err(anyhow::Error::msg)?;
    let executable =
        launch::find_executable(settings.executable.as_deref()).map_err(anyhow::Error::msg)?;
    let profile = config.home.join(hearth_policy::roots::BROWSER_PROFILE);
    std::fs::create_dir_all(&profile)
        .with_context(|| format!("cannot make the profile folder {}", profile.display()))?;
    if let Some(pid) = holder(&profile) {
        eprintln!("stopping the agent's browser (pid {pid}); it starts again when next used");
        stop(pid, &profile)?;
    }
    eprintln!("log in to {url} in the window that opens, then close it");
    let mut command = Command::new(&executable);
    command.args([
        "--no-first-run",
        "--no-default-browser-check",
        "--password-store=basic",
    ]);
    command.arg(format!("--user-data-dir={}", profile.display()));
    // Chromium's own sandbox cannot start as root.
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        command.arg("--no-sandbox");
    }
    command.arg(url);
    let status = command
        .status()
        .with_context(|| format!("cannot start {}", executable.display()))?;
    if !status.success() {
        bail!("the browser ended with {status}");
    }
    eprintln!("done: the agent's browser uses this login from its next call");
    Ok(ExitCode::SUCCESS)
}

/// The Chromium holding `profile`, by its lock (`SingletonLock` links to
/// `host-pid`), if it still runs and is one.
fn holder(profile: &Path) -> Option<i32> {
    let target = std::fs::read_link(profile.join("SingletonLock")).ok()?;
    let pid: i32 = target.to_str()?.rsplit('-').next()?.parse().ok()?;
    let exe = std::fs::read_link(format!("/proc/{pid}/exe")).ok()?;
    is_chromium(&exe).then_some(pid)
}

fn is_chromium(exe: &Path) -> bool {
    let name = exe.file_name().and_then(|n| n.to_str()).unwrap_or_default();
    name.starts_with("chromium") || name.starts_with("chrome") || name.starts_with("google-chrome")
}

/// Stops the browser `pid` (and its helpers: it leads its own process
/// group) and waits for its lock on `profile` to go.
fn stop(pid: i32, profile: &Path) -> anyhow::Result<()> {
    // SAFETY: kill has no memory preconditions; `pid` was just checked
    // to be a Chromium holding this profile.
    unsafe { libc::kill(-pid, libc::SIGTERM) };
    let deadline = Instant::now() + Duration::from_secs(10);
    while holder(profile).is_some() {
        if Instant::now() >= deadline {
            bail!("the agent's browser (pid {pid}) did not stop within 10 s");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    // A lock left by a browser that was killed would make the next one
    // refuse the profile.
    for name in ["SingletonLock", "SingletonSocket", "SingletonCookie"] {
        let _ = std::fs::remove_file(profile.join(name));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_chromium_is_taken_for_the_profiles_holder() {
        for (exe, expected) in [
            ("/usr/lib/chromium/chromium", true),
            ("/opt/google/chrome/chrome", true),
            ("/usr/bin/bash", false),
            ("/usr/bin/hearth", false),
        ] {
            assert_eq!(is_chromium(Path::new(exe)), expected, "{exe}");
        }
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(holder(dir.path()), None);
        // This test's own process holds no browser profile.
        let me = format!("host-{}", std::process::id());
        std::os::unix::fs::symlink(me, dir.path().join("SingletonLock")).unwrap();
        assert_eq!(holder(dir.path()), None);
    }
}
