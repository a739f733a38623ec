//! Hand-checked canonical bytes and independently computed SHA-256 values.
//!
//! The expected digests were computed outside Rust, with
//! `python3 -c 'import hashlib; …'` over `DOMAIN_PREFIX` and the expected lines below, each
//! followed by `\n`.

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::*;
use crate::event::EventContent;

/// Input events as a host might store them: arbitrary key order, whitespace, escapes that
/// canonicalization removes (`\/`, uppercase hex, `\u0301`), non-canonical numbers.
const INPUT_EVENTS: [&str; 5] = [
    r#"{"sessionId":"s1","runId":"r1","turnId":"t1","runtimeEventId":"e1","seq":1,
        "createdAtMs":1700000000000,"content":{"type":"user_text","text":"Hello, \"world\"\n"}}"#,
    r#"{"sessionId":"s1","runId":"r1","turnId":"t1","runtimeEventId":"e2","seq":2,
        "responseId":"resp-1","partial":true,"pinned":true,
        "content":{"type":"tool_result","callId":"c1","toolName":"grep","isError":true,
          "output":{"g":"\u0001\u001F\b\t\/","f":-12,"e":9007199254740993,"d":0.0000001,
                    "c":1E21,"b":1.50,"a":-0.0}},
        "metadata":{"｡":"half","😀":"emoji","é":"x","z":1,"a":[true,null]}}"#,
    r#"{"sessionId":"s1","runId":"r1","turnId":"t1","runtimeEventId":"e3","seq":3,
        "content":{"type":"reasoning","text":"","providerData":{"signature":"sig=="}}}"#,
    r#"{"sessionId":"s1","runId":"r1","turnId":"t1","runtimeEventId":"e4","seq":4,
        "content":{"type":"hosted_tool_call","callId":"h1","toolName":"web_search","input":{}}}"#,
    r#"{"sessionId":"s1","runId":"r1","turnId":"t1","runtimeEventId":"e5","seq":5,
        "content":{"type":"runtime_note","code":"context_compaction_failed_open",
                   "text":"日本語 e\u0301"}}"#,
];

/// The canonical JSON of each input event, written by hand from `docs/digest.md`.
const EXPECTED_LINES: [&str; 5] = [
    r#"{"content":{"text":"Hello, \"world\"\n","type":"user_text"},"createdAtMs":1700000000000,"runId":"r1","runtimeEventId":"e1","seq":1,"sessionId":"s1","turnId":"t1"}"#,
    r#"{"content":{"callId":"c1","isError":true,"output":{"a":0,"b":1.5,"c":1e+21,"d":1e-7,"e":9007199254740992,"f":-12,"g":"\u0001\u001f\b\t/"},"toolName":"grep","type":"tool_result"},"metadata":{"a":[true,null],"z":1,"é":"x","😀":"emoji","｡":"half"},"partial":true,"pinned":true,"responseId":"resp-1","runId":"r1","runtimeEventId":"e2","seq":2,"sessionId":"s1","turnId":"t1"}"#,
    r#"{"content":{"providerData":{"signature":"sig=="},"text":"","type":"reasoning"},"runId":"r1","runtimeEventId":"e3","seq":3,"sessionId":"s1","turnId":"t1"}"#,
    r#"{"content":{"callId":"h1","input":{},"toolName":"web_search","type":"hosted_tool_call"},"runId":"r1","runtimeEventId":"e4","seq":4,"sessionId":"s1","turnId":"t1"}"#,
    concat!(
        r#"{"content":{"code":"context_compaction_failed_open","text":"日本語 e"#,
        "\u{301}",
        r#"","type":"runtime_note"},"runId":"r1","runtimeEventId":"e5","seq":5,"sessionId":"s1","turnId":"t1"}"#
    ),
];

/// `sha256:` of `DOMAIN_PREFIX` alone, then of each growing prefix (computed with Python).
const EMPTY_DIGEST: &str =
    "sha256:0bbe41ed5906e2df9fe32226727f1b36148435d3631b108c4297ae69fa69c0d7";
const EXPECTED_PREFIX_DIGESTS: [&str; 5] = [
    "sha256:e5981c7b7da49405a853f8e834d3abd2b59c25342e6f1bedec78af125ad54998",
    "sha256:a5248fea79551a302e363e93aa92998d421f7eca7c8601ce67a46b79594fd277",
    "sha256:2544d6ecc8c9aea30922f1783950be6cebbe22aee9b97fdf8d8bcc16dcdda062",
    "sha256:7ae32315f5448154724ef9c67bfc84ec653ab0f1dd7d8293637bdae141d90512",
    "sha256:613827c39a122a7c6a9c2faf0b95c7a5535000d86b7b104b1851f029ae535e6b",
];

fn input_events() -> Vec<RuntimeEvent> {
    INPUT_EVENTS
        .iter()
        .map(|json| RuntimeEvent::from_json(json).expect("test event parses"))
        .collect()
}

fn sha256_hex(bytes: &[u8]) -> String {
    let out = Sha256::digest(bytes);
    let hex: String = out.iter().map(|byte| format!("{byte:02x}")).collect();
    format!("sha256:{hex}")
}

#[test]
fn canonical_event_json_matches_hand_checked_bytes() {
    for (event, expected) in input_events().iter().zip(EXPECTED_LINES) {
        assert_eq!(canonical_event_json(event), expected);
    }
}

#[test]
fn prefix_digests_match_independently_computed_sha256() {
    let events = input_events();
    assert_eq!(digest_prefix(&[]), EMPTY_DIGEST);
    assert_eq!(prefix_digests(&events), EXPECTED_PREFIX_DIGESTS);
    for (length, expected) in EXPECTED_PREFIX_DIGESTS.iter().enumerate() {
        assert_eq!(&digest_prefix(&events[..=length]), expected);
    }
}

#[test]
fn hasher_keeps_counting_after_a_digest() {
    let events = input_events();
    let mut hasher = PrefixHasher::default();
    assert_eq!(hasher.digest(), EMPTY_DIGEST);
    hasher.push(&events[0]);
    assert_eq!(hasher.digest(), EXPECTED_PREFIX_DIGESTS[0]);
    hasher.push(&events[1]);
    assert_eq!(hasher.event_count(), 2);
    assert_eq!(hasher.digest(), EXPECTED_PREFIX_DIGESTS[1]);
}

#[test]
fn any_change_to_an_event_changes_the_digest() {
    let events = input_events();
    let original = digest_prefix(&events);
    let mut changed = events.clone();
    changed[4].pinned = true;
    assert_ne!(digest_prefix(&changed), original);
    let mut reordered = events.clone();
    reordered.swap(2, 3);
    assert_ne!(digest_prefix(&reordered), original);
    let mut edited = events;
    edited[1].metadata.get_or_insert_default().insert("z".into(), json!(2));
    assert_ne!(digest_prefix(&edited), original);
}

#[test]
fn a_large_output_streams_through_the_buffer() {
    let line = "line ✓ \"quoted\" \t tab 😀\n";
    let output = line.repeat(200 * 1024 / line.len());
    let mut builder = crate::LogBuilder::new("s");
    builder.tool_result("c", "cat", Value::String(output)).user("next");
    let events = builder.build();
    let mut bytes = DOMAIN_PREFIX.to_vec();
    for event in &events {
        let value = serde_json::to_value(event).expect("an event serializes");
        bytes.extend_from_slice(canonical_json(&value).as_bytes());
        bytes.push(b'\n');
    }
    assert!(bytes.len() > 200_000);
    assert_eq!(digest_prefix(&events), sha256_hex(&bytes));
}

#[test]
fn null_provider_data_digests_as_absent() {
    let with_null = |provider_data| {
        let mut builder = crate::LogBuilder::new("s");
        builder.push(EventContent::Reasoning { text: "t".into(), provider_data });
        builder.build()
    };
    let explicit_null = with_null(Some(Value::Null));
    let absent = with_null(None);
    assert_eq!(digest_prefix(&explicit_null), digest_prefix(&absent));
    let round_trip =
        RuntimeEvent::from_json(&serde_json::to_string(&explicit_null[0]).expect("json"))
            .expect("round trip parses");
    assert_eq!(round_trip.content, absent[0].content);
    assert!(!canonical_event_json(&explicit_null[0]).contains("providerData"));
}

#[test]
fn strings_escape_only_quote_backslash_and_controls() {
    let value = json!("\u{0}\u{7}\u{b}\u{1f} \u{7f} / \u{2028} \u{2029} \\ \"");
    let expected = "\"\\u0000\\u0007\\u000b\\u001f \u{7f} / \u{2028} \u{2029} \\\\ \\\"\"";
    assert_eq!(canonical_json(&value), expected);
    let mut streamed = String::new();
    jcs::write_value(&mut streamed, &value);
    assert_eq!(streamed, expected);
}

#[test]
fn numbers_follow_ecmascript_number_to_string() {
    let cases: [(Value, &str); 16] = [
        (json!(0), "0"),
        (json!(-0.0), "0"),
        (json!(1.0), "1"),
        (json!(-12), "-12"),
        (json!(0.1), "0.1"),
        (json!(1e21), "1e+21"),
        (json!(1e20), "100000000000000000000"),
        (json!(1e-7), "1e-7"),
        (json!(0.000001), "0.000001"),
        (json!(5e-324), "5e-324"),
        (json!(1.7976931348623157e308), "1.7976931348623157e+308"),
        (json!(9_007_199_254_740_992_u64), "9007199254740992"),
        (json!(9_007_199_254_740_993_u64), "9007199254740992"),
        (json!(-9_007_199_254_740_993_i64), "-9007199254740992"),
        (json!(u64::MAX), "18446744073709552000"),
        (json!(i64::MIN), "-9223372036854776000"),
    ];
    for (value, expected) in cases {
        assert_eq!(canonical_json(&value), expected, "reference path for {value}");
        let mut streamed = String::new();
        jcs::write_value(&mut streamed, &value);
        assert_eq!(streamed, expected, "streaming path for {value}");
    }
    let mut streamed = String::new();
    jcs::write_u64(&mut streamed, u64::MAX);
    assert_eq!(streamed, "18446744073709552000");
}

/// Integers up to 2^53 are written from their digits, the rest through the float printer:
/// both must give what the float printer gives for the integer taken as a double.
#[test]
fn integers_write_as_their_nearest_double() {
    let mut values = vec![0, 1, 9, 10, 99, 100, 1_700_000_000_000, u64::MAX];
    for power in [53, 54, 60, 63] {
        values.extend([(1u64 << power) - 1, 1u64 << power, (1u64 << power) + 1]);
    }
    values.extend((0..19).map(|exponent| 10u64.pow(exponent)));
    for value in values {
        let (mut fast, mut float) = (String::new(), String::new());
        jcs::write_u64(&mut fast, value);
        jcs::write_f64(&mut float, value as f64);
        assert_eq!(fast, float, "{value}");
    }
}

/// The key-sorting example of RFC 8785, section 3.2.3.
#[test]
fn keys_sort_by_utf16_code_units_as_in_rfc_8785() {
    let value = json!({
        "\u{20ac}": "Euro Sign",
        "\r": "Carriage Return",
        "\u{fb33}": "Hebrew Letter Dalet With Dagesh",
        "1": "One",
        "\u{1f600}": "Emoji: Grinning Face",
        "\u{80}": "Control",
        "\u{f6}": "Latin Small Letter O With Diaeresis"
    });
    let expected = concat!(
        "{\"\\r\":\"Carriage Return\",\"1\":\"One\",\"\u{80}\":\"Control\",",
        "\"\u{f6}\":\"Latin Small Letter O With Diaeresis\",\"\u{20ac}\":\"Euro Sign\",",
        "\"\u{1f600}\":\"Emoji: Grinning Face\",\"\u{fb33}\":\"Hebrew Letter Dalet With Dagesh\"}"
    );
    assert_eq!(canonical_json(&value), expected);
}

/// The hashing path escapes strings sixteen bytes at a time: every escapable byte at every
/// offset of strings around the block size, next to multi-byte characters, must hash exactly
/// the bytes of the run-by-run `String` path.
#[test]
fn block_escaping_matches_the_string_path_at_every_offset() {
    let escapable = ['"', '\\', '\n', '\u{0}', '\u{1f}', '\u{7f}', 'é', '世', '😀'];
    for length in 0..40 {
        for offset in 0..length {
            for special in escapable {
                let text: String = (0..length)
                    .map(
                        |i| if i == offset || i == length - 1 - offset / 2 { special } else { 'a' },
                    )
                    .collect();
                let event = RuntimeEvent {
                    ..RuntimeEvent::new(
                        "s".into(),
                        "r".into(),
                        "t".into(),
                        "e".into(),
                        1,
                        EventContent::UserText { text, attachments: Vec::new() },
                    )
                };
                let mut bytes = DOMAIN_PREFIX.to_vec();
                bytes.extend_from_slice(canonical_event_json(&event).as_bytes());
                bytes.push(b'\n');
                let hex: String =
                    Sha256::digest(&bytes).iter().map(|b| format!("{b:02x}")).collect();
                assert_eq!(digest_prefix(&[event]), format!("sha256:{hex}"));
            }
        }
    }
}

#[test]
fn byte_count_is_the_length_of_what_the_digest_is_taken_over() {
    let events = input_events();
    let mut hasher = PrefixHasher::new();
    let mut bytes = DOMAIN_PREFIX.to_vec();
    assert_eq!(hasher.byte_count(), bytes.len() as u64);
    // One event longer than the hash buffer takes the unbuffered path.
    let mut long = events[0].clone();
    long.runtime_event_id = "x".repeat(40_000);
    for event in events.iter().chain([&long]).chain(&events) {
        hasher.push(event);
        bytes.extend_from_slice(canonical_event_json(event).as_bytes());
        bytes.push(b'\n');
        assert_eq!(hasher.byte_count(), bytes.len() as u64);
    }
    assert_eq!(hasher.digest(), sha256_hex(&bytes));
    // Stored canonical bytes (a long one is hashed in place, unbuffered) count the same.
    let mut stored = PrefixHasher::new();
    for event in events.iter().chain([&long]).chain(&events) {
        stored.push_canonical(canonical_event_json(event).as_bytes());
    }
    assert_eq!(stored.byte_count(), bytes.len() as u64);
}
