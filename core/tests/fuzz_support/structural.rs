//! JSON-preserving mutations: edits of a seed's parsed JSON tree (a node replaced by a leaf of
//! another type, by a subtree of another seed, deleted, duplicated, or a string changed), so a
//! target that takes a JSON document meets wrong shapes rather than mostly invalid bytes, which
//! its own filter would turn away before the parser.

use proptest::prelude::*;
use serde_json::{Value, json};

/// One edit of a JSON tree; `pick` chooses the node.
#[derive(Debug, Clone)]
pub(crate) enum Edit {
    /// The node becomes one of [`LEAVES`].
    Leaf(u64, usize),
    /// The node becomes a node of another seed.
    Graft(u64, usize, u64),
    /// The node is removed from its parent object or array.
    Remove(u64),
    /// An array node's element is repeated.
    Repeat(u64),
    /// A string node gets text appended (ids collide or no longer match).
    Append(u64, usize),
}

fn leaves() -> [Value; 12] {
    [
        Value::Null,
        json!(true),
        json!(0),
        json!(-1),
        json!(1e300),
        json!(""),
        json!("x"),
        json!([]),
        json!({}),
        json!("a".repeat(70_000)),
        json!([null]),
        json!({"type": "unknown"}),
    ]
}

const SUFFIXES: &[&str] = &["", "_r1", "\u{0}", "\u{fffd}", "é世", "\"", "\\"];

pub(crate) fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        (any::<u64>(), any::<usize>()).prop_map(|(p, i)| Edit::Leaf(p, i)),
        (any::<u64>(), any::<usize>(), any::<u64>()).prop_map(|(p, s, q)| Edit::Graft(p, s, q)),
        any::<u64>().prop_map(Edit::Remove),
        any::<u64>().prop_map(Edit::Repeat),
        (any::<u64>(), any::<usize>()).prop_map(|(p, i)| Edit::Append(p, i)),
    ]
}

/// The node at a pseudo-random path of `doc` chosen by `pick`.
fn node_at(doc: &mut Value, mut pick: u64) -> &mut Value {
    let mut node = doc;
    // The root itself is chosen rarely (one pick in 8): replacing the whole document mostly
    // tests the parser's first type check.
    let mut stop = 8;
    loop {
        let children = match node {
            Value::Object(map) => map.len(),
            Value::Array(list) => list.len(),
            _ => 0,
        };
        if children == 0 || pick.is_multiple_of(stop) {
            return node;
        }
        stop = 3;
        let index = (pick as usize / 3) % children;
        pick /= 5;
        node = match node {
            Value::Object(map) => map.values_mut().nth(index).expect("in range"),
            Value::Array(list) => &mut list[index],
            _ => unreachable!("has children"),
        };
    }
}

fn apply_one(doc: &mut Value, edit: &Edit, corpus: &[Vec<u8>]) {
    match edit {
        Edit::Leaf(pick, i) => *node_at(doc, *pick) = leaves()[i % 12].clone(),
        Edit::Graft(pick, seed, other) => {
            let Ok(mut donor) = serde_json::from_slice::<Value>(&corpus[seed % corpus.len()])
            else {
                return;
            };
            *node_at(doc, *pick) = node_at(&mut donor, *other).clone();
        }
        Edit::Remove(pick) => match node_at(doc, *pick) {
            Value::Object(map) if !map.is_empty() => {
                let key = map.keys().nth(*pick as usize % map.len()).expect("in range").clone();
                map.remove(&key);
            }
            Value::Array(list) if !list.is_empty() => {
                list.remove(*pick as usize % list.len());
            }
            _ => {}
        },
        Edit::Repeat(pick) => {
            if let Value::Array(list) = node_at(doc, *pick)
                && !list.is_empty()
            {
                let element = list[*pick as usize % list.len()].clone();
                list.push(element);
            }
        }
        Edit::Append(pick, i) => {
            if let Value::String(text) = node_at(doc, *pick) {
                text.push_str(SUFFIXES[i % SUFFIXES.len()]);
            }
        }
    }
}

/// `input` edited as a JSON tree and serialized again (for JSON Lines, one line chosen by the
/// first edit); `None` when it is neither JSON nor JSON Lines.
pub(crate) fn apply_edits(input: &[u8], edits: &[Edit], corpus: &[Vec<u8>]) -> Option<Vec<u8>> {
    let edit_tree = |mut doc: Value| {
        for edit in edits {
            apply_one(&mut doc, edit, corpus);
        }
        serde_json::to_vec(&doc).expect("a Value serializes")
    };
    if let Ok(doc) = serde_json::from_slice::<Value>(input) {
        return Some(edit_tree(doc));
    }
    let text = std::str::from_utf8(input).ok()?;
    let mut lines: Vec<Vec<u8>> = text.lines().map(|l| l.as_bytes().to_vec()).collect();
    if lines.is_empty() {
        return None;
    }
    let first = match edits.first()? {
        Edit::Leaf(p, _) | Edit::Graft(p, ..) | Edit::Remove(p) | Edit::Repeat(p) => *p,
        Edit::Append(p, _) => *p,
    };
    let at = first as usize % lines.len();
    let doc = serde_json::from_slice::<Value>(&lines[at]).ok()?;
    lines[at] = edit_tree(doc);
    Some(lines.join(&b'\n'))
}
