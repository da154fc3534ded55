//! A shell command line as the words each command would really get.
//!
//! brush-parser (a maintained bash parser) builds the syntax tree; this
//! file walks it and resolves every word statically: quotes removed,
//! escapes applied, a leading `~` made the home directory. Anything whose
//! value is only known when the shell runs (variables, `$(...)`, backticks,
//! arithmetic, process substitution, brace expansion, here-documents,
//! function definitions, loops over expansions) cannot be resolved, and
//! the whole command is reported as such: the guard then asks. That is the
//! fail-closed rule: the guard never guesses what a shell would do.

use brush_parser::ast::{
    self, Command, CommandPrefixOrSuffixItem, CompoundCommand, CompoundList, IoFileRedirectKind,
    IoFileRedirectTarget, IoRedirect, Pipeline, SimpleCommand,
};
use brush_parser::word::{self, TildeExpr, WordPiece};

/// A command line as a tree: what runs in order, what runs only on
/// success or failure, and what runs in a subshell (where a `cd` or an
/// `export` does not outlive it). The guard walks it to know the working
/// directory and environment of every command.
#[derive(Debug, PartialEq)]
pub enum Node {
    /// One simple command.
    Command(Invocation),
    /// Parts run one after the other (`a; b`, a newline, a brace group).
    Seq(Vec<Node>),
    /// `a && b || c`: each later part runs on the earlier one's success
    /// (`true`) or failure (`false`).
    AndOr(Box<Node>, Vec<(bool, Node)>),
    /// Runs in a child shell: `( ... )`, a pipeline stage, `a &`.
    Subshell(Box<Node>),
    /// At most one of these runs (`if` and `case` arms).
    Branches(Vec<Node>),
    /// Runs any number of times, maybe none (loop bodies).
    Loop(Box<Node>),
    /// The exit status is negated (`! a`).
    Not(Box<Node>),
}

/// One simple command, its words resolved.
#[derive(Debug, Default, PartialEq)]
pub struct Invocation {
    /// Variables assigned before the command name (`X=1 cmd`), or on
    /// their own (`X=1`) when there is no command.
    pub assignments: Vec<(String, String)>,
    /// The command and its arguments.
    pub argv: Vec<Arg>,
    /// Files it writes through redirections.
    pub writes: Vec<Arg>,
    /// Whether its standard input comes from an earlier pipeline stage or
    /// a here-string (so an interpreter without a script runs that input).
    pub stdin_fed: bool,
}

/// One resolved word.
#[derive(Clone, Debug, PartialEq)]
pub struct Arg {
    /// Its value.
    pub text: String,
    /// Where its first unquoted glob character (`*`, `?`, `[`) is: the
    /// shell would replace the word with matching file names.
    pub glob_at: Option<usize>,
}

impl AsRef<str> for Arg {
    fn as_ref(&self) -> &str {
        &self.text
    }
}

impl Arg {
    /// A word with no file pattern in it.
    pub fn plain(text: impl Into<String>) -> Arg {
        Arg {
            text: text.into(),
            glob_at: None,
        }
    }
}

/// Why a command line cannot be resolved.
#[derive(Debug, PartialEq)]
pub struct Unresolved(pub String);

/// How deep a command line may nest (substitutions, groups, subshells,
/// compound commands) for the guard to read it. The shell parser and the
/// walk recurse once per level; found by fuzzing: 200 unclosed `$(`
/// overflowed a 2 MiB thread stack and aborted the process.
pub const MAX_NESTING: usize = 64;

/// How many `(` may open in a row (with only spaces between) for the
/// guard to read the line. brush-parser backtracks over each one (a
/// subshell, or arithmetic?), so its time doubles with every `(` it
/// cannot close: found by fuzzing, 24 took seconds, 50 hung for good.
pub const MAX_PARENS_IN_A_ROW: usize = 8;

/// The command line `line` as a tree, with `home` for `~`.
pub fn parse(line: &str, home: &str) -> Result<Node, Unresolved> {
    let depth = nesting(line);
    if depth > MAX_NESTING {
        return Err(Unresolved(format!(
            "it nests {depth} levels deep, more than the {MAX_NESTING} the guard reads"
        )));
    }
    let parens = parens_in_a_row(line);
    if parens > MAX_PARENS_IN_A_ROW {
        return Err(Unresolved(format!(
            "it opens {parens} parentheses in a row, more than the {MAX_PARENS_IN_A_ROW} the \
             guard reads"
        )));
    }
    // brush-parser panics on some input (found by fuzzing: a number too
    // large for its type as a file descriptor, `cat 99999999999999999999>out`,
    // or after a tilde, `~18446744073709551616`): a line it cannot read is
    // a line the guard cannot check.
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| read(line, home)))
        .unwrap_or_else(|_| Err(Unresolved("the shell parser failed on it".into())))
}

/// [`parse`], once the line is known to nest shallowly enough.
fn read(line: &str, home: &str) -> Result<Node, Unresolved> {
    let options = brush_parser::ParserOptions::default();
    let mut parser = brush_parser::Parser::new(std::io::Cursor::new(line), &options);
    let program = parser
        .parse_program()
        .map_err(|e| Unresolved(format!("the shell parser cannot read it ({e})")))?;
    let walker = Walker { home, options };
    let mut parts = Vec::new();
    for list in &program.complete_commands {
        parts.push(walker.list(list)?);
    }
    Ok(Node::Seq(parts))
}

struct Walker<'a> {
    home: &'a str,
    options: brush_parser::ParserOptions,
}

impl Walker<'_> {
    fn list(&self, list: &CompoundList) -> Result<Node, Unresolved> {
        let mut parts = Vec::with_capacity(list.0.len());
        for item in &list.0 {
            let and_or = &item.0;
            let first = self.pipeline(&and_or.first)?;
            let node = if and_or.additional.is_empty() {
                first
            } else {
                let mut rest = Vec::with_capacity(and_or.additional.len());
                for next in &and_or.additional {
                    rest.push(match next {
                        ast::AndOr::And(p) => (true, self.pipeline(p)?),
                        ast::AndOr::Or(p) => (false, self.pipeline(p)?),
                    });
                }
                Node::AndOr(Box::new(first), rest)
            };
            // `a &` runs `a` in a child shell.
            parts.push(match item.1 {
                ast::SeparatorOperator::Async => Node::Subshell(Box::new(node)),
                ast::SeparatorOperator::Sequence => node,
            });
        }
        Ok(Node::Seq(parts))
    }

    fn pipeline(&self, pipeline: &Pipeline) -> Result<Node, Unresolved> {
        let node = if pipeline.seq.len() == 1 {
            self.command(&pipeline.seq[0], false)?
        } else {
            // Each stage of a pipeline runs in a child shell.
            let mut stages = Vec::with_capacity(pipeline.seq.len());
            for (stage, command) in pipeline.seq.iter().enumerate() {
                stages.push(Node::Subshell(Box::new(self.command(command, stage > 0)?)));
            }
            Node::Seq(stages)
        };
        Ok(if pipeline.bang {
            Node::Not(Box::new(node))
        } else {
            node
        })
    }

    fn command(&self, command: &Command, stdin_fed: bool) -> Result<Node, Unresolved> {
        match command {
            Command::Simple(simple) => self.simple(simple, stdin_fed).map(Node::Command),
            Command::Compound(compound, redirects) => {
                let body = self.compound(compound)?;
                match redirects {
                    Some(redirects) => {
                        let mut holder = Invocation::default();
                        for r in &redirects.0 {
                            self.redirect(r, &mut holder)?;
                        }
                        Ok(Node::Seq(vec![Node::Command(holder), body]))
                    }
                    None => Ok(body),
                }
            }
            Command::Function(_) => Err(Unresolved("it defines a shell function".into())),
            Command::ExtendedTest(..) => Err(Unresolved("it uses a [[ ... ]] test".into())),
        }
    }

    fn compound(&self, compound: &CompoundCommand) -> Result<Node, Unresolved> {
        match compound {
            CompoundCommand::BraceGroup(g) => self.list(&g.list),
            CompoundCommand::Subshell(s) => Ok(Node::Subshell(Box::new(self.list(&s.list)?))),
            CompoundCommand::IfClause(c) => {
                let mut arms = vec![self.list(&c.then)?];
                for e in c.elses.iter().flatten() {
                    let body = self.list(&e.body)?;
                    arms.push(match &e.condition {
                        Some(condition) => Node::Seq(vec![self.list(condition)?, body]),
                        None => body,
                    });
                }
                arms.push(Node::Seq(Vec::new()));
                Ok(Node::Seq(vec![
                    self.list(&c.condition)?,
                    Node::Branches(arms),
                ]))
            }
            CompoundCommand::WhileClause(w) | CompoundCommand::UntilClause(w) => {
                let body = Node::Seq(vec![self.list(&w.0)?, self.list(&w.1.list)?]);
                Ok(Node::Seq(vec![
                    self.list(&w.0)?,
                    Node::Loop(Box::new(body)),
                ]))
            }
            CompoundCommand::ForClause(f) => {
                for w in f.values.iter().flatten() {
                    self.word(&w.value)?;
                }
                Ok(Node::Loop(Box::new(self.list(&f.body.list)?)))
            }
            CompoundCommand::CaseClause(c) => {
                self.word(&c.value.value)?;
                let mut arms = Vec::with_capacity(c.cases.len() + 1);
                for item in &c.cases {
                    if let Some(cmd) = &item.cmd {
                        arms.push(self.list(cmd)?);
                    }
                }
                arms.push(Node::Seq(Vec::new()));
                Ok(Node::Branches(arms))
            }
            CompoundCommand::Arithmetic(_) | CompoundCommand::ArithmeticForClause(_) => {
                Err(Unresolved("it uses shell arithmetic".into()))
            }
            CompoundCommand::Coprocess(_) => Err(Unresolved("it starts a coprocess".into())),
        }
    }

    fn simple(&self, simple: &SimpleCommand, stdin_fed: bool) -> Result<Invocation, Unresolved> {
        let mut invocation = Invocation {
            stdin_fed,
            ..Invocation::default()
        };
        let prefix = simple.prefix.iter().flat_map(|p| p.0.iter());
        let suffix = simple.suffix.iter().flat_map(|s| s.0.iter());
        for item in prefix.clone() {
            if let CommandPrefixOrSuffixItem::AssignmentWord(assignment, _) = item {
                let name = assignment.name.to_string();
                match &assignment.value {
                    ast::AssignmentValue::Scalar(w) => {
                        let value = self.word(&w.value)?;
                        invocation.assignments.push((name, value.text));
                    }
                    ast::AssignmentValue::Array(_) => {
                        return Err(Unresolved("it assigns an array".into()));
                    }
                }
            }
        }
        let name = simple.word_or_name.iter().map(Item::Word);
        // After the command name, `x=y` is an ordinary argument (`dd
        // of=...`, `env PATH=...`), though the parser marks it as an
        // assignment.
        let suffix = suffix.map(|item| match item {
            CommandPrefixOrSuffixItem::AssignmentWord(_, word) => Item::Word(word),
            other => Item::Other(other),
        });
        let items = prefix
            .filter(|i| !matches!(i, CommandPrefixOrSuffixItem::AssignmentWord(..)))
            .map(Item::Other)
            .chain(name)
            .chain(suffix);
        for item in items {
            match item {
                Item::Word(w) => invocation.argv.push(self.word(&w.value)?),
                Item::Other(CommandPrefixOrSuffixItem::Word(w)) => {
                    invocation.argv.push(self.word(&w.value)?);
                }
                Item::Other(CommandPrefixOrSuffixItem::IoRedirect(r)) => {
                    self.redirect(r, &mut invocation)?;
                }
                Item::Other(CommandPrefixOrSuffixItem::ProcessSubstitution(..)) => {
                    return Err(Unresolved("it uses process substitution".into()));
                }
                Item::Other(CommandPrefixOrSuffixItem::AssignmentWord(..)) => {}
            }
        }
        Ok(invocation)
    }

    fn redirect(&self, redirect: &IoRedirect, to: &mut Invocation) -> Result<(), Unresolved> {
        match redirect {
            IoRedirect::File(_, kind, target) => match target {
                IoFileRedirectTarget::Filename(w) => {
                    let arg = self.word(&w.value)?;
                    let writes = !matches!(
                        kind,
                        IoFileRedirectKind::Read
                            | IoFileRedirectKind::DuplicateInput
                            | IoFileRedirectKind::DuplicateOutput
                    );
                    if writes {
                        to.writes.push(arg);
                    }
                    Ok(())
                }
                IoFileRedirectTarget::Fd(_) => Ok(()),
                IoFileRedirectTarget::Duplicate(w) => {
                    let arg = self.word(&w.value)?;
                    let fd = arg.text.trim_end_matches('-');
                    if fd.is_empty() || fd.bytes().all(|b| b.is_ascii_digit()) {
                        Ok(())
                    } else {
                        // `>& file` writes to a file.
                        to.writes.push(arg);
                        Ok(())
                    }
                }
                IoFileRedirectTarget::ProcessSubstitution(..) => {
                    Err(Unresolved("it uses process substitution".into()))
                }
            },
            IoRedirect::HereDocument(..) => Err(Unresolved("it uses a here-document".into())),
            IoRedirect::HereString(_, w) => {
                self.word(&w.value)?;
                to.stdin_fed = true;
                Ok(())
            }
            IoRedirect::OutputAndError(w, _) => {
                to.writes.push(self.word(&w.value)?);
                Ok(())
            }
        }
    }

    /// Resolves one word, or says why it cannot be.
    fn word(&self, raw: &str) -> Result<Arg, Unresolved> {
        // Most words are plain text: no quotes, escapes, expansions or
        // braces. Their value is what they say, read without the word
        // parser (which would cost a microsecond a word).
        if raw.bytes().all(is_plain_byte) {
            return Ok(Arg {
                glob_at: raw.find(['*', '?', '[']),
                text: raw.to_owned(),
            });
        }
        if has_brace_expansion(raw) {
            return Err(Unresolved(format!("{raw:?} uses brace expansion")));
        }
        let pieces = word::parse(raw, &self.options)
            .map_err(|e| Unresolved(format!("the word {raw:?} cannot be read ({e})")))?;
        let mut text = String::new();
        let mut glob_at = None;
        for (i, piece) in pieces.iter().enumerate() {
            match &piece.piece {
                WordPiece::Text(t) => {
                    if glob_at.is_none()
                        && let Some(at) = t.find(['*', '?', '['])
                    {
                        glob_at = Some(text.len() + at);
                    }
                    text.push_str(t);
                }
                WordPiece::SingleQuotedText(t) => text.push_str(t),
                WordPiece::EscapeSequence(e) => text.push_str(unescape(e)),
                WordPiece::DoubleQuotedSequence(inner) => {
                    for p in inner {
                        match &p.piece {
                            WordPiece::Text(t) => text.push_str(t),
                            WordPiece::EscapeSequence(e) => text.push_str(unescape(e)),
                            other => return Err(unresolvable(raw, other)),
                        }
                    }
                }
                WordPiece::TildeExpansion(TildeExpr::Home) if i == 0 => text.push_str(self.home),
                other => return Err(unresolvable(raw, other)),
            }
        }
        Ok(Arg { text, glob_at })
    }
}

enum Item<'a> {
    Word(&'a ast::Word),
    Other(&'a CommandPrefixOrSuffixItem),
}

/// An upper bound of how deep `line` nests: `(`, `[`, `{`, a backtick and
/// the compound-command keywords open a level, which their own closer
/// (`)`, `]`, `}`, a backtick, `fi`, `done`, `esac`) closes; each `!` of
/// a run of them is a level too (`[[ ! ! ! a ]]` recurses once per `!`).
/// Quotes are not read, so quoted brackets count too: the bound only errs
/// high, and too high only means asking.
fn nesting(line: &str) -> usize {
    let mut open: Vec<&str> = Vec::new();
    let mut deepest = 0;
    let mut bangs = 0;
    let close = |open: &mut Vec<&str>, closer: &str| {
        if open.last() == Some(&closer) {
            open.pop();
        }
    };
    for word in line.split(|c: char| c.is_whitespace() || ";&|<>".contains(c)) {
        match word {
            "" => {}
            "!" => bangs += 1,
            _ => bangs = 0,
        }
        deepest = deepest.max(open.len() + bangs);
        match word {
            "if" => open.push("fi"),
            "while" | "until" | "for" | "select" => open.push("done"),
            "case" => open.push("esac"),
            "fi" | "done" | "esac" => close(&mut open, word),
            _ => {}
        }
        for c in word.chars() {
            match c {
                '(' => open.push(")"),
                '[' => open.push("]"),
                '{' => open.push("}"),
                '`' if open.last() == Some(&"`") => {
                    open.pop();
                }
                '`' => open.push("`"),
                ')' => close(&mut open, ")"),
                ']' => close(&mut open, "]"),
                '}' => close(&mut open, "}"),
                _ => {}
            }
            deepest = deepest.max(open.len());
        }
        deepest = deepest.max(open.len());
    }
    deepest
}

/// The longest run of `(` in `line` with nothing but whitespace between.
fn parens_in_a_row(line: &str) -> usize {
    let (mut run, mut longest) = (0, 0);
    for c in line.chars() {
        match c {
            '(' => {
                run += 1;
                longest = longest.max(run);
            }
            c if c.is_whitespace() => {}
            _ => run = 0,
        }
    }
    longest
}

fn unresolvable(raw: &str, piece: &WordPiece) -> Unresolved {
    let what = match piece {
        WordPiece::ParameterExpansion(_) => "a variable",
        WordPiece::CommandSubstitution(_) | WordPiece::BackquotedCommandSubstitution(_) => {
            "command substitution"
        }
        WordPiece::ArithmeticExpression(_) => "arithmetic",
        WordPiece::AnsiCQuotedText(_) => "ANSI-C quoting",
        WordPiece::GettextDoubleQuotedSequence(_) => "locale quoting",
        WordPiece::TildeExpansion(_) => "a ~user or ~+ path",
        _ => "an expansion",
    };
    Unresolved(format!(
        "{raw:?} uses {what}, known only when the shell runs"
    ))
}

/// Whether `b` means only itself in a word, wherever it stands (a `~`
/// does not at the start, `@`, `+` and `!` do not before `(` in a
/// pattern, so they are left to the word parser).
fn is_plain_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric()
        || matches!(
            b,
            b'-' | b'_'
                | b'.'
                | b'/'
                | b':'
                | b'='
                | b','
                | b'%'
                | b'^'
                | b'*'
                | b'?'
                | b'['
                | b']'
        )
}

/// `\x` stands for `x`; a backslash-newline is nothing.
fn unescape(escape: &str) -> &str {
    match escape.strip_prefix('\\') {
        Some("\n") => "",
        Some(rest) => rest,
        None => escape,
    }
}

/// Whether an unquoted `{a,b}` or `{1..3}` is in `raw`: bash would turn
/// the one word into several (`{rm,-rf,/}` is `rm -rf /`).
fn has_brace_expansion(raw: &str) -> bool {
    let mut quote = None;
    let mut escaped = false;
    let mut open: Option<usize> = None;
    for (i, c) in raw.char_indices() {
        if escaped {
            escaped = false;
            continue;
        }
        match (quote, c) {
            (_, '\\') if quote != Some('\'') => escaped = true,
            (None, '\'' | '"') => quote = Some(c),
            (Some(q), _) if c == q => quote = None,
            (None, '{') => open = Some(i),
            (None, '}') => {
                if let Some(start) = open.take() {
                    let inside = &raw[start + 1..i];
                    if inside.contains(',') || inside.contains("..") {
                        return true;
                    }
                }
            }
            _ => {}
        }
    }
    false
}
