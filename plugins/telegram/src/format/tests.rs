//! Tests of the formatter: a validator that checks each message as the Bot
//! API would (supported tags, nesting, entities, visible length), then
//! tables of conversions, cuts and hostile input run through it.

use std::time::{Duration, Instant};

use super::*;

/// What Telegram would show for `html`, or why it would answer "can't
/// parse entities". Stricter than Telegram where that is cheap: a bare
/// `>`, a tag it would accept but that this module never means to write,
/// or nesting it would quietly repair, is an error here.
fn visible(html: &str) -> Result<String, String> {
    let mut shown = String::new();
    let mut open: Vec<&str> = Vec::new();
    let mut rest = html;
    while let Some(c) = rest.chars().next() {
        match c {
            '<' => {
                let end = rest.find('>').ok_or("unclosed tag")?;
                let tag = &rest[1..end];
                if tag.contains('<') {
                    return Err(format!("'<' inside tag {tag:?}"));
                }
                if let Some(name) = tag.strip_prefix('/') {
                    if open.pop() != Some(name) {
                        return Err(format!("</{name}> does not close what is open"));
                    }
                } else {
                    let (name, attributes) = tag.split_once(' ').unwrap_or((tag, ""));
                    check_tag(name, attributes, &open)?;
                    open.push(name);
                }
                rest = &rest[end + 1..];
            }
            '&' => {
                let (decoded, len) = entity(rest)?;
                shown.push(decoded);
                rest = &rest[len..];
            }
            '>' => return Err("bare '>'".into()),
            _ => {
                shown.push(c);
                rest = &rest[c.len_utf8()..];
            }
        }
    }
    match open.is_empty() {
        true => Ok(shown),
        false => Err(format!("left open: {open:?}")),
    }
}

/// The char an entity at the start of `text` stands for, and its length.
fn entity(text: &str) -> Result<(char, usize), String> {
    for (name, c) in [
        ("&lt;", '<'),
        ("&gt;", '>'),
        ("&amp;", '&'),
        ("&quot;", '"'),
    ] {
        if text.starts_with(name) {
            return Ok((c, name.len()));
        }
    }
    Err(format!("bad entity at {:?}", &text[..text.len().min(10)]))
}

fn check_tag(name: &str, attributes: &str, open: &[&str]) -> Result<(), String> {
    let parent = open.last().copied();
    if open.contains(&"code") || (parent == Some("pre") && name != "code") {
        return Err(format!("<{name}> inside code"));
    }
    if open.contains(&"pre") && parent != Some("pre") {
        return Err(format!("<{name}> inside pre"));
    }
    match name {
        "b" | "i" | "u" | "s" | "tg-spoiler" | "pre" if attributes.is_empty() => Ok(()),
        "blockquote" if attributes.is_empty() && open.is_empty() => Ok(()),
        "code" if attributes.is_empty() => Ok(()),
        "code" if parent == Some("pre") => {
            let lang = attributes
                .strip_prefix("class=\"language-")
                .and_then(|a| a.strip_suffix('"'))
                .ok_or_else(|| format!("bad code attributes {attributes:?}"))?;
            match lang.is_empty() || lang.contains(['"', '<', '>', '&', ' ']) {
                true => Err(format!("bad language {lang:?}")),
                false => Ok(()),
            }
        }
        "a" if !open.contains(&"a") => {
            let href = attributes
                .strip_prefix("href=\"")
                .and_then(|a| a.strip_suffix('"'))
                .ok_or_else(|| format!("bad link attributes {attributes:?}"))?;
            let mut url = String::new();
            let mut rest = href;
            while let Some(c) = rest.chars().next() {
                match c {
                    '&' => {
                        let (decoded, len) = entity(rest)?;
                        url.push(decoded);
                        rest = &rest[len..];
                    }
                    '"' | '<' | '>' => return Err(format!("unescaped {c:?} in href")),
                    _ => {
                        url.push(c);
                        rest = &rest[c.len_utf8()..];
                    }
                }
            }
            let lower = url.to_ascii_lowercase();
            match ["http://", "https://", "tg://", "mailto:"]
                .iter()
                .any(|s| lower.starts_with(s))
            {
                true => Ok(()),
                false => Err(format!("link to {url:?}")),
            }
        }
        _ => Err(format!("tag <{name} {attributes}> not allowed here")),
    }
}

fn utf16_len(text: &str) -> usize {
    text.encode_utf16().count()
}

/// Checks every message as Telegram would, and returns their visible texts
/// joined without whitespace.
fn check_all(markdown: &str, messages: &[String], limit: usize) -> String {
    let mut joined = String::new();
    for message in messages {
        let shown =
            visible(message).unwrap_or_else(|e| panic!("{e} in {message:?}\nfrom {markdown:?}"));
        assert!(
            utf16_len(&shown) <= limit,
            "{} > {limit} in {message:?}\nfrom {markdown:?}",
            utf16_len(&shown)
        );
        assert!(!shown.trim().is_empty(), "blank message from {markdown:?}");
        assert_eq!(shown.trim_end(), shown, "blank end in {message:?}");
        // Indentation is kept only where it matters, in code.
        assert!(
            shown.trim_start() == shown
                || message.starts_with("<pre>")
                || message.starts_with("<blockquote><pre>"),
            "blank start in {message:?}"
        );
        joined.extend(shown.chars().filter(|c| !c.is_whitespace()));
    }
    joined
}

/// Checks `markdown` split at `limit` against the same text unsplit.
pub(super) fn check_split(markdown: &str, limit: usize) -> Vec<String> {
    let whole = messages_within(markdown, usize::MAX);
    assert!(whole.len() <= 1, "unlimited gave {} messages", whole.len());
    let expected = check_all(markdown, &whole, usize::MAX);
    let parts = messages_within(markdown, limit);
    let joined = check_all(markdown, &parts, limit.max(2));
    assert_eq!(
        joined, expected,
        "parts at {limit} lose text of {markdown:?}"
    );
    parts
}

#[test]
fn conversions() {
    let cases = [
        ("plain words", "plain words"),
        ("**bold** and __bold__", "<b>bold</b> and <b>bold</b>"),
        ("*it* and _it_", "<i>it</i> and <i>it</i>"),
        ("***both***", "<b><i>both</i></b>"),
        ("*a **b** c*", "<i>a <b>b</b> c</i>"),
        ("~~gone~~", "<s>gone</s>"),
        ("`x < y`", "<code>x &lt; y</code>"),
        ("**`x`**", "<b><code>x</code></b>"),
        (
            "```rust\nfn main() {}\n```",
            "<pre><code class=\"language-rust\">fn main() {}</code></pre>",
        ),
        (
            "```\nplain\n  indented\n```",
            "<pre>plain\n  indented</pre>",
        ),
        ("    indented code", "<pre>indented code</pre>"),
        (
            "```\"><script>\nx\n```",
            "<pre><code class=\"language-script\">x</code></pre>",
        ),
        ("# Title\n\nText", "<b>Title</b>\n\nText"),
        ("## *Sub*", "<b><i>Sub</i></b>"),
        ("- a\n- b", "• a\n• b"),
        ("1. a\n2. b", "1. a\n2. b"),
        ("7. seven\n8. eight", "7. seven\n8. eight"),
        ("- a\n  - b\n    1. c\n- d", "• a\n  • b\n    1. c\n• d"),
        ("- a\n\n  more a\n- b", "• a\n\n  more a\n\n• b"),
        ("Intro:\n\n- a\n\nAfter", "Intro:\n\n• a\n\nAfter"),
        ("- [x] done\n- [ ] todo", "☑ done\n☐ todo"),
        ("> quoted\n> more", "<blockquote>quoted\nmore</blockquote>"),
        ("> one\n>\n> two", "<blockquote>one\n\ntwo</blockquote>"),
        ("> a\n>> b", "<blockquote>a\n\nb</blockquote>"),
        ("> **b**", "<blockquote><b>b</b></blockquote>"),
        (
            "> ```\n> code\n> ```",
            "<blockquote><pre>code</pre></blockquote>",
        ),
        ("> q\n\nafter", "<blockquote>q</blockquote>\n\nafter"),
        (
            "[docs](https://example.org/?a=1&b=2)",
            "<a href=\"https://example.org/?a=1&amp;b=2\">docs</a>",
        ),
        (
            "[q](https://e.org/%22x%22 \"title\")",
            "<a href=\"https://e.org/%22x%22\">q</a>",
        ),
        (
            "[**bold link**](https://x.org)",
            "<a href=\"https://x.org\"><b>bold link</b></a>",
        ),
        (
            "**a [l](https://x.org) b**",
            "<b>a <a href=\"https://x.org\">l</a> b</b>",
        ),
        ("[tg](tg://user?id=1)", "<a href=\"tg://user?id=1\">tg</a>"),
        (
            "<https://x.org>",
            "<a href=\"https://x.org\">https://x.org</a>",
        ),
        ("<me@x.org>", "<a href=\"mailto:me@x.org\">me@x.org</a>"),
        ("[x](javascript:alert(1))", "x"),
        ("[x](JaVaScRiPt:alert(1))", "x"),
        ("[x](/relative)", "x"),
        ("[x](data:text/html,<b>)", "x"),
        (
            "[](https://x.org)",
            "<a href=\"https://x.org\">https://x.org</a>",
        ),
        (
            "![a cat](https://e.org/c.png)",
            "<a href=\"https://e.org/c.png\">a cat</a>",
        ),
        ("![a cat](file:///etc/passwd)", "a cat"),
        (
            "[![logo](https://e.org/l.png)](https://e.org)",
            "<a href=\"https://e.org\">logo</a>",
        ),
        ("a\n\n---\n\nb", "a\n\n———\n\nb"),
        ("line one\nline two", "line one\nline two"),
        ("hard  \nbreak", "hard\nbreak"),
        ("||secret|| plain", "<tg-spoiler>secret</tg-spoiler> plain"),
        (
            "||**bold** secret||",
            "<tg-spoiler><b>bold</b> secret</tg-spoiler>",
        ),
        ("a || b", "a || b"),
        ("||||", "||||"),
        ("`a || b` ||", "<code>a || b</code> ||"),
        ("|| one\n\ntwo ||", "|| one\n\ntwo ||"),
        ("| a | b |\n|---|---|\n| 1 | 2 |", "<b>a | b</b>\n1 | 2"),
        ("x&amp;y &lt;z&gt;", "x&amp;y &lt;z&gt;"),
        ("`&amp;`", "<code>&amp;amp;</code>"),
        ("😀 emoji 👨‍👩‍👧", "😀 emoji 👨‍👩‍👧"),
    ];
    for (markdown, expected) in cases {
        let messages = messages(markdown);
        assert_eq!(messages, [expected], "from {markdown:?}");
        check_all(markdown, &messages, MAX_TEXT);
    }
}

#[test]
fn raw_html_is_text() {
    let cases = [
        (
            "<script>alert(1)</script>",
            "&lt;script&gt;alert(1)&lt;/script&gt;",
        ),
        ("a <b>not bold</b>", "a &lt;b&gt;not bold&lt;/b&gt;"),
        (
            "<div>\n<b>x</b>\n</div>",
            "&lt;div&gt;\n&lt;b&gt;x&lt;/b&gt;\n&lt;/div&gt;",
        ),
        ("<!-- hidden -->", "&lt;!-- hidden --&gt;"),
        (
            "<a href=\"javascript:x\">y</a>",
            "&lt;a href=\"javascript:x\"&gt;y&lt;/a&gt;",
        ),
    ];
    for (markdown, expected) in cases {
        assert_eq!(messages(markdown), [expected], "from {markdown:?}");
    }
}

#[test]
fn escape_escapes_the_three() {
    let cases = [
        ("", ""),
        ("plain", "plain"),
        ("a < b > c & d", "a &lt; b &gt; c &amp; d"),
        ("&amp;", "&amp;amp;"),
        ("\"quoted\" 😀", "\"quoted\" 😀"),
    ];
    for (text, expected) in cases {
        assert_eq!(escape(text), expected);
    }
}

#[test]
fn blank_input_gives_no_messages() {
    for markdown in ["", " ", "\n\n\t ", "[a]: https://x.org", "```\n```"] {
        assert_eq!(
            messages(markdown),
            Vec::<String>::new(),
            "from {markdown:?}"
        );
    }
}

#[test]
fn cuts_prefer_paragraphs_then_lines_then_spaces() {
    let cases: [(&str, usize, &[&str]); 11] = [
        ("aaaa bbbb\n\ncccc", 12, &["aaaa bbbb", "cccc"]),
        ("aaaa\nbbbb cccc", 12, &["aaaa\nbbbb", "cccc"]),
        ("aaaa bbbb cccc", 12, &["aaaa bbbb", "cccc"]),
        ("aaaaaaaaaaaa", 5, &["aaaaa", "aaaaa", "aa"]),
        // A paragraph break too early loses to a later line break.
        ("a\n\nbbbbbbbbb\ncc", 12, &["a\n\nbbbbbbbbb", "cc"]),
        ("**aaaa bbbb**", 5, &["<b>aaaa</b>", "<b>bbbb</b>"]),
        ("&&&&&&", 3, &["&amp;&amp;&amp;", "&amp;&amp;&amp;"]),
        ("😀😀😀", 3, &["😀", "😀", "😀"]),
        ("😀😀😀", 1, &["😀", "😀", "😀"]),
        (
            "```\nline1\nline2\nline3\n```",
            12,
            &["<pre>line1\nline2</pre>", "<pre>line3</pre>"],
        ),
        (
            "```py\nif x:\n    y\n```",
            7,
            &[
                "<pre><code class=\"language-py\">if x:</code></pre>",
                "<pre><code class=\"language-py\">    y</code></pre>",
            ],
        ),
    ];
    for (markdown, limit, expected) in cases {
        assert_eq!(
            messages_within(markdown, limit),
            expected,
            "{markdown:?} at {limit}"
        );
        check_split(markdown, limit);
    }
}

#[test]
fn cuts_prefer_outside_code_blocks() {
    let code: String = (0..10).map(|i| format!("let x{i} = {i};\n")).collect();
    let markdown = format!("Some words before it.\n\n```rust\n{code}```\n\nAfter.");
    // The block fits a message of its own, so it is not cut, although
    // that leaves the first message short.
    let parts = check_split(&markdown, 130);
    assert_eq!(parts.len(), 2);
    assert_eq!(parts[0], "Some words before it.");
    assert!(parts[1].starts_with("<pre><code class=\"language-rust\">let x0 = 0;\n"));
    assert!(parts[1].ends_with("let x9 = 9;</code></pre>\n\nAfter."));
}

#[test]
fn hard_cuts_keep_emoji_sequences() {
    // A family emoji is five chars joined by ZWJs; a hard cut through it
    // moves to its start.
    let family = "👨‍👩‍👧";
    let markdown = format!("ab{family}");
    let parts = check_split(&markdown, 8);
    assert_eq!(parts, ["ab", family]);
}

/// A 10,000-char reply of paragraphs, lists, a long code block and emoji.
fn long_reply() -> String {
    let mut reply = String::new();
    for p in 0..12 {
        reply.push_str(&format!(
            "Paragraph {p} with **bold**, *italic*, `code`, a [link](https://example.org/{p}) \
             and emoji 😀🎉 that count twice. "
        ));
        reply.push_str(&"Some more ordinary words follow here. ".repeat(10));
        reply.push_str("\n\n");
        if p == 4 {
            reply.push_str("```rust\n");
            for line in 0..90 {
                reply.push_str(&format!(
                    "    let value_{line} = compute({line}) < limit && ok;\n"
                ));
            }
            reply.push_str("```\n\n");
        }
        if p == 8 {
            for item in 0..10 {
                reply.push_str(&format!("- item {item} with <angle> & ampersand\n"));
            }
            reply.push('\n');
        }
    }
    reply
}

#[test]
fn splits_a_long_mixed_reply() {
    let reply = long_reply();
    assert!(reply.chars().count() >= 10_000, "{}", reply.chars().count());
    let parts = check_split(&reply, MAX_TEXT);
    assert!(parts.len() >= 3, "{} parts", parts.len());
    assert_eq!(parts, messages(&reply));
    for part in &parts {
        let shown = visible(part).unwrap_or_default();
        // Every part but the last is filled at least half way.
        assert!(part == parts.last().unwrap_or(part) || utf16_len(&shown) >= MAX_TEXT / 2);
    }
}

/// A tiny deterministic generator, so failures reproduce.
struct Rng(u64);

impl Rng {
    fn next(&mut self, below: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % below as u64) as usize
    }
}

#[test]
fn small_limits_over_generated_inputs() {
    let pieces = [
        "word",
        "another",
        "**bold**",
        "*it*",
        "**bold *both* bold**",
        "`co<de>`",
        "~~gone~~",
        "||hidden||",
        "||",
        "[link](https://e.org/?a&b=\"c\")",
        "[bad](javascript:x)",
        "![img](https://e.org/i.png)",
        "😀",
        "👨‍👩‍👧",
        "é",
        "\n",
        "\n\n",
        "  ",
        "- item\n",
        "  - nested\n",
        "1. one\n",
        "> quote\n",
        "\n```rs\nlet x = a < b;\n    indented && more\n\n```\n",
        "# Heading\n",
        "&amp;",
        "&",
        "<b>",
        "<script>",
        "ааааааааааааааааааааааааааааааа",
        "---\n",
        "| a | b |\n|---|---|\n| 1 | 2 |\n",
    ];
    let mut rng = Rng(0x5eed_1234_abcd_9876);
    for _ in 0..1500 {
        let mut markdown = String::new();
        for _ in 0..rng.next(40) {
            markdown.push_str(pieces[rng.next(pieces.len())]);
            if rng.next(3) == 0 {
                markdown.push(' ');
            }
        }
        let limit = 2 + rng.next(60);
        check_split(&markdown, limit);
    }
}

#[test]
fn hostile_input_stays_valid() {
    let inputs = [
        ">".repeat(5_000) + " deep",
        "- ".repeat(5_000) + "deep",
        "*".repeat(10_000) + "x" + &"*".repeat(10_000),
        "[".repeat(10_000) + "x" + &"](https://e.org)".repeat(100),
        "a".repeat(100_000),
        "word ".repeat(20_000),
        "😀".repeat(50_000),
        "\u{200D}".repeat(10_000),
        "e\u{301}".repeat(10_000),
        "<".repeat(10_000),
        "&amp;".repeat(10_000),
        "`".repeat(10_000),
        format!("```\n{}\n```", "x".repeat(100_000)),
        format!("```\n{}```", "\n".repeat(10_000)),
        format!("```\n{}```", "    \n".repeat(10_000)),
        format!("```\n{}x\n```", " ".repeat(10_000)),
        "|".repeat(10_000),
        "||a **b|| c**".to_owned(),
        "\u{a0}\u{3000}".repeat(1_000),
    ];
    for markdown in &inputs {
        for limit in [MAX_TEXT, 100, 7] {
            check_split(markdown, limit);
        }
    }
}

#[test]
fn large_input_is_linear() {
    let reply = long_reply();
    let mut big = String::new();
    while big.len() < 1_000_000 {
        big.push_str(&reply);
    }
    let started = Instant::now();
    let parts = messages(&big);
    let small = messages_within(&big, 100);
    let elapsed = started.elapsed();
    assert!(parts.len() > 200 && small.len() > parts.len());
    // Tens of milliseconds in a release build; a quadratic step would take
    // minutes even unoptimized.
    assert!(elapsed < Duration::from_secs(20), "{elapsed:?}");
}
