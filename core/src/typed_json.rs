//! Typed values to and from JSON values, through JSON text.
//!
//! A type written as a `Value` is written as text by serde_json and that text read back as a
//! `Value` (by [`crate::json_read::text`]); a type read from a `Value` is read from the value's
//! text by serde_json. Each type going through a second kind of serializer or deserializer
//! would be a second copy of its derive code; in the npm package's wasm module the copies for
//! `Value` were about 7% of the gzip (docs/performance.md, "Package size (issue 21)"). The
//! package itself now reads nothing through serde (its types are read by hand, `json_read`);
//! `from_value` serves the other callers. A refusal carries the text reader's message without
//! its position in that text, which the caller never saw.

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// Reads `value` as a `T`, exactly as `serde_json::from_str` reads the value's text.
pub fn from_value<T: DeserializeOwned>(value: &Value) -> Result<T, serde_json::Error> {
    serde_json::from_str(&crate::json_text::json_text(value)).map_err(without_position)
}

/// Writes `value` as a JSON value, exactly as `serde_json::to_string` writes it.
pub fn to_value<T: Serialize + ?Sized>(value: &T) -> Result<Value, serde_json::Error> {
    crate::json_read::text::value_from_text(&serde_json::to_string(value)?)
        .map_err(<serde_json::Error as serde::de::Error>::custom)
}

/// `error` without the " at line L column C" its message ends with.
fn without_position(error: serde_json::Error) -> serde_json::Error {
    let message = error.to_string();
    let position = format!(" at line {} column {}", error.line(), error.column());
    let message = message.strip_suffix(&position).unwrap_or(&message);
    <serde_json::Error as serde::de::Error>::custom(message)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[derive(Debug, PartialEq, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Sample {
        seq: u64,
        ratio: f64,
        name: String,
    }

    #[test]
    fn reads_what_the_value_reader_reads_with_its_messages() {
        let cases = [
            json!({ "seq": 18446744073709551615u64, "ratio": 0.1, "name": "a\u{0}\"é" }),
            json!({ "seq": 5.0, "ratio": 1, "name": "x" }),
            json!({ "seq": 1, "ratio": 1e300, "name": 7 }),
            json!({ "seq": 1, "ratio": 2, "name": "x", "extra": null }),
            json!({ "ratio": 2, "name": "x" }),
            json!([1, 2, "x"]),
        ];
        for case in cases {
            let through_text: Result<Sample, _> = from_value(&case);
            let direct: Result<Sample, _> = serde_json::from_value(case.clone());
            match (through_text, direct) {
                (Ok(a), Ok(b)) => assert_eq!(a, b, "{case}"),
                (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string(), "{case}"),
                (a, b) => panic!("{case}: through text {a:?}, direct {b:?}"),
            }
            assert_eq!(to_value(&case).expect("writes"), case, "to_value round-trips");
        }
    }
}
