//! A JSON float's text to the nearest `f64` (ties to even), as `str::parse` reads it, by the
//! maintained `lexical-parse-float` built `compact`. The standard library's parser carries a
//! 10.4 KB table of powers of five (its Eisel-Lemire step) that gzip cannot shrink, about 3% of
//! the npm module; the compact build computes them instead. Floats are rare in a log, so its
//! slower path is not measurable on any row. `float_tests.rs` compares both parsers.

use lexical_parse_float::FromLexical;

/// The `f64` nearest to the JSON number `token` (its grammar already checked), infinite beyond
/// `f64`'s range; `None` only for text that is not a number.
pub(crate) fn parse_f64(token: &str) -> Option<f64> {
    f64::from_lexical(token.as_bytes()).ok()
}

#[cfg(test)]
#[path = "float_tests.rs"]
mod tests;
