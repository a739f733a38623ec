//! The text reader against `serde_json::from_str::<Value>`: the same documents accepted, the
//! same values built (compared by their text, so key order counts).

use proptest::prelude::*;
use serde_json::Value;

use super::*;

/// Both readers' verdicts on `text`: equal values (as text) or both refusals.
fn assert_agrees(text: &str) {
    let hand = value_from_text(text);
    let serde = serde_json::from_str::<Value>(text);
    match (&hand, &serde) {
        (Ok(hand), Ok(serde)) => assert_eq!(hand.to_string(), serde.to_string(), "{text:?}"),
        (Err(_), Err(_)) => {}
        _ => panic!("{text:?}: text reader {hand:?}, serde_json {serde:?}"),
    }
}

#[test]
fn agrees_on_the_edges_of_the_grammar() {
    let cases = [
        "",
        " ",
        "null",
        "nul",
        "nulls",
        "true",
        "tru",
        "false ",
        " [ ] ",
        "[",
        "]",
        "[1,]",
        "[,1]",
        "[1 2]",
        "{}",
        "{",
        "{\"a\"}",
        "{\"a\":}",
        "{\"a\":1,}",
        "{,}",
        "{1:2}",
        "{\"a\":1 \"b\":2}",
        "{\"a\":1,\"a\":2,\"b\":3}",
        "{\"b\":1,\"a\":2,\"b\":3}",
        "0",
        "-0",
        "-",
        "01",
        "1.",
        ".5",
        "1e",
        "1e+",
        "1E-2",
        "-1.5e300",
        "1e400",
        "-1e400",
        "18446744073709551615",
        "18446744073709551616",
        "-9223372036854775808",
        "-9223372036854775809",
        "9999999999999999999",
        "99999999999999999999",
        "0.1e-400",
        "1.7976931348623157e308",
        "123456789012345678901234567890",
        "1-2",
        "[1-2]",
        "+1",
        "\"\"",
        "\"a",
        "\"\\\"\"",
        "\"\\u00e9\\n\\t\\/\\b\\f\\r\\\\\"",
        "\"\\x\"",
        "\"\\u12\"",
        "\"\\u12g4\"",
        "\"\\ud83d\\ude00\"",
        "\"\\ud83d\"",
        "\"\\ud83d x\"",
        "\"\\ud83d\\n\"",
        "\"\\ud83d\\u0041\"",
        "\"\\ude00\"",
        "\"\\uD83D\\uDE00\"",
        "\"\u{1}\"",
        "\"\t\"",
        "\"\\n\u{1}\"",
        "\"\\n\t\"",
        "\"é\u{1f600}\"",
        "\"a\" \"b\"",
        "1 2",
        "[[[]]]",
        "{\"a\":[{\"b\":null}]}",
        "\n\r\t 7 \n",
        "[true,false,null]",
        "\u{feff}1",
    ];
    for case in cases {
        assert_agrees(case);
    }
}

#[test]
fn nests_as_deep_as_serde_json() {
    for depth in [126, 127, 128, 129] {
        assert_agrees(&format!("{}{}", "[".repeat(depth), "]".repeat(depth)));
        let objects = format!("{}1{}", "{\"a\":".repeat(depth), "}".repeat(depth));
        assert_agrees(&objects);
    }
}

#[test]
fn reports_where_it_stopped() {
    let error = value_from_text("{\"a\":\n  tru}").unwrap_err();
    assert_eq!((error.line, error.message), (2, "expected ident"));
    assert_eq!(value_from_text("[1,").unwrap_err().message, "EOF while parsing a value");
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<u64>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_filter("finite", |f| f.is_finite()).prop_map(Value::from),
        "[a-c\"\\\\\u{0}-\u{1f}é\u{1f600}/]{0,6}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 32, 5, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::vec(("[a-c]{0,2}", inner), 0..5)
                .prop_map(|entries| Value::Object(entries.into_iter().collect())),
        ]
    })
}

/// A change of a document: remove, repeat or replace one character.
fn mutate(text: &str, at: usize, kind: u8, with: char) -> String {
    let chars: Vec<char> = text.chars().collect();
    if chars.is_empty() {
        return with.to_string();
    }
    let at = at % chars.len();
    let mut out = chars.clone();
    match kind % 3 {
        0 => {
            out.remove(at);
        }
        1 => out.insert(at, chars[at]),
        _ => out[at] = with,
    }
    out.into_iter().collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn reads_what_serde_json_writes(value in json_value(), pretty in any::<bool>()) {
        let text = if pretty {
            serde_json::to_string_pretty(&value).unwrap()
        } else {
            serde_json::to_string(&value).unwrap()
        };
        prop_assert_eq!(value_from_text(&text).unwrap().to_string(), value.to_string());
    }

    #[test]
    fn refuses_what_serde_json_refuses(
        value in json_value(),
        at in any::<usize>(),
        kind in any::<u8>(),
        with in prop::sample::select(vec![
            '"', '\\', ',', ':', '[', ']', '{', '}', '-', '.', 'e', '0', '1', 'u', 'n', ' ', '\u{1}',
        ]),
    ) {
        let text = mutate(&value.to_string(), at, kind, with);
        assert_agrees(&text);
    }
}

#[test]
fn plain_runs_end_where_a_byte_loop_ends_them() {
    let naive = |bytes: &[u8], from: usize| {
        (from..bytes.len())
            .find(|&i| matches!(bytes[i], b'"' | b'\\' | 0..0x20))
            .unwrap_or(bytes.len())
    };
    let base = "abcdefgh é 测试 🚀 ~\u{7f}xyz 0123456789".repeat(3);
    for special in ["\"", "\\", "\n", "\u{1f}", "\0"] {
        for at in 0..base.len() {
            if !base.is_char_boundary(at) {
                continue;
            }
            let text = format!("{}{special}{}", &base[..at], &base[at..]);
            for from in [0, 1, 7, 8, 9].into_iter().filter(|&f| f <= text.len()) {
                let bytes = text.as_bytes();
                assert_eq!(plain_run_end(bytes, from), naive(bytes, from), "{text:?} from {from}");
            }
        }
    }
    assert_eq!(plain_run_end(base.as_bytes(), 0), base.len());
}
