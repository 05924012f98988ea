//! Text PostgreSQL accepts: JSONB and TEXT refuse the NUL character.

use std::borrow::Cow;

/// JSON text PostgreSQL's JSONB accepts: it refuses the NUL character (`\u0000`), which model
/// and tool output may hold; it becomes U+FFFD, as an invalid byte would.
pub(super) fn jsonb_text(json: &str) -> Cow<'_, str> {
    if !json.contains("\\u0000") {
        return Cow::Borrowed(json);
    }
    let mut out = String::with_capacity(json.len());
    let mut rest = json;
    while let Some(at) = rest.find("\\u0000") {
        // An escape only when the backslash is not itself escaped (an even run before it).
        let backslashes = rest[..at].bytes().rev().take_while(|b| *b == b'\\').count();
        out.push_str(&rest[..at]);
        out.push_str(if backslashes % 2 == 0 {
            "\\ufffd"
        } else {
            "\\u0000"
        });
        rest = &rest[at + 6..];
    }
    out.push_str(rest);
    Cow::Owned(out)
}

/// Text PostgreSQL's TEXT accepts (no NUL).
pub(super) fn pg_text(text: &str) -> Cow<'_, str> {
    if text.contains('\0') {
        Cow::Owned(text.replace('\0', "\u{FFFD}"))
    } else {
        Cow::Borrowed(text)
    }
}

#[cfg(test)]
mod tests {
    use super::jsonb_text;

    #[test]
    fn nul_escapes_become_the_replacement_character_and_escaped_backslashes_stay() {
        assert_eq!(jsonb_text(r#""a\u0000b""#), r#""a\ufffdb""#);
        assert_eq!(jsonb_text(r#""a\\u0000b""#), r#""a\\u0000b""#);
        assert_eq!(jsonb_text(r#""a\\\u0000b""#), r#""a\\\ufffdb""#);
        assert_eq!(jsonb_text(r#""plain""#), r#""plain""#);
    }
}
