//! The alignment of two runs' steps. `similar`'s Myers diff lines the steps up by their kind and
//! tool name; then the arguments decide which of several calls of one tool pair up, and a call
//! deleted in one place and inserted in another (parallel calls in another order) is one row,
//! marked as moved.

use serde_json::Value;
use similar::{capture_diff_slices, Algorithm, DiffOp};

use super::{Field, Row, RowChange, Step, StepKind};

/// Arguments at least this similar (0 to 1) make a deleted and an inserted call of one tool one
/// moved row.
const MOVED_SIMILARITY: f64 = 0.5;

/// How many of the free calls of one tool each call is weighed against when pairing.
const REORDER_WINDOW: usize = 16;

/// Strings longer than this (in bytes) are compared whole, not character by character.
const MAX_DIFFED_STRING: usize = 1_000;

/// A row to be: `a`'s step, `b`'s step, and whether the pair was found out of order.
type Pair = (Option<usize>, Option<usize>, bool);

/// What lines steps up: their kind and, for a call, its tool.
fn key(step: &Step) -> (StepKind, &str) {
    (step.kind, step.name.as_str())
}

/// The rows of `a`'s and `b`'s steps, in order.
pub fn align(a: &[Step], b: &[Step]) -> Vec<Row> {
    let keys_a: Vec<_> = a.iter().map(key).collect();
    let keys_b: Vec<_> = b.iter().map(key).collect();
    let mut pairs: Vec<Pair> = Vec::new();
    for op in capture_diff_slices(Algorithm::Myers, &keys_a, &keys_b) {
        match op {
            DiffOp::Equal {
                old_index,
                new_index,
                len,
            } => pair_equal(a, b, old_index, new_index, len, &mut pairs),
            DiffOp::Delete {
                old_index, old_len, ..
            } => pairs.extend((old_index..old_index + old_len).map(|i| (Some(i), None, false))),
            DiffOp::Insert {
                new_index, new_len, ..
            } => pairs.extend((new_index..new_index + new_len).map(|j| (None, Some(j), false))),
            DiffOp::Replace {
                old_index,
                old_len,
                new_index,
                new_len,
            } => {
                pairs.extend((old_index..old_index + old_len).map(|i| (Some(i), None, false)));
                pairs.extend((new_index..new_index + new_len).map(|j| (None, Some(j), false)));
            }
        }
    }
    pair_moved_calls(a, b, &mut pairs);
    pairs
        .into_iter()
        .map(|(i, j, moved)| row(a, b, i, j, moved))
        .collect()
}

/// Pairs an equal stretch; where it repeats one key (several calls of one tool), each of `a`'s
/// steps takes the most similar of `b`'s still free, so calls made in another order pair up.
fn pair_equal(
    a: &[Step],
    b: &[Step],
    old_index: usize,
    new_index: usize,
    len: usize,
    pairs: &mut Vec<Pair>,
) {
    let mut start = 0;
    while start < len {
        let mut end = start + 1;
        while end < len && key(&a[old_index + end]) == key(&a[old_index + start]) {
            end += 1;
        }
        let mut free: Vec<usize> = (new_index + start..new_index + end).collect();
        for (i, step) in a
            .iter()
            .enumerate()
            .take(old_index + end)
            .skip(old_index + start)
        {
            // The nearest few only: parallel calls are made together, and a long run of one tool
            // must not cost its length squared in diffs.
            let best = free
                .iter()
                .take(REORDER_WINDOW)
                .map(|&j| similarity(&step.args, &b[j].args))
                .enumerate()
                // On a tie, the earliest.
                .max_by(|(x, sx), (y, sy)| sx.total_cmp(sy).then(y.cmp(x)))
                .map_or(0, |(best, _)| best);
            pairs.push((Some(i), Some(free.remove(best)), best != 0));
        }
        start = end;
    }
}

/// A call only in `a` and a call of the same tool only in `b`, with similar arguments, become one
/// row (at `a`'s place).
fn pair_moved_calls(a: &[Step], b: &[Step], pairs: &mut Vec<Pair>) {
    let mut index = 0;
    while index < pairs.len() {
        let (Some(i), None, _) = pairs[index] else {
            index += 1;
            continue;
        };
        let found = (a[i].kind == StepKind::ToolCall)
            .then(|| {
                pairs
                    .iter()
                    .enumerate()
                    .filter_map(|(at, pair)| match pair {
                        (None, Some(j), _) if key(&b[*j]) == key(&a[i]) => {
                            Some((at, *j, similarity(&a[i].args, &b[*j].args)))
                        }
                        _ => None,
                    })
                    .filter(|(_, _, score)| *score >= MOVED_SIMILARITY)
                    .max_by(|x, y| x.2.total_cmp(&y.2).then(y.0.cmp(&x.0)))
            })
            .flatten();
        if let Some((at, j, _)) = found {
            pairs[index] = (Some(i), Some(j), true);
            pairs.remove(at);
            if at < index {
                index -= 1;
            }
        }
        index += 1;
    }
}

fn row(a: &[Step], b: &[Step], i: Option<usize>, j: Option<usize>, moved: bool) -> Row {
    let (change, differs) = match (i.map(|i| &a[i]), j.map(|j| &b[j])) {
        (Some(x), Some(y)) => {
            let differs = differences(x, y);
            let changed = differs
                .iter()
                .any(|field| matches!(field, Field::Args | Field::Status));
            let change = match changed {
                true => RowChange::Changed,
                false => RowChange::Same,
            };
            (change, differs)
        }
        (Some(_), None) => (RowChange::Deleted, Vec::new()),
        _ => (RowChange::Inserted, Vec::new()),
    };
    Row {
        change,
        a: i,
        b: j,
        moved,
        differs,
    }
}

/// What differs between two paired steps: a duration only when it is off by more than a quarter
/// and 100 ms.
fn differences(x: &Step, y: &Step) -> Vec<Field> {
    let mut differs = Vec::new();
    if x.args != y.args || (x.kind != StepKind::ToolCall && x.summary != y.summary) {
        differs.push(Field::Args);
    }
    if x.status != y.status {
        differs.push(Field::Status);
    }
    let duration = match (x.duration_ms, y.duration_ms) {
        (Some(p), Some(q)) => p.abs_diff(q) > 100 && p.abs_diff(q) * 4 > p.max(q),
        (p, q) => p.is_some() != q.is_some(),
    };
    if duration {
        differs.push(Field::Duration);
    }
    if x.tokens != y.tokens {
        differs.push(Field::Tokens);
    }
    differs
}

/// How alike two argument values are, from 0 to 1: objects by their keys, strings by their
/// characters, anything else equal or not.
pub fn similarity(x: &Value, y: &Value) -> f64 {
    if x == y {
        return 1.0;
    }
    match (x, y) {
        (Value::Object(p), Value::Object(q)) => {
            let keys: std::collections::BTreeSet<&String> = p.keys().chain(q.keys()).collect();
            let total: f64 = keys
                .iter()
                .map(|key| match (p.get(*key), q.get(*key)) {
                    (Some(v), Some(w)) => similarity(v, w),
                    _ => 0.0,
                })
                .sum();
            total / keys.len().max(1) as f64
        }
        (Value::String(p), Value::String(q))
            if p.len() <= MAX_DIFFED_STRING && q.len() <= MAX_DIFFED_STRING =>
        {
            f64::from(similar::TextDiff::from_chars(p.as_str(), q.as_str()).ratio())
        }
        _ => 0.0,
    }
}
