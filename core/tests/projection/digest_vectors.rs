//! Replays the shared golden vectors (`tests/vectors/digest.json`, written by the seeded
//! generator in the `contextfold-conformance` crate) against the streaming digest.

use contextfold_core::RuntimeEvent;
use contextfold_core::digest::{PrefixHasher, canonical_event_json, digest_prefix, prefix_digests};
use serde_json::Value;

fn vectors() -> Value {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/vectors/digest.json");
    let text = std::fs::read_to_string(path).unwrap_or_else(|error| panic!("read {path}: {error}"));
    serde_json::from_str(&text).expect("the vector file is JSON")
}

#[test]
fn every_prefix_digest_in_the_golden_vectors_matches() {
    let vectors = vectors();
    assert_eq!(vectors["version"], 1);
    let cases = vectors["cases"].as_array().expect("cases is an array");
    assert!(cases.len() >= 28, "expected the fixed and random cases, got {}", cases.len());
    let mut checked = 0;
    for case in cases {
        let name = case["name"].as_str().expect("name");
        let events: Vec<RuntimeEvent> = case["events"]
            .as_array()
            .expect("events")
            .iter()
            .enumerate()
            .map(|(index, value)| {
                RuntimeEvent::from_value(value.clone())
                    .unwrap_or_else(|error| panic!("{name}[{index}] does not parse: {error}"))
            })
            .collect();
        let expected: Vec<&str> = case["prefixDigests"]
            .as_array()
            .expect("prefixDigests")
            .iter()
            .map(|digest| digest.as_str().expect("a digest string"))
            .collect();
        assert_eq!(prefix_digests(&events), expected, "{name}: prefix digests");
        assert_eq!(digest_prefix(&events), case["digest"].as_str().expect("digest"), "{name}");
        let mut hasher = PrefixHasher::new();
        for (index, event) in events.iter().enumerate() {
            assert_eq!(canonical_event_json(event), case["canonical"][index], "{name}[{index}]");
            hasher.push(event);
            assert_eq!(hasher.digest(), expected[index], "{name}[{index}]: incremental");
        }
        assert_eq!(hasher.event_count(), events.len() as u64);
        checked += events.len();
    }
    assert!(checked > 300, "only {checked} events checked");
}

/// The vectors are read exactly: a one-character change to any event changes its digest.
#[test]
fn a_changed_event_no_longer_matches_its_vector() {
    let vectors = vectors();
    let case = &vectors["cases"][0];
    let mut event = case["events"][0].clone();
    let text = event["content"]["text"].as_str().unwrap_or_default().to_owned();
    event["content"]["text"] = Value::String(format!("{text}!"));
    let changed = RuntimeEvent::from_value(event).expect("still a valid event");
    assert_ne!(digest_prefix(&[changed]), case["prefixDigests"][0].as_str().expect("digest"));
}

/// The fenced block of `language` that follows `after` in a markdown document.
fn fenced_block<'a>(document: &'a str, after: &str, language: &str) -> &'a str {
    let start = document.find(after).unwrap_or_else(|| panic!("`{after}` not found"));
    let fence = format!("```{language}\n");
    let body = &document[start..];
    let open = body.find(&fence).unwrap_or_else(|| panic!("no ```{language} after `{after}`"));
    let body = &body[open + fence.len()..];
    &body[..body.find("```").expect("the block is closed")]
}

fn read_doc(name: &str) -> String {
    let path = format!("{}/../docs/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|error| panic!("read {path}: {error}"))
}

/// The example session in `docs/events.md` is a valid log.
#[test]
fn the_events_doc_example_session_parses_and_validates() {
    let document = read_doc("events.md");
    let block = fenced_block(&document, "## Example session", "jsonl");
    let events = RuntimeEvent::parse_jsonl(block).expect("the example parses");
    assert_eq!(events.len(), 6);
    contextfold_core::event::validate_log(&events).expect("the example is a valid log");
    let kinds: Vec<&str> = events.iter().map(|event| event.content.kind_name()).collect();
    assert_eq!(
        kinds,
        ["user_text", "reasoning", "tool_call", "tool_result", "assistant_text", "runtime_note"]
    );
}

/// The worked example in `docs/digest.md`: input events, canonical lines and digests.
#[test]
fn the_digest_doc_worked_example_holds() {
    let document = read_doc("digest.md");
    let input = fenced_block(&document, "## Worked example", "json");
    let events: Vec<RuntimeEvent> = serde_json::Deserializer::from_str(input)
        .into_iter::<Value>()
        .map(|value| RuntimeEvent::from_value(value.expect("JSON")).expect("a valid event"))
        .collect();
    let lines = fenced_block(&document, "Their canonical lines", "text");
    let expected: Vec<&str> = lines.lines().collect();
    assert_eq!(events.len(), 2);
    let canonical: Vec<String> = events.iter().map(canonical_event_json).collect();
    assert_eq!(canonical, expected);
    let digests = prefix_digests(&events);
    for (prefix, digest) in [("`[]`", digest_prefix(&[])), ("`[e1]`", digests[0].clone())]
        .into_iter()
        .chain([("`[e1, e2]`", digests[1].clone())])
    {
        assert!(document.contains(&format!("| {prefix} | `{digest}` |")), "{prefix} {digest}");
    }
}

/// Every row of the number table in `docs/digest.md`.
#[test]
fn the_digest_doc_number_table_holds() {
    let document = read_doc("digest.md");
    let table = &document[document.find("| JSON in | canonical |").expect("number table")..];
    let mut rows = 0;
    for row in table.lines().skip(2).take_while(|line| line.starts_with('|')) {
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        let expected = cells[2].trim_matches('`');
        for input in cells[1].split(", ") {
            let value: Value = serde_json::from_str(input.trim_matches('`')).expect("a number");
            assert_eq!(contextfold_core::digest::canonical_json(&value), expected, "{input}");
        }
        rows += 1;
    }
    assert_eq!(rows, 6);
}
