//! Criterion micro-benchmarks of the pure parts on every event's path: the reducer (server and
//! browser), the payload sanitizer, the value-based redaction (server), and what each reader of
//! a stream does per event (Glassbox's SSE, the AI SDK's UI message stream, AG-UI). Run: `cargo bench -p bench --bench micro`.

use std::hint::black_box;

use app::protocol::{fold, Event, EventKind, Reducer, ToolResultStatus};
use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use glassbox::{
    ag_ui::outbound::Outbound,
    formats::ai_sdk::UiMessageStream,
    http::sse_frames::Frames,
    redact::{redact_text, Streams},
    sanitize::sanitize,
};
use glassbox_bench::fixtures;
use serde_json::json;

fn reducer(c: &mut Criterion) {
    // The browser benchmark's run: a 10,000-token answer with 50 tool calls.
    let events = fixtures::agent_run("run_bench", 10_000, 50);
    let json: Vec<String> = fixtures::as_json(&events)
        .iter()
        .map(|(_, json)| json.to_string())
        .collect();
    let mut group = c.benchmark_group("reducer");
    group.throughput(Throughput::Elements(events.len() as u64));
    group.bench_function("fold 10k tokens + 50 tools", |b| {
        b.iter(|| fold(black_box(&events)))
    });
    group.bench_function("apply one by one", |b| {
        b.iter(|| {
            let mut reducer = Reducer::default();
            for event in &events {
                reducer.apply(black_box(event));
            }
            reducer.into_message()
        })
    });
    // What the browser does per SSE frame: parse the JSON, then apply.
    group.bench_function("parse JSON + apply", |b| {
        b.iter(|| {
            let mut reducer = Reducer::default();
            for text in &json {
                if let Ok(event) = serde_json::from_str::<Event>(black_box(text)) {
                    reducer.apply(&event);
                }
            }
            reducer.into_message()
        })
    });
    group.finish();
    long_reasoning(c);
}

/// A million characters in 10-character deltas, as reasoning and as answer text: both folds must
/// be linear (the reasoning one rebuilt the whole text per delta before).
fn long_reasoning(c: &mut Criterion) {
    let delta = |kind: &str, index: u64| Event {
        seq: index + 3,
        run_id: "run_long".into(),
        ts: "2026-01-01T00:00:00.000Z".into(),
        kind: match kind {
            "reasoning" => EventKind::ReasoningPartDelta {
                segment_id: "rs".into(),
                summary_index: 0,
                text_delta: "0123456789".into(),
            },
            _ => EventKind::TextDelta {
                segment_id: "txt".into(),
                sequence_number: (index == 0).then_some(0),
                delta: "0123456789".into(),
            },
        },
    };
    let mut group = c.benchmark_group("1M characters in 10-char deltas");
    group.sample_size(10);
    for kind in ["reasoning", "text"] {
        let start = |seq, kind| Event {
            seq,
            run_id: "run_long".into(),
            ts: "2026-01-01T00:00:00.000Z".into(),
            kind,
        };
        let mut events = vec![
            start(
                1,
                EventKind::MessageStarted {
                    conversation_id: "c".into(),
                    user_message_id: "u".into(),
                    message_id: "m".into(),
                    trace_id: "t".into(),
                    model: "demo".into(),
                },
            ),
            start(
                2,
                EventKind::ReasoningPartStarted {
                    segment_id: "rs".into(),
                    summary_index: 0,
                    sequence_number: 0,
                },
            ),
        ];
        events.extend((0..100_000).map(|index| delta(kind, index)));
        group.bench_function(kind, |b| b.iter(|| fold(black_box(&events))));
    }
    group.finish();
}

fn sanitizer(c: &mut Criterion) {
    let mut group = c.benchmark_group("sanitize");
    group.throughput(Throughput::Elements(1));
    let delta = EventKind::TextDelta {
        segment_id: "txt_1".into(),
        sequence_number: None,
        delta: "quickly ".into(),
    };
    let call = EventKind::ToolCallStarted {
        call_id: "call_1".into(),
        name: "http_request".into(),
        display: Some("Calling the API".into()),
        args: json!({
            "url": "https://example.com/v1/items",
            "headers": {"Authorization": "Bearer sk-secret", "Accept": "application/json"},
            "body": {"query": "term", "api_key": "secret", "nested": [{"password": "x"}, {"page": 2}]}
        }),
        sequence_number: 3,
    };
    let result = EventKind::ToolResult {
        call_id: "call_1".into(),
        status: ToolResultStatus::Success,
        duration_ms: 40,
        output: Some("src/lib.rs:1: a line of grep output\n".repeat(3000)),
        truncated: false,
        full_length: None,
        error: None,
    };
    for (name, kind) in [
        ("text delta", delta),
        ("tool call args with secrets", call),
        ("tool result of 100 KiB (truncated)", result),
    ] {
        // Each iteration sanitizes a fresh copy through the one path `Run::append` takes (a delta
        // also passes the held-back word of a fresh `Streams`).
        group.bench_function(name, |b| {
            b.iter_batched(
                || (Streams::default(), kind.clone()),
                |(mut streams, kind)| sanitize(&mut streams, black_box(kind)),
                BatchSize::SmallInput,
            )
        });
    }
    group.finish();
}

/// Value-based redaction per event: what `Run::append` adds to every delta (the held-back word
/// and the scan), on ordinary text and on text that holds a credential.
fn redaction(c: &mut Criterion) {
    let mut group = c.benchmark_group("redact");
    group.throughput(Throughput::Elements(1));
    let words: Vec<String> =
        "The quick brown fox jumps over the lazy dog while the answer streams in "
            .split_inclusive(' ')
            .map(str::to_owned)
            .collect();
    let delta = |text: &str| EventKind::TextDelta {
        segment_id: "txt_1".into(),
        sequence_number: None,
        delta: text.to_owned(),
    };
    group.bench_function("text delta, one word, through the stream", |b| {
        let mut streams = Streams::default();
        let mut next = words.iter().cycle();
        b.iter(|| {
            let word = next.next().map_or("word ", String::as_str);
            black_box(streams.pass(delta(word)))
        })
    });
    group.bench_function("text delta, a token split mid-word", |b| {
        let mut streams = Streams::default();
        let mut next = ["ans", "wer ", "stre", "ams "].iter().cycle();
        b.iter(|| black_box(streams.pass(delta(next.next().copied().unwrap_or("x ")))))
    });
    let line = "src/lib.rs:12: let total = items.iter().map(|item| item.price).sum::<u64>();\n";
    group.bench_function("scan 80 characters, nothing found", |b| {
        b.iter(|| black_box(redact_text(black_box(line))))
    });
    let secret = "export OPENAI_API_KEY=sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789\n";
    group.bench_function("scan 80 characters with a key", |b| {
        b.iter(|| black_box(redact_text(black_box(secret))))
    });
    let output = line.repeat(200);
    group.bench_function("scan a 16 KiB tool result, nothing found", |b| {
        b.iter(|| black_box(redact_text(black_box(&output))))
    });
    group.finish();
}

/// What one reader does per text delta, from the logged JSON to the SSE frame in the reader's
/// buffer (`sse_frames`): Glassbox's stream writes the JSON as it is; the AI SDK's maps it to a
/// `text-delta` chunk first, AG-UI's to a `TEXT_MESSAGE_CONTENT` event.
fn readers(c: &mut Criterion) {
    let mut group = c.benchmark_group("reader, per text delta");
    group.throughput(Throughput::Elements(1));
    let event = |seq: u64, delta: &str| Event {
        seq,
        run_id: "run_0123456789abcdef".into(),
        ts: "2026-11-26T02:30:00.123Z".into(),
        kind: EventKind::TextDelta {
            segment_id: "txt_0123456789abcdef".into(),
            sequence_number: None,
            delta: delta.into(),
        },
    };
    let logged: std::sync::Arc<str> =
        serde_json::to_string(&event(42, "the answer \"streams\" in, "))
            .unwrap_or_default()
            .into();
    group.bench_function("Glassbox SSE: the logged JSON", |b| {
        let mut frames = Frames::new();
        b.iter(|| black_box(frames.event(42, black_box(&logged))))
    });
    group.bench_function("AI SDK: mapped to a text-delta chunk", |b| {
        let mut stream = UiMessageStream::new();
        stream.push(&event(1, "open"));
        let mut frames = Frames::new();
        b.iter(|| {
            let json: &str = black_box(&logged);
            black_box(frames.write(None, json.len(), |out| stream.push_delta(json, out)))
        })
    });
    group.bench_function("AG-UI: mapped to TEXT_MESSAGE_CONTENT", |b| {
        let mut outbound = Outbound::new("thread".into(), "run".into());
        outbound.map(&event(1, "open").kind);
        let mut frames = Frames::new();
        let mut id = 0;
        b.iter(|| {
            let json: &str = black_box(&logged);
            id += 1;
            black_box(frames.write(Some(id), json.len(), |out| outbound.push_delta(json, out)))
        })
    });
    group.finish();
}

criterion_group!(benches, reducer, sanitizer, redaction, readers);
criterion_main!(benches);
