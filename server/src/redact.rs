//! Value-based redaction: credentials recognized by their shape, wherever they appear (tool output,
//! arguments, model text and reasoning, model turns), beside the key-based redaction of
//! [`crate::sanitize`]. Applied before an event enters a run's log, so the stream, the database and
//! the logs only ever see `[redacted]`.
//!
//! Written here rather than taken from a crate: the crates that do this are small, young and
//! single-purpose, and what we need is a dozen patterns plus the streaming rule below, which none
//! of them has.
//!
//! Streaming: a credential can arrive split over two deltas (`"sk-ab"` then `"cdef…"`), and each
//! half alone matches nothing. [`Streams`] therefore holds back the unfinished end of a delta (the
//! last word, an open `Bearer`, an unfinished PEM header) until the next delta of the same text
//! completes it, or the text ends; everything before that point is redacted and sent at once.
//! Inside a PEM private key block nothing is sent until its END line.

use std::{borrow::Cow, sync::LazyLock};

use regex::Regex;

use app::protocol::EventKind;

pub const REDACTED: &str = "[redacted]";

/// A held-back word longer than this is sent anyway (redacted as it stands): the bound on what one
/// text can hold back.
pub const MAX_HELD_BYTES: usize = 4096;

/// Substrings (case-insensitive) of a key whose value is never shown (in tool arguments, progress
/// and malformed arguments).
pub const SECRET_KEY_PARTS: [&str; 9] = [
    "key",
    "token",
    "secret",
    "password",
    "passwd",
    "passphrase",
    "authorization",
    "cookie",
    "credential",
];
/// Whole words of a key (split at `_`, `-`, `.` and lowerCamel humps) whose value is never shown:
/// `auth` and `basicAuth` are secret, `author` is not.
const SECRET_KEY_WORDS: [&str; 3] = ["auth", "oauth", "pwd"];

/// Whether the value under this key is never shown.
pub fn is_secret_key(key: &str) -> bool {
    let lower = key.to_ascii_lowercase();
    SECRET_KEY_PARTS.iter().any(|part| lower.contains(part))
        || key_words(key)
            .iter()
            .any(|word| SECRET_KEY_WORDS.contains(&word.as_str()))
}

/// The words of a key, lower-cased: `basicAuth_x-y.z` gives `basic`, `auth`, `x`, `y`, `z`.
fn key_words(key: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut previous_lower = false;
    for c in key.chars() {
        if !c.is_ascii_alphanumeric() || (c.is_ascii_uppercase() && previous_lower) {
            words.extend((!word.is_empty()).then(|| std::mem::take(&mut word)));
        }
        if c.is_ascii_alphanumeric() {
            word.push(c.to_ascii_lowercase());
        }
        previous_lower = c.is_ascii_lowercase() || c.is_ascii_digit();
    }
    words.extend((!word.is_empty()).then_some(word));
    words
}

/// Whole-match credential shapes: the match becomes `[redacted]`.
const SHAPES: &[&str] = &[
    // A PEM private key block, to its END line or, when cut off, to the end of the text.
    r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY-----(?s:.*?)(?:-----END[A-Z0-9 ]*PRIVATE KEY-----|\z)",
    r"sk-[A-Za-z0-9_\-]{20,}", // OpenAI, Anthropic (sk-ant-…), DeepSeek
    r"(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}", // Stripe
    r"A(?:KIA|SIA)[A-Z0-9]{16}", // AWS access key id
    r"gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,}", // GitHub
    r"glpat-[A-Za-z0-9_\-]{20,}", // GitLab
    r"xox[abposr]-[A-Za-z0-9\-]{10,}", // Slack
    r"AIza[A-Za-z0-9_\-]{35}", // Google
    r"hf_[A-Za-z0-9]{30,}",    // Hugging Face
    r"npm_[A-Za-z0-9]{36}",    // npm
    r"eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}", // JWT
];

/// The end of a key whose value is a secret in a configuration file: `password`, `db_password`,
/// `apiKey`, `client_secret`, `auth_token`, `auth`, `credentials`. A key must end with one (so
/// `author` and `token_count` are not secret).
const SECRET_KEY_END: &str = r"(?:pass(?:word|wd|phrase)|pwd|secret|token|(?:api|access|secret|private|signing|encryption|master)[_\-]?key|auth|authorization|credentials?)";

/// A key-shaped value in the usual configuration forms, for [`KEY_VALUES`]: `{key}` is a key
/// ending in [`SECRET_KEY_END`], quoted or not.
const KEY_VALUE_FORMS: &[&str] = &[
    // `"apiKey": "x"` (JSON), `password: "x"` (YAML), `token = "x"` (TOML), `export T="x"`
    r#"(?P<keep>{key}[ \t]*[:=][ \t]*")(?P<value>(?:[^"\\\n]|\\.)+)(?P<after>")"#,
    // `auth_token = 'x'` (TOML, YAML)
    r#"(?P<keep>{key}[ \t]*[:=][ \t]*')(?P<value>[^'\n]+)(?P<after>')"#,
    // `password: x` (YAML) and `password = x` (INI): one word ending its line. Not when the line
    // looks like code (`password: String,`, `token = next_token();`) or prose (`Token: the
    // smallest unit of text`).
    r#"(?m)(?P<keep>{key}[ \t]*(?::[ \t]+|[ \t]*=[ \t]*))(?P<value>[^\s'"{}\[\]()<>,;]+)(?P<after>[ \t\r]*)$"#,
];

/// Named values: the group `keep` (the name) and `after` stay, the rest becomes `[redacted]`.
const NAMED: &[&str] = &[
    // `scheme://user:password@host`
    r"(?P<keep>[A-Za-z][A-Za-z0-9+.\-]*://[^\s/:@]*:)[^\s/@]+(?P<after>@)",
    // `password=…`, `token=…`, `api_key=…` in URLs, query strings and environment lines
    r#"(?i)(?P<keep>(?:password|passwd|pwd|secret|token|api[_\-]?key|access[_\-]?key|auth)=)[^\s&;,'"`<>]+"#,
    // `Authorization: Bearer …`
    r"(?i)(?P<keep>bearer\s+)[A-Za-z0-9._~+/=\-]{16,}",
];

struct Patterns {
    /// Every pattern in one alternation, for the common question "is there anything at all?".
    any: Regex,
    shapes: Regex,
    named: Vec<Regex>,
    key_values: Vec<Regex>,
    /// A member (`"key": value`, `'key': 'value'`, `key: value`) of text that should have been
    /// JSON and is not.
    raw_member: Regex,
    /// A secret-looking key and its separator at the end of a running text: the value may follow.
    open_key: Regex,
    pem_marker: Regex,
    /// Text that ends inside a PEM header (`-----BEGIN RSA PRIV`), which has spaces in it.
    open_tail: Regex,
}

/// [`KEY_VALUE_FORMS`] with their key: a key ending in [`SECRET_KEY_END`], maybe quoted.
fn key_value_patterns() -> Vec<String> {
    let key = format!(r#"["']?(?-u:\b)[A-Za-z0-9_.\-]*?{SECRET_KEY_END}["']?"#);
    KEY_VALUE_FORMS
        .iter()
        .map(|form| format!("(?i){}", form.replace("{key}", &key)))
        .collect()
}

static PATTERNS: LazyLock<Patterns> = LazyLock::new(|| {
    let key_values = key_value_patterns();
    let all = SHAPES
        .iter()
        .copied()
        .chain(NAMED.iter().copied())
        .chain(key_values.iter().map(String::as_str));
    // The patterns are constants; a test compiles them, so these cannot fail at run time.
    let compile = |pattern: &str| Regex::new(pattern).expect("a redaction pattern");
    Patterns {
        any: compile(
            &all.map(|pattern| {
                format!("(?:{pattern})")
                    .replace("?P<keep>", "?:")
                    .replace("?P<value>", "?:")
                    .replace("?P<after>", "?:")
            })
            .collect::<Vec<_>>()
            .join("|"),
        ),
        shapes: compile(&SHAPES.join("|")),
        named: NAMED.iter().map(|pattern| compile(pattern)).collect(),
        key_values: key_values.iter().map(|pattern| compile(pattern)).collect(),
        raw_member: compile(
            r#"(?P<key>"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'|[A-Za-z_$][A-Za-z0-9_$\-]*)(?P<sep>\s*:\s*)(?:"(?:[^"\\]|\\.)*"?|'(?:[^'\\]|\\.)*'?|[^,}\]{\[\s]+)"#,
        ),
        open_key: compile(&format!(
            r#"(?i)["']?(?-u:\b)[A-Za-z0-9_.\-]*?{SECRET_KEY_END}["']?[ \t]*[:=][^\n]*\z"#
        )),
        pem_marker: compile(r"-----(BEGIN|END)[A-Z0-9 ]*PRIVATE KEY-----"),
        open_tail: compile(r"-----BEGIN[A-Z0-9 ]*-{0,4}\z"),
    }
});

/// `text` with every credential-shaped value replaced; borrowed (no copy) when there is none.
pub fn redact_text(text: &str) -> Cow<'_, str> {
    let patterns = &*PATTERNS;
    if !patterns.any.is_match(text) {
        return Cow::Borrowed(text);
    }
    let mut out = patterns.shapes.replace_all(text, REDACTED).into_owned();
    for named in &patterns.named {
        if let Cow::Owned(changed) =
            named.replace_all(&out, format!("${{keep}}{REDACTED}${{after}}"))
        {
            out = changed;
        }
    }
    for form in &patterns.key_values {
        let replaced = form.replace_all(&out, |found: &regex::Captures| {
            if is_plain_setting(&found["value"]) {
                found[0].to_owned()
            } else {
                format!("{}{REDACTED}{}", &found["keep"], &found["after"])
            }
        });
        if let Cow::Owned(changed) = replaced {
            out = changed;
        }
    }
    Cow::Owned(out)
}

/// A value under a secret-looking key that is no secret: a switch, an empty mark, a value
/// already redacted.
fn is_plain_setting(value: &str) -> bool {
    let value = value.trim();
    value == REDACTED
        || [
            "true", "false", "yes", "no", "on", "off", "null", "none", "~",
        ]
        .iter()
        .any(|plain| value.eq_ignore_ascii_case(plain))
}

/// Redacts `text` in place; no allocation when nothing matches.
pub fn redact_in_place(text: &mut String) {
    if let Cow::Owned(changed) = redact_text(text) {
        *text = changed;
    }
}

/// Text that should have been JSON and is not (a model's malformed tool arguments): members whose
/// key looks secret ([`is_secret_key`]; double-quoted, single-quoted or bare) lose their value,
/// then the credential shapes go.
pub fn redact_raw_json(text: &str) -> String {
    let named = PATTERNS
        .raw_member
        .replace_all(text, |member: &regex::Captures| {
            let key = member["key"].trim_matches(|c| c == '"' || c == '\'');
            if is_secret_key(key) {
                format!("{}{}\"{REDACTED}\"", &member["key"], &member["sep"])
            } else {
                member[0].to_owned()
            }
        });
    redact_text(&named).into_owned()
}

/// Which running text a delta extends.
#[derive(PartialEq, Eq)]
enum Key {
    Text(String),
    Reasoning(String, u32),
    ToolOutput(String),
}

impl Key {
    fn of(kind: &EventKind) -> Option<Key> {
        match kind {
            EventKind::TextDelta { segment_id, .. } => Some(Key::Text(segment_id.clone())),
            EventKind::ReasoningPartDelta {
                segment_id,
                summary_index,
                ..
            } => Some(Key::Reasoning(segment_id.clone(), *summary_index)),
            EventKind::ToolCallUpdate {
                call_id,
                output_delta: Some(_),
                ..
            } => Some(Key::ToolOutput(call_id.clone())),
            _ => None,
        }
    }

    fn matches(&self, kind: &EventKind) -> bool {
        match (self, kind) {
            (Key::Text(id), EventKind::TextDelta { segment_id, .. }) => id == segment_id,
            (
                Key::Reasoning(id, index),
                EventKind::ReasoningPartDelta {
                    segment_id,
                    summary_index,
                    ..
                },
            ) => id == segment_id && index == summary_index,
            (
                Key::ToolOutput(id),
                EventKind::ToolCallUpdate {
                    call_id,
                    output_delta: Some(_),
                    ..
                },
            ) => id == call_id,
            _ => false,
        }
    }

    fn is_tool_output(&self) -> bool {
        matches!(self, Key::ToolOutput(_))
    }

    /// Whether a non-delta event ends this text: a tool's output ends with its result (or the
    /// run); the model's text and reasoning end with anything else the run does.
    fn ended_by(&self, kind: &EventKind) -> bool {
        match (self, kind) {
            (Key::ToolOutput(id), EventKind::ToolResult { call_id, .. }) => id == call_id,
            (Key::ToolOutput(_), _) => false,
            _ => true,
        }
    }
}

/// For a delta event, whether it is the model's text or reasoning (not a tool's output).
fn delta_kind(kind: &EventKind) -> Option<bool> {
    match kind {
        EventKind::TextDelta { .. } | EventKind::ReasoningPartDelta { .. } => Some(true),
        EventKind::ToolCallUpdate {
            output_delta: Some(_),
            ..
        } => Some(false),
        _ => None,
    }
}

/// The delta text of a delta event.
fn delta_text(kind: &mut EventKind) -> Option<&mut String> {
    match kind {
        EventKind::TextDelta { delta, .. } => Some(delta),
        EventKind::ReasoningPartDelta { text_delta, .. } => Some(text_delta),
        EventKind::ToolCallUpdate {
            output_delta: Some(delta),
            ..
        } => Some(delta),
        _ => None,
    }
}

/// One running text with something held back.
struct Held {
    key: Key,
    /// The event to send the held text in when the text ends (its delta is replaced).
    template: EventKind,
    text: String,
    /// Inside a private key block: nothing is sent until its END line.
    in_private_key: bool,
}

/// The held-back ends of a run's running texts. See the module documentation.
#[derive(Default)]
pub struct Streams {
    held: Vec<Held>,
}

impl Streams {
    /// Redacts one event. A delta comes back with what is safe to send now (`None`: all of it is
    /// held back); any other event comes back after the held ends of the texts it ends, each as a
    /// delta event of its own. Redaction of non-delta payloads is [`crate::sanitize`]'s job.
    pub fn pass(&mut self, mut kind: EventKind) -> (Vec<EventKind>, Option<EventKind>) {
        let Some(is_model_output) = delta_kind(&kind) else {
            let ended = self.flush(|held| held.key.ended_by(&kind));
            return (ended, Some(kind));
        };
        // A new part of the model's output ends its other text and reasoning parts.
        let ended = if is_model_output {
            self.flush(|held| !held.key.is_tool_output() && !held.key.matches(&kind))
        } else {
            Vec::new()
        };
        let position = self.held.iter().position(|held| held.key.matches(&kind));
        let mut held = match (position, Key::of(&kind)) {
            (Some(index), _) => self.held.swap_remove(index),
            (None, Some(key)) => Held {
                key,
                template: kind.clone(),
                text: String::new(),
                in_private_key: false,
            },
            (None, None) => return (ended, Some(kind)),
        };
        let Some(delta) = delta_text(&mut kind) else {
            return (ended, Some(kind));
        };
        held.text.push_str(delta);
        let (send, keep) = split_held(std::mem::take(&mut held.text), &mut held.in_private_key);
        held.text = keep;
        if !held.text.is_empty() || held.in_private_key {
            self.held.push(held);
        }
        if send.is_empty() {
            return (ended, None);
        }
        *delta = send;
        (ended, Some(kind))
    }

    /// Everything still held, as delta events: the run is ending.
    pub fn flush_all(&mut self) -> Vec<EventKind> {
        self.flush(|_| true)
    }

    fn flush(&mut self, ends: impl Fn(&Held) -> bool) -> Vec<EventKind> {
        if !self.held.iter().any(&ends) {
            return Vec::new();
        }
        let (ended, kept): (Vec<Held>, Vec<Held>) = self.held.drain(..).partition(ends);
        self.held = kept;
        ended
            .into_iter()
            .filter(|held| !held.in_private_key && !held.text.is_empty())
            .map(|mut held| {
                if let Some(delta) = delta_text(&mut held.template) {
                    *delta = redact_text(&held.text).into_owned();
                }
                held.template
            })
            .collect()
    }
}

/// Splits a running text's unsent part into what can be sent now (redacted) and what must wait.
fn split_held(text: String, in_private_key: &mut bool) -> (String, String) {
    let patterns = &*PATTERNS;
    let mut text = text;
    if *in_private_key {
        match patterns
            .pem_marker
            .captures_iter(&text)
            .find(|marker| &marker[1] == "END")
            .and_then(|marker| marker.get(0))
        {
            Some(end) => {
                *in_private_key = false;
                text.drain(..end.end());
            }
            None => {
                // Keep only what could be the start of the END line.
                let cut = floor_boundary(&text, text.len().saturating_sub(64));
                text.drain(..cut);
                return (String::new(), text);
            }
        }
    }
    let hold_from = hold_point(&text);
    let keep = text.split_off(hold_from);
    let opens_private_key = text.contains("-----")
        && patterns
            .pem_marker
            .captures_iter(&text)
            .last()
            .is_some_and(|marker| &marker[1] == "BEGIN");
    if opens_private_key {
        *in_private_key = true;
    }
    (redact_text(&text).into_owned(), keep)
}

/// Where the part of `text` that may still grow into a credential starts: its last word, or an
/// open `Bearer` or PEM header before it. `text.len()` when nothing needs holding.
fn hold_point(text: &str) -> usize {
    let word_start = text
        .rfind(char::is_whitespace)
        .map(|at| at + text[at..].chars().next().map_or(1, char::len_utf8))
        .unwrap_or(0);
    let mut from = word_start;
    let before_word = text[..word_start].trim_end().as_bytes();
    if before_word.len() >= 6
        && before_word[before_word.len() - 6..].eq_ignore_ascii_case(b"bearer")
    {
        from = before_word.len() - 6;
    } else if text.contains("-----BEGIN") {
        if let Some(header) = PATTERNS.open_tail.find(text) {
            from = from.min(header.start());
        }
    }
    // An unfinished line `password: hunt` or `"apiKey": "` waits for its end.
    let line_start = text.rfind('\n').map_or(0, |at| at + 1);
    if let Some(open) = PATTERNS.open_key.find(&text[line_start..]) {
        from = from.min(line_start + open.start());
    }
    if text.len() - from > MAX_HELD_BYTES {
        return text.len();
    }
    from
}

fn floor_boundary(text: &str, mut at: usize) -> usize {
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEYS: &[&str] = &[
        "sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
        "sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
        "AKIAIOSFODNN7EXAMPLE",
        "ghp_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
        "xoxb-1234567890-abcdefghij",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
        "AIzaSyA-1234567890abcdefghijklmnopqrstu",
    ];

    #[test]
    fn credential_shapes_are_redacted_and_plain_text_is_not_copied() {
        for key in KEYS {
            let text = format!("the key is \"{key}\", keep it safe");
            let out = redact_text(&text);
            assert_eq!(
                out,
                format!("the key is \"{REDACTED}\", keep it safe"),
                "{key}"
            );
        }
        assert!(matches!(
            redact_text("nothing secret in a task-list or a skip"),
            Cow::Borrowed(_)
        ));
    }

    #[test]
    fn named_values_keep_their_name() {
        assert_eq!(
            redact_text("postgres://app:hunter2@db:5432/x and https://h/?a=1&password=hunter2&b=2"),
            format!(
                "postgres://app:{REDACTED}@db:5432/x and https://h/?a=1&password={REDACTED}&b=2"
            )
        );
        assert_eq!(
            redact_text("Authorization: Bearer abcdefghijklmnop0123"),
            format!("Authorization: Bearer {REDACTED}")
        );
        assert_eq!(
            redact_raw_json(r#"{"path": "a.txt", "api_key": "not-a-shape-but-secret", "x"#),
            format!(r#"{{"path": "a.txt", "api_key": "{REDACTED}", "x"#)
        );
    }

    #[test]
    fn key_shaped_values_in_configuration_forms_are_redacted_and_code_is_not() {
        for (text, redacted) in [
            ("password: hunter2", "password: [redacted]"),
            ("  db_password: \"a b\"", "  db_password: \"[redacted]\""),
            (
                r#"{"apiKey": "x1", "name": "n", "client_secret":"s"}"#,
                r#"{"apiKey": "[redacted]", "name": "n", "client_secret":"[redacted]"}"#,
            ),
            ("token = \"t\"", "token = \"[redacted]\""),
            ("auth_token = 't'", "auth_token = '[redacted]'"),
            (
                "[db]\npassword = p.w-1!\r\nuser = u",
                "[db]\npassword = [redacted]\r\nuser = u",
            ),
            ("    3  secret: s\n", "    3  secret: [redacted]\n"),
            (
                "export DEPLOY_TOKEN=\"v\"",
                "export DEPLOY_TOKEN=\"[redacted]\"",
            ),
            ("- credentials: abc", "- credentials: [redacted]"),
        ] {
            assert_eq!(redact_text(text), redacted, "{text}");
        }
        for text in [
            "auth: true",
            "author: Ada",
            "    password: String,",
            "let token = next_token();",
            "max_tokens: 100",
            "token_count = 5",
            "\"primaryKey\": \"id\"",
            "Token: the smallest unit of text a model reads",
        ] {
            assert_eq!(redact_text(text), text);
        }
    }

    #[test]
    fn malformed_arguments_lose_secret_members_however_quoted() {
        let raw = "{'path': 'a', 'password': 'p1', auth: p2, \"credentials\": \"p3\", \
                   apiKey: 'p4', 'author': 'Ada', \"nested\": {'token': 'p5'";
        let out = redact_raw_json(raw);
        for secret in ["p1", "p2", "p3", "p4", "p5"] {
            assert!(!out.contains(secret), "{secret}: {out}");
        }
        assert!(
            out.contains("'author': 'Ada'") && out.contains("'path': 'a'"),
            "{out}"
        );
    }

    #[test]
    fn a_key_and_its_value_split_across_deltas_are_still_redacted() {
        let out = stream(&["db:\n  pass", "word: ", "hunt", "er2\n", "ok"]);
        assert_eq!(out, "db:\n  password: [redacted]\nok");
        let out = stream(&["{\"apiKey\": \"", "abc", "def\"}", " done"]);
        assert_eq!(out, "{\"apiKey\": \"[redacted]\"} done");
    }

    #[test]
    fn a_private_key_block_goes_whole_even_when_cut_off() {
        let block =
            "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA\nabc\n-----END RSA PRIVATE KEY-----";
        assert_eq!(
            redact_text(&format!("a\n{block}\nb")),
            format!("a\n{REDACTED}\nb")
        );
        assert_eq!(
            redact_text("x -----BEGIN PRIVATE KEY-----\nMIIE"),
            format!("x {REDACTED}")
        );
    }

    fn delta(text: &str) -> EventKind {
        EventKind::TextDelta {
            segment_id: "txt_1".into(),
            sequence_number: None,
            delta: text.into(),
        }
    }

    /// What a reader of the stream would put together from `pieces`.
    fn stream(pieces: &[&str]) -> String {
        let mut streams = Streams::default();
        let mut out = String::new();
        let mut take = |kind: EventKind| {
            if let EventKind::TextDelta { delta, .. } = kind {
                out.push_str(&delta);
            }
        };
        for piece in pieces {
            let (before, kind) = streams.pass(delta(piece));
            before.into_iter().chain(kind).for_each(&mut take);
        }
        let (ended, _) = streams.pass(EventKind::Usage(Default::default()));
        ended.into_iter().for_each(&mut take);
        out
    }

    #[test]
    fn a_credential_split_across_deltas_is_still_redacted() {
        for key in KEYS {
            for cut in 1..key.len() {
                let (a, b) = key.split_at(cut);
                let out = stream(&["my key: ", a, b, " end"]);
                assert_eq!(out, format!("my key: {REDACTED} end"), "{key} cut at {cut}");
            }
        }
        let out = stream(&["Authorization: Bearer", " ", "abcdefghij", "klmnop0123\n"]);
        assert_eq!(out, format!("Authorization: Bearer {REDACTED}\n"));
        let out = stream(&["url postgres://app:hun", "ter2@db/x ok"]);
        assert_eq!(out, format!("url postgres://app:{REDACTED}@db/x ok"));
    }

    #[test]
    fn nothing_of_a_streamed_private_key_is_sent() {
        let out = stream(&[
            "key:\n-----BEGIN OPENSSH ",
            "PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n",
            "QyNTUxOQAAACD\n-----END OPENSSH PRIV",
            "ATE KEY-----\nafter",
        ]);
        assert_eq!(out, format!("key:\n{REDACTED}\nafter"));
        let cut_off = stream(&["-----BEGIN PRIVATE KEY-----\n", "MIIE", "vgIBADAN"]);
        assert_eq!(cut_off, REDACTED);
    }

    #[test]
    fn ordinary_text_streams_through_and_only_the_last_word_waits() {
        let mut streams = Streams::default();
        let (_, sent) = streams.pass(delta("Hello wor"));
        assert!(matches!(sent, Some(EventKind::TextDelta { delta, .. }) if delta == "Hello "));
        let (_, sent) = streams.pass(delta("ld.\n"));
        assert!(matches!(sent, Some(EventKind::TextDelta { delta, .. }) if delta == "world.\n"));
        assert!(streams.flush_all().is_empty());
        assert_eq!(stream(&["a ", "b", "c"]), "a bc");
    }
}
