//! Markdown to HTML that is safe to put in the page.
//!
//! The agent's text is untrusted: it may quote a web page or a stranger.
//! pulldown-cmark parses it; raw HTML in it is turned into text (shown,
//! never interpreted), and link and image addresses are kept only when
//! their scheme is harmless. The page's Content-Security-Policy is the
//! second line: even a slip here could not run a script.

use pulldown_cmark::{CowStr, Event, Options, Parser, Tag, html};

/// Renders `text` as sanitized HTML.
pub fn to_html(text: &str) -> String {
    let options = Options::ENABLE_TABLES
        | Options::ENABLE_STRIKETHROUGH
        | Options::ENABLE_TASKLISTS
        | Options::ENABLE_GFM;
    let events = Parser::new_ext(text, options).map(|event| match event {
        Event::Html(raw) | Event::InlineHtml(raw) => Event::Text(raw),
        Event::Start(Tag::Link {
            link_type,
            dest_url,
            title,
            id,
        }) => Event::Start(Tag::Link {
            link_type,
            dest_url: safe_link(dest_url),
            title,
            id,
        }),
        Event::Start(Tag::Image {
            link_type,
            dest_url,
            title,
            id,
        }) => Event::Start(Tag::Image {
            link_type,
            dest_url: safe_image(dest_url),
            title,
            id,
        }),
        other => other,
    });
    let mut out = String::with_capacity(text.len() + text.len() / 2);
    html::push_html(&mut out, events);
    out
}

/// Whether `url` may be a link target: web, mail, or a path on this site.
pub fn link_allowed(url: &str) -> bool {
    let lower = url.trim().to_ascii_lowercase();
    lower.starts_with("https://")
        || lower.starts_with("http://")
        || lower.starts_with("mailto:")
        || lower.starts_with('#')
        || (lower.starts_with('/') && !lower.starts_with("//"))
}

/// Whether `url` may be an image or video source.
pub fn media_allowed(url: &str) -> bool {
    let lower = url.trim().to_ascii_lowercase();
    lower.starts_with("https://")
        || lower.starts_with("http://")
        || lower.starts_with("/files/")
        || ["png", "jpeg", "gif", "webp"]
            .iter()
            .any(|t| lower.starts_with(&format!("data:image/{t};base64,")))
}

fn safe_link(url: CowStr<'_>) -> CowStr<'_> {
    if link_allowed(&url) { url } else { "#".into() }
}

fn safe_image(url: CowStr<'_>) -> CowStr<'_> {
    if media_allowed(&url) { url } else { "".into() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hostile_markdown_is_shown_not_run() {
        let cases = [
            ("<script>alert(1)</script>", "<script"),
            ("<img src=x onerror=alert(1)>", "<img"),
            ("[x](javascript:alert(1))", "javascript:"),
            ("[x](JaVaScRiPt:alert(1))", "JaVaScRiPt:"),
            ("![x](javascript:alert(1))", "javascript:"),
            ("[x](//evil.example/)", "//evil"),
            ("[x](data:text/html,<b>)", "data:text"),
            ("<a href=\"javascript:x\">y</a>", "<a "),
        ];
        for (input, forbidden) in cases {
            let html = to_html(input);
            assert!(!html.contains(forbidden), "{input:?} gave {html:?}");
        }
    }

    #[test]
    fn ordinary_markdown_renders() {
        let cases = [
            ("**bold**", "<strong>bold</strong>"),
            (
                "[docs](https://example.org/)",
                "href=\"https://example.org/\"",
            ),
            ("![pic](/files/a.png)", "src=\"/files/a.png\""),
            ("| a |\n|---|\n| 1 |", "<table>"),
            ("```rust\nfn main() {}\n```", "language-rust"),
            ("a < b & c", "a &lt; b &amp; c"),
        ];
        for (input, expected) in cases {
            let html = to_html(input);
            assert!(html.contains(expected), "{input:?} gave {html:?}");
        }
    }
}
