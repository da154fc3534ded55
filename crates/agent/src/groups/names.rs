//! Group names: `{adjective}-{group-word}`, picked at random from two word
//! lists (30 × 20 = 600 names), never one already taken.
//!
//! The lists are fixed here so a name means the same on every machine and
//! reads well in a chat line (`/groups brisk-crew`). Once all 600 are
//! taken, a new group gets the first free numbered name (`brisk-crew-2`),
//! so creating a group never fails for want of a name; the owner can rename
//! any group (`manage_groups rename`).

/// The first half of a name.
pub const ADJECTIVES: [&str; 30] = [
    "amber", "brave", "brisk", "calm", "clever", "cosmic", "crimson", "daring", "eager",
    "fearless", "gentle", "golden", "hardy", "humble", "jolly", "keen", "lively", "lucky",
    "mellow", "mighty", "nimble", "noble", "quiet", "rapid", "silver", "steady", "swift", "tidy",
    "vivid", "witty",
];

/// The second half: words for a group.
pub const GROUP_WORDS: [&str; 20] = [
    "band",
    "brigade",
    "cabal",
    "circle",
    "club",
    "collective",
    "company",
    "council",
    "crew",
    "guild",
    "gang",
    "huddle",
    "league",
    "pack",
    "party",
    "posse",
    "squad",
    "team",
    "troop",
    "union",
];

/// How many names the lists make.
pub const UNNUMBERED: usize = ADJECTIVES.len() * GROUP_WORDS.len();

/// A name not in `taken` (compared without case): a random pick from the
/// free list names, or, with all of them taken, the first free numbered
/// name, scanning from a random list name.
pub fn pick(taken: &[String], random: u64) -> String {
    let taken: std::collections::HashSet<String> =
        taken.iter().map(|t| t.to_ascii_lowercase()).collect();
    let name = |i: usize| {
        format!(
            "{}-{}",
            ADJECTIVES[i / GROUP_WORDS.len()],
            GROUP_WORDS[i % GROUP_WORDS.len()]
        )
    };
    let free: Vec<usize> = (0..UNNUMBERED)
        .filter(|&i| !taken.contains(&name(i)))
        .collect();
    if !free.is_empty() {
        return name(free[(random % free.len() as u64) as usize]);
    }
    let start = (random % UNNUMBERED as u64) as usize;
    (2u64..)
        .flat_map(|n| (0..UNNUMBERED).map(move |k| (n, (start + k) % UNNUMBERED)))
        .map(|(n, i)| format!("{}-{n}", name(i)))
        .find(|candidate| !taken.contains(candidate))
        .unwrap_or_else(|| format!("group-{random}"))
}

/// Checks a name the owner or the agent gives: 1–40 characters of lower-
/// case letters, digits and hyphens, starting with a letter, so it is one
/// word in a chat command and one folder under `groups/`.
pub fn check(name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && name.len() <= 40
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    if ok {
        Ok(())
    } else {
        Err(format!(
            "{name:?} is not a group name: use 1 to 40 lower-case letters, digits and hyphens, \
             starting with a letter (like brisk-crew)"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn six_hundred_names_are_unique_and_the_next_is_numbered() {
        let mut taken = Vec::new();
        for i in 0..UNNUMBERED as u64 {
            let name = pick(&taken, i.wrapping_mul(0x9e37_79b9_7f4a_7c15));
            assert!(!taken.contains(&name), "{name} twice");
            check(&name).unwrap();
            taken.push(name);
        }
        let next = pick(&taken, 7);
        assert!(next.ends_with("-2"), "{next}");
        assert!(!taken.contains(&next));
        taken.push(next);
        let after = pick(&taken, 7);
        assert!(after.ends_with("-2") && !taken.contains(&after), "{after}");
    }

    #[test]
    fn taken_names_are_compared_without_case() {
        let taken: Vec<String> = (0..UNNUMBERED - 1)
            .map(|i| {
                format!(
                    "{}-{}",
                    ADJECTIVES[i / GROUP_WORDS.len()],
                    GROUP_WORDS[i % GROUP_WORDS.len()]
                )
                .to_uppercase()
            })
            .collect();
        assert_eq!(pick(&taken, 3), "witty-union");
    }

    #[test]
    fn names_are_checked() {
        for bad in ["", "Brisk-Crew", "9lives", "a b", "../x", &"a".repeat(41)] {
            assert!(check(bad).is_err(), "{bad:?}");
        }
        for good in ["brisk-crew", "a", "team-7"] {
            check(good).unwrap();
        }
    }
}
