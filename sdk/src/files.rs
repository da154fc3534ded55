//! Helpers for plugins that save files people send: a channel names a
//! downloaded attachment after what the sender called it, and that name
//! may hold `/`, `..` or control characters.

/// `name` made safe as one path component: letters (any script), digits,
/// `.`, `-` and `_` are kept, anything else becomes `_`, leading dots go
/// (no hidden files, no `..`), at most 100 characters, and `file` when
/// nothing is left.
pub fn safe_file_name(name: &str) -> String {
    let cleaned: String = name
        .chars()
        .map(|c| {
            if c.is_alphanumeric() || matches!(c, '.' | '-' | '_') {
                c
            } else {
                '_'
            }
        })
        .take(100)
        .collect();
    match cleaned.trim_start_matches('.') {
        "" => "file".into(),
        rest => rest.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::safe_file_name;

    #[test]
    fn file_names_cannot_escape_the_directory() {
        for (name, wanted) in [
            ("photo.jpg", "photo.jpg"),
            ("a.pdf", "a.pdf"),
            ("../../etc/passwd", "_.._etc_passwd"),
            ("..", "file"),
            ("", "file"),
            ("a b\nc.txt", "a_b_c.txt"),
            ("my file (1).txt", "my_file__1_.txt"),
            ("résumé.pdf", "résumé.pdf"),
        ] {
            assert_eq!(safe_file_name(name), wanted, "{name:?}");
        }
    }
}
