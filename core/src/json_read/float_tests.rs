//! `lexical-parse-float` (compact) against `str::parse::<f64>`: the same double, bit for bit,
//! on JSON numbers.

use proptest::prelude::*;

use super::parse_f64;

fn assert_agrees(text: &str) {
    let std = text.parse::<f64>().expect("a JSON number parses");
    let lexical = parse_f64(text).expect("a JSON number parses");
    assert_eq!(lexical.to_bits(), std.to_bits(), "{text}");
}

#[test]
fn edge_cases_agree_with_std() {
    let long_one = format!("1{}e-300", "0".repeat(400));
    let long_tie = format!("9007199254740993{}", "0".repeat(300));
    let cases = [
        "0",
        "-0",
        "0.0",
        "-0.0",
        "0e999",
        "1",
        "1.5",
        "0.1",
        "0.2",
        "0.3",
        "-2.5e-3",
        "1e22",
        "1e23",
        "9007199254740993",
        "9007199254740992.5",
        "9007199254740993.0000000001",
        "0.30000000000000004",
        "123456789012345678901234567890",
        "1.7976931348623157e308",
        "1.7976931348623158e308",
        "1.7976931348623159e308",
        "1e308",
        "1e309",
        "1e-400",
        "4.9e-324",
        "2.4703282292062327e-324",
        "2.4703282292062328e-324",
        "5e-324",
        "2.2250738585072011e-308",
        "2.2250738585072014e-308",
        "2.225073858507201e-308",
        "1e-320",
        "3.14159265358979323846264338327950288",
        "1E+3",
        "1e+0",
        "00.5e1",
        "1e99999999999999999999",
        "1e-99999999999999999999",
        &long_one,
        &long_tie,
    ];
    for case in cases {
        assert_agrees(case);
    }
}

#[test]
fn long_mantissas_agree_with_std() {
    // The midpoint between 1 and the next double, then digits far beyond any fast path.
    let half_ulp = "1.00000000000000011102230246251565404236316680908203125";
    for tail in ["", "0", "1", "000001"] {
        for zeros in [0, 700, 800, 5000] {
            assert_agrees(&format!("{half_ulp}{}{tail}", "0".repeat(zeros)));
        }
    }
    let digits = "7".repeat(200_000);
    assert_agrees(&format!("0.{digits}e-300"));
    assert_agrees(&format!("{digits}e-199990"));
}

proptest! {
    #[test]
    fn generated_decimals_agree_with_std(
        int in "[0-9]{1,25}",
        fraction in proptest::option::of("[0-9]{1,25}"),
        exponent in proptest::option::of(-340i32..320),
        negative in any::<bool>(),
    ) {
        let mut text = format!("{}{int}", if negative { "-" } else { "" });
        if let Some(fraction) = fraction {
            text = format!("{text}.{fraction}");
        }
        if let Some(exponent) = exponent {
            text = format!("{text}e{exponent}");
        }
        assert_agrees(&text);
    }

    #[test]
    fn doubles_written_shortest_read_back(bits in any::<u64>()) {
        let value = f64::from_bits(bits);
        prop_assume!(value.is_finite());
        assert_agrees(&format!("{value:e}"));
        assert_agrees(&format!("{value:?}").replace("inf", "1e999"));
    }
}
