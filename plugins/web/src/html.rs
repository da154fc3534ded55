//! HTML to plain text, in one linear pass.
//!
//! A full HTML parser (html5ever, through html2text) was tried first: it
//! builds fast, but its time grows with the square of the nesting depth, so
//! a page of 200,000 nested `<div>`s (2 MB) kept a thread busy for minutes.
//! A page is untrusted input, so this converter never builds a tree: it
//! scans tags once, drops `script`, `style` and similar, turns block tags
//! into line breaks, decodes the common entities and keeps a link's target
//! as `text (url)`, resolved against the page's address.

use std::borrow::Cow;

use reqwest::Url;

/// The text of an HTML page.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Page {
    /// The `<title>`, whitespace collapsed, if there is a non-empty one.
    pub title: Option<String>,
    /// The readable text.
    pub text: String,
}

/// Converts `html` to text; relative link targets are resolved against
/// `base` when it is given.
pub fn to_text(html: &str, base: Option<&Url>) -> Page {
    let mut converter = Converter {
        out: Output::default(),
        title: None,
        links: Vec::new(),
        base,
    };
    converter.run(html);
    Page {
        title: converter.title.filter(|t| !t.is_empty()),
        text: converter.out.finish(),
    }
}

/// Finds the `<title>` of an HTML page without converting the rest.
pub fn title(html: &str) -> Option<String> {
    let lower = html.to_ascii_lowercase();
    let mut from = 0;
    while let Some(found) = lower[from..].find("<title") {
        let start = from + found;
        let Some(tag) = parse_tag(html, start) else {
            from = start + 1;
            continue;
        };
        if tag.name != "title" || tag.closing {
            from = start + 1;
            continue;
        }
        let end = lower[tag.end..]
            .find("</title")
            .map_or(html.len(), |i| tag.end + i);
        let text = collapse(&decode_entities(&html[tag.end..end]));
        return Some(text).filter(|t| !t.is_empty());
    }
    None
}

/// Elements whose content is never text for a reader.
const SKIPPED: &[&str] = &[
    "script", "style", "noscript", "template", "svg", "math", "iframe", "object", "head",
    "textarea", "select", "canvas",
];

/// Elements that start and end on their own line.
const BLOCKS: &[&str] = &[
    "address",
    "article",
    "aside",
    "blockquote",
    "body",
    "dd",
    "details",
    "dialog",
    "div",
    "dl",
    "dt",
    "fieldset",
    "figcaption",
    "figure",
    "footer",
    "form",
    "header",
    "hgroup",
    "main",
    "nav",
    "ol",
    "section",
    "summary",
    "table",
    "tbody",
    "tfoot",
    "thead",
    "tr",
    "ul",
    "caption",
];

/// Elements that stand apart from their neighbours by a blank line.
const PARAGRAPHS: &[&str] = &["p", "pre", "h1", "h2", "h3", "h4", "h5", "h6", "hr"];

/// The longest entity name looked up; longer runs after `&` are text.
const MAX_ENTITY: usize = 10;

struct Converter<'a> {
    out: Output,
    title: Option<String>,
    /// The targets of the open `<a>` elements, innermost last, with the
    /// length of the output when each opened (to see whether it had text).
    links: Vec<(Option<String>, usize)>,
    base: Option<&'a Url>,
}

impl Converter<'_> {
    fn run(&mut self, html: &str) {
        // ASCII lowercasing keeps every byte offset, so searches in `lower`
        // index `html` directly.
        let lower = html.to_ascii_lowercase();
        let mut at = 0;
        while at < html.len() {
            let Some(next) = html[at..].find('<') else {
                self.out.text(&decode_entities(&html[at..]));
                break;
            };
            let lt = at + next;
            if lt > at {
                self.out.text(&decode_entities(&html[at..lt]));
            }
            at = self.markup(html, &lower, lt);
        }
    }

    /// Handles the markup starting at `lt` (a `<`) and returns where text
    /// resumes.
    fn markup(&mut self, html: &str, lower: &str, lt: usize) -> usize {
        let rest = &lower[lt..];
        if rest.starts_with("<!--") {
            return rest.find("-->").map_or(html.len(), |i| lt + i + 3);
        }
        if rest.starts_with("<![cdata[") {
            let end = rest.find("]]>").map_or(html.len(), |i| lt + i);
            self.out.text(&html[lt + 9..end.max(lt + 9)]);
            return (end + 3).min(html.len());
        }
        if rest.starts_with("<!") || rest.starts_with("<?") {
            return rest.find('>').map_or(html.len(), |i| lt + i + 1);
        }
        let Some(tag) = parse_tag(html, lt) else {
            // A `<` that starts no tag ("a < b") is text.
            self.out.text("<");
            return lt + 1;
        };
        if tag.closing {
            self.close(&tag.name);
            return tag.end;
        }
        if tag.name == "title" || SKIPPED.contains(&tag.name.as_str()) {
            if tag.self_closing {
                return tag.end;
            }
            let end = find_close(lower, tag.end, &tag.name);
            if tag.name == "title" && self.title.is_none() {
                self.title = Some(collapse(&decode_entities(&html[tag.end..end.0])));
            } else if tag.name == "head" {
                // The title lives in the head, so look for it there.
                if self.title.is_none() {
                    self.title = title(&html[tag.end..end.0]);
                }
            }
            return end.1;
        }
        self.open(&tag);
        if tag.name == "pre" && !tag.self_closing {
            let end = find_close(lower, tag.end, "pre");
            self.pre(html, lower, tag.end, end.0);
            self.out.paragraph();
            return end.1;
        }
        tag.end
    }

    fn open(&mut self, tag: &Tag) {
        let name = tag.name.as_str();
        match name {
            "br" => self.out.line(),
            "li" => {
                self.out.line();
                self.out.raw("- ");
            }
            "td" | "th" => self.out.text(" "),
            "img" => {
                if let Some(alt) = tag.attr("alt").map(|a| collapse(&a)) {
                    if !alt.is_empty() {
                        self.out.text(&format!("[{alt}]"));
                    }
                }
            }
            "a" if !tag.self_closing => {
                let href = tag.attr("href").and_then(|h| self.resolve(&h));
                self.links.push((href, self.out.text.len()));
            }
            _ if PARAGRAPHS.contains(&name) => {
                self.out.paragraph();
                if let Some(level) = heading_level(name) {
                    self.out.raw(&"#".repeat(level));
                    self.out.raw(" ");
                }
                if name == "hr" {
                    self.out.raw("---");
                    self.out.paragraph();
                }
            }
            _ if BLOCKS.contains(&name) => self.out.line(),
            _ => {}
        }
    }

    fn close(&mut self, name: &str) {
        match name {
            "a" => {
                if let Some((href, start)) = self.links.pop() {
                    let had_text = self.out.text.len() > start;
                    if let Some(href) = href.filter(|_| had_text) {
                        let shown = self.out.text[start..].trim();
                        if shown != href {
                            self.out.text(&format!(" ({href})"));
                        }
                    }
                }
            }
            _ if PARAGRAPHS.contains(&name) => self.out.paragraph(),
            _ if BLOCKS.contains(&name) || name == "li" => self.out.line(),
            _ => {}
        }
    }

    /// Copies preformatted text as it is, minus its tags.
    fn pre(&mut self, html: &str, lower: &str, from: usize, to: usize) {
        let mut at = from;
        // A newline right after `<pre>` is not content (HTML drops it).
        if html[at..to].starts_with('\n') {
            at += 1;
        }
        while at < to {
            let next = html[at..to].find('<').map_or(to, |i| at + i);
            self.out.raw(&decode_entities(&html[at..next]));
            if next >= to {
                break;
            }
            at = match parse_tag(html, next) {
                Some(tag) if tag.end <= to => {
                    if tag.name == "br" {
                        self.out.raw("\n");
                    }
                    tag.end
                }
                _ if lower[next..].starts_with("<!--") => {
                    lower[next..to].find("-->").map_or(to, |i| next + i + 3)
                }
                _ => {
                    self.out.raw("<");
                    next + 1
                }
            };
        }
    }

    /// An absolute link target, or `None` for fragments and scripts that
    /// mean nothing outside the page.
    fn resolve(&self, href: &str) -> Option<String> {
        let href = href.trim();
        if href.is_empty() || href.starts_with('#') {
            return None;
        }
        let url = match self.base {
            Some(base) => base.join(href).ok()?,
            None => Url::parse(href).ok()?,
        };
        if url.scheme() == "javascript" || url.scheme() == "data" {
            return None;
        }
        Some(url.to_string())
    }
}

/// The text being written, with HTML's whitespace rules: runs of spaces
/// collapse, and line breaks come only from markup.
#[derive(Default)]
struct Output {
    text: String,
    /// A space is owed before the next visible character.
    space: bool,
}

impl Output {
    /// Adds flowing text: whitespace runs become one space.
    fn text(&mut self, s: &str) {
        for c in s.chars() {
            if c.is_whitespace() && c != '\u{a0}' {
                self.space = !self.text.is_empty() && !self.text.ends_with('\n');
            } else {
                if self.space {
                    self.text.push(' ');
                    self.space = false;
                }
                self.text.push(if c == '\u{a0}' { ' ' } else { c });
            }
        }
    }

    /// Adds text as it is (preformatted text, list markers).
    fn raw(&mut self, s: &str) {
        if self.space && !s.starts_with(char::is_whitespace) {
            self.text.push(' ');
        }
        self.space = false;
        self.text.push_str(s);
    }

    /// Ends the current line, if anything is on it.
    fn line(&mut self) {
        self.space = false;
        self.trim_end_spaces();
        if !self.text.is_empty() && !self.text.ends_with('\n') {
            self.text.push('\n');
        }
    }

    /// Ends the current paragraph with a blank line.
    fn paragraph(&mut self) {
        self.line();
        if !self.text.is_empty() && !self.text.ends_with("\n\n") {
            self.text.push('\n');
        }
    }

    fn trim_end_spaces(&mut self) {
        let kept = self.text.trim_end_matches([' ', '\t']).len();
        self.text.truncate(kept);
    }

    fn finish(self) -> String {
        // Trailing spaces on lines and blank-line runs are noise for a
        // reader; they come from markup like `<td> </td>`.
        let mut out = String::with_capacity(self.text.len());
        let mut blank = 0;
        for line in self.text.lines() {
            let line = line.trim_end();
            if line.is_empty() {
                blank += 1;
                if blank > 1 || out.is_empty() {
                    continue;
                }
            } else {
                blank = 0;
            }
            out.push_str(line);
            out.push('\n');
        }
        out.trim_end().to_owned()
    }
}

/// One start or end tag.
pub struct Tag {
    /// Lowercased.
    pub name: String,
    /// `</name>`.
    pub closing: bool,
    /// `<name/>`.
    pub self_closing: bool,
    /// Attribute names (lowercased) and decoded values.
    attrs: Vec<(String, String)>,
    /// The offset just past the `>`.
    pub end: usize,
}

impl Tag {
    /// An attribute's decoded value.
    pub fn attr(&self, name: &str) -> Option<String> {
        self.attrs
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
    }

    /// Whether `class` is one of the words of the `class` attribute.
    pub fn has_class(&self, class: &str) -> bool {
        self.classes().any(|c| c == class)
    }

    /// The words of the `class` attribute.
    pub fn classes(&self) -> impl Iterator<Item = &str> {
        self.attrs
            .iter()
            .filter(|(n, _)| n == "class")
            .flat_map(|(_, v)| v.split_ascii_whitespace())
    }
}

/// The tags of a page in order, for a reader that picks elements out of
/// a page it knows (DuckDuckGo's results) rather than converting it all.
/// Like [`to_text`] it never builds a tree and reads each byte a bounded
/// number of times: comments and declarations are passed over, and the
/// content of `script`, `style` and the other [`SKIPPED`] elements is
/// never read as tags.
pub struct Tags<'a> {
    html: &'a str,
    /// `html` ASCII-lowercased: same byte offsets, for finding end tags.
    lower: String,
    at: usize,
}

impl<'a> Tags<'a> {
    /// Starts at the top of `html`.
    pub fn new(html: &'a str) -> Tags<'a> {
        Tags {
            html,
            lower: html.to_ascii_lowercase(),
            at: 0,
        }
    }

    /// The raw content of the element `tag` opened (the tag just
    /// returned), up to its end tag, which the scan then moves past. An
    /// element never closed runs to the end of the page.
    pub fn content(&mut self, tag: &Tag) -> &'a str {
        if tag.self_closing || tag.closing {
            return "";
        }
        let (end, after) = find_close(&self.lower, tag.end, &tag.name);
        self.at = after.max(self.at);
        self.html.get(tag.end..end).unwrap_or_default()
    }
}

impl Iterator for Tags<'_> {
    type Item = Tag;

    fn next(&mut self) -> Option<Tag> {
        loop {
            let lt = self.at + self.html.get(self.at..)?.find('<')?;
            let rest = &self.lower[lt..];
            if rest.starts_with("<!--") {
                self.at = rest.find("-->").map_or(self.html.len(), |i| lt + i + 3);
                continue;
            }
            if rest.starts_with("<!") || rest.starts_with("<?") {
                self.at = rest.find('>').map_or(self.html.len(), |i| lt + i + 1);
                continue;
            }
            let Some(tag) = parse_tag(self.html, lt) else {
                self.at = lt + 1;
                continue;
            };
            self.at = tag.end;
            if !tag.closing && !tag.self_closing && SKIPPED.contains(&tag.name.as_str()) {
                // Scripts hold strings that look like markup; they are not
                // the page's elements.
                self.at = find_close(&self.lower, tag.end, &tag.name).1;
            }
            return Some(tag);
        }
    }
}

/// Parses the tag whose `<` is at `lt`, or `None` if no tag starts there.
fn parse_tag(html: &str, lt: usize) -> Option<Tag> {
    let bytes = html.as_bytes();
    let mut i = lt + 1;
    let closing = bytes.get(i) == Some(&b'/');
    if closing {
        i += 1;
    }
    let name_start = i;
    if !bytes.get(i).is_some_and(u8::is_ascii_alphabetic) {
        return None;
    }
    while bytes
        .get(i)
        .is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'-' || *b == b':')
    {
        i += 1;
    }
    let name = html[name_start..i].to_ascii_lowercase();
    let mut attrs = Vec::new();
    let mut self_closing = false;
    loop {
        while bytes.get(i).is_some_and(u8::is_ascii_whitespace) {
            i += 1;
        }
        match bytes.get(i) {
            // An unterminated tag runs to the end of the page.
            None => {
                return Some(Tag {
                    name,
                    closing,
                    self_closing,
                    attrs,
                    end: html.len(),
                });
            }
            Some(b'>') => {
                return Some(Tag {
                    name,
                    closing,
                    self_closing,
                    attrs,
                    end: i + 1,
                });
            }
            Some(b'/') => {
                self_closing = true;
                i += 1;
                continue;
            }
            Some(_) => {}
        }
        self_closing = false;
        let attr_start = i;
        while bytes
            .get(i)
            .is_some_and(|b| !b.is_ascii_whitespace() && !matches!(b, b'=' | b'>' | b'/'))
        {
            i += 1;
        }
        if i == attr_start {
            // A stray `=`: skip it so the loop always moves on.
            i += 1;
            continue;
        }
        let attr_name = html[attr_start..i].to_ascii_lowercase();
        while bytes.get(i).is_some_and(u8::is_ascii_whitespace) {
            i += 1;
        }
        let mut value = String::new();
        if bytes.get(i) == Some(&b'=') {
            i += 1;
            while bytes.get(i).is_some_and(u8::is_ascii_whitespace) {
                i += 1;
            }
            match bytes.get(i) {
                Some(&quote) if quote == b'"' || quote == b'\'' => {
                    let start = i + 1;
                    let end = html[start..]
                        .find(quote as char)
                        .map_or(html.len(), |j| start + j);
                    value = decode_entities(&html[start..end]);
                    i = (end + 1).min(html.len());
                }
                _ => {
                    let start = i;
                    while bytes
                        .get(i)
                        .is_some_and(|b| !b.is_ascii_whitespace() && *b != b'>')
                    {
                        i += 1;
                    }
                    value = decode_entities(&html[start..i]);
                }
            }
        }
        attrs.push((attr_name, value));
    }
}

/// Where the content of `name` (opened just before `from`) ends, and where
/// text resumes after its end tag; the end of the page if it is never
/// closed.
fn find_close(lower: &str, from: usize, name: &str) -> (usize, usize) {
    let pattern = format!("</{name}");
    let mut at = from;
    while let Some(i) = lower[at..].find(&pattern) {
        let start = at + i;
        let after = start + pattern.len();
        // `</scripts>` does not close `<script>`.
        match lower.as_bytes().get(after) {
            Some(b) if b.is_ascii_alphanumeric() => at = after,
            _ => {
                let end = lower[after..]
                    .find('>')
                    .map_or(lower.len(), |j| after + j + 1);
                return (start, end);
            }
        }
    }
    (lower.len(), lower.len())
}

fn heading_level(name: &str) -> Option<usize> {
    match name.as_bytes() {
        [b'h', d @ b'1'..=b'6'] => Some(usize::from(d - b'0')),
        _ => None,
    }
}

/// Collapses whitespace runs to one space and trims.
fn collapse(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Decodes numeric references and the common named entities; anything else
/// stays as written.
fn decode_entities(s: &str) -> String {
    if !s.contains('&') {
        return s.to_owned();
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(amp) = rest.find('&') {
        out.push_str(&rest[..amp]);
        rest = &rest[amp..];
        match decode_one(rest) {
            Some((c, used)) => {
                out.push_str(&c);
                rest = &rest[used..];
            }
            None => {
                out.push('&');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// Decodes the entity at the start of `s` (which starts with `&`): the
/// text it stands for and how many bytes it used.
fn decode_one(s: &str) -> Option<(Cow<'static, str>, usize)> {
    let body = &s[1..];
    let end = body
        .char_indices()
        .take(MAX_ENTITY + 1)
        .find(|(_, c)| !c.is_ascii_alphanumeric() && *c != '#')
        .map(|(i, _)| i)?;
    let name = &body[..end];
    let used = 1 + end + usize::from(body[end..].starts_with(';'));
    if let Some(number) = name.strip_prefix('#') {
        let code = match number.strip_prefix(['x', 'X']) {
            Some(hex) => u32::from_str_radix(hex, 16).ok()?,
            None => number.parse().ok()?,
        };
        let c = char::from_u32(code)
            .filter(|c| *c != '\0')
            .unwrap_or('\u{fffd}');
        return Some((Cow::Owned(c.to_string()), used));
    }
    let text = match name {
        "amp" => "&",
        "lt" => "<",
        "gt" => ">",
        "quot" => "\"",
        "apos" => "'",
        "nbsp" => "\u{a0}",
        "mdash" => "\u{2014}",
        "ndash" => "\u{2013}",
        "hellip" => "\u{2026}",
        "lsquo" => "\u{2018}",
        "rsquo" => "\u{2019}",
        "ldquo" => "\u{201c}",
        "rdquo" => "\u{201d}",
        "laquo" => "\u{ab}",
        "raquo" => "\u{bb}",
        "bull" => "\u{2022}",
        "middot" => "\u{b7}",
        "copy" => "\u{a9}",
        "reg" => "\u{ae}",
        "trade" => "\u{2122}",
        "deg" => "\u{b0}",
        "times" => "\u{d7}",
        "divide" => "\u{f7}",
        "euro" => "\u{20ac}",
        "pound" => "\u{a3}",
        "yen" => "\u{a5}",
        "cent" => "\u{a2}",
        "sect" => "\u{a7}",
        "para" => "\u{b6}",
        "shy" | "zwj" | "zwnj" => "",
        _ => return None,
    };
    Some((Cow::Borrowed(text), used))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(html: &str) -> String {
        to_text(html, None).text
    }

    #[test]
    fn drops_scripts_and_styles_and_keeps_the_title() {
        let page = to_text(
            "<html><head><title> The  &amp; Title </title><style>p{}</style></head>\
             <body><script>alert('<p>x</p>')</script><p>Hello <b>world</b></p></body></html>",
            None,
        );
        assert_eq!(page.title.as_deref(), Some("The & Title"));
        assert_eq!(page.text, "Hello world");
    }

    #[test]
    fn blocks_become_lines_and_links_keep_their_target() {
        let base = Url::parse("http://example.test/dir/page").ok();
        let page = to_text(
            "<h1>Top</h1><p>One<br>Two</p><ul><li>a</li><li><a href=\"../x?a=1&amp;b=2\">link</a></li></ul>\
             <a href=\"#frag\">skip</a> <a href=\"http://other.test/\">http://other.test/</a>",
            base.as_ref(),
        );
        assert_eq!(
            page.text,
            "# Top\n\nOne\nTwo\n\n- a\n- link (http://example.test/x?a=1&b=2)\nskip http://other.test/"
        );
    }

    #[test]
    fn decodes_entities_and_leaves_unknown_ones() {
        assert_eq!(
            text("a&lt;b &#65;&#x42; caf&eacute; &copy; &nosuch; AT&T"),
            "a<b AB caf&eacute; \u{a9} &nosuch; AT&T"
        );
    }

    #[test]
    fn keeps_preformatted_text() {
        assert_eq!(
            text("<p>x</p><pre>\nfn  main() {\n    &lt;y&gt;\n}</pre>after"),
            "x\n\nfn  main() {\n    <y>\n}\n\nafter"
        );
    }

    #[test]
    fn survives_broken_markup() {
        assert_eq!(text("a < b and <p"), "a < b and");
        assert_eq!(text("<script>never closed"), "");
        assert_eq!(text("<a href='x'>unclosed"), "unclosed");
        assert_eq!(text("<!-- open comment"), "");
        assert_eq!(text("x<p =a>y"), "x\n\ny");
    }

    #[test]
    fn tags_are_read_in_order_with_their_content() {
        let page = "<!doctype html><!-- <a class=\"x\"> --><div class=\"result  web-result\">\
             <script>var s = '<a class=\"x\">';</script><a class=x href=\"/l/?a=1&amp;b=2\">T <b>b</b></a>\
             <p>after</div>";
        let mut tags = Tags::new(page);
        let div = tags.next().unwrap();
        assert!(div.has_class("result") && div.has_class("web-result") && !div.has_class("web"));
        let script = tags.next().unwrap();
        assert_eq!(script.name, "script");
        let a = tags.next().unwrap();
        assert_eq!(a.attr("href").as_deref(), Some("/l/?a=1&b=2"));
        assert!(a.has_class("x"));
        assert_eq!(tags.content(&a), "T <b>b</b>");
        let names: Vec<_> = tags.map(|t| (t.name, t.closing)).collect();
        assert_eq!(names, [("p".to_owned(), false), ("div".to_owned(), true)]);
        // Unclosed, the content runs to the end.
        let mut tags = Tags::new("<a>never closed");
        let a = tags.next().unwrap();
        assert_eq!(tags.content(&a), "never closed");
        assert!(tags.next().is_none());
    }

    #[test]
    fn deep_nesting_is_linear() {
        let n = 200_000;
        let html = format!("{}deep{}", "<div>".repeat(n), "</div>".repeat(n));
        let started = std::time::Instant::now();
        assert_eq!(text(&html), "deep");
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
    }
}
