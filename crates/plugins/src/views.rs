//! Live views: frames a plugin shows the owner (`view.show`: the browser's
//! current tab as it works) and the owner's actions on them
//! (`view.input`: a click on the canvas's view, keys, an address to open),
//! passed between the plugin that shows a view and the channels that show
//! views.
//!
//! The host checks every frame (its size, that it is the image it says)
//! before any channel sees it, and hands each channel only the newest one
//! not yet taken ([`ChannelEvents::view`]), so a fast page never queues
//! images. An action is taken only from a channel that shows views, and
//! such a channel must authenticate the owner: whoever sees a view can
//! drive it. Neither is logged: a frame shows the owner's page, and an
//! action may be the owner typing a password.

use std::sync::{Arc, Weak};

use base64::Engine;
use hearth_sdk::abi::status;
use hearth_sdk::protocol::{ChannelEvent, ChannelSpec, ViewFrame, ViewInputRequest};

use hearth_base::channels::events::ChannelEvents;

/// The largest `view.show` request: a frame of a large screen, base64.
pub const MAX_FRAME_BYTES: usize = 4 << 20;
/// The largest `view.input` request: an action is a click or a few words.
const MAX_INPUT_BYTES: usize = 16 * 1024;
/// How much of a title and an address a frame carries.
const MAX_TITLE: usize = 300;
const MAX_URL: usize = 2000;

/// The channels that show views and the plugins that may show one; set
/// once the daemon's channels run (before, nothing shows a view).
pub struct Views {
    events: Arc<ChannelEvents>,
    /// Every plugin, by name, for the actions on its view. Weak: the
    /// plugins hold the bridge that holds this.
    plugins: Vec<(String, Weak<dyn Shows>)>,
}

/// A plugin the owner's actions on its view go to (a loaded plugin, in
/// `instance`: a trait here, so this file needs nothing above it).
pub trait Shows: Send + Sync {
    /// The plugin's name.
    fn name(&self) -> &str;
    /// Calls its `view.input` method with `payload`; its answer.
    fn view_input(&self, payload: &[u8]) -> Result<Vec<u8>, String>;
}

impl Views {
    /// Views shown through `events`, acted on in `plugins`.
    pub fn new(events: Arc<ChannelEvents>, plugins: &[Arc<dyn Shows>]) -> Views {
        Views {
            events,
            plugins: plugins
                .iter()
                .map(|p| (p.name().to_owned(), Arc::downgrade(p)))
                .collect(),
        }
    }

    /// `view.show` from `plugin`: the frame, checked, to every channel
    /// that shows views.
    pub fn show(&self, plugin: &str, request: &[u8]) -> (i32, String) {
        if !self.events.shows_views() {
            return shown(false);
        }
        match check_frame(request) {
            Ok(frame) => {
                let event = ChannelEvent::View {
                    source: plugin.to_owned(),
                    frame,
                };
                shown(self.events.view(&event))
            }
            Err(why) => (status::INVALID, why),
        }
    }

    /// `view.input` from a channel (`channel`, its spec): the owner's
    /// action, handed to the plugin whose view it is.
    pub fn input(&self, channel: Option<&ChannelSpec>, request: &[u8]) -> (i32, String) {
        let Some(channel) = channel.filter(|c| c.views) else {
            return (
                status::INVALID,
                "view.input: only a channel that shows views passes the owner's actions".into(),
            );
        };
        let request = match parse_input(request) {
            Ok(request) => request,
            Err(why) => return (status::INVALID, why),
        };
        let Some(plugin) = self
            .plugins
            .iter()
            .find(|(name, _)| *name == request.source)
            .and_then(|(_, plugin)| plugin.upgrade())
        else {
            return (
                status::INVALID,
                format!("view.input: no plugin {:?} shows a view", request.source),
            );
        };
        let payload = serde_json::to_vec(&request.input).unwrap_or_default();
        tracing::debug!(channel = %channel.name, plugin = %plugin.name(), "the owner acts on a live view");
        match plugin.view_input(&payload) {
            Ok(answer) => (status::OK, String::from_utf8_lossy(&answer).into_owned()),
            Err(e) => (status::ERROR, e),
        }
    }
}

/// A `view.show` request read and checked: bounded before it is parsed,
/// its image decoded and of the type it names; the title and address cut.
pub fn check_frame(request: &[u8]) -> Result<ViewFrame, String> {
    if request.len() > MAX_FRAME_BYTES {
        return Err(format!(
            "view.show: the frame is {} bytes, over the {MAX_FRAME_BYTES}-byte limit",
            request.len()
        ));
    }
    let mut frame: ViewFrame =
        serde_json::from_slice(request).map_err(|e| format!("view.show: {e}"))?;
    if frame.closed {
        if !frame.data.is_empty() {
            return Err("view.show: a closed view carries no image".into());
        }
    } else {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(frame.data.as_bytes())
            .map_err(|e| format!("view.show: data is not base64: {e}"))?;
        let magic: &[u8] = match frame.mime.as_str() {
            "image/jpeg" => &[0xFF, 0xD8, 0xFF],
            "image/png" => b"\x89PNG\r\n\x1a\n",
            other => {
                return Err(format!(
                    "view.show: mime {other:?} is not image/jpeg or image/png"
                ));
            }
        };
        if !bytes.starts_with(magic) {
            return Err(format!("view.show: data is not a {} image", frame.mime));
        }
    }
    frame.title = cut(&frame.title, MAX_TITLE);
    frame.url = cut(&frame.url, MAX_URL);
    Ok(frame)
}

fn parse_input(request: &[u8]) -> Result<ViewInputRequest, String> {
    if request.len() > MAX_INPUT_BYTES {
        return Err(format!(
            "view.input: the request is {} bytes, over the {MAX_INPUT_BYTES}-byte limit",
            request.len()
        ));
    }
    serde_json::from_slice(request).map_err(|e| format!("view.input: {e}"))
}

fn shown(shown: bool) -> (i32, String) {
    (status::OK, format!("{{\"shown\":{shown}}}"))
}

fn cut(text: &str, most: usize) -> String {
    text.chars().take(most).collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn frame(mime: &str, bytes: &[u8]) -> Vec<u8> {
        let data = base64::engine::general_purpose::STANDARD.encode(bytes);
        serde_json::to_vec(&json!({ "mime": mime, "data": data, "width": 800, "height": 600 }))
            .unwrap()
    }

    #[test]
    fn frames_are_checked_before_any_channel_sees_them() {
        let jpeg = [0xFF, 0xD8, 0xFF, 0xE0, 0, 0x10];
        let png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR";
        assert!(check_frame(&frame("image/jpeg", &jpeg)).is_ok());
        assert!(check_frame(&frame("image/png", png)).is_ok());
        for (request, expected) in [
            (frame("image/png", &jpeg), "not a image/png image"),
            (
                frame("image/gif", b"GIF89a"),
                "is not image/jpeg or image/png",
            ),
            (frame("image/jpeg", b""), "not a image/jpeg image"),
            (
                br#"{"mime":"image/jpeg","data":"!!"}"#.to_vec(),
                "not base64",
            ),
            (
                br#"{"closed":true,"data":"AAAA"}"#.to_vec(),
                "carries no image",
            ),
            (
                br#"{"mime":"image/jpeg","colour":1}"#.to_vec(),
                "unknown field `colour`",
            ),
            (b"[1,2".to_vec(), "view.show: "),
            (vec![b' '; MAX_FRAME_BYTES + 1], "over the"),
        ] {
            let why = check_frame(&request).unwrap_err();
            assert!(why.contains(expected), "{why} (wanted {expected})");
        }
    }

    #[test]
    fn a_closed_view_passes_and_long_words_are_cut() {
        let long = "t".repeat(5000);
        let request = serde_json::to_vec(&json!({ "closed": true, "title": long, "url": long }));
        let frame = check_frame(&request.unwrap()).unwrap();
        assert!(frame.closed);
        assert_eq!(frame.title.len(), MAX_TITLE);
        assert_eq!(frame.url.len(), MAX_URL);
    }

    #[test]
    fn actions_come_only_from_a_channel_that_shows_views() {
        let views = Views::new(Arc::new(ChannelEvents::default()), &[]);
        let click = br#"{"source":"browser","input":{"kind":"click","x":0.5,"y":0.5}}"#;
        let chat = ChannelSpec {
            name: "telegram".into(),
            events: true,
            ..ChannelSpec::default()
        };
        for channel in [None, Some(&chat)] {
            let (code, why) = views.input(channel, click);
            assert_eq!(code, status::INVALID);
            assert!(why.contains("only a channel that shows views"), "{why}");
        }
        let canvas = ChannelSpec {
            views: true,
            ..chat.clone()
        };
        let (code, why) = views.input(Some(&canvas), click);
        assert_eq!(code, status::INVALID);
        assert!(why.contains("no plugin \"browser\" shows a view"), "{why}");
        let (_, why) = views.input(
            Some(&canvas),
            br#"{"source":"browser","input":{"kind":"drag"}}"#,
        );
        assert!(why.contains("unknown variant `drag`"), "{why}");
        let (_, why) = views.input(Some(&canvas), &[b' '; MAX_INPUT_BYTES + 1]);
        assert!(why.contains("over the"), "{why}");
    }

    #[test]
    fn with_no_channel_for_views_a_frame_is_answered_not_shown() {
        let views = Views::new(Arc::new(ChannelEvents::default()), &[]);
        assert_eq!(
            views.show("browser", b"not even json"),
            (status::OK, r#"{"shown":false}"#.to_owned())
        );
    }
}
