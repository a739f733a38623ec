//! JSON numbers to `serde_json::Number`: integers by the standard library's parsers.
//!
//! serde_json's rules: an integer is a `u64` when non-negative, an `i64` when negative, and a
//! float beyond those ranges (`-0` too, which is the float `-0.0`); a float is the decimal
//! correctly rounded to the nearest `f64` (as `str::parse` rounds it, by [`super::float`]),
//! refused when beyond `f64`'s range.

use serde_json::Number;

/// Why a number's text is not a JSON number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NumberError {
    /// Not the JSON number grammar.
    Invalid,
    /// A float beyond `f64`'s range.
    OutOfRange,
}

/// The number `token` holds (JSON's grammar, the whole token), as serde_json reads it.
pub(crate) fn parse_number(token: &str) -> Result<Number, NumberError> {
    let integral = json_grammar(token.as_bytes()).ok_or(NumberError::Invalid)?;
    if integral {
        if let Some(digits) = token.strip_prefix('-') {
            if let Ok(n) = token.parse::<i64>()
                && n != 0
            {
                return Ok(Number::from(n));
            }
            return float(&format!("-{digits}"));
        }
        if let Ok(n) = token.parse::<u64>() {
            return Ok(Number::from(n));
        }
    }
    float(token)
}

/// The float `token` spells; out of range when it is infinite.
fn float(token: &str) -> Result<Number, NumberError> {
    let value = super::float::parse_f64(token).ok_or(NumberError::Invalid)?;
    Number::from_f64(value).ok_or(NumberError::OutOfRange)
}

/// Whether `token` is a JSON number: `Some(true)` for an integer (no fraction or exponent).
fn json_grammar(token: &[u8]) -> Option<bool> {
    let digits = |rest: &[u8]| rest.iter().take_while(|b| b.is_ascii_digit()).count();
    let rest = token.strip_prefix(b"-").unwrap_or(token);
    let int = digits(rest);
    if int == 0 || (rest[0] == b'0' && int > 1) {
        return None;
    }
    let mut rest = &rest[int..];
    let integral = rest.is_empty();
    if let [b'.', after @ ..] = rest {
        let len = digits(after);
        if len == 0 {
            return None;
        }
        rest = &after[len..];
    }
    if let [b'e' | b'E', after @ ..] = rest {
        let after = after.strip_prefix(b"+").or_else(|| after.strip_prefix(b"-")).unwrap_or(after);
        let len = digits(after);
        if len == 0 {
            return None;
        }
        rest = &after[len..];
    }
    rest.is_empty().then_some(integral)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_read_as_serde_json_reads_them() {
        let big = "1".repeat(310);
        let cases = [
            "0",
            "-0",
            "7",
            "-7",
            "18446744073709551615",
            "18446744073709551616",
            "-9223372036854775808",
            "-9223372036854775809",
            "1.5",
            "-0.0",
            "1e3",
            "1E+3",
            "2.5e-3",
            "0.1",
            "1e308",
            "1e309",
            "-1e309",
            "4.9e-324",
            "1e-400",
            &big,
            "01",
            "1.",
            ".5",
            "+1",
            "1e",
            "1e+",
            "--1",
            "-",
            "1.5.5",
            "0x1",
            "1_0",
        ];
        for case in cases {
            let ours = parse_number(case);
            let theirs = serde_json::from_str::<Number>(case);
            match (&ours, &theirs) {
                (Ok(a), Ok(b)) => {
                    assert_eq!(a, b, "{case}");
                    assert_eq!(
                        a.as_f64().map(f64::to_bits),
                        b.as_f64().map(f64::to_bits),
                        "{case}"
                    );
                }
                (Err(NumberError::OutOfRange), Err(e)) => {
                    assert!(e.to_string().starts_with("number out of range"), "{case}: {e}")
                }
                (Err(NumberError::Invalid), Err(e)) => {
                    assert!(!e.to_string().starts_with("number out of range"), "{case}: {e}")
                }
                _ => panic!("{case}: ours {ours:?}, serde_json {theirs:?}"),
            }
        }
    }
}
