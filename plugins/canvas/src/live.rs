//! The live view: the newest frame a plugin shows the owner (the browser's
//! current tab as the agent works), and the owner's actions on it.
//!
//! Only the newest frame is kept, decoded once. Browsers hear of a new one
//! by a small `view` frame on their WebSocket and fetch the image from
//! `/view/frame` when they are ready for it, so a page that repaints fast
//! never queues images on a slow connection. The owner's clicks and keys
//! go back as `view` frames from the browser ([`crate::ws::Frame::View`])
//! to the host, which hands them to the plugin that showed the view; they
//! are never logged (the owner may be typing a password). `server.rs`
//! serves the image.

use std::sync::Mutex;

use base64::Engine;
use hearth_sdk::protocol::ViewFrame;
use serde_json::{Value, json};

/// The newest frame, if a view was shown since the canvas started.
#[derive(Default)]
pub struct Live {
    newest: Mutex<Option<Shown>>,
}

struct Shown {
    /// Counts frames, so a browser asks for the one it was told of.
    seq: u64,
    source: String,
    frame: ViewFrame,
    image: Vec<u8>,
}

impl Live {
    /// Keeps `frame` from `source` as the newest; returns the `view` frame
    /// that tells browsers of it, or `None` if its image is unreadable
    /// (the host checked it, so that is a bug upstream, logged).
    pub fn take(&self, source: String, mut frame: ViewFrame) -> Option<Value> {
        let image = if frame.closed {
            Vec::new()
        } else {
            match base64::engine::general_purpose::STANDARD.decode(frame.data.as_bytes()) {
                Ok(image) => image,
                Err(e) => {
                    tracing::warn!("a view frame from {source} is not base64: {e}");
                    return None;
                }
            }
        };
        frame.data = String::new();
        let mut newest = lock(&self.newest);
        let seq = newest.as_ref().map_or(1, |shown| shown.seq + 1);
        let shown = Shown {
            seq,
            source,
            frame,
            image,
        };
        let told = announce(&shown);
        *newest = Some(shown);
        Some(told)
    }

    /// The newest frame's media type and image, unless the view closed
    /// (what `GET /view/frame` serves).
    pub fn image(&self) -> Option<(String, Vec<u8>)> {
        lock(&self.newest)
            .as_ref()
            .filter(|shown| !shown.frame.closed)
            .map(|shown| (shown.frame.mime.clone(), shown.image.clone()))
    }

    /// The `view` frame for the newest frame, for a browser that connects
    /// now (`null` if no view was shown).
    pub fn hello(&self) -> Value {
        lock(&self.newest).as_ref().map_or(Value::Null, announce)
    }
}

fn announce(shown: &Shown) -> Value {
    json!({
        "type": "view",
        "seq": shown.seq,
        "source": shown.source,
        "title": shown.frame.title,
        "url": shown.frame.url,
        "width": shown.frame.width,
        "height": shown.frame.height,
        "closed": shown.frame.closed,
    })
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(title: &str, image: &[u8]) -> ViewFrame {
        ViewFrame {
            mime: "image/jpeg".into(),
            data: base64::engine::general_purpose::STANDARD.encode(image),
            width: 800,
            height: 600,
            title: title.into(),
            url: "https://example.org/".into(),
            closed: false,
        }
    }

    #[test]
    fn the_newest_frame_is_kept_and_numbered() {
        let live = Live::default();
        assert_eq!(live.hello(), Value::Null);
        let told = live
            .take("browser".into(), frame("one", b"\xff\xd8\xff1"))
            .unwrap();
        assert_eq!(told["seq"], 1);
        assert_eq!(told["title"], "one");
        assert!(told.get("data").is_none(), "the image goes by /view/frame");
        let told = live
            .take("browser".into(), frame("two", b"\xff\xd8\xff2"))
            .unwrap();
        assert_eq!(told["seq"], 2);
        assert_eq!(live.hello(), told);
        assert_eq!(
            live.image(),
            Some(("image/jpeg".to_owned(), b"\xff\xd8\xff2".to_vec()))
        );
    }

    #[test]
    fn a_closed_view_has_no_image_and_a_bad_one_is_not_kept() {
        let live = Live::default();
        let closed = ViewFrame {
            closed: true,
            ..ViewFrame::default()
        };
        assert_eq!(live.take("browser".into(), closed).unwrap()["closed"], true);
        let mut bad = frame("bad", b"");
        bad.data = "!!".into();
        assert!(live.take("browser".into(), bad).is_none());
        assert_eq!(live.hello()["closed"], true);
        assert_eq!(live.image(), None, "a closed view has no image");
    }
}
