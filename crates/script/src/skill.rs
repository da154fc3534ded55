//! `SKILL.md`: a skill's frontmatter (name, description, tags) and body.
//!
//! The frontmatter is the small YAML subset skills use: `key: value` lines,
//! values optionally quoted, and `tags` as `[a, b]` or as `- a` lines.
//! Anything else is refused with its line number rather than guessed at.

/// A parsed skill document.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SkillDoc {
    /// The skill's name (equal to its folder's name).
    pub name: String,
    /// One line for the prompt's skills index.
    pub description: String,
    /// Optional tags.
    pub tags: Vec<String>,
    /// The instructions, read by the agent on demand.
    pub body: String,
}

/// Parses `SKILL.md`; an error is `(line, message)`.
pub fn parse(text: &str) -> Result<SkillDoc, (u32, String)> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.lines().enumerate().map(|(i, l)| (i as u32 + 1, l));
    match lines.next() {
        Some((_, l)) if l.trim_end() == "---" => {}
        _ => {
            return Err((
                1,
                "SKILL.md must start with a `---` frontmatter block".into(),
            ));
        }
    }
    let (mut name, mut description, mut tags) = (None, None, Vec::new());
    let mut in_tags = false;
    let mut closed = None;
    for (n, line) in lines.by_ref() {
        if line.trim_end() == "---" {
            closed = Some(n);
            break;
        }
        if line.trim().is_empty() || line.trim_start().starts_with('#') {
            continue;
        }
        if let Some(item) = line.trim_start().strip_prefix("- ").filter(|_| in_tags) {
            tags.push(unquote(item.trim()));
            continue;
        }
        in_tags = false;
        let Some((key, value)) = line.split_once(':') else {
            return Err((n, format!("expected `key: value`, found {line:?}")));
        };
        let value = value.trim();
        match key.trim() {
            "name" => name = Some(unquote(value)),
            "description" => description = Some(unquote(value)),
            "tags" if value.is_empty() => in_tags = true,
            "tags" => match value.strip_prefix('[').and_then(|v| v.strip_suffix(']')) {
                Some(list) => {
                    tags = list
                        .split(',')
                        .map(|t| unquote(t.trim()))
                        .filter(|t| !t.is_empty())
                        .collect();
                }
                None => return Err((n, "`tags` must be a list: [a, b] or `- a` lines".into())),
            },
            other => {
                return Err((
                    n,
                    format!("unknown frontmatter key `{other}` (known: name, description, tags)"),
                ));
            }
        }
    }
    let Some(end) = closed else {
        return Err((1, "the frontmatter block is not closed with `---`".into()));
    };
    let name = name
        .filter(|n| !n.is_empty())
        .ok_or((end, "the frontmatter has no `name`".to_owned()))?;
    let description = description
        .filter(|d| !d.is_empty())
        .ok_or((end, "the frontmatter has no `description`".to_owned()))?;
    let body = lines
        .map(|(_, l)| l)
        .collect::<Vec<_>>()
        .join("\n")
        .trim()
        .to_owned();
    Ok(SkillDoc {
        name,
        description,
        tags,
        body,
    })
}

fn unquote(value: &str) -> String {
    let quoted = value.len() >= 2
        && ((value.starts_with('"') && value.ends_with('"'))
            || (value.starts_with('\'') && value.ends_with('\'')));
    if quoted {
        value[1..value.len() - 1].to_owned()
    } else {
        value.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::parse;

    #[test]
    fn parses_the_frontmatter_forms_skills_use() {
        let doc = parse("---\nname: notes\ndescription: \"Keep notes: short ones\"\ntags: [a, 'b']\n---\n\n# Notes\nUse it.\n").unwrap();
        assert_eq!(doc.name, "notes");
        assert_eq!(doc.description, "Keep notes: short ones");
        assert_eq!(doc.tags, ["a", "b"]);
        assert_eq!(doc.body, "# Notes\nUse it.");
        let block =
            parse("---\nname: x\ndescription: y\ntags:\n  - one\n  - two\n---\nbody").unwrap();
        assert_eq!(block.tags, ["one", "two"]);
    }

    #[test]
    fn refuses_what_it_cannot_read_with_the_line() {
        let cases = [
            ("no frontmatter", 1, "must start with"),
            ("---\nname: x\n", 1, "not closed"),
            ("---\nname: x\n---\n", 3, "no `description`"),
            (
                "---\nname: x\ndescription: y\ncolour: red\n---\n",
                4,
                "unknown frontmatter key `colour`",
            ),
            ("---\nname x\n---\n", 2, "expected `key: value`"),
            ("---\ndescription: y\n---\n", 3, "no `name`"),
        ];
        for (text, line, message) in cases {
            let (l, m) = parse(text).unwrap_err();
            assert_eq!(l, line, "{text:?}: {m}");
            assert!(m.contains(message), "{text:?}: {m}");
        }
    }
}
