//! The agent's markdown as Matrix's `org.matrix.custom.html`: headings,
//! emphasis, lists, code and links rendered; any raw HTML in the text shown
//! as text, so a reply can never carry markup of its own into a client.

use pulldown_cmark::{Event, Options, Parser, html};

/// `markdown` as safe HTML.
pub fn to_html(markdown: &str) -> String {
    let parser = Parser::new_ext(
        markdown,
        Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TABLES,
    )
    .map(|event| match event {
        Event::Html(raw) | Event::InlineHtml(raw) => Event::Text(raw),
        other => other,
    });
    let mut out = String::new();
    html::push_html(&mut out, parser);
    out.trim_end().to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_is_rendered_and_raw_html_is_only_text() {
        assert_eq!(to_html("**done**"), "<p><strong>done</strong></p>");
        let html = to_html("hi <img src=x onerror=alert(1)> <b>x</b>");
        assert!(!html.contains("<img") && !html.contains("<b>"), "{html}");
        assert!(html.contains("&lt;img"), "{html}");
        assert!(to_html("```\nrm -rf x\n```").contains("<pre><code>"));
    }
}
