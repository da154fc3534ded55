//! `SKILL.md`: a skill's YAML frontmatter and its Markdown body, in the
//! published Agent Skills format, so a skill written for other agents loads
//! unedited.
//!
//! The frontmatter is read as YAML (folded descriptions, lists, nested
//! `metadata` all work). `name` and `description` are required; `tags`,
//! `license`, `allowed-tools`, `metadata` and `compatibility` are kept; a
//! key hearth does not know is kept out of the way with a note
//! (`script_status` shows it), never a refusal: the format grows, and a
//! skill should not stop loading when it does.

use serde_json::Value;

/// The keys hearth reads.
const KNOWN: &[&str] = &[
    "name",
    "description",
    "tags",
    "license",
    "allowed-tools",
    "metadata",
    "compatibility",
];

/// A parsed skill document.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SkillDoc {
    /// The skill's name (equal to its folder's name).
    pub name: String,
    /// One line for the prompt's skills index.
    pub description: String,
    /// Optional tags.
    pub tags: Vec<String>,
    /// The license it is published under (`license`).
    pub license: Option<String>,
    /// The tools its author says it needs (`allowed-tools`); informative:
    /// the policy, not the skill, decides what runs.
    pub allowed_tools: Vec<String>,
    /// The author's `metadata` (and `compatibility`), as given.
    pub metadata: Value,
    /// What was ignored, for `script_status`.
    pub notes: Vec<String>,
    /// The instructions, read by the agent on demand.
    pub body: String,
}

/// Parses `SKILL.md`; an error is `(line, message)`.
pub fn parse(text: &str) -> Result<SkillDoc, (u32, String)> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let lines: Vec<&str> = text.lines().collect();
    if lines.first().map(|l| l.trim_end()) != Some("---") {
        return Err((
            1,
            "SKILL.md must start with a `---` frontmatter block".into(),
        ));
    }
    let end = lines
        .iter()
        .skip(1)
        .position(|l| l.trim_end() == "---")
        .map(|at| at + 1)
        .ok_or((
            1,
            "the frontmatter block is not closed with `---`".to_owned(),
        ))?;
    let closing = end as u32 + 1;
    let block = lines[1..end].join("\n");
    let front: Value = if block.trim().is_empty() {
        Value::Object(Default::default())
    } else {
        yaml_serde::from_str(&block).map_err(|e| {
            // The block starts on the file's second line.
            let line = e.location().map_or(1, |l| l.line() as u32 + 1);
            (line, format!("the frontmatter is not valid YAML: {e}"))
        })?
    };
    let Value::Object(front) = front else {
        return Err((2, "the frontmatter must be `key: value` lines".into()));
    };
    let line_of = |key: &str| {
        lines[1..end]
            .iter()
            .position(|l| l.trim_start().starts_with(&format!("{key}:")))
            .map_or(closing, |at| at as u32 + 2)
    };
    let text_of = |key: &str| -> Result<Option<String>, (u32, String)> {
        match front.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.trim().to_owned())),
            Some(Value::Number(n)) => Ok(Some(n.to_string())),
            Some(_) => Err((line_of(key), format!("`{key}` must be text"))),
        }
    };
    let list_of = |key: &str| -> Result<Vec<String>, (u32, String)> {
        match front.get(key) {
            None | Some(Value::Null) => Ok(Vec::new()),
            // `allowed-tools: Read Grep` and `tags: a, b` are both seen.
            Some(Value::String(s)) => Ok(s
                .split(|c: char| c == ',' || c.is_whitespace())
                .filter(|t| !t.is_empty())
                .map(str::to_owned)
                .collect()),
            Some(Value::Array(items)) => items
                .iter()
                .map(|v| match v {
                    Value::String(s) => Ok(s.trim().to_owned()),
                    Value::Number(n) => Ok(n.to_string()),
                    _ => Err((line_of(key), format!("`{key}` must be a list of words"))),
                })
                .collect(),
            Some(_) => Err((
                line_of(key),
                format!("`{key}` must be a list: [a, b] or `- a` lines"),
            )),
        }
    };
    let name = text_of("name")?
        .filter(|n| !n.is_empty())
        .ok_or((closing, "the frontmatter has no `name`".to_owned()))?;
    let description = text_of("description")?
        .filter(|d| !d.is_empty())
        .ok_or((closing, "the frontmatter has no `description`".to_owned()))?;
    let mut metadata = serde_json::Map::new();
    for key in ["metadata", "compatibility"] {
        if let Some(value) = front.get(key).filter(|v| !v.is_null()) {
            metadata.insert(key.to_owned(), value.clone());
        }
    }
    let notes = front
        .keys()
        .filter(|k| !KNOWN.contains(&k.as_str()))
        .map(|k| {
            format!(
                "line {}: frontmatter key `{k}` is not one hearth reads; ignored (known: {})",
                line_of(k),
                KNOWN.join(", ")
            )
        })
        .collect();
    Ok(SkillDoc {
        name,
        description: description.split_whitespace().collect::<Vec<_>>().join(" "),
        tags: list_of("tags")?,
        license: text_of("license")?,
        allowed_tools: list_of("allowed-tools")?,
        metadata: Value::Object(metadata),
        notes,
        body: lines[end + 1..].join("\n").trim().to_owned(),
    })
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
        assert!(doc.notes.is_empty());
        let block =
            parse("---\nname: x\ndescription: y\ntags:\n  - one\n  - two\n---\nbody").unwrap();
        assert_eq!(block.tags, ["one", "two"]);
    }

    #[test]
    fn the_published_format_loads_and_unknown_keys_are_noted() {
        let doc = parse(
            "---\nname: pdf\ndescription: >\n  Work with PDF files:\n  extract text, fill forms.\n\
             license: Proprietary. LICENSE.txt has complete terms\nallowed-tools: Bash Read\n\
             metadata:\n  version: \"1.2\"\n  author: someone\nmood: cheerful\n---\n# PDF\n",
        )
        .unwrap();
        assert_eq!(
            doc.description,
            "Work with PDF files: extract text, fill forms."
        );
        assert_eq!(
            doc.license.as_deref(),
            Some("Proprietary. LICENSE.txt has complete terms")
        );
        assert_eq!(doc.allowed_tools, ["Bash", "Read"]);
        assert_eq!(doc.metadata["metadata"]["version"], "1.2");
        assert_eq!(doc.notes.len(), 1);
        assert!(
            doc.notes[0].starts_with("line 11: frontmatter key `mood`"),
            "{:?}",
            doc.notes
        );
    }

    #[test]
    fn refuses_what_it_cannot_read_with_the_line() {
        let cases = [
            ("no frontmatter", 1, "must start with"),
            ("---\nname: x\n", 1, "not closed"),
            ("---\nname: x\n---\n", 3, "no `description`"),
            ("---\nname: x\ndescription: [y\n---\n", 4, "not valid YAML"),
            ("---\nname x\n---\n", 2, "must be `key: value`"),
            ("---\ndescription: y\n---\n", 3, "no `name`"),
            (
                "---\nname: x\ndescription: y\ntags: {a: 1}\n---\n",
                4,
                "`tags` must be a list",
            ),
            (
                "---\nname: [x]\ndescription: y\n---\n",
                2,
                "`name` must be text",
            ),
        ];
        for (text, line, message) in cases {
            let (l, m) = parse(text).unwrap_err();
            assert_eq!(l, line, "{text:?}: {m}");
            assert!(m.contains(message), "{text:?}: {m}");
        }
    }
}
