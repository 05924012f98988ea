//! The two answers as a word diff (`similar`'s, over words and the spaces between them), with
//! neighbouring words of one kind joined into one run.

use similar::{ChangeTag, TextDiff};

use super::{WordChange, WordOp};

/// `a` turned into `b`: runs of kept, deleted and inserted words, in order.
pub fn word_diff(a: &str, b: &str) -> Vec<WordChange> {
    let diff = TextDiff::from_words(a, b);
    let mut runs: Vec<WordChange> = Vec::new();
    for change in diff.iter_all_changes() {
        let op = match change.tag() {
            ChangeTag::Equal => WordOp::Equal,
            ChangeTag::Delete => WordOp::Delete,
            ChangeTag::Insert => WordOp::Insert,
        };
        match runs.last_mut() {
            Some(last) if last.op == op => last.text.push_str(change.value()),
            _ => runs.push(WordChange {
                op,
                text: change.value().to_owned(),
            }),
        }
    }
    runs
}
