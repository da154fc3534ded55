//! Fuzzing markdown → Telegram HTML: the markdown corpus (shared with the
//! Signal formatter), mutated, cut at random limits. Properties, checked
//! by the validator in `tests.rs` as the Bot API would check them: every
//! part is HTML Telegram accepts (known tags, each opened tag closed,
//! entities whole), at most the limit in UTF-16 units of visible text,
//! and the parts together show the same text as the reply unsplit.

use hearth_fuzz::{Rng, Target};

use super::MAX_TEXT;
use super::tests::check_split;

#[test]
fn every_part_is_valid_within_the_limit_and_nothing_is_lost() {
    Target::new("markdown")
        .tokens(MARKDOWN_TOKENS)
        .run(|input, rng: &mut Rng| {
            let markdown = String::from_utf8_lossy(input);
            let limit = match rng.below(3) {
                0 => MAX_TEXT,
                1 => rng.between(2, 64),
                _ => rng.between(64, 600),
            };
            check_split(&markdown, limit);
        });
}

/// Pieces of markdown and HTML the mutations splice in.
const MARKDOWN_TOKENS: &[&str] = &[
    "**",
    "*",
    "_",
    "__",
    "~~",
    "||",
    "`",
    "```",
    "```rust\n",
    "\n```\n",
    "> ",
    "- ",
    "1. ",
    "# ",
    "---\n",
    "\n\n",
    "  \n",
    "[",
    "](",
    ")",
    "](https://e.org/?a&b=\"c\")",
    "![",
    "<",
    ">",
    "&",
    "&amp;",
    "&#",
    "<b>",
    "</i>",
    "<pre>",
    "\\",
    "|---|",
    "[^1]",
    "[^1]: ",
    "    ",
    "\t",
    "<https://e.org>",
    "tg://user?id=1",
    "javascript:",
    "😀",
    "\u{200D}",
    "\u{FE0F}",
    "\u{202E}",
    "\u{301}",
];
