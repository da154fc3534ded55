//! Structure-aware mutation of JSON documents: the seed is parsed, a few
//! of its nodes are changed (a value of another type, a huge number, a
//! string of edge-case text, a key dropped or duplicated, a value nested
//! hundreds deep), and the tree is written back by hand, so it can say
//! what serde would never write: duplicate keys, lone surrogate escapes,
//! numbers out of every range.

use serde_json::Value;

use crate::Rng;
use crate::mutate::{HUGE_NUMBERS, UNICODE_EDGES};

/// A JSON tree that can hold what `serde_json::Value` cannot.
#[derive(Clone, Debug)]
enum Node {
    Null,
    Bool(bool),
    /// The number as written.
    Number(String),
    /// The string's escaped content, without the quotes.
    Str(String),
    Array(Vec<Node>),
    /// Members in order; keys may repeat.
    Object(Vec<(String, Node)>),
}

/// `seed` with a few of its nodes changed, or `None` when it is not JSON.
pub fn mutate(rng: &mut Rng, seed: &[u8]) -> Option<Vec<u8>> {
    let value: Value = serde_json::from_slice(seed).ok()?;
    let mut node = from_value(&value);
    for _ in 0..rng.between(1, 4) {
        let count = count(&node);
        let target = rng.below(count);
        change(rng, &mut node, target);
    }
    let mut out = String::new();
    write(&node, &mut out);
    Some(out.into_bytes())
}

fn from_value(value: &Value) -> Node {
    match value {
        Value::Null => Node::Null,
        Value::Bool(b) => Node::Bool(*b),
        Value::Number(n) => Node::Number(n.to_string()),
        Value::String(s) => Node::Str(escape(s)),
        Value::Array(items) => Node::Array(items.iter().map(from_value).collect()),
        Value::Object(members) => Node::Object(
            members
                .iter()
                .map(|(k, v)| (escape(k), from_value(v)))
                .collect(),
        ),
    }
}

fn escape(s: &str) -> String {
    let quoted = Value::String(s.to_owned()).to_string();
    quoted[1..quoted.len() - 1].to_owned()
}

fn count(node: &Node) -> usize {
    1 + match node {
        Node::Array(items) => items.iter().map(count).sum(),
        Node::Object(members) => members.iter().map(|(_, v)| count(v)).sum(),
        _ => 0,
    }
}

/// Changes the `target`th node (in pre-order); returns how many nodes were
/// passed when it is not under `node`.
fn change(rng: &mut Rng, node: &mut Node, target: usize) -> usize {
    if target == 0 {
        replace(rng, node);
        return 0;
    }
    let mut left = target - 1;
    let children: Vec<&mut Node> = match node {
        Node::Array(items) => items.iter_mut().collect(),
        Node::Object(members) => members.iter_mut().map(|(_, v)| v).collect(),
        _ => return left + 1,
    };
    for child in children {
        let size = count(child);
        if left < size {
            change(rng, child, left);
            return 0;
        }
        left -= size;
    }
    left + 1
}

fn replace(rng: &mut Rng, node: &mut Node) {
    match rng.below(10) {
        0 => *node = Node::Null,
        1 => *node = Node::Bool(rng.one_in(2)),
        2 => *node = Node::Number(rng.choose(HUGE_NUMBERS).to_string()),
        3 => *node = Node::Str(edge_string(rng)),
        4 => {
            let depth = rng.between(2, 600);
            let mut nested = node.clone();
            for _ in 0..depth {
                nested = if rng.one_in(2) {
                    Node::Array(vec![nested])
                } else {
                    Node::Object(vec![("a".into(), nested)])
                };
            }
            *node = nested;
        }
        5 => {
            if let Node::Object(members) = node
                && !members.is_empty()
            {
                let i = rng.below(members.len());
                let mut twin = members[i].clone();
                replace(rng, &mut twin.1);
                members.push(twin);
            }
        }
        6 => {
            if let Node::Object(members) = node
                && !members.is_empty()
            {
                members.remove(rng.below(members.len()));
            }
        }
        7 => {
            let copy = node.clone();
            *node = match rng.below(3) {
                0 => Node::Array(vec![copy]),
                1 => Node::Str(String::new()),
                _ => Node::Array(Vec::new()),
            };
        }
        8 => {
            if let Node::Str(s) = node {
                let at = (0..=s.len())
                    .filter(|&i| s.is_char_boundary(i))
                    .nth(rng.below(8))
                    .unwrap_or(0);
                s.insert_str(at, &edge_string(rng));
            } else if let Node::Number(n) = node {
                n.push_str(rng.choose(&["0", ".5", "e308", "e-400", "000"]));
            }
        }
        _ => *node = Node::Object(Vec::new()),
    }
}

/// Escaped string content full of edge cases, lone surrogates included.
fn edge_string(rng: &mut Rng) -> String {
    let mut out = String::new();
    for _ in 0..rng.between(1, 6) {
        match rng.below(6) {
            0 => out.push_str(rng.choose(&["\\ud800", "\\udfff", "\\ud83d\\ude00", "\\u0000"])),
            1 => out.push_str(&"x".repeat(rng.between(1000, 100_000))),
            2 => out.push_str(&escape(rng.choose(UNICODE_EDGES))),
            3 => out.push_str(rng.choose(&["\\n", "\\r", "\\\"", "\\\\", "\\/", "\\t"])),
            4 => out.push_str(rng.choose(&["<b>", "&amp;", "**x**", "rm -rf /", "@bot", "/start"])),
            _ => out.push('a'),
        }
    }
    out
}

fn write(node: &Node, out: &mut String) {
    match node {
        Node::Null => out.push_str("null"),
        Node::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Node::Number(n) => out.push_str(n),
        Node::Str(s) => {
            out.push('"');
            out.push_str(s);
            out.push('"');
        }
        Node::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write(item, out);
            }
            out.push(']');
        }
        Node::Object(members) => {
            out.push('{');
            for (i, (key, value)) in members.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push('"');
                out.push_str(key);
                out.push_str("\":");
                write(value, out);
            }
            out.push('}');
        }
    }
}
