//! Where the plain text is cut into messages.
//!
//! Each part is the longest stretch that fits, cut at the best break in
//! it: a paragraph break, then a line break, then a space, those outside
//! code blocks before those inside. A break counts only if it leaves the
//! part at least half full, so a paragraph break early on does not beat a
//! line break near the limit; failing that, the latest break of any kind
//! wins, and only a text with no break at all is cut hard, between two
//! chars (a pair of UTF-16 surrogates is one char, so it is never cut).
//! One exception: a code block cut in two reads worse than a short
//! message, so a cut that would fall inside code moves back to the latest
//! line break outside it, if the window has one.
//!
//! Each part's window is scanned once, and a part ends at least half way
//! through its window unless the rest of that window holds no break of
//! the kind chosen (which the next window then cannot find again), so the
//! work stays linear in the text.

use super::Doc;

/// Kinds of break, best first.
const PARAGRAPH: usize = 0;
const LINE: usize = 1;
const LINE_IN_CODE: usize = 2;
const SPACE: usize = 3;
const SPACE_IN_CODE: usize = 4;
const KINDS: usize = 5;

/// The byte ranges of `doc.plain` to send, in order: none blank, none with
/// blank edges, each at most `limit` UTF-16 code units (`limit` >= 2).
pub(super) fn parts(doc: &Doc, limit: usize) -> Vec<(usize, usize)> {
    let text = doc.plain.as_str();
    let mut parts = Vec::new();
    let mut start = skip_blank(doc, 0);
    while start < text.len() {
        let cut = cut(doc, start, limit);
        let end = start + text[start..cut.end].trim_end().len();
        // A window of nothing but indentation gives an empty part: skipped,
        // as the whitespace at a cut is.
        if end > start {
            parts.push((start, end));
        }
        start = skip_blank(doc, cut.resume);
    }
    parts
}

/// A place to end a part: it ends at `end` and the next begins at `resume`
/// (the whitespace between is dropped).
#[derive(Clone, Copy, Debug)]
struct Cut {
    end: usize,
    resume: usize,
}

/// A break seen while scanning, with the UTF-16 length of the part it
/// would end.
#[derive(Clone, Copy, Debug)]
struct Break {
    cut: Cut,
    units: usize,
}

/// Where the part beginning at `start` (not whitespace, or indentation)
/// should end.
fn cut(doc: &Doc, start: usize, limit: usize) -> Cut {
    let text = doc.plain.as_str();
    let mut best: [Option<Break>; KINDS] = [None; KINDS];
    let mut units = 0;
    let mut run = doc.run_at(start);
    // The whitespace stretch being scanned: where it began, the units
    // before it, and how many newlines it holds so far.
    let mut blank: Option<(usize, usize, usize)> = None;
    for (offset, c) in text[start..].char_indices() {
        let at = start + offset;
        while doc.runs.get(run + 1).is_some_and(|next| next.start <= at) {
            run += 1;
        }
        let in_code = doc.runs.get(run).is_some_and(|r| r.style.pre.is_some());
        // Seen before the limit is checked: whitespace that does not fit
        // is still a break, and costs nothing to drop.
        if matches!(c, ' ' | '\t' | '\r' | '\n') {
            let (from, before, newlines) = blank.get_or_insert((at, units, 0));
            let kind = if c == '\n' {
                *newlines += 1;
                Some(match (in_code, *newlines) {
                    (true, _) => LINE_IN_CODE,
                    (false, 1) => LINE,
                    (false, _) => PARAGRAPH,
                })
            } else if *newlines == 0 {
                Some(if in_code { SPACE_IN_CODE } else { SPACE })
            } else {
                // Indentation after a line break stays with the next line.
                None
            };
            if let Some(kind) = kind.filter(|_| *from > start) {
                best[kind] = Some(Break {
                    cut: Cut {
                        end: *from,
                        resume: at + c.len_utf8(),
                    },
                    units: *before,
                });
            }
        } else {
            blank = None;
        }
        let width = c.len_utf16();
        if units + width > limit {
            return choose(text, &best, limit, Hard { start, at, in_code });
        }
        units += width;
    }
    Cut {
        end: text.len(),
        resume: text.len(),
    }
}

/// Where a part would be cut if it had no break: before the char at `at`,
/// which does not fit.
#[derive(Clone, Copy, Debug)]
struct Hard {
    start: usize,
    at: usize,
    in_code: bool,
}

/// The best of the breaks seen, or else a hard cut.
fn choose(text: &str, best: &[Option<Break>; KINDS], limit: usize, hard: Hard) -> Cut {
    let seen = best
        .iter()
        .enumerate()
        .filter_map(|(kind, found)| found.map(|found| (kind, found)));
    let chosen = seen
        .clone()
        .find(|(_, found)| found.units >= limit / 2)
        .or_else(|| seen.max_by_key(|(_, found)| found.cut.end));
    let in_code = chosen.map_or(hard.in_code, |(kind, _)| {
        matches!(kind, LINE_IN_CODE | SPACE_IN_CODE)
    });
    // A code block cut in two reads worse than a short message, so any
    // line break outside code wins over a cut inside it.
    let outside = [best[PARAGRAPH], best[LINE]]
        .into_iter()
        .flatten()
        .max_by_key(|found| found.cut.end);
    let chosen = match outside {
        Some(found) if in_code => Some(found),
        _ => chosen.map(|(_, found)| found),
    };
    match chosen {
        Some(found) => {
            let mut cut = found.cut;
            // After a cut at a space, the next part starts at the next word.
            if !text[found.cut.end..cut.resume].contains('\n') {
                let rest = &text[cut.resume..];
                cut.resume += rest.len() - rest.trim_start_matches([' ', '\t']).len();
            }
            cut
        }
        None => {
            let at = hard_cut(text, hard.start, hard.at);
            Cut {
                end: at,
                resume: at,
            }
        }
    }
}

/// `at`, moved back if it would split an emoji sequence or a letter from
/// its combining mark where that is cheap to see; `at` itself if backing
/// off would leave nothing.
fn hard_cut(text: &str, start: usize, at: usize) -> usize {
    let mut cut = at;
    loop {
        let next = text[cut..].chars().next();
        let previous = text[start..cut].chars().next_back();
        let joined = next.is_some_and(continues) || previous == Some('\u{200D}');
        match previous {
            Some(c) if joined => cut -= c.len_utf8(),
            _ => break,
        }
    }
    if cut > start { cut } else { at }
}

/// Whether `c` belongs to the char before it: a zero-width joiner,
/// variation selector, skin tone, keycap, tag char (flags) or combining
/// diacritic.
fn continues(c: char) -> bool {
    matches!(c,
        '\u{200D}'
        | '\u{FE00}'..='\u{FE0F}'
        | '\u{1F3FB}'..='\u{1F3FF}'
        | '\u{20E3}'
        | '\u{E0020}'..='\u{E007F}'
        | '\u{0300}'..='\u{036F}')
}

/// Where the next part starts if the text so far ended at `from`: past
/// blank lines and, outside code, indentation (it matters only in code;
/// elsewhere Telegram would trim it anyway). The end of the text if only
/// whitespace is left.
fn skip_blank(doc: &Doc, from: usize) -> usize {
    let text = doc.plain.as_str();
    let mut line_start = from;
    for (offset, c) in text[from..].char_indices() {
        if c == '\n' {
            line_start = from + offset + 1;
        } else if !c.is_whitespace() {
            let in_code = doc
                .runs
                .get(doc.run_at(line_start))
                .is_some_and(|run| run.style.pre.is_some());
            return if in_code { line_start } else { from + offset };
        }
    }
    text.len()
}
