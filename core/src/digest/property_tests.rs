//! Property tests: the streaming fast path against the independent generic path, and the
//! canonical text against serde_json's own parser and string escaper.

use proptest::prelude::*;
use serde_json::{Map, Number, Value};
use sha2::{Digest, Sha256};

use super::*;
use crate::event::EventContent;

/// Characters chosen to stress escaping and key order: controls, quote, backslash, DEL,
/// line separators, combining marks, CJK, U+E000..U+FFFF (which sort after astral characters in
/// UTF-16) and astral characters (emoji).
fn tricky_char() -> impl Strategy<Value = char> {
    prop_oneof![
        3 => proptest::char::range('a', 'e'),
        1 => proptest::char::range('\u{0}', '\u{1f}'),
        1 => prop::sample::select(vec!['"', '\\', '/', '\u{7f}', '\u{2028}', '\u{2029}', ' ']),
        1 => proptest::char::range('\u{300}', '\u{36f}'),
        1 => proptest::char::range('\u{4e00}', '\u{4e10}'),
        1 => proptest::char::range('\u{e000}', '\u{e002}'),
        1 => proptest::char::range('\u{ff5e}', '\u{ffff}'),
        1 => proptest::char::range('\u{1f600}', '\u{1f602}'),
        1 => proptest::char::range('\u{10000}', '\u{10001}'),
        1 => any::<char>(),
    ]
}

fn tricky_string() -> impl Strategy<Value = String> {
    proptest::collection::vec(tricky_char(), 0..8).prop_map(String::from_iter)
}

/// Strings long enough to cross the 16 KiB hash buffer and the 16-byte string blocks, sometimes.
fn long_or_short_string() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => tricky_string(),
        1 => (tricky_string(), 0usize..4000).prop_map(|(unit, count)| unit.repeat(count)),
    ]
}

fn tricky_number() -> impl Strategy<Value = Number> {
    let special = prop::sample::select(vec![
        0.0,
        -0.0,
        1.0,
        0.1,
        1e21,
        1e20,
        1e-7,
        1e-6,
        5e-324,
        1.7976931348623157e308,
        123.456e10,
        -1e21,
        9007199254740993.0,
    ]);
    prop_oneof![
        any::<u64>().prop_map(Number::from),
        any::<i64>().prop_map(Number::from),
        (-(1i64 << 53)..=(1i64 << 53)).prop_map(Number::from),
        ((1u64 << 53) - 2..(1u64 << 53) + 4).prop_map(Number::from),
        special.prop_filter_map("finite", Number::from_f64),
        any::<f64>().prop_filter_map("finite", Number::from_f64),
    ]
}

/// Numbers whose shortest decimal form serde_json parses back exactly even without its
/// `float_roundtrip` feature: integers, and `m × 10^e` with `m < 2^53`, `|e| ≤ 22`.
fn exactly_parsed_number() -> impl Strategy<Value = Number> {
    prop_oneof![
        any::<i64>().prop_map(Number::from),
        (0u64..1 << 53, -22i32..=22, any::<bool>()).prop_filter_map(
            "finite",
            |(mantissa, exponent, negative)| {
                let scale = 10f64.powi(exponent.abs());
                let magnitude =
                    if exponent < 0 { mantissa as f64 / scale } else { mantissa as f64 * scale };
                Number::from_f64(if negative { -magnitude } else { magnitude })
            }
        ),
    ]
}

fn json_value() -> impl Strategy<Value = Value> {
    json_value_with(tricky_number)
}

fn json_value_with<N: Strategy<Value = Number> + 'static>(
    numbers: fn() -> N,
) -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        numbers().prop_map(Value::Number),
        long_or_short_string().prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 24, 5, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            json_object(inner).prop_map(Value::Object),
        ]
    })
}

fn json_object(values: impl Strategy<Value = Value>) -> impl Strategy<Value = Map<String, Value>> {
    proptest::collection::vec((tricky_string(), values), 0..5)
        .prop_map(|entries| entries.into_iter().collect())
}

/// Valid attachments: inline bytes (with an optional name and detail), archived, or a URL.
fn attachments() -> impl Strategy<Value = Vec<crate::attachment::Attachment>> {
    use crate::attachment::Attachment;
    let one = (
        proptest::collection::vec(any::<u8>(), 0..64),
        proptest::option::of(tricky_string()),
        0u8..3,
        proptest::option::of("(low|high|auto)"),
    )
        .prop_map(|(bytes, name, place, detail)| {
            let inline = Attachment::from_bytes(Some("application/octet-stream"), &bytes, name)
                .expect("unsigned bytes are accepted")
                .with_detail(detail);
            match place {
                0 => inline,
                1 => Attachment { data: None, ..inline },
                _ => Attachment::from_url("https://example.com/a.png", None, inline.name)
                    .expect("test value"),
            }
        });
    proptest::collection::vec(one, 1..3)
}

fn event_content() -> impl Strategy<Value = EventContent> {
    let call = || (tricky_string(), tricky_string(), json_value());
    let result = || (tricky_string(), tricky_string(), json_value(), any::<bool>());
    prop_oneof![
        long_or_short_string()
            .prop_map(|text| EventContent::UserText { text, attachments: Vec::new() }),
        (long_or_short_string(), attachments())
            .prop_map(|(text, attachments)| { EventContent::UserText { text, attachments } }),
        (result(), attachments()).prop_map(
            |((call_id, tool_name, output, is_error), attachments)| {
                EventContent::ToolResult { call_id, tool_name, output, is_error, attachments }
            }
        ),
        long_or_short_string().prop_map(|text| EventContent::AssistantText { text }),
        (tricky_string(), proptest::option::of(json_value())).prop_map(|(text, data)| {
            // `Some(Value::Null)` is normalized to absent; see `null_provider_data_…`.
            let provider_data = data.filter(|data| !data.is_null());
            EventContent::Reasoning { text, provider_data }
        }),
        call().prop_map(|(call_id, tool_name, input)| EventContent::ToolCall {
            call_id,
            tool_name,
            input
        }),
        result().prop_map(|(call_id, tool_name, output, is_error)| {
            EventContent::ToolResult {
                call_id,
                tool_name,
                output,
                is_error,
                attachments: Vec::new(),
            }
        }),
        call().prop_map(|(call_id, tool_name, input)| EventContent::HostedToolCall {
            call_id,
            tool_name,
            input
        }),
        result().prop_map(|(call_id, tool_name, output, is_error)| {
            EventContent::HostedToolResult { call_id, tool_name, output, is_error }
        }),
        tricky_string().prop_map(|text| EventContent::SystemNote { text }),
        (tricky_string(), tricky_string())
            .prop_map(|(code, text)| EventContent::RuntimeNote { code, text }),
    ]
}

fn runtime_event() -> impl Strategy<Value = RuntimeEvent> {
    let ids = (tricky_string(), tricky_string(), tricky_string(), tricky_string());
    let optionals = (
        proptest::option::of(any::<u64>()),
        proptest::option::of(tricky_string()),
        proptest::option::of(json_object(json_value())),
    );
    (ids, any::<u64>(), optionals, any::<(bool, bool)>(), event_content()).prop_map(
        |(ids, seq, optionals, (partial, pinned), content)| RuntimeEvent {
            created_at_ms: optionals.0,
            response_id: optionals.1,
            partial,
            pinned,
            metadata: optionals.2,
            ..RuntimeEvent::new(ids.0, ids.1, ids.2, ids.3, seq, content)
        },
    )
}

fn generic_canonical_event(event: &RuntimeEvent) -> String {
    canonical_json(&serde_json::to_value(event).expect("an event serializes"))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// The streaming writer equals JCS of the event's serde JSON form.
    #[test]
    fn fast_path_equals_generic_path(event in runtime_event()) {
        prop_assert_eq!(canonical_event_json(&event), generic_canonical_event(&event));
    }

    /// The buffered hash of a prefix equals SHA-256 over the generic path's bytes.
    #[test]
    fn streamed_digest_equals_digest_of_generic_bytes(
        events in proptest::collection::vec(runtime_event(), 0..4)
    ) {
        let mut bytes = DOMAIN_PREFIX.to_vec();
        for event in &events {
            bytes.extend_from_slice(generic_canonical_event(event).as_bytes());
            bytes.push(b'\n');
        }
        let hex: String = Sha256::digest(&bytes).iter().map(|b| format!("{b:02x}")).collect();
        prop_assert_eq!(digest_prefix(&events), format!("sha256:{hex}"));
    }

    /// `json_text::json_text` writes serde_json's compact text byte for byte.
    #[test]
    fn json_text_is_serde_json_text(value in json_value()) {
        prop_assert_eq!(
            crate::json_text::json_text(&value),
            serde_json::to_string(&value).expect("json")
        );
    }

    /// The digest survives the event's trip through `serde_json::Value` and back.
    #[test]
    fn digest_is_stable_across_a_value_round_trip(event in runtime_event()) {
        let value = serde_json::to_value(&event).expect("an event serializes");
        let parsed = RuntimeEvent::from_value(value).expect("its JSON form parses");
        prop_assert_eq!(digest_prefix(&[parsed]), digest_prefix(&[event]));
    }

    /// Canonical text is JSON that serde_json reads back to the same value, with every
    /// object's keys in UTF-16 order. (Arbitrary 17-digit floats are left out: serde_json
    /// without `float_roundtrip` may parse them one ulp off; see `docs/digest.md`.)
    #[test]
    fn canonical_text_parses_back_sorted(value in json_value_with(exactly_parsed_number)) {
        let text = canonical_json(&value);
        let parsed: Value = serde_json::from_str(&text).expect("canonical text is JSON");
        prop_assert_eq!(canonical_json(&parsed), text);
        prop_assert!(keys_sorted(&parsed));
    }

    /// String escaping agrees with serde_json's escaper (which escapes exactly what JCS does).
    #[test]
    fn string_escaping_agrees_with_serde_json(text in long_or_short_string()) {
        let mut streamed = String::new();
        jcs::write_string(&mut streamed, &text);
        let expected = serde_json::to_string(&text).expect("a string serializes");
        prop_assert_eq!(&streamed, &expected);
        prop_assert_eq!(canonical_json(&Value::String(text)), expected);
    }
}

fn keys_sorted(value: &Value) -> bool {
    match value {
        Value::Array(items) => items.iter().all(keys_sorted),
        Value::Object(map) => {
            let keys: Vec<Vec<u16>> = map.keys().map(|key| key.encode_utf16().collect()).collect();
            keys.windows(2).all(|pair| pair[0] < pair[1]) && map.values().all(keys_sorted)
        }
        _ => true,
    }
}
