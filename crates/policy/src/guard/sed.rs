//! A reader for sed programs, just far enough to find what runs or
//! writes: the `e` command and the `e` flag of `s` run shell commands;
//! `w`, `W` and the `w` flag of `s` write files. A program it cannot read
//! is an error, and the guard asks.

/// What a sed program does beyond editing its stream.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Effects {
    /// It runs shell commands.
    pub runs: bool,
    /// Files it writes.
    pub writes: Vec<String>,
}

/// Reads `program`, or says where it cannot.
pub fn effects(program: &str) -> Result<Effects, String> {
    let mut out = Effects::default();
    let chars: Vec<char> = program.chars().collect();
    let mut i = 0;
    let at = |i: usize| chars.get(i).copied();
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() || c == ';' || c == '}' {
            i += 1;
            continue;
        }
        if c == '#' {
            i = line_end(&chars, i);
            continue;
        }
        i = address(&chars, i)?;
        if at(i) == Some(',') {
            i = address(&chars, i + 1)?;
        }
        while matches!(at(i), Some(' ' | '\t' | '!')) {
            i += 1;
        }
        let Some(command) = at(i) else {
            return Err("an address with no command".into());
        };
        i += 1;
        match command {
            '{' | '=' | 'd' | 'D' | 'g' | 'G' | 'h' | 'H' | 'n' | 'N' | 'p' | 'P' | 'x' | 'z'
            | 'F' => {}
            's' => {
                let delimiter = at(i).ok_or("`s` with no delimiter")?;
                i = delimited(&chars, i + 1, delimiter)?;
                i = delimited(&chars, i, delimiter)?;
                while let Some(flag) = at(i) {
                    match flag {
                        'g' | 'p' | 'i' | 'I' | 'm' | 'M' | '0'..='9' => i += 1,
                        'e' => {
                            out.runs = true;
                            i += 1;
                        }
                        'w' => {
                            let end = line_end(&chars, i);
                            out.writes.push(
                                chars[i + 1..end]
                                    .iter()
                                    .collect::<String>()
                                    .trim()
                                    .to_owned(),
                            );
                            i = end;
                        }
                        ';' | '\n' | '}' | ' ' | '\t' | '#' => break,
                        other => return Err(format!("`s` with the unknown flag {other:?}")),
                    }
                }
            }
            'y' => {
                let delimiter = at(i).ok_or("`y` with no delimiter")?;
                i = delimited(&chars, i + 1, delimiter)?;
                i = delimited(&chars, i, delimiter)?;
            }
            'a' | 'i' | 'c' => {
                // Text to the end of the line; a trailing backslash
                // continues it.
                loop {
                    let end = line_end(&chars, i);
                    let continued = end > 0 && chars.get(end - 1) == Some(&'\\');
                    i = end + 1;
                    if !continued || i >= chars.len() {
                        break;
                    }
                }
            }
            'r' | 'R' => i = line_end(&chars, i),
            'w' | 'W' => {
                let end = line_end(&chars, i);
                out.writes
                    .push(chars[i..end].iter().collect::<String>().trim().to_owned());
                i = end;
            }
            'e' => {
                out.runs = true;
                i = line_end(&chars, i);
            }
            'b' | 't' | 'T' | ':' | 'v' | 'q' | 'Q' | 'l' | 'L' => {
                while let Some(ch) = at(i) {
                    if ch == ';' || ch == '\n' || (ch == '}' && command != ':') {
                        break;
                    }
                    i += 1;
                }
            }
            other => {
                return Err(format!(
                    "the sed command {other:?} is not one the guard reads"
                ));
            }
        }
    }
    Ok(out)
}

/// Where the line holding `i` ends.
fn line_end(chars: &[char], i: usize) -> usize {
    chars[i.min(chars.len())..]
        .iter()
        .position(|&c| c == '\n')
        .map_or(chars.len(), |p| i + p)
}

/// Skips one address (a number, `$`, `first~step`, `+N`, `~N`, a
/// `/regex/` or `\cregexc`, with `I`/`M` after a regex).
fn address(chars: &[char], mut i: usize) -> Result<usize, String> {
    match chars.get(i) {
        Some('/') => i = delimited(chars, i + 1, '/')?,
        Some('\\') => {
            let delimiter = *chars.get(i + 1).ok_or("`\\` at the end")?;
            i = delimited(chars, i + 2, delimiter)?;
        }
        Some('$') => return Ok(i + 1),
        Some(c) if c.is_ascii_digit() || *c == '+' || *c == '~' => {
            i += 1;
            while chars
                .get(i)
                .is_some_and(|c| c.is_ascii_digit() || *c == '~')
            {
                i += 1;
            }
            return Ok(i);
        }
        _ => return Ok(i),
    }
    while matches!(chars.get(i), Some('I' | 'M')) {
        i += 1;
    }
    Ok(i)
}

/// Skips to just past the next unescaped `delimiter` from `i`.
fn delimited(chars: &[char], mut i: usize, delimiter: char) -> Result<usize, String> {
    while let Some(&c) = chars.get(i) {
        if c == '\\' {
            i += 2;
            continue;
        }
        if c == delimiter {
            return Ok(i + 1);
        }
        i += 1;
    }
    Err(format!("an unterminated {delimiter:?}-delimited part"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_what_runs_and_writes() {
        let cases = [
            ("s/a/b/", false, 0),
            ("1,5p", false, 0),
            ("s/x/id/e", true, 0),
            ("1e rm -rf /", true, 0),
            ("e", true, 0),
            ("/x/!s|a|b|ge", true, 0),
            ("s/a/b/w /etc/x", false, 1),
            ("$w /etc/x", false, 1),
            ("/re/I{s/a/b/;p}", false, 0),
            ("y/abc/xyz/;=", false, 0),
            ("a hello; e not run", false, 0),
            (":a;N;$!ba;s/\\n/ /g", false, 0),
        ];
        for (program, runs, writes) in cases {
            let found = effects(program).unwrap_or_else(|e| panic!("{program}: {e}"));
            assert_eq!(found.runs, runs, "{program}");
            assert_eq!(found.writes.len(), writes, "{program}");
        }
    }

    #[test]
    fn what_it_cannot_read_is_an_error() {
        for program in ["s/a/b", "k", "s/a/b/X"] {
            assert!(effects(program).is_err(), "{program}");
        }
    }
}
