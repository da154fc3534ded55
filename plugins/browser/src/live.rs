//! The live view: the agent's current tab, shown to the owner as it works
//! (on the canvas), and the owner's clicks and keys on it, so the owner
//! can watch, take over, or log in to a site on a machine with no display.
//!
//! Chromium's screencast sends a frame when the tab repaints and waits for
//! its acknowledgement before the next, so a viewer thread that
//! acknowledges only after it handed the frame to the host (at most
//! [`FRAMES_PER_SECOND`]) paces Chromium itself: an idle page costs
//! nothing, a busy one a few small JPEGs a second. The host says whether
//! any channel shows views; when none does (no canvas, or the CLI), the
//! screencast stops for good.
//!
//! The owner's actions go straight to the tab over the protocol, beside
//! any call the agent is running (they do not wait for it), and are never
//! logged: the owner may be typing a password.
//!
//! Architecture invariant: the viewer thread lives only while a browser
//! runs; the frames' sender is held by the protocol's event callback, so
//! it ends when the browser does.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::thread;
use std::time::{Duration, Instant};

use hearth_sdk::Host;
use hearth_sdk::HostCallError;
use hearth_sdk::protocol::{ViewFrame, ViewInput};
use serde_json::{Value, json};

use crate::cdp::{Connection, Event};
use crate::keys;
use crate::tab::Tab;

/// The most frames a second handed to the host.
pub const FRAMES_PER_SECOND: u32 = 4;
/// The largest frame Chromium makes, in device pixels: enough to read a
/// page on the canvas, small enough to stay a few tens of kilobytes.
const MAX_WIDTH: u32 = 1280;
const MAX_HEIGHT: u32 = 800;
/// JPEG quality of the frames.
const QUALITY: u32 = 60;
/// How long one of the owner's actions may wait for the browser.
const INPUT_WAIT: Duration = Duration::from_secs(2);
/// The most text one action types.
const MAX_TEXT: usize = 1000;

/// One screencast frame on its way to the viewer thread.
pub struct Frame {
    session: String,
    data: String,
    ack: i64,
    width: f64,
    height: f64,
}

/// What is cast and where the owner's actions go.
pub struct Live {
    host: OnceLock<Host>,
    /// Set once the host said no channel shows views.
    unwatched: AtomicBool,
    /// Bumped at every browser start: an old viewer's "closed" is not
    /// sent over a new browser's frames.
    generation: AtomicU64,
    /// When the owner last acted on the view: it keeps the browser from
    /// its idle stop as a call does.
    touched: Mutex<Option<Instant>>,
    cast: Mutex<Cast>,
}

#[derive(Default)]
struct Cast {
    connection: Option<Connection>,
    /// The tab being cast, which the owner's actions go to.
    tab: Option<Tab>,
    /// The tab's viewport in CSS pixels, from its last frame.
    size: (f64, f64),
}

impl Live {
    /// A live view with no host yet (and so no frames).
    pub fn new() -> Arc<Live> {
        Arc::new(Live {
            host: OnceLock::new(),
            unwatched: AtomicBool::new(false),
            generation: AtomicU64::new(0),
            touched: Mutex::new(None),
            cast: Mutex::default(),
        })
    }

    /// Frames go to `host` from the next browser start on.
    pub fn set_host(&self, host: Host) {
        let _ = self.host.set(host);
    }

    /// The sender a new browser's event callback hands frames to, and the
    /// viewer's end, or `None` when nobody would see them.
    pub fn channel(&self) -> Option<(SyncSender<Frame>, Receiver<Frame>)> {
        let wanted = self.host.get().is_some() && !self.unwatched.load(Ordering::Relaxed);
        wanted.then(|| std::sync::mpsc::sync_channel(2))
    }

    /// A browser started on `connection`: its viewer thread takes the
    /// frames from `frames` until the browser ends.
    pub fn begin(self: &Arc<Self>, connection: Connection, frames: Receiver<Frame>) {
        let generation = self.generation.fetch_add(1, Ordering::Relaxed) + 1;
        *self.lock() = Cast {
            connection: Some(connection.clone()),
            tab: None,
            size: (0.0, 0.0),
        };
        let me = Arc::clone(self);
        let spawned = thread::Builder::new()
            .name("hearth-browser-view".into())
            .stack_size(256 << 10)
            .spawn(move || me.view(&connection, &frames, generation));
        if let Err(e) = spawned {
            tracing::warn!("browser: no live view: cannot start its thread: {e}");
        }
    }

    /// Casts `tab` (the current one) if another was cast.
    pub fn follow(&self, tab: Option<&Tab>) {
        if self.unwatched.load(Ordering::Relaxed) {
            return;
        }
        let mut cast = self.lock();
        let Some(connection) = cast.connection.clone() else {
            return;
        };
        if cast.tab.as_ref() == tab {
            return;
        }
        if let Some(old) = cast.tab.take() {
            connection.notify(Some(&old.session), "Page.stopScreencast", json!({}));
        }
        if let Some(tab) = tab {
            start_cast(&connection, tab);
            cast.tab = Some(tab.clone());
        }
    }

    /// A page finished loading in tab `session`: if it is the one cast,
    /// its screencast starts again (a page that loads in a new renderer
    /// process ends the old one's without a word).
    pub fn loaded(&self, connection: &Connection, session: Option<&str>) {
        let cast = self.lock();
        if let Some(tab) = cast
            .tab
            .as_ref()
            .filter(|t| Some(t.session.as_str()) == session)
        {
            connection.notify(Some(&tab.session), "Page.stopScreencast", json!({}));
            start_cast(connection, tab);
        }
    }

    /// How long ago the owner last acted on the view, if ever.
    pub fn touched_ago(&self) -> Option<Duration> {
        self.touched
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .map(|at| at.elapsed())
    }

    /// The owner's action on the view, but `open` (which needs the
    /// session: [`crate::Browser::view_input`] runs it).
    pub fn act(&self, input: &ViewInput) -> Result<Value, String> {
        *self.touched.lock().unwrap_or_else(|p| p.into_inner()) = Some(Instant::now());
        let (connection, tab, (width, height)) = {
            let cast = self.lock();
            match (&cast.connection, &cast.tab) {
                (Some(c), Some(t)) if !c.is_closed() => (c.clone(), t.clone(), cast.size),
                _ => return Err("the browser is not running; open a page first".into()),
            }
        };
        let session = Some(tab.session.as_str());
        let point = |x: f64, y: f64| -> Result<(f64, f64), String> {
            if !(0.0..=1.0).contains(&x) || !(0.0..=1.0).contains(&y) {
                return Err(format!(
                    "x and y are fractions of the view (0-1), not {x}, {y}"
                ));
            }
            if width <= 0.0 || height <= 0.0 {
                return Err("no frame has been shown yet".into());
            }
            Ok((x * width, y * height))
        };
        let call = |method: &str, params: Value| {
            connection
                .call(session, method, params, INPUT_WAIT)
                .map_err(|e| e.to_string())
        };
        match input {
            ViewInput::Click { x, y } => {
                let (x, y) = point(*x, *y)?;
                call(
                    "Input.dispatchMouseEvent",
                    json!({ "type": "mouseMoved", "x": x, "y": y }),
                )?;
                for kind in ["mousePressed", "mouseReleased"] {
                    call(
                        "Input.dispatchMouseEvent",
                        json!({ "type": kind, "x": x, "y": y, "button": "left", "clickCount": 1 }),
                    )?;
                }
            }
            ViewInput::Scroll { x, y, dy } => {
                let (x, y) = point(*x, *y)?;
                if !dy.is_finite() {
                    return Err("dy must be a number of pixels".into());
                }
                call(
                    "Input.dispatchMouseEvent",
                    json!({ "type": "mouseWheel", "x": x, "y": y, "deltaX": 0, "deltaY": dy.clamp(-10_000.0, 10_000.0) }),
                )?;
            }
            ViewInput::Text { text } => {
                if text.chars().count() > MAX_TEXT {
                    return Err(format!("at most {MAX_TEXT} characters at a time"));
                }
                call("Input.insertText", json!({ "text": text }))?;
            }
            ViewInput::Key { key } => {
                for event in keys::key_events(key)? {
                    call("Input.dispatchKeyEvent", event)?;
                }
            }
            ViewInput::Back => {
                call(
                    "Runtime.evaluate",
                    json!({ "expression": "history.back()" }),
                )?;
            }
            ViewInput::Open { .. } => return Err("open goes through the session".into()),
        }
        Ok(json!({}))
    }

    fn view(&self, connection: &Connection, frames: &Receiver<Frame>, generation: u64) {
        let Some(host) = self.host.get() else { return };
        let gap = Duration::from_secs(1) / FRAMES_PER_SECOND;
        let mut last: Option<Instant> = None;
        while let Ok(mut frame) = frames.recv() {
            // Chromium keeps a frame or two in flight: only the newest is
            // worth showing.
            while let Ok(newer) = frames.try_recv() {
                ack(connection, &frame);
                frame = newer;
            }
            let tab = self.lock().tab.clone();
            let Some(tab) = tab.filter(|t| t.session == frame.session) else {
                // A tab no longer cast: its last frame.
                ack(connection, &frame);
                continue;
            };
            let info = connection
                .call(
                    None,
                    "Target.getTargetInfo",
                    json!({ "targetId": tab.target }),
                    INPUT_WAIT,
                )
                .unwrap_or_default();
            self.lock().size = (frame.width, frame.height);
            let shown = host.view_show(&ViewFrame {
                mime: "image/jpeg".into(),
                data: frame.data.clone(),
                width: frame.width.round() as u32,
                height: frame.height.round() as u32,
                title: info["targetInfo"]["title"].as_str().unwrap_or("").into(),
                url: info["targetInfo"]["url"].as_str().unwrap_or("").into(),
                closed: false,
            });
            match shown {
                Ok(true) => {}
                Ok(false) | Err(HostCallError::Unsupported(_)) => {
                    tracing::debug!("browser: no channel shows views; the live view stops");
                    self.unwatched.store(true, Ordering::Relaxed);
                    connection.notify(Some(&frame.session), "Page.stopScreencast", json!({}));
                    return;
                }
                Err(e) => tracing::debug!("browser: a view frame was not shown: {e}"),
            }
            if let Some(wait) = last.map(|at| gap.saturating_sub(at.elapsed())) {
                thread::sleep(wait);
            }
            last = Some(Instant::now());
            ack(connection, &frame);
        }
        // The browser ended.
        if self.generation.load(Ordering::Relaxed) == generation {
            *self.lock() = Cast::default();
            let closed = ViewFrame {
                closed: true,
                ..ViewFrame::default()
            };
            let _ = host.view_show(&closed);
        }
    }

    fn lock(&self) -> MutexGuard<'_, Cast> {
        self.cast.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// From the protocol's event callback: a screencast frame to `frames`
/// (or, if the viewer is behind, acknowledged and dropped).
pub fn on_frame(connection: &Connection, event: &Event, frames: &SyncSender<Frame>) {
    let params = &event.params;
    let frame = Frame {
        session: event.session.clone().unwrap_or_default(),
        data: params["data"].as_str().unwrap_or_default().to_owned(),
        ack: params["sessionId"].as_i64().unwrap_or_default(),
        width: params["metadata"]["deviceWidth"].as_f64().unwrap_or(0.0),
        height: params["metadata"]["deviceHeight"].as_f64().unwrap_or(0.0),
    };
    if let Err(TrySendError::Full(frame) | TrySendError::Disconnected(frame)) =
        frames.try_send(frame)
    {
        ack(connection, &frame);
    }
}

fn start_cast(connection: &Connection, tab: &Tab) {
    connection.notify(
        Some(&tab.session),
        "Page.startScreencast",
        json!({ "format": "jpeg", "quality": QUALITY, "maxWidth": MAX_WIDTH, "maxHeight": MAX_HEIGHT }),
    );
}

fn ack(connection: &Connection, frame: &Frame) {
    connection.notify(
        Some(&frame.session),
        "Page.screencastFrameAck",
        json!({ "sessionId": frame.ack }),
    );
}
