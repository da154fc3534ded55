//! How a command reads its own options, so the guard reads them the same
//! way: short options bundled (`-vs KILL`), long options matched by a
//! unique prefix of the real option set (`--rec` is `--recursive`),
//! options that take an argument (attached, separate, or `--opt=value`),
//! and `--` ending the options.
//!
//! A spelling the command itself would reject, or one the grammar does
//! not know, is an error: the guard then asks instead of guessing where
//! the operands (or a wrapped command) start.

/// The options one command accepts.
pub struct Grammar {
    /// One letter per short option; a letter followed by `:` takes an
    /// argument, by `::` an optional one (attached only, as getopt reads
    /// it).
    pub short: &'static str,
    /// The long options. A name ending in `=` takes an argument, in `?`
    /// an optional one (`--name=value` only). `name:x` is the same option
    /// as the short `-x`, and is reported as `x`.
    pub long: &'static [&'static str],
    /// Whether the options end at the first operand (wrappers, whose
    /// operands are a command with options of its own), or may follow
    /// operands (GNU argument permutation).
    pub stop_at_operand: bool,
    /// Whether `-NUMBER` is an option (`nice -10`, `fuser -9`).
    pub numeric: bool,
}

/// One option given.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Given<'a> {
    /// The short letter (as a one-letter string) or, for a long option
    /// with no short twin, the full long name.
    pub name: &'static str,
    /// Its argument.
    pub value: Option<&'a str>,
}

/// A command's arguments, read through its grammar.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Parsed<'a> {
    /// The options, in order.
    pub options: Vec<Given<'a>>,
    /// Indices (into the arguments) of the operands. With
    /// `stop_at_operand`, only the first one; the rest follow it.
    pub operands: Vec<usize>,
    /// With `stop_at_operand`: the index where the options stopped (the
    /// first operand, or the length when there is none).
    pub rest: usize,
}

impl Parsed<'_> {
    /// Whether the option `name` was given.
    pub fn has(&self, name: &str) -> bool {
        self.options.iter().any(|o| o.name == name)
    }

    /// The arguments given to `name`, in order.
    pub fn values<'s>(&'s self, name: &'s str) -> impl Iterator<Item = &'s str> + 's {
        self.options
            .iter()
            .filter(move |o| o.name == name)
            .filter_map(|o| o.value)
    }
}

/// Reads `args` (the arguments after the command name) through `grammar`,
/// or says which option it cannot read.
pub fn parse<'a, S: AsRef<str>>(grammar: &Grammar, args: &'a [S]) -> Result<Parsed<'a>, String> {
    let mut parsed = Parsed::default();
    let mut i = 0;
    while i < args.len() {
        let arg = args[i].as_ref();
        if arg == "--" {
            i += 1;
            if grammar.stop_at_operand {
                parsed.rest = i;
                if i < args.len() {
                    parsed.operands.push(i);
                }
                return Ok(parsed);
            }
            parsed.operands.extend(i..args.len());
            parsed.rest = args.len();
            return Ok(parsed);
        }
        if let Some(long) = arg.strip_prefix("--") {
            i += long_option(
                grammar,
                long,
                args.get(i + 1).map(AsRef::as_ref),
                &mut parsed,
            )?;
        } else if arg.len() > 1 && arg.starts_with('-') {
            i += short_options(
                grammar,
                &arg[1..],
                args.get(i + 1).map(AsRef::as_ref),
                &mut parsed,
            )?;
        } else {
            parsed.operands.push(i);
            if grammar.stop_at_operand {
                parsed.rest = i;
                return Ok(parsed);
            }
            i += 1;
        }
    }
    parsed.rest = args.len();
    Ok(parsed)
}

/// Reads `--long[=value]`; returns how many arguments it used.
fn long_option<'a>(
    grammar: &Grammar,
    long: &'a str,
    next: Option<&'a str>,
    parsed: &mut Parsed<'a>,
) -> Result<usize, String> {
    let (name, attached) = match long.split_once('=') {
        Some((n, v)) => (n, Some(v)),
        None => (long, None),
    };
    let spec = find_long(grammar, name)?;
    let (bare, alias) = match spec.split_once(':') {
        Some((b, a)) => (b, Some(a)),
        None => (spec, None),
    };
    let reported: &'static str = match alias {
        Some(a) => a,
        None => bare.trim_end_matches(['=', '?']),
    };
    let mut used = 1;
    let value = if bare.ends_with('=') {
        match attached {
            Some(v) => Some(v),
            None => {
                used = 2;
                Some(next.ok_or_else(|| format!("--{name} needs an argument"))?)
            }
        }
    } else if bare.ends_with('?') {
        attached
    } else if attached.is_some() {
        return Err(format!("--{name} takes no argument"));
    } else {
        None
    };
    parsed.options.push(Given {
        name: reported,
        value,
    });
    Ok(used)
}

/// The long option `name` stands for: itself, or the one option it is a
/// prefix of.
fn find_long(grammar: &Grammar, name: &str) -> Result<&'static str, String> {
    let bare = |spec: &'static str| -> &'static str {
        spec.split(':')
            .next()
            .unwrap_or(spec)
            .trim_end_matches(['=', '?'])
    };
    if name.is_empty() {
        return Err("an empty long option".into());
    }
    if let Some(exact) = grammar.long.iter().find(|s| bare(s) == name) {
        return Ok(exact);
    }
    let mut candidates = grammar.long.iter().filter(|s| bare(s).starts_with(name));
    match (candidates.next(), candidates.next()) {
        (Some(one), None) => Ok(one),
        (Some(a), Some(b)) => Err(format!(
            "--{name} is ambiguous (--{}, --{}, ...)",
            bare(a),
            bare(b)
        )),
        (None, _) => Err(format!("--{name} is not an option it is known to take")),
    }
}

/// Reads a cluster of short options (the text after `-`); returns how
/// many arguments it used.
fn short_options<'a>(
    grammar: &Grammar,
    cluster: &'a str,
    next: Option<&'a str>,
    parsed: &mut Parsed<'a>,
) -> Result<usize, String> {
    if grammar.numeric && cluster.bytes().all(|b| b.is_ascii_digit()) {
        return Ok(1);
    }
    for (at, letter) in cluster.char_indices() {
        let Some(spec_at) = grammar.short.find(letter).filter(|_| letter != ':') else {
            return Err(format!("-{letter} is not an option it is known to take"));
        };
        let after = &grammar.short[spec_at + 1..];
        let name = &grammar.short[spec_at..spec_at + letter.len_utf8()];
        let rest = &cluster[at + letter.len_utf8()..];
        if after.starts_with("::") {
            parsed.options.push(Given {
                name,
                value: (!rest.is_empty()).then_some(rest),
            });
            return Ok(1);
        }
        if after.starts_with(':') {
            if !rest.is_empty() {
                parsed.options.push(Given {
                    name,
                    value: Some(rest),
                });
                return Ok(1);
            }
            let value = next.ok_or_else(|| format!("-{letter} needs an argument"))?;
            parsed.options.push(Given {
                name,
                value: Some(value),
            });
            return Ok(2);
        }
        parsed.options.push(Given { name, value: None });
    }
    Ok(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TIMEOUT: Grammar = Grammar {
        short: "fk:ps:v",
        long: &[
            "foreground:f",
            "kill-after=:k",
            "preserve-status:p",
            "signal=:s",
            "verbose:v",
            "help",
            "version",
        ],
        stop_at_operand: true,
        numeric: false,
    };

    const RM: Grammar = Grammar {
        short: "fiIrRdv",
        long: &[
            "force:f",
            "interactive?",
            "one-file-system",
            "no-preserve-root",
            "preserve-root?",
            "recursive:r",
            "dir:d",
            "verbose:v",
        ],
        stop_at_operand: false,
        numeric: false,
    };

    #[test]
    fn bundled_short_options_take_their_argument_from_the_next_word() {
        let args = ["-vs", "KILL", "5", "rm", "-rf", "/"];
        let parsed = parse(&TIMEOUT, &args).unwrap();
        assert_eq!(parsed.values("s").collect::<Vec<_>>(), ["KILL"]);
        assert!(parsed.has("v"));
        assert_eq!(parsed.rest, 2);
    }

    #[test]
    fn attached_and_long_arguments() {
        for args in [
            vec!["-sKILL", "5"],
            vec!["--signal=KILL", "5"],
            vec!["--sig", "KILL", "5"],
            vec!["--s=KILL", "5"],
        ] {
            let parsed = parse(&TIMEOUT, &args).unwrap();
            assert_eq!(parsed.values("s").collect::<Vec<_>>(), ["KILL"], "{args:?}");
            assert_eq!(args[parsed.rest], "5", "{args:?}");
        }
    }

    #[test]
    fn long_options_match_by_unique_prefix() {
        let parsed = parse(&RM, &["--rec", "--forc", "x"]).unwrap();
        assert!(parsed.has("r") && parsed.has("f"));
        assert_eq!(parsed.operands, [2]);
        assert!(parse(&RM, &["--pre", "x"]).is_ok(), "one option");
        assert!(parse(&RM, &["--no", "x"]).is_ok());
        assert!(parse(&TIMEOUT, &["--ver", "5"]).is_err(), "ambiguous");
        assert!(parse(&TIMEOUT, &["--bogus", "5"]).is_err(), "unknown");
        assert!(parse(&TIMEOUT, &["-x", "5"]).is_err(), "unknown short");
        assert!(parse(&TIMEOUT, &["-s"]).is_err(), "missing argument");
    }

    #[test]
    fn operands_may_come_first_unless_the_command_stops_there() {
        let parsed = parse(&RM, &["x", "-rf", "--", "-y"]).unwrap();
        assert!(parsed.has("r"));
        assert_eq!(parsed.operands, [0, 3]);
        let parsed = parse(&TIMEOUT, &["--", "5", "-s"]).unwrap();
        assert_eq!(parsed.rest, 1);
        assert!(parsed.options.is_empty());
    }
}
