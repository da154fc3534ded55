//! The working directory and environment of every command in a line.
//!
//! The guard walks the parsed tree keeping every directory a command
//! could run in: `cd x; rm -rf y` runs `rm` in `x`, or where the line
//! started if `cd` failed, so both are judged; `cd x && rm -rf y` only in
//! `x`. Subshells, pipeline stages and `a &` restore the directory and
//! environment after them; brace groups do not. Where the directory
//! cannot be known (`cd -`, `popd` past what the line pushed, a `cd`
//! inside a loop), it is unknown, and every later relative path asks.

use std::path::{Path, PathBuf};

use super::paths::{Facts, absolute};
use super::words::{Arg, Invocation, Node};
use super::{Ctx, Guard, env};

/// More directories than this in play, and the guard stops tracking.
const MAX_WORLDS: usize = 8;

/// One directory a command could run in, with the `pushd` stack.
#[derive(Clone, Debug, PartialEq)]
struct World {
    cwd: PathBuf,
    stack: Vec<PathBuf>,
}

/// What the shell holds between commands.
#[derive(Clone, Debug)]
struct State {
    /// Whether what the guard cannot see into asks.
    strict: bool,
    /// Every directory the next command could run in, or why it is
    /// unknown.
    worlds: Result<Vec<World>, String>,
    /// Variables the line exported (or assigned), with the tool's own.
    env: Vec<(String, String)>,
}

/// The state after a part of the line, on its success and its failure.
struct Outcome {
    ok: State,
    failed: State,
}

impl Outcome {
    fn same(state: State) -> Outcome {
        Outcome {
            ok: state.clone(),
            failed: state,
        }
    }
}

impl Guard {
    /// Walks `tree` from `cwd` with `env` set; the error is why it asks.
    pub(super) fn walk(
        &self,
        tree: &Node,
        cwd: &Path,
        env: &[(String, String)],
        strict: bool,
    ) -> Result<(), String> {
        let state = State {
            strict,
            worlds: Ok(vec![World {
                cwd: cwd.to_path_buf(),
                stack: Vec::new(),
            }]),
            env: env.to_vec(),
        };
        let mut facts = Facts::default();
        self.node(tree, state, &mut facts).map(|_| ())
    }

    fn node(&self, node: &Node, state: State, facts: &mut Facts) -> Result<Outcome, String> {
        match node {
            Node::Command(inv) => self.command(inv, state, facts),
            Node::Seq(parts) => {
                let mut out = Outcome::same(state);
                for part in parts {
                    let before = merge(out.ok, out.failed);
                    out = self.node(part, before, facts)?;
                }
                Ok(out)
            }
            Node::AndOr(first, rest) => {
                let mut out = self.node(first, state, facts)?;
                for (on_success, part) in rest {
                    if *on_success {
                        let next = self.node(part, out.ok, facts)?;
                        out = Outcome {
                            ok: next.ok,
                            failed: merge(out.failed, next.failed),
                        };
                    } else {
                        let next = self.node(part, out.failed, facts)?;
                        out = Outcome {
                            ok: merge(out.ok, next.ok),
                            failed: next.failed,
                        };
                    }
                }
                Ok(out)
            }
            Node::Subshell(inner) => {
                self.node(inner, state.clone(), facts)?;
                Ok(Outcome::same(state))
            }
            Node::Branches(arms) => {
                let mut merged: Option<State> = None;
                for arm in arms {
                    let out = self.node(arm, state.clone(), facts)?;
                    let both = merge(out.ok, out.failed);
                    merged = Some(match merged {
                        Some(m) => merge(m, both),
                        None => both,
                    });
                }
                Ok(Outcome::same(merged.unwrap_or(state)))
            }
            Node::Loop(body) => {
                let out = self.node(body, state.clone(), facts)?;
                let after = merge(out.ok, out.failed);
                let moved = after.worlds != state.worlds;
                let mut result = merge(state, after);
                if moved {
                    result.worlds = Err("the directory changes inside a loop".into());
                    // Later rounds run where earlier ones left off.
                    self.node(body, result.clone(), facts)?;
                }
                Ok(Outcome::same(result))
            }
            Node::Not(inner) => {
                let out = self.node(inner, state, facts)?;
                Ok(Outcome {
                    ok: out.failed,
                    failed: out.ok,
                })
            }
        }
    }

    fn command(
        &self,
        inv: &Invocation,
        state: State,
        facts: &mut Facts,
    ) -> Result<Outcome, String> {
        let mut env = state.env.clone();
        if inv.argv.is_empty() {
            // `X=1` alone: later commands see it (an exported name keeps
            // its export), so it counts as exported.
            let mut state = state;
            for (name, value) in &inv.assignments {
                if let Some(why) = env::injection(name, value, None) {
                    return Err(why);
                }
                state.env.push((name.clone(), value.clone()));
            }
            for target in &inv.writes {
                self.each_world(&state, |cwd| self.write_target(target, cwd, facts))?;
            }
            return Ok(Outcome::same(state));
        }
        env.extend(inv.assignments.iter().cloned());
        for target in &inv.writes {
            self.each_world(&state, |cwd| self.write_target(target, cwd, facts))?;
        }
        let worlds: Vec<Option<PathBuf>> = match &state.worlds {
            Ok(worlds) => worlds.iter().map(|w| Some(w.cwd.clone())).collect(),
            Err(_) => vec![None],
        };
        for cwd in worlds {
            let ctx = Ctx {
                strict: state.strict,
                cwd,
                env: env.clone(),
                stdin_fed: inv.stdin_fed,
                depth: 0,
            };
            if let Some(why) = self.argv(&inv.argv, &ctx, facts) {
                return Err(match &state.worlds {
                    Err(unknown) if why.contains("unknown") => format!("{why} ({unknown})"),
                    _ => why,
                });
            }
        }
        self.shell_effect(&inv.argv, state)
    }

    /// Calls `judge` with each directory the command could run in.
    fn each_world(
        &self,
        state: &State,
        mut judge: impl FnMut(Option<&Path>) -> Option<String>,
    ) -> Result<(), String> {
        match &state.worlds {
            Ok(worlds) => {
                for w in worlds {
                    if let Some(why) = judge(Some(&w.cwd)) {
                        return Err(why);
                    }
                }
                Ok(())
            }
            Err(_) => judge(None).map_or(Ok(()), Err),
        }
    }

    /// What a builtin does to the shell's state: `cd`, `pushd`, `popd`,
    /// `export` and its kin.
    fn shell_effect(&self, argv: &[Arg], state: State) -> Result<Outcome, String> {
        let mut words: Vec<&str> = argv.iter().map(|a| a.text.as_str()).collect();
        while matches!(words.first(), Some(&"command" | &"builtin")) {
            words.remove(0);
        }
        let Some((&name, args)) = words.split_first() else {
            return Ok(Outcome::same(state));
        };
        match name {
            "cd" | "pushd" | "popd" | "chdir" => Ok(self.change_directory(name, args, state)),
            "export" | "declare" | "typeset" | "readonly" | "local" => {
                let mut state = state;
                for a in args.iter().filter(|a| !a.starts_with('-')) {
                    if let Some((var, value)) = a.split_once('=') {
                        if let Some(why) = env::injection(var, value, None) {
                            return Err(format!("`{name}`: {why}"));
                        }
                        state.env.push((var.to_owned(), value.to_owned()));
                    }
                }
                Ok(Outcome::same(state))
            }
            _ => Ok(Outcome::same(state)),
        }
    }

    fn change_directory(&self, name: &str, args: &[&str], state: State) -> Outcome {
        let operands: Vec<&str> = {
            let mut ops = Vec::new();
            let mut options_done = false;
            for a in args {
                if !options_done && *a == "--" {
                    options_done = true;
                } else if !options_done && a.len() > 1 && a.starts_with('-') && name == "cd" {
                    continue;
                } else {
                    ops.push(*a);
                }
            }
            ops
        };
        let Ok(worlds) = &state.worlds else {
            // An absolute `cd` makes an unknown directory known again.
            let ok = match operands.as_slice() {
                [dir] if name != "popd" && dir.starts_with(['/', '~']) => State {
                    strict: state.strict,
                    worlds: absolute(dir, None, &self.home).map(|cwd| {
                        vec![World {
                            cwd,
                            stack: Vec::new(),
                        }]
                    }),
                    env: state.env.clone(),
                },
                _ => state.clone(),
            };
            return Outcome { ok, failed: state };
        };
        let mut next = Vec::with_capacity(worlds.len());
        for world in worlds {
            match self.step(name, &operands, world) {
                Ok(w) if next.contains(&w) => {}
                Ok(w) => next.push(w),
                Err(why) => {
                    let ok = State {
                        strict: state.strict,
                        worlds: Err(why),
                        env: state.env.clone(),
                    };
                    return Outcome { ok, failed: state };
                }
            }
        }
        let ok = State {
            strict: state.strict,
            worlds: Ok(next),
            env: state.env.clone(),
        };
        Outcome { ok, failed: state }
    }

    /// Where `cd`, `pushd` or `popd` leaves one world.
    fn step(&self, name: &str, operands: &[&str], world: &World) -> Result<World, String> {
        let to = |text: &str| absolute(text, Some(&world.cwd), &self.home);
        let unknown = |what: &str| Err(format!("`{name} {what}` leaves the directory unknown"));
        match (name, operands) {
            ("cd" | "chdir", []) => Ok(World {
                cwd: self.home.clone(),
                stack: world.stack.clone(),
            }),
            ("cd" | "chdir", ["-"]) => unknown("-"),
            ("cd" | "chdir", [dir]) => Ok(World {
                cwd: to(dir)?,
                stack: world.stack.clone(),
            }),
            ("pushd", [dir]) if !dir.starts_with(['+', '-']) => {
                let mut stack = world.stack.clone();
                stack.push(world.cwd.clone());
                Ok(World {
                    cwd: to(dir)?,
                    stack,
                })
            }
            ("pushd", []) => {
                let mut stack = world.stack.clone();
                match stack.pop() {
                    Some(top) => {
                        stack.push(world.cwd.clone());
                        Ok(World { cwd: top, stack })
                    }
                    None => unknown(""),
                }
            }
            ("popd", []) => {
                let mut stack = world.stack.clone();
                match stack.pop() {
                    Some(top) => Ok(World { cwd: top, stack }),
                    None => unknown("(past what the line pushed)"),
                }
            }
            _ => unknown(&operands.join(" ")),
        }
    }
}

/// The state that holds after either of two.
fn merge(a: State, b: State) -> State {
    let strict = a.strict || b.strict;
    let worlds = match (a.worlds, b.worlds) {
        (Ok(mut x), Ok(y)) => {
            for w in y {
                if !x.contains(&w) {
                    x.push(w);
                }
            }
            if x.len() > MAX_WORLDS {
                Err("the directory depends on too many earlier commands".into())
            } else {
                Ok(x)
            }
        }
        (Err(why), _) | (_, Err(why)) => Err(why),
    };
    let mut env = a.env;
    for pair in b.env {
        if !env.contains(&pair) {
            env.push(pair);
        }
    }
    State {
        strict,
        worlds,
        env,
    }
}
