//! RFC 3339 timestamps with milliseconds, in UTC ("2026-01-22T10:30:00.123Z"), without a date
//! library: the reducer needs durations in the browser, where every dependency costs bundle size.

/// Formats milliseconds since the Unix epoch as `YYYY-MM-DDTHH:MM:SS.mmmZ`.
pub fn format_rfc3339_millis(unix_ms: i64) -> String {
    let mut text = String::with_capacity(24);
    write_rfc3339_millis(&mut text, unix_ms);
    text
}

/// [`format_rfc3339_millis`] into `out`, which is cleared first: the server's run log stamps
/// every event, into the same string each time, so without an allocation or `fmt` per event.
pub fn write_rfc3339_millis(out: &mut String, unix_ms: i64) {
    let days = unix_ms.div_euclid(86_400_000);
    let ms_of_day = unix_ms.rem_euclid(86_400_000);
    let (year, month, day) = civil_from_days(days);
    out.clear();
    if (0..=9999).contains(&year) {
        push_digits(out, year, 4);
    } else {
        // Writing into a String never fails.
        let _ = std::fmt::Write::write_fmt(out, format_args!("{year:04}"));
    }
    let fields = [
        ('-', month, 2),
        ('-', day, 2),
        ('T', ms_of_day / 3_600_000, 2),
        (':', ms_of_day / 60_000 % 60, 2),
        (':', ms_of_day / 1000 % 60, 2),
        ('.', ms_of_day % 1000, 3),
    ];
    for (separator, value, width) in fields {
        out.push(separator);
        push_digits(out, value, width);
    }
    out.push('Z');
}

/// `value` (0 or more, under 10^`width`) in `width` decimal digits, zero-padded.
fn push_digits(out: &mut String, value: i64, width: u32) {
    debug_assert!(
        (0..10_i64.pow(width)).contains(&value),
        "{value} in {width} digits"
    );
    for place in (0..width).rev() {
        let digit = (value / 10_i64.pow(place)).rem_euclid(10);
        out.push(char::from(b'0' + digit as u8));
    }
}

/// Parses an RFC 3339 timestamp (any fraction length, `Z` or a numeric offset) into milliseconds
/// since the Unix epoch. Returns `None` for anything malformed.
pub fn parse_rfc3339_millis(text: &str) -> Option<i64> {
    let bytes = text.as_bytes();
    if bytes.len() < 20 || bytes[4] != b'-' || bytes[7] != b'-' || bytes[13] != b':' {
        return None;
    }
    if !matches!(bytes[10], b'T' | b't' | b' ') || bytes[16] != b':' {
        return None;
    }
    let number = |range: std::ops::Range<usize>| digits(bytes.get(range)?);
    let (year, month, day) = (number(0..4)?, number(5..7)?, number(8..10)?);
    let (hour, minute, second) = (number(11..13)?, number(14..16)?, number(17..19)?);
    if !(1..=12).contains(&month)
        || !(1..=31).contains(&day)
        || hour > 23
        || minute > 59
        || second > 60
    {
        return None;
    }
    let mut rest = &bytes[19..];
    let mut millis = 0;
    if let Some(fraction) = rest.strip_prefix(b".") {
        let count = fraction.iter().take_while(|b| b.is_ascii_digit()).count();
        if count == 0 {
            return None;
        }
        // The first three digits, as milliseconds: ".1" is 100, ".123456" is 123.
        let shown = count.min(3);
        millis = digits(&fraction[..shown])? * [100, 10, 1][shown - 1];
        rest = &fraction[count..];
    }
    let offset_minutes = match rest {
        b"Z" | b"z" => 0,
        [sign, h1, h2, b':', m1, m2] => {
            let sign = match sign {
                b'+' => 1,
                b'-' => -1,
                _ => return None,
            };
            sign * (digits(&[*h1, *h2])? * 60 + digits(&[*m1, *m2])?)
        }
        _ => return None,
    };
    let days = days_from_civil(year, month, day);
    let seconds = days * 86_400 + hour * 3600 + minute * 60 + second - offset_minutes * 60;
    Some(seconds * 1000 + millis)
}

/// The value of ASCII decimal digits (at most 18 of them), read without allocating: every
/// mapped stream reads a timestamp per event. `None` if any byte is not a digit.
fn digits(bytes: &[u8]) -> Option<i64> {
    if bytes.is_empty() || bytes.len() > 18 {
        return None;
    }
    bytes.iter().try_fold(0, |value, byte| {
        byte.is_ascii_digit()
            .then(|| value * 10 + i64::from(byte - b'0'))
    })
}

/// Milliseconds from `from` to `to`; `None` when either is malformed or `to` is earlier.
pub fn elapsed_ms(from: &str, to: &str) -> Option<u64> {
    let elapsed = parse_rfc3339_millis(to)? - parse_rfc3339_millis(from)?;
    u64::try_from(elapsed).ok()
}

// Howard Hinnant's civil-calendar algorithms (public domain), proleptic Gregorian.
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let day_of_year = (153 * (month + if month > 2 { -3 } else { 9 }) + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let days = days + 719_468;
    let era = days.div_euclid(146_097);
    let day_of_era = days - era * 146_097;
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_index + 2) / 5 + 1;
    let month = if month_index < 10 {
        month_index + 3
    } else {
        month_index - 9
    };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_known_instants() {
        assert_eq!(format_rfc3339_millis(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(
            format_rfc3339_millis(1_769_077_800_123),
            "2026-01-22T10:30:00.123Z"
        );
        assert_eq!(
            format_rfc3339_millis(951_782_400_000),
            "2000-02-29T00:00:00.000Z"
        );
    }

    /// What `format!` wrote before [`write_rfc3339_millis`] wrote the digits itself, for dates
    /// across the calendar, before the epoch, and years of other widths.
    #[test]
    fn writes_what_format_wrote() {
        let reference = |unix_ms: i64| {
            let days = unix_ms.div_euclid(86_400_000);
            let ms_of_day = unix_ms.rem_euclid(86_400_000);
            let (year, month, day) = civil_from_days(days);
            let (hour, minute) = (ms_of_day / 3_600_000, ms_of_day / 60_000 % 60);
            let (second, millis) = (ms_of_day / 1000 % 60, ms_of_day % 1000);
            format!("{year:04}-{month:02}-{day:02}T{hour:02}:{minute:02}:{second:02}.{millis:03}Z")
        };
        let mut written = String::from("left over");
        let mut instants = vec![0, -1, 1, 999, -62_135_596_800_001, 253_402_300_800_000];
        // Years -29,719 to 48,485 (a quarter of them in 0-9999, written digit by digit)...
        instants.extend((0..2_000).map(|step| step * 1_234_567_891_011 - 1_000_000_000_000_000));
        // ...and 1970 to 2100 densely: every month, day, hour and millisecond digit.
        instants.extend((0..200_000).map(|step| step * 20_511_217));
        for unix_ms in instants {
            write_rfc3339_millis(&mut written, unix_ms);
            assert_eq!(written, reference(unix_ms), "{unix_ms}");
        }
    }

    #[test]
    fn parses_what_it_formats_and_other_offsets() {
        for ms in [0, 1_769_077_800_123, 951_782_400_000, 4_102_444_799_999] {
            assert_eq!(parse_rfc3339_millis(&format_rfc3339_millis(ms)), Some(ms));
        }
        assert_eq!(
            parse_rfc3339_millis("2026-01-22T11:30:00.1+01:00"),
            Some(1_769_077_800_100)
        );
        assert_eq!(
            parse_rfc3339_millis("2026-01-22T10:30:00Z"),
            Some(1_769_077_800_000)
        );
        assert_eq!(
            parse_rfc3339_millis("2026-01-22T10:30:00.12Z"),
            Some(1_769_077_800_120)
        );
        assert_eq!(
            parse_rfc3339_millis("2026-01-22T10:30:00.123456789Z"),
            Some(1_769_077_800_123)
        );
        assert_eq!(
            parse_rfc3339_millis("2026-01-22T05:00:00.5-05:30"),
            Some(1_769_077_800_500)
        );
    }

    #[test]
    fn rejects_malformed_text() {
        for bad in [
            "",
            "yesterday",
            "2026-13-01T00:00:00Z",
            "2026-01-22T10:30:00.Z",
            "2026-01-22T10:30:00",
            "2026-01-22T10:30:00.1+1:000",
            "2026-01-22T10:30:00+-1:00",
            "2026-01-22T1\u{e9}:30:00Z",
            "+026-01-22T10:30:00Z",
            "2026-01-22T10:30:0\u{e9}Z",
            "2026-01-22T10:30:00+01:-5",
        ] {
            assert_eq!(parse_rfc3339_millis(bad), None, "{bad}");
        }
    }
}
