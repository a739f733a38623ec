//! The number reader against Rust's float parser and serde_json's number parser.

use proptest::prelude::*;

use super::*;

/// `decimal_to_f64` of `text` (a plain decimal: digits, optional fraction and exponent).
fn ours(text: &str) -> f64 {
    match parse_number(text.as_bytes()) {
        Ok(number) => number.as_f64().expect("a number"),
        Err(NumberError::OutOfRange) => f64::INFINITY,
        Err(NumberError::Invalid) => panic!("{text}: invalid"),
    }
}

/// Both readers of `token` agree: the same number (by its text, so `-0.0` and integer kinds
/// count) or both refuse it.
fn assert_same_number(token: &str) {
    let serde = token.parse::<Number>().map(|n| n.to_string());
    let read = parse_number(token.as_bytes()).map(|n| n.to_string());
    match (&read, &serde) {
        (Ok(a), Ok(b)) => assert_eq!(a, b, "{token}"),
        (Err(NumberError::OutOfRange), Err(e)) => {
            assert!(e.to_string().starts_with("number out of range"), "{token}: {e}")
        }
        (Err(NumberError::Invalid), Err(e)) => {
            assert!(!e.to_string().starts_with("number out of range"), "{token}: {e}")
        }
        _ => panic!("{token}: ours {read:?}, serde_json {serde:?}"),
    }
}

#[test]
fn rounds_the_hard_cases_as_rust_does() {
    let cases = [
        "0.1",
        "0.30000000000000004",
        "9007199254740993",
        "9007199254740993.0",
        "9007199254740992.9999999999999999999",
        "2.2250738585072011e-308",
        "2.2250738585072012e-308",
        "2.2250738585072014e-308",
        "4.9406564584124654e-324",
        "2.4703282292062327e-324",
        "2.4703282292062328e-324",
        "1e-400",
        "1.7976931348623157e308",
        "1.7976931348623158e308",
        "1.00000000000000011102230246251565404236316680908203125",
        "1.00000000000000011102230246251565404236316680908203124",
        "1.00000000000000011102230246251565404236316680908203126",
        "123456789012345678901234567890e-10",
        "7.038531e-26",
        "8.98846567431158e307",
        "1e22",
        "1e23",
        "5e-324",
        "3e-324",
        "2e-324",
        "0.000001",
        "1448997445238699",
        "4.35679e-3",
    ];
    for case in cases {
        assert_eq!(ours(case).to_bits(), case.parse::<f64>().unwrap().to_bits(), "{case}");
        assert_same_number(case);
    }
    // A thousand-digit value just above the midpoint 1 + 2^-53 rounds up; on it, to even.
    let midpoint = "1.00000000000000011102230246251565404236316680908203125";
    let above = format!("{midpoint}{}1", "0".repeat(1000));
    assert_eq!(ours(&above), 1.0000000000000002);
    assert_eq!(ours(&format!("{midpoint}{}", "0".repeat(1000))), 1.0);
    assert_same_number(&above);
}

#[test]
fn types_integers_as_serde_json_does() {
    let cases = [
        "0",
        "-0",
        "7",
        "-7",
        "18446744073709551615",
        "18446744073709551616",
        "-9223372036854775808",
        "-9223372036854775809",
        "-18446744073709551615",
        "-18446744073709551616",
        "123456789012345678901234567890",
        "-0.0",
        "0e5",
        "0e-999999999999999999999",
        "1e999999",
        "-1e999999",
        "1e-999999",
        "01",
        "-01",
        "1.",
        ".1",
        "1e",
        "1e+",
        "1e-",
        "+1",
        "-",
        "1.5e+3",
        "1E3",
        "2e-0",
        "1-2",
        "1..2",
        "1ee2",
        "0.0e0",
    ];
    for case in cases {
        assert_same_number(case);
    }
    // Integers beyond f64's range are out of range, as floats are.
    for digits in [309, 310, 400] {
        assert_same_number(&"9".repeat(digits));
        assert_same_number(&format!("-{}", "9".repeat(digits)));
    }
}

fn digits() -> impl Strategy<Value = String> {
    prop_oneof!["[1-9][0-9]{0,20}", "[1-9][0-9]{15,40}", "[1-9]0{0,30}[1-9]?", "[1-9]9{10,25}",]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4000))]

    #[test]
    fn rounds_any_decimal_as_rust_does(digits in digits(), exponent in -360i64..340) {
        let text = format!("{digits}e{exponent}");
        let expected = text.parse::<f64>().unwrap();
        prop_assert_eq!(ours(&text).to_bits(), expected.to_bits(), "{}", text);
    }

    #[test]
    fn reads_every_double_back(bits in any::<u64>()) {
        let value = f64::from_bits(bits & !(1 << 63));
        prop_assume!(value.is_finite());
        for text in [format!("{value:e}"), format!("{value:.17e}"), format!("{value:.20e}")] {
            prop_assert_eq!(ours(&text).to_bits(), text.parse::<f64>().unwrap().to_bits(), "{}", text);
        }
    }

    #[test]
    fn agrees_with_serde_json_on_tokens(token in "-?[0-9]{0,22}(\\.[0-9]{0,6})?([eE][+-]?[0-9]{0,3})?") {
        assert_same_number(&token);
    }
}
