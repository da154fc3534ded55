//! How an MCP server's tool names become hearth tool names, and back.
//!
//! hearth names are 1-64 characters of `a-z 0-9 _ -` with `.` only as a
//! separator; MCP names are up to 128 characters of nearly anything
//! (`getTinyImage`, `get-tiny-image`, `files/read.v2`). A server's tool is
//! offered as `mcp.SERVER.TOOL`, with TOOL made to fit. The mapping is
//! deterministic, so the names the model learned (and the cache holds) stay
//! the same from one start to the next; the caller keeps the original name
//! for `tools/call`.

use std::collections::{BTreeMap, HashSet};

/// The longest hearth tool name.
pub const MAX_TOOL_NAME: usize = 64;
/// The prefix of every tool this plugin offers.
pub const PREFIX: &str = "mcp";

/// The hearth names of a server's tools, in the order given. Collisions
/// after mapping (`get_file` and `getFile`) are settled in favour of the
/// tool whose name needed no change, else the one that sorts first; the
/// others get a suffix from a hash of their own name, so adding a tool
/// never renames another.
pub fn hearth_names(server: &str, originals: &[&str]) -> Vec<String> {
    // "mcp." + server + "." + tool
    let budget = MAX_TOOL_NAME.saturating_sub(PREFIX.len() + server.len() + 2);
    let bases: Vec<String> = originals.iter().map(|o| fit(&base(o), o, budget)).collect();
    let mut by_base: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, b) in bases.iter().enumerate() {
        by_base.entry(b.as_str()).or_default().push(i);
    }
    let mut names: Vec<Option<String>> = vec![None; originals.len()];
    let mut taken: HashSet<String> = HashSet::new();
    for (b, mut group) in by_base {
        group.sort_by_key(|&i| (originals[i] != b, originals[i]));
        names[group[0]] = Some(b.to_owned());
        taken.insert(b.to_owned());
    }
    for (i, original) in originals.iter().enumerate() {
        if names[i].is_some() {
            continue;
        }
        let tag = &short_hash(original)[..6];
        let mut candidate = with_suffix(&bases[i], &format!("_{tag}"), budget);
        let mut n = 2;
        while taken.contains(&candidate) {
            candidate = with_suffix(&bases[i], &format!("_{tag}_{n}"), budget);
            n += 1;
        }
        taken.insert(candidate.clone());
        names[i] = Some(candidate);
    }
    names
        .into_iter()
        .map(|n| format!("{PREFIX}.{server}.{}", n.unwrap_or_default()))
        .collect()
}

/// A tool name in hearth's alphabet: camelCase split into snake_case
/// (`getTinyImage` → `get_tiny_image`, `getHTTPStatus` → `get_http_status`),
/// `-` and `_` kept, anything else (`.`, `/`, spaces, non-ASCII) turned into
/// `_`, runs of `_` squeezed and trimmed at the ends. Never empty.
pub fn base(original: &str) -> String {
    let chars: Vec<char> = original.chars().collect();
    let mut out = String::with_capacity(original.len() + 4);
    for (i, &c) in chars.iter().enumerate() {
        if c.is_ascii_uppercase() {
            let prev = i.checked_sub(1).map(|p| chars[p]);
            let next = chars.get(i + 1).copied();
            let starts_word = match prev {
                Some(p) if p.is_ascii_lowercase() || p.is_ascii_digit() => true,
                Some(p) if p.is_ascii_uppercase() => next.is_some_and(|n| n.is_ascii_lowercase()),
                _ => false,
            };
            if starts_word {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else if c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_' {
            out.push(c);
        } else {
            out.push('_');
        }
    }
    let mut squeezed = String::with_capacity(out.len());
    for c in out.chars() {
        if !(c == '_' && squeezed.ends_with('_')) {
            squeezed.push(c);
        }
    }
    let trimmed = squeezed.trim_matches('_');
    if trimmed.is_empty() {
        "tool".to_owned()
    } else {
        trimmed.to_owned()
    }
}

/// `base` cut to `budget` characters, the cut marked by a hash of the
/// original so that two long names sharing a start stay apart.
fn fit(base: &str, original: &str, budget: usize) -> String {
    if base.len() <= budget {
        return base.to_owned();
    }
    with_suffix(base, &format!("_{}", &short_hash(original)[..8]), budget)
}

/// `base` with `suffix`, `base` cut so that the whole fits `budget`.
fn with_suffix(base: &str, suffix: &str, budget: usize) -> String {
    let keep = budget.saturating_sub(suffix.len());
    // `base` is ASCII, so any byte index is a character boundary.
    let head = base[..keep.min(base.len())].trim_end_matches('_');
    format!("{head}{suffix}")
}

fn short_hash(text: &str) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, text.as_bytes());
    crate::config::hex(&digest.as_ref()[..8])
}

/// Whether `name` is a valid hearth tool name (what the host checks).
pub fn valid_hearth_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_TOOL_NAME
        && name.split('.').all(|part| {
            !part.is_empty()
                && part
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-')
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_mapped_to_hearths_alphabet() {
        let cases = [
            ("echo", "echo"),
            ("getTinyImage", "get_tiny_image"),
            ("get-tiny-image", "get-tiny-image"),
            ("read_text_file", "read_text_file"),
            ("getHTTPStatus", "get_http_status"),
            ("HTTPServer", "http_server"),
            ("files/read.v2", "files_read_v2"),
            ("Read File", "read_file"),
            ("sum2Numbers", "sum2_numbers"),
            ("__private__", "private"),
            ("a..b", "a_b"),
            ("ünïcode", "n_code"),
            ("...", "tool"),
            ("ALLCAPS", "allcaps"),
        ];
        for (original, expected) in cases {
            assert_eq!(base(original), expected, "for {original:?}");
            let full = hearth_names("srv", &[original]).remove(0);
            assert_eq!(full, format!("mcp.srv.{expected}"));
            assert!(valid_hearth_name(&full), "{full}");
        }
    }

    #[test]
    fn collisions_get_a_stable_suffix_and_the_exact_name_wins() {
        let names = hearth_names("s", &["getFile", "get_file", "get.file"]);
        assert_eq!(
            names[1], "mcp.s.get_file",
            "the name that needed no change keeps it"
        );
        assert!(
            names[0].starts_with("mcp.s.get_file_")
                && names[0].len() == "mcp.s.get_file_".len() + 6
        );
        assert!(names[2].starts_with("mcp.s.get_file_"));
        assert_ne!(names[0], names[2]);
        // Adding a tool renames none of the others.
        let more = hearth_names("s", &["getFile", "get_file", "get.file", "get/file"]);
        assert_eq!(more[..3], names[..]);
        assert_eq!(more.iter().collect::<HashSet<_>>().len(), 4);
        // Without the exact one, the first in sorted order wins.
        let two = hearth_names("s", &["get.file", "getFile"]);
        assert_eq!(two[0], "mcp.s.get_file");
        assert_ne!(two[1], "mcp.s.get_file");
    }

    #[test]
    fn long_names_are_cut_to_64_characters_deterministically() {
        let server = "a-server-name-of-thirty-two-char";
        assert_eq!(server.len(), 32);
        let long_a = "thisIsAVeryLongToolNameThatGoesOnAndOnBeyondTheLimitA";
        let long_b = "thisIsAVeryLongToolNameThatGoesOnAndOnBeyondTheLimitB";
        let names = hearth_names(server, &[long_a, long_b, "short"]);
        for n in &names {
            assert!(n.len() <= MAX_TOOL_NAME, "{n} is {} long", n.len());
            assert!(valid_hearth_name(n), "{n}");
        }
        assert_ne!(names[0], names[1]);
        assert_eq!(names, hearth_names(server, &[long_a, long_b, "short"]));
        assert_eq!(names[2], format!("mcp.{server}.short"));
    }

    #[test]
    fn the_name_rule_is_the_hosts() {
        for ok in ["mcp.fs.read_file", "a", "mcp.x.get-tiny-image"] {
            assert!(valid_hearth_name(ok), "{ok}");
        }
        for bad in [
            "",
            "mcp..x",
            ".x",
            "x.",
            "Mcp.x",
            "mcp.x y",
            &"a".repeat(65),
        ] {
            assert!(!valid_hearth_name(bad), "{bad}");
        }
    }
}
