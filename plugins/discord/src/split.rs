//! Replies cut to Discord's limit of 2,000 characters a message, where a
//! reader would cut: at a paragraph, else a line, else a space, else
//! anywhere. A cut inside a code block closes the block and opens it again
//! (with its language) in the next message, so every piece renders.

/// The most characters in one message.
pub const MAX_CHARS: usize = 2000;

/// `text` in pieces of at most `max` characters (`max` ≥ 20), none empty.
pub fn split(text: &str, max: usize) -> Vec<String> {
    let max = max.max(20);
    let mut pieces = Vec::new();
    let mut rest = text.trim_end();
    // The fence a piece must reopen, as the previous one left it open.
    let mut reopen: Option<String> = None;
    while !rest.is_empty() {
        let opening = reopen
            .as_ref()
            .map(|f| format!("{f}\n"))
            .unwrap_or_default();
        // Room for the reopened fence and a closing one.
        let room = max - opening.chars().count() - 4;
        let cut = if rest.chars().count() <= room {
            rest.len()
        } else {
            boundary(rest, room)
        };
        let (head, tail) = rest.split_at(cut);
        let mut piece = opening + head.trim_end();
        let open = open_fence(&piece);
        if let Some(fence) = &open
            && !tail.trim().is_empty()
        {
            piece.push_str("\n```");
            reopen = Some(fence.clone());
        } else {
            reopen = None;
        }
        if !piece.trim().is_empty() {
            pieces.push(piece);
        }
        rest = tail.trim_start_matches('\n').trim_end();
        if reopen.is_none() {
            rest = rest.trim_start();
        }
    }
    pieces
}

/// The byte offset to cut `text` at: the last paragraph break, line break
/// or space in its first `room` characters (in the later half), else at
/// `room` characters.
fn boundary(text: &str, room: usize) -> usize {
    let hard = text
        .char_indices()
        .nth(room)
        .map_or(text.len(), |(at, _)| at);
    let window = &text[..hard];
    let least = hard / 2;
    for sep in ["\n\n", "\n", " "] {
        if let Some(at) = window.rfind(sep).filter(|&at| at >= least) {
            return at + sep.len();
        }
    }
    hard
}

/// The fence line (```` ```lang ````) of a code block `piece` leaves open.
fn open_fence(piece: &str) -> Option<String> {
    let mut open: Option<String> = None;
    for line in piece.lines() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("```") {
            open = match open {
                Some(_) => None,
                None => Some(trimmed.to_owned()),
            };
        }
    }
    open
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_text_is_one_piece_and_long_text_breaks_at_paragraphs_then_lines() {
        assert_eq!(split("hello", MAX_CHARS), ["hello"]);
        assert_eq!(split("", MAX_CHARS), Vec::<String>::new());
        let para = "word ".repeat(300);
        let text = format!("{}\n\n{}", para.trim(), para.trim());
        let pieces = split(&text, MAX_CHARS);
        assert_eq!(pieces.len(), 2, "{pieces:?}");
        assert!(pieces.iter().all(|p| p.chars().count() <= MAX_CHARS));
        assert!(pieces[0].ends_with("word") && pieces[1].starts_with("word"));
    }

    #[test]
    fn no_piece_is_over_the_limit_whatever_the_text() {
        for text in [
            "x".repeat(4500),
            "ü".repeat(4500),
            "line\n".repeat(1000),
            "a b ".repeat(2000),
            format!("```rust\n{}```", "let x = 1;\n".repeat(400)),
        ] {
            let pieces = split(&text, MAX_CHARS);
            assert!(pieces.len() >= 2, "{}", text.len());
            for piece in &pieces {
                assert!(
                    piece.chars().count() <= MAX_CHARS,
                    "{}",
                    piece.chars().count()
                );
                assert!(!piece.trim().is_empty());
            }
            let kept: usize = pieces
                .iter()
                .map(|p| p.matches(|c: char| !c.is_whitespace() && c != '`').count())
                .sum();
            let wanted = text
                .matches(|c: char| !c.is_whitespace() && c != '`')
                .count();
            let reopened = pieces
                .iter()
                .filter(|p| p.starts_with("```rust"))
                .count()
                .saturating_sub(1);
            assert_eq!(kept, wanted + reopened * 4, "nothing lost");
        }
    }

    #[test]
    fn a_code_block_cut_in_two_is_closed_and_reopened() {
        let text = format!("Here:\n```rust\n{}```\nDone.", "let x = 1;\n".repeat(300));
        let pieces = split(&text, MAX_CHARS);
        assert!(pieces.len() >= 2);
        for piece in &pieces {
            assert_eq!(piece.matches("```").count() % 2, 0, "balanced: {piece}");
        }
        assert!(pieces[1].starts_with("```rust\n"), "{}", &pieces[1][..20]);
        assert!(pieces.last().unwrap().ends_with("Done."));
    }
}
