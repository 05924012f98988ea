//! The alignment and the word diff on hand-made steps.

use serde_json::{json, Value};

use super::*;

fn call(name: &str, args: Value) -> Step {
    Step {
        kind: StepKind::ToolCall,
        name: name.to_owned(),
        summary: args.to_string(),
        args,
        status: "success".to_owned(),
        start_ms: 0,
        duration_ms: Some(10),
        tokens: None,
        note: None,
    }
}

fn text(kind: StepKind, words: &str) -> Step {
    Step {
        kind,
        name: String::new(),
        args: Value::Null,
        summary: words.to_owned(),
        status: "complete".to_owned(),
        start_ms: 0,
        duration_ms: Some(10),
        tokens: Some(5),
        note: None,
    }
}

fn run() -> Vec<Step> {
    vec![
        text(StepKind::Reasoning, "think"),
        call("read_file", json!({"path": "a.rs"})),
        call("grep_search", json!({"pattern": "fn main"})),
        text(StepKind::Answer, "done"),
    ]
}

/// Each row as (change, a, b, moved).
fn shape(rows: &[Row]) -> Vec<(RowChange, Option<usize>, Option<usize>, bool)> {
    rows.iter().map(|r| (r.change, r.a, r.b, r.moved)).collect()
}

use RowChange::{Changed, Deleted, Inserted, Same};

#[test]
fn identical_runs_are_all_same_rows() {
    let rows = align(&run(), &run());
    let expected: Vec<_> = (0..4).map(|i| (Same, Some(i), Some(i), false)).collect();
    assert_eq!(shape(&rows), expected);
    assert!(rows.iter().all(|row| row.differs.is_empty()));
}

#[test]
fn an_inserted_call_is_a_row_of_b_only() {
    let mut b = run();
    b.insert(2, call("list_dir", json!({"path": "."})));
    let rows = align(&run(), &b);
    assert_eq!(
        shape(&rows),
        vec![
            (Same, Some(0), Some(0), false),
            (Same, Some(1), Some(1), false),
            (Inserted, None, Some(2), false),
            (Same, Some(2), Some(3), false),
            (Same, Some(3), Some(4), false),
        ]
    );
}

#[test]
fn a_deleted_call_is_a_row_of_a_only() {
    let mut b = run();
    b.remove(1);
    let rows = align(&run(), &b);
    assert_eq!(
        shape(&rows),
        vec![
            (Same, Some(0), Some(0), false),
            (Deleted, Some(1), None, false),
            (Same, Some(2), Some(1), false),
            (Same, Some(3), Some(2), false),
        ]
    );
}

#[test]
fn the_same_tool_with_other_arguments_is_one_changed_row() {
    let mut b = run();
    b[1] = call("read_file", json!({"path": "b.rs"}));
    b[1].status = "error".to_owned();
    b[1].duration_ms = Some(900);
    let rows = align(&run(), &b);
    assert_eq!(shape(&rows)[1], (Changed, Some(1), Some(1), false));
    assert_eq!(
        rows[1].differs,
        vec![Field::Args, Field::Status, Field::Duration]
    );
    assert_eq!(rows.len(), 4);
}

#[test]
fn reordered_parallel_calls_pair_up_as_moved() {
    // Two tools swapped: one row each, the one found out of place marked moved.
    let mut b = run();
    b.swap(1, 2);
    let rows = align(&run(), &b);
    assert_eq!(rows.len(), 4, "{rows:?}");
    assert!(rows.iter().all(|row| row.change == Same), "{rows:?}");
    assert!(rows.iter().any(|row| row.moved));
    let pairs: Vec<_> = rows.iter().map(|row| (row.a, row.b)).collect();
    assert!(pairs.contains(&(Some(1), Some(2))) && pairs.contains(&(Some(2), Some(1))));
    // One tool called twice in another order: each call pairs with its own arguments.
    let two = |first: &str, second: &str| {
        vec![
            call("read_file", json!({"path": first})),
            call("read_file", json!({"path": second})),
        ]
    };
    let rows = align(&two("a.rs", "b.rs"), &two("b.rs", "a.rs"));
    assert_eq!(
        shape(&rows),
        vec![
            (Same, Some(0), Some(1), true),
            (Same, Some(1), Some(0), false)
        ]
    );
}

#[test]
fn empty_runs_align_to_nothing_or_to_all_inserted() {
    assert!(align(&[], &[]).is_empty());
    let rows = align(&[], &run());
    assert!(rows.iter().all(|row| row.change == Inserted) && rows.len() == 4);
    let rows = align(&run(), &[]);
    assert!(rows.iter().all(|row| row.change == Deleted) && rows.len() == 4);
}

#[test]
fn similar_arguments_score_between_equal_and_unrelated() {
    let base = json!({"path": "src/main.rs", "limit": 10});
    assert_eq!(similarity(&base, &base), 1.0);
    let close = similarity(&base, &json!({"path": "src/main.rs", "limit": 20}));
    let far = similarity(&base, &json!({"query": "x"}));
    assert!(close > 0.4 && close < 1.0 && far == 0.0, "{close} {far}");
}

#[test]
fn the_answers_diff_by_words() {
    let diff = word_diff("The file has 3 lines.", "The file has 4 lines.");
    let ops: Vec<_> = diff.iter().map(|c| (c.op, c.text.as_str())).collect();
    assert_eq!(
        ops,
        vec![
            (WordOp::Equal, "The file has "),
            (WordOp::Delete, "3"),
            (WordOp::Insert, "4"),
            (WordOp::Equal, " lines."),
        ]
    );
    assert!(word_diff("", "").is_empty());
    let all_new = word_diff("", "new words");
    assert_eq!(all_new.len(), 1);
    assert_eq!(all_new[0].op, WordOp::Insert);
}

#[test]
fn two_runs_of_500_steps_align_quickly() {
    // Busy runs: 500 steps each, one tool in three with other arguments, a call in ten missing.
    let run = |salt: usize| -> Vec<Step> {
        (0..500)
            .filter(|i| salt == 0 || i % 10 != 3)
            .map(|i| match i % 4 {
                0 => text(StepKind::Reasoning, &format!("step {i}")),
                1 => call(
                    "read_file",
                    json!({"path": format!("src/{}.rs", i + salt * (i % 3))}),
                ),
                2 => call("grep_search", json!({"query": format!("fn {i}")})),
                _ => call("read_file", json!({"path": format!("docs/{i}.md")})),
            })
            .collect()
    };
    let (a, b) = (run(0), run(1));
    let started = std::time::Instant::now();
    let rows = align(&a, &b);
    let took = started.elapsed();
    eprintln!("500 × 450 steps aligned in {took:?} (this build)");
    assert_eq!(rows.iter().filter(|row| row.a.is_some()).count(), a.len());
    assert_eq!(rows.iter().filter(|row| row.b.is_some()).count(), b.len());
    assert!(took < std::time::Duration::from_secs(2), "{took:?}");
}
