//! Attribute value syntax: exact decimal seconds, decimal/hex integers, booleans, names, and the
//! "did you mean" hint.

use std::time::Duration;

/// Why a value did not parse: a message and a hint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ValueError {
    pub message: String,
    pub help: String,
}

fn verr(message: impl Into<String>, help: impl Into<String>) -> ValueError {
    ValueError {
        message: message.into(),
        help: help.into(),
    }
}

/// Longest duration (`...Seconds`): `i64::MAX` nanoseconds, the largest APEX
/// `SYSTEM_TIME_TYPE` (a signed 64-bit count of nanoseconds), about 292 years.
pub const MAX_DURATION: Duration = Duration::from_nanos(i64::MAX as u64);

/// Parse decimal seconds (`"0.02"`, `"1"`, `".5"`, `"+2.000"`) into an exact [`Duration`].
///
/// No floating point is involved: the digits are converted to integer nanoseconds. Negative
/// values, exponents, `NaN`/`INF`, and non-zero digits beyond the 9th decimal are rejected.
pub(crate) fn parse_seconds(text: &str) -> Result<Duration, ValueError> {
    let s = text.trim();
    let help = "write decimal seconds with at most 9 decimals, e.g. \"0.02\" for 20 ms";
    if s.is_empty() {
        return Err(verr("empty duration", help));
    }
    let s = s.strip_prefix('+').unwrap_or(s);
    if s.starts_with('-') {
        return Err(verr(format!("negative duration `{text}`"), help));
    }
    let (int_part, frac_part) = match s.split_once('.') {
        Some((i, f)) => (i, f),
        None => (s, ""),
    };
    if int_part.is_empty() && frac_part.is_empty() {
        return Err(verr(format!("`{text}` is not a number of seconds"), help));
    }
    if !int_part.bytes().all(|b| b.is_ascii_digit())
        || !frac_part.bytes().all(|b| b.is_ascii_digit())
    {
        return Err(verr(format!("`{text}` is not a number of seconds"), help));
    }
    let (kept, rest) = frac_part.split_at(frac_part.len().min(9));
    if rest.bytes().any(|b| b != b'0') {
        return Err(verr(
            format!("`{text}` has more than 9 decimals (finer than a nanosecond)"),
            help,
        ));
    }
    let mut secs: u64 = 0;
    for b in int_part.bytes() {
        secs = secs
            .checked_mul(10)
            .and_then(|v| v.checked_add(u64::from(b - b'0')))
            .ok_or_else(|| verr(format!("duration `{text}` is too large"), help))?;
    }
    let mut nanos: u32 = 0;
    for i in 0..9 {
        let d = kept.as_bytes().get(i).map_or(0, |b| u32::from(b - b'0'));
        nanos = nanos * 10 + d;
    }
    let d = Duration::new(secs, nanos);
    if d > MAX_DURATION {
        return Err(verr(
            format!("duration `{text}` is too large"),
            "write at most 9223372036.854775807 seconds (i64::MAX nanoseconds: APEX \
             SYSTEM_TIME_TYPE is a signed 64-bit count of nanoseconds)",
        ));
    }
    Ok(d)
}

/// Parse a non-negative integer, decimal (`"42"`, `"+42"`) or hex (`"0x2A"`), as the schema's
/// `DecOrHexValueType`.
pub(crate) fn parse_u64(text: &str) -> Result<u64, ValueError> {
    let s = text.trim();
    let help = "write a non-negative decimal integer (42) or hex (0x2A)";
    let s = s.strip_prefix('+').unwrap_or(s);
    if s.starts_with('-') {
        return Err(verr(format!("negative number `{text}`"), help));
    }
    let (digits, radix) = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => (h, 16),
        None => (s, 10),
    };
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return Err(verr(format!("`{text}` is not a number"), help));
    }
    u64::from_str_radix(digits, radix).map_err(|_| verr(format!("`{text}` is too large"), help))
}

/// Parse a `u32` (see [`parse_u64`]).
pub(crate) fn parse_u32(text: &str) -> Result<u32, ValueError> {
    let v = parse_u64(text)?;
    u32::try_from(v).map_err(|_| {
        verr(
            format!("`{text}` is too large (at most {})", u32::MAX),
            "use a value that fits in 32 bits",
        )
    })
}

/// Parse an `xs:boolean`: `true`, `false`, `1`, `0`.
pub(crate) fn parse_bool(text: &str) -> Result<bool, ValueError> {
    match text.trim() {
        "true" | "1" => Ok(true),
        "false" | "0" => Ok(false),
        _ => Err(verr(
            format!("`{text}` is not a boolean"),
            "write \"true\" or \"false\"",
        )),
    }
}

/// Return the edit distance between two strings (by chars): insertions, deletions,
/// substitutions and transpositions of neighbours each cost 1 (optimal string alignment).
pub(crate) fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let w = b.len() + 1;
    let mut d = vec![0usize; (a.len() + 1) * w];
    for i in 0..=a.len() {
        d[i * w] = i;
    }
    for (j, cell) in d.iter_mut().enumerate().take(w) {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut v = (d[(i - 1) * w + j - 1] + cost)
                .min(d[(i - 1) * w + j] + 1)
                .min(d[i * w + j - 1] + 1);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                v = v.min(d[(i - 2) * w + j - 2] + 1);
            }
            d[i * w + j] = v;
        }
    }
    d[a.len() * w + b.len()]
}

/// Return the candidate closest to `word`, if it is close enough to be a likely typo.
pub(crate) fn closest<'c>(word: &str, candidates: &[&'c str]) -> Option<&'c str> {
    // Very long words are not typos of our short names; skip the quadratic work.
    if word.len() > 64 {
        return None;
    }
    if let Some(c) = candidates.iter().find(|c| c.eq_ignore_ascii_case(word)) {
        return Some(c);
    }
    let len = word.chars().count();
    let limit = (len / 3).clamp(1, 3);
    candidates
        .iter()
        // The distance is at least the difference in length: skip the work for those.
        .filter(|c| c.chars().count().abs_diff(len) <= limit)
        .map(|c| (edit_distance(word, c), *c))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_are_exact() {
        assert_eq!(parse_seconds("0.02").unwrap(), Duration::from_millis(20));
        assert_eq!(parse_seconds("1").unwrap(), Duration::from_secs(1));
        assert_eq!(parse_seconds(".5").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_seconds("5.").unwrap(), Duration::from_secs(5));
        assert_eq!(
            parse_seconds("+0.000000001").unwrap(),
            Duration::from_nanos(1)
        );
        assert_eq!(
            parse_seconds("0.1000000000").unwrap(),
            Duration::from_millis(100)
        );
        // 0.1 + 0.2 style float surprises cannot happen.
        assert_eq!(parse_seconds("0.3").unwrap(), Duration::from_millis(300));
        assert_eq!(parse_seconds(" 0.010 ").unwrap(), Duration::from_millis(10));
    }

    #[test]
    fn bad_seconds_are_rejected() {
        for bad in [
            "",
            "-1",
            "-0.5",
            "NaN",
            "inf",
            "1e-3",
            ".",
            "0.0000000001",
            "1.2.3",
            "0x10",
            "1 s",
            "99999999999999999999",
        ] {
            assert!(parse_seconds(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn durations_fit_in_system_time() {
        assert_eq!(
            parse_seconds("9223372036.854775807").unwrap(),
            Duration::from_nanos(i64::MAX as u64)
        );
        assert_eq!(parse_seconds("9223372036.854775807").unwrap(), MAX_DURATION);
        for bad in [
            "9223372036.854775808",
            "9223372037",
            "18446744073",
            "18446744072.5",
        ] {
            let e = parse_seconds(bad).unwrap_err();
            assert!(e.message.contains("too large"), "{bad}: {}", e.message);
        }
    }

    #[test]
    fn integers() {
        assert_eq!(parse_u32("42").unwrap(), 42);
        assert_eq!(parse_u32("0x2A").unwrap(), 42);
        assert_eq!(parse_u32("+7").unwrap(), 7);
        assert!(parse_u32("-1").is_err());
        assert!(parse_u32("4294967296").is_err());
        assert!(parse_u32("0x").is_err());
        assert!(parse_u32("12a").is_err());
        assert_eq!(parse_u64("4294967296").unwrap(), 4_294_967_296);
    }

    #[test]
    fn typo_hints() {
        let names = ["PartitionIdentifier", "PartitionName", "Criticality"];
        assert_eq!(
            closest("PartitionIdentifer", &names),
            Some("PartitionIdentifier")
        );
        assert_eq!(closest("criticality", &names), Some("Criticality"));
        assert_eq!(closest("Colour", &names), None);
        assert_eq!(closest("IDEL", &["IGNORE", "IDLE"]), Some("IDLE"));
        assert_eq!(edit_distance("abc", "abc"), 0);
        assert_eq!(edit_distance("", "abc"), 3);
    }
}
