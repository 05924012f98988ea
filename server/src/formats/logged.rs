//! A text or reasoning delta read from the run log's JSON without building the event: what a
//! format's reader needs for nearly every event.
//!
//! Written by hand, not as a serde struct: a mapped stream reads every event of its run, and
//! serde_json's derived reading of the event's object (each key matched through a field
//! visitor, every value parsed) was most of what a delta cost a mapped stream over Glassbox's
//! own, which writes the logged JSON as it is (docs/benchmarks.md, "the AI SDK stream beside
//! Glassbox's SSE"). An event as the log writes it is read by matching that layout key by key;
//! any other flat object by one pass that finds its top-level members. Either way only the
//! values a format uses are handed to serde_json (the delta as a borrowed `RawValue`, which
//! checks it is a well-formed string; the ids unescaped only if escaped). Any object neither
//! expects (a nested value, an escaped or repeated key, a kind other than the two deltas) is not
//! a delta, and the caller parses it whole as before.

use std::borrow::Cow;

use serde_json::value::RawValue;

/// A text or reasoning delta as the log holds it, borrowed from the log's copy. The delta stays
/// the JSON string the log wrote, escaped: a mapped stream writes it into its own JSON as it is,
/// neither unescaped nor escaped again.
#[derive(Debug)]
pub enum LoggedDelta<'a> {
    Text {
        segment_id: Cow<'a, str>,
        delta: &'a RawValue,
        ts: Cow<'a, str>,
    },
    Reasoning {
        segment_id: Cow<'a, str>,
        summary_index: u32,
        delta: &'a RawValue,
        ts: Cow<'a, str>,
    },
}

/// The raw values (their JSON text) of the members a delta has.
#[derive(Default)]
struct Members<'a> {
    kind: Option<&'a str>,
    ts: Option<&'a str>,
    segment_id: Option<&'a str>,
    delta: Option<&'a str>,
    text_delta: Option<&'a str>,
    summary_index: Option<&'a str>,
}

impl<'a> LoggedDelta<'a> {
    /// The delta `json` holds, if it is a `text_delta` or a `reasoning_part_delta`.
    pub fn read(json: &'a str) -> Option<Self> {
        match in_logs_layout(json) {
            Some(delta) => delta,
            None => Self::read_members(json),
        }
    }

    /// [`Self::read`] of any flat object, its members in any order.
    fn read_members(json: &'a str) -> Option<Self> {
        let members = members(json)?;
        let segment_id = string(members.segment_id?)?;
        let ts = string(members.ts?)?;
        match (
            string(members.kind?)?.as_ref(),
            members.delta,
            members.text_delta,
        ) {
            ("text_delta", Some(delta), None) => Some(LoggedDelta::Text {
                segment_id,
                delta: raw_string(delta)?,
                ts,
            }),
            ("reasoning_part_delta", None, Some(delta)) => Some(LoggedDelta::Reasoning {
                segment_id,
                summary_index: index(members.summary_index?)?,
                delta: raw_string(delta)?,
                ts,
            }),
            _ => None,
        }
    }
}

/// The delta of `json` if it is written as the log writes an event (`Event`'s fields in their
/// order, compact, as serde_json writes them; events read back from PostgreSQL's `jsonb` are
/// written through `Event` again, so they are too): the members are matched as that layout has
/// them, and the delta, the longest value, is scanned once (by serde_json, which checks it).
/// `Some(None)` for an event of that layout whose type is neither delta's; `None` for anything
/// else (an escape in an id or the time, JSON not written from `Event`), which
/// [`LoggedDelta::read_members`] reads.
fn in_logs_layout(json: &str) -> Option<Option<LoggedDelta<'_>>> {
    let rest = digits_after(json, r#"{"seq":"#)?;
    let (_, rest) = plain_string(rest.strip_prefix(r#","run_id":"#)?)?;
    let (ts, rest) = plain_string(rest.strip_prefix(r#","ts":"#)?)?;
    let (kind, _) = plain_string(rest.strip_prefix(r#","type":"#)?)?;
    if !matches!(kind, "text_delta" | "reasoning_part_delta") {
        return Some(None);
    }
    let rest = rest.strip_prefix(r#","type":"#)?;
    if let Some(rest) = rest.strip_prefix(r#""text_delta","segment_id":"#) {
        let (segment_id, rest) = plain_string(rest)?;
        let rest = digits_after(rest, r#","sequence_number":"#).unwrap_or(rest);
        let delta = last_string(rest.strip_prefix(r#","delta":"#)?)?;
        return Some(Some(LoggedDelta::Text {
            segment_id: Cow::Borrowed(segment_id),
            delta,
            ts: Cow::Borrowed(ts),
        }));
    }
    let rest = rest.strip_prefix(r#""reasoning_part_delta","segment_id":"#)?;
    let (segment_id, rest) = plain_string(rest)?;
    let rest = rest.strip_prefix(r#","summary_index":"#)?;
    let (summary_index, rest) = rest.split_at(rest.bytes().take_while(u8::is_ascii_digit).count());
    let delta = last_string(rest.strip_prefix(r#","text_delta":"#)?)?;
    Some(Some(LoggedDelta::Reasoning {
        segment_id: Cow::Borrowed(segment_id),
        summary_index: index(summary_index)?,
        delta,
        ts: Cow::Borrowed(ts),
    }))
}

/// What follows `prefix` and the digits after it (at least one), if `text` starts so.
fn digits_after<'a>(text: &'a str, prefix: &str) -> Option<&'a str> {
    let rest = text.strip_prefix(prefix)?;
    let after = rest.trim_start_matches(|c: char| c.is_ascii_digit());
    (after.len() < rest.len()).then_some(after)
}

/// A string value without escapes at the start of `text`, unquoted, and what follows it.
fn plain_string(text: &str) -> Option<(&str, &str)> {
    let inner = text.strip_prefix('"')?;
    let end = inner
        .bytes()
        .position(|byte| matches!(byte, b'"' | b'\\'))?;
    match inner.as_bytes()[end] {
        b'"' => Some((&inner[..end], &inner[end + 1..])),
        _ => None,
    }
}

/// The object's last value, a string, as its JSON: `text` is what follows its key, up to the
/// object's end.
fn last_string(text: &str) -> Option<&RawValue> {
    raw_string(text.strip_suffix('}')?)
}

/// Whether a delta read as [`LoggedDelta`] is the empty string.
pub fn is_empty(delta: &RawValue) -> bool {
    delta.get() == "\"\""
}

/// The members of `json`'s top-level object a delta has, found in one pass; `None` for anything
/// but a flat object with plain keys, each once.
fn members(json: &str) -> Option<Members<'_>> {
    let bytes = json.as_bytes();
    let mut found = Members::default();
    let mut at = skip_space(bytes, 0);
    if bytes.get(at) != Some(&b'{') {
        return None;
    }
    at = skip_space(bytes, at + 1);
    if bytes.get(at) == Some(&b'}') {
        return trailing_space_only(bytes, at + 1).then_some(found);
    }
    loop {
        let (key_end, escaped) = string_end(bytes, at)?;
        if escaped {
            return None;
        }
        let key = &json[at + 1..key_end - 1];
        at = skip_space(bytes, key_end);
        if bytes.get(at) != Some(&b':') {
            return None;
        }
        at = skip_space(bytes, at + 1);
        let value_end = value_end(bytes, at)?;
        found.put(key, &json[at..value_end])?;
        at = skip_space(bytes, value_end);
        match bytes.get(at) {
            Some(b',') => at = skip_space(bytes, at + 1),
            Some(b'}') => return trailing_space_only(bytes, at + 1).then_some(found),
            _ => return None,
        }
    }
}

impl<'a> Members<'a> {
    /// Keeps a member's value if a delta has it; `None` when a key comes twice.
    fn put(&mut self, key: &str, value: &'a str) -> Option<()> {
        let slot = match key {
            "type" => &mut self.kind,
            "ts" => &mut self.ts,
            "segment_id" => &mut self.segment_id,
            "delta" => &mut self.delta,
            "text_delta" => &mut self.text_delta,
            "summary_index" => &mut self.summary_index,
            _ => return Some(()),
        };
        match slot.replace(value) {
            Some(_) => None,
            None => Some(()),
        }
    }
}

/// Where the value starting at `at` ends: a string, or a number or literal (up to the next
/// separator). `None` for an object or an array (a delta has none) or an empty value.
fn value_end(bytes: &[u8], at: usize) -> Option<usize> {
    match bytes.get(at)? {
        b'"' => string_end(bytes, at).map(|(end, _)| end),
        b'{' | b'[' => None,
        _ => {
            let len = bytes[at..]
                .iter()
                .position(|byte| matches!(byte, b',' | b'}' | b' ' | b'\t' | b'\n' | b'\r'))?;
            (len > 0).then_some(at + len)
        }
    }
}

/// Where the string starting at `at` (its opening quote) ends, after its closing quote, and
/// whether it has an escape. Escapes are stepped over, not checked: a value that is used is
/// read by serde_json afterwards. A plain loop, not `memchr`: nearly every string here is a
/// few dozen bytes, shorter than what a call to it costs.
fn string_end(bytes: &[u8], at: usize) -> Option<(usize, bool)> {
    if bytes.get(at) != Some(&b'"') {
        return None;
    }
    let mut index = at + 1;
    let mut escaped = false;
    loop {
        index += bytes
            .get(index..)?
            .iter()
            .position(|byte| matches!(byte, b'"' | b'\\'))?;
        if bytes[index] == b'"' {
            return Some((index + 1, escaped));
        }
        escaped = true;
        index += 2;
    }
}

fn skip_space(bytes: &[u8], mut at: usize) -> usize {
    while matches!(bytes.get(at), Some(b' ' | b'\t' | b'\n' | b'\r')) {
        at += 1;
    }
    at
}

fn trailing_space_only(bytes: &[u8], at: usize) -> bool {
    skip_space(bytes, at) == bytes.len()
}

/// A string value, unescaped: borrowed when it has no escape (ids and times never do).
fn string(raw: &str) -> Option<Cow<'_, str>> {
    let inner = raw.strip_prefix('"')?.strip_suffix('"')?;
    match inner.contains('\\') {
        true => serde_json::from_str::<String>(raw).ok().map(Cow::Owned),
        false => Some(Cow::Borrowed(inner)),
    }
}

/// A JSON number that is an index: digits only, as serde_json reads a `u32` (no sign, no
/// leading zero).
fn index(raw: &str) -> Option<u32> {
    let digits = raw.bytes().all(|byte| byte.is_ascii_digit());
    (digits && (raw == "0" || !raw.starts_with('0')))
        .then(|| raw.parse().ok())
        .flatten()
}

/// A string value as its JSON, checked by serde_json (escapes, control characters).
fn raw_string(raw: &str) -> Option<&RawValue> {
    if !raw.starts_with('"') {
        return None;
    }
    serde_json::from_str(raw).ok()
}

#[cfg(test)]
mod tests {
    use app::protocol::{Event, EventKind};

    use super::*;

    fn logged(kind: EventKind) -> String {
        let event = Event {
            seq: 7,
            run_id: "run_1".into(),
            ts: "2026-11-27T12:00:00.125Z".into(),
            kind,
        };
        serde_json::to_string(&event).unwrap_or_default()
    }

    fn text(delta: &str) -> EventKind {
        EventKind::TextDelta {
            segment_id: "txt_1".into(),
            sequence_number: None,
            delta: delta.into(),
        }
    }

    /// Every delta the log writes reads back as it was, its text the log's escaped JSON.
    #[test]
    fn the_logs_deltas_read_back() {
        for delta in [
            "",
            "plain",
            " \"two\"\n\t\u{1}é😀</script>\\",
            "{\"a\":[1]}",
        ] {
            let json = logged(text(delta));
            let Some(LoggedDelta::Text {
                segment_id,
                delta: raw,
                ts,
            }) = LoggedDelta::read(&json)
            else {
                panic!("not read: {json}");
            };
            assert_eq!((&*segment_id, &*ts), ("txt_1", "2026-11-27T12:00:00.125Z"));
            assert_eq!(raw.get(), serde_json::to_string(delta).unwrap_or_default());
            assert_eq!(is_empty(raw), delta.is_empty());
        }
        let first = logged(EventKind::TextDelta {
            segment_id: "txt_\"2".into(),
            sequence_number: Some(3),
            delta: "x".into(),
        });
        assert!(matches!(
            LoggedDelta::read(&first),
            Some(LoggedDelta::Text { segment_id, .. }) if segment_id == "txt_\"2"
        ));
        let reasoning = logged(EventKind::ReasoningPartDelta {
            segment_id: "rsn_1".into(),
            summary_index: 12,
            text_delta: "why".into(),
        });
        assert!(matches!(
            LoggedDelta::read(&reasoning),
            Some(LoggedDelta::Reasoning { summary_index: 12, delta, .. }) if delta.get() == "\"why\""
        ));
    }

    /// The log's own layout is read as any other: the same delta, or none, for the log's lines
    /// and for lines that start as the log's and then differ.
    #[test]
    fn the_logs_layout_reads_as_any_other() {
        let text = logged(text(" \"a\"\n"));
        let first = logged(EventKind::TextDelta {
            segment_id: "txt_1".into(),
            sequence_number: Some(3),
            delta: "x".into(),
        });
        let reasoning = logged(EventKind::ReasoningPartDelta {
            segment_id: "rsn_1".into(),
            summary_index: 12,
            text_delta: "why".into(),
        });
        let usage = logged(EventKind::Usage(Default::default()));
        let mut lines = vec![text.clone(), first.clone(), reasoning.clone(), usage];
        for (from, to) in [
            (r#""delta":" "#, r#""delta": " "#),
            (r#""a\"\n"}"#, r#""a\"\n" }"#),
            (r#""a\"\n"}"#, r#""a\"\n","delta":"b"}"#),
            (r#""a\"\n"}"#, r#""a\"\n","x":1}"#),
            (r#""a\"\n"}"#, r#""a\"\n"}}"#),
            (r#""a\"\n"}"#, r#""a\q"}"#),
            (r#""a\"\n"}"#, r#""a"#),
            (r#""txt_1""#, r#""txt_\u0031""#),
            ("\"text_delta\",", "\"text_delta\" ,"),
            ("\"text_delta\"", "\"text\\u005fdelta\""),
            ("\"segment_id\":\"txt_1\",", ""),
            (r#""txt_1""#, r#""txt_1","segment_id":"txt_2""#),
            ("\"delta\"", "\"text_delta\""),
            ("\"seq\":7", "\"seq\":"),
            ("\"seq\":7", "\"seq\":7,\"seq\":8"),
            ("\"ts\":", "\"ts\":1,\"tz\":"),
        ] {
            lines.push(text.replacen(from, to, 1));
        }
        for (from, to) in [
            ("\"sequence_number\":3", "\"sequence_number\":"),
            ("\"sequence_number\":3", "\"sequence_number\":-3"),
        ] {
            lines.push(first.replacen(from, to, 1));
        }
        for (from, to) in [
            ("\"summary_index\":12", "\"summary_index\":012"),
            ("\"summary_index\":12", "\"summary_index\":"),
            ("\"summary_index\":12", "\"summary_index\":99999999999"),
            ("\"text_delta\"", "\"delta\""),
        ] {
            lines.push(reasoning.replacen(from, to, 1));
        }
        lines.push(
            r#"{"seq":7,"run_id":"run_1","ts":"2026-11-27T12:00:00.125Z","type":"text_delta","delta":"x","segment_id":"txt_1"}"#
                .to_owned(),
        );
        for line in &lines {
            let general = format!("{:?}", LoggedDelta::read_members(line));
            assert_eq!(format!("{:?}", LoggedDelta::read(line)), general, "{line}");
        }
        // The log's own lines take the short way.
        for line in &lines[..4] {
            assert!(in_logs_layout(line).is_some(), "{line}");
        }
    }

    /// What is not one of the two deltas, or not the log's flat object, is not read as one
    /// (the caller then parses it whole, and refuses what is not JSON).
    #[test]
    fn anything_else_is_not_a_delta() {
        let usage = logged(EventKind::Usage(Default::default()));
        for json in [
            usage.as_str(),
            "",
            "{}",
            "[]",
            r#"{"type":"text_delta","segment_id":"s","ts":"t"}"#,
            r#"{"type":"text_delta","segment_id":"s","ts":"t","delta":"a","delta":"b"}"#,
            r#"{"type":"text_delta","segment_id":"s","ts":"t","delta":"a","text_delta":"b"}"#,
            r#"{"type":"text_delta","segment_id":"s","ts":"t","delta":7}"#,
            r#"{"type":"text_delta","segment_id":"s","ts":"t","delta":"a\q"}"#,
            r#"{"type":"text_delta","segment_id":"s","ts":"t","delta":"a"} x"#,
            r#"{"type":"text_delta","segment_id":"s","ts":"t","delta":"a","extra":{"b":1}}"#,
            r#"{"type":"text_delta","segment_id":"s","ts":"t","delta":"a"#,
            r#"{"type":"text_delta","segment_id":"s","ts":"t","delta":"a\"#,
            r#"{"typ\u0065":"text_delta","segment_id":"s","ts":"t","delta":"a"}"#,
            r#"{"type":"reasoning_part_delta","segment_id":"s","ts":"t","text_delta":"a"}"#,
            r#"{"type":"reasoning_part_delta","segment_id":"s","ts":"t","text_delta":"a","summary_index":-1}"#,
            r#"{"type":"reasoning_part_delta","segment_id":"s","ts":"t","text_delta":"a","summary_index":+1}"#,
            r#"{"type":"reasoning_part_delta","segment_id":"s","ts":"t","text_delta":"a","summary_index":01}"#,
        ] {
            assert!(LoggedDelta::read(json).is_none(), "read as a delta: {json}");
        }
        let spaced = r#" { "type" : "text_delta" , "segment_id":"s","ts":"t", "delta" : "a" } "#;
        assert!(LoggedDelta::read(spaced).is_some());
    }
}
