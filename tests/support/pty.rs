//! A pseudo-terminal, for driving a `hearth` command as the owner at a
//! terminal: the command's stdin and stderr are the terminal (so it sees
//! one, and asks there), its stdout a pipe (so its result can be read
//! apart). The test reads what the terminal shows and types into it.

use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{FromRawFd, OwnedFd};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A command running on a terminal of its own.
pub struct OnTerminal {
    /// The process.
    pub child: Child,
    /// The terminal's side the test holds: what is written here is typed.
    keyboard: File,
    /// Everything the terminal showed so far.
    screen: Arc<Mutex<String>>,
}

impl OnTerminal {
    /// Starts `cmd` with a new terminal as its stdin and stderr, stdout
    /// piped.
    pub fn spawn(mut cmd: Command) -> OnTerminal {
        let (mut master, mut slave) = (0, 0);
        // SAFETY: openpty(3) writes the two descriptors it opens into the
        // integers given; the name, termios and winsize pointers may be
        // null.
        let rc = unsafe {
            libc::openpty(
                &mut master,
                &mut slave,
                std::ptr::null_mut(),
                std::ptr::null(),
                std::ptr::null(),
            )
        };
        assert_eq!(rc, 0, "openpty: {}", std::io::Error::last_os_error());
        // SAFETY: both descriptors were just opened by openpty and are
        // owned by nothing else.
        let (master, slave) = unsafe { (File::from_raw_fd(master), OwnedFd::from_raw_fd(slave)) };
        let child = cmd
            .stdin(Stdio::from(slave.try_clone().expect("dup the terminal")))
            .stderr(Stdio::from(slave))
            .stdout(Stdio::piped())
            .spawn()
            .expect("start the command on a terminal");
        // The parent's copies of the terminal's far side went into the
        // command (and are closed here), so the reader below ends once the
        // command exits.
        drop(cmd);
        let screen = Arc::new(Mutex::new(String::new()));
        let (sink, mut display) = (Arc::clone(&screen), master.try_clone().expect("dup"));
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            // A terminal whose far side is closed reads as an error (EIO).
            while let Ok(n) = display.read(&mut buf) {
                if n == 0 {
                    break;
                }
                let text = String::from_utf8_lossy(&buf[..n]).into_owned();
                sink.lock().expect("screen lock").push_str(&text);
            }
        });
        OnTerminal {
            child,
            keyboard: master,
            screen,
        }
    }

    /// Everything the terminal showed so far.
    pub fn screen(&self) -> String {
        self.screen.lock().expect("screen lock").clone()
    }

    /// Waits until the terminal shows `text`; returns the whole screen.
    pub fn wait_for(&self, text: &str, timeout: Duration) -> String {
        let start = Instant::now();
        loop {
            let screen = self.screen();
            if screen.contains(text) {
                return screen;
            }
            assert!(
                start.elapsed() < timeout,
                "the terminal never showed {text:?}; it shows:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Types `text` at the terminal.
    pub fn type_line(&mut self, text: &str) {
        writeln!(self.keyboard, "{text}").expect("type at the terminal");
    }

    /// Waits for the command to exit; its exit code, stdout, and the
    /// whole screen.
    pub fn finish(mut self, timeout: Duration) -> (Option<i32>, String, String) {
        let start = Instant::now();
        let status = loop {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                break status;
            }
            if start.elapsed() > timeout {
                let _ = self.child.kill();
                panic!(
                    "the command did not end; the terminal shows:\n{}",
                    self.screen()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let mut stdout = String::new();
        if let Some(mut out) = self.child.stdout.take() {
            out.read_to_string(&mut stdout).expect("read stdout");
        }
        // The reader thread may still hold the last bytes shown.
        std::thread::sleep(Duration::from_millis(100));
        (status.code(), stdout, self.screen())
    }
}

impl Drop for OnTerminal {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
