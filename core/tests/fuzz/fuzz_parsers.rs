//! Proptest-driven fuzzing of every parser that takes outside input: events, JSON Lines,
//! checkpoints, chat and Anthropic imports, summary validation, archive addresses and ledger
//! recovery. Inputs are arbitrary text and structured mutations of valid documents (a subtree
//! replaced by random JSON). The property: no panic, and every rejection is a typed error with
//! a stable snake_case code. Raise the case count with `PROPTEST_CASES`.

use contextfold_core::checkpoint::{
    RecordedCheckpointEvent, coverage_of, select_recovered_checkpoint,
};
use contextfold_core::compaction::{FinishReason, validate_summary};
use contextfold_core::projection::{
    ArchiveAddress, ImportContext, import_anthropic, import_openai_chat,
};
use contextfold_core::{CharEstimator, HistoryCompactCheckpoint, LogBuilder, RuntimeEvent};
use proptest::prelude::*;
use serde_json::{Value, json};

pub(crate) fn is_code(code: &str) -> bool {
    !code.is_empty()
        && code.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

pub(crate) fn arbitrary_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<f64>().prop_filter("finite", |f| f.is_finite()).prop_map(|f| json!(f)),
        ".{0,12}".prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map("[a-zA-Z_]{1,10}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// Replaces the node at a pseudo-random path of `doc` with `replacement`.
pub(crate) fn mutate(mut doc: Value, mut pick: u64, replacement: Value) -> Value {
    let mut node = &mut doc;
    loop {
        let children = match node {
            Value::Object(map) => map.len(),
            Value::Array(list) => list.len(),
            _ => 0,
        };
        if children == 0 || pick.is_multiple_of(3) {
            *node = replacement;
            return doc;
        }
        let index = (pick as usize / 3) % children;
        pick /= 7;
        node = match node {
            Value::Object(map) => map.values_mut().nth(index).expect("in range"),
            Value::Array(list) => &mut list[index],
            _ => unreachable!("has children"),
        };
    }
}

fn valid_event() -> Value {
    let mut log = LogBuilder::new("s");
    log.turn("t").response(Some("r")).tool_call("c", "shell", json!({"cmd": "ls", "n": [1, 2.5]}));
    serde_json::to_value(&log.events()[0]).expect("serializes")
}

fn valid_checkpoint() -> Value {
    let mut log = LogBuilder::new("s");
    log.turn("t").user("hi").assistant("hello");
    let coverage = coverage_of(log.events()).expect("non-empty");
    json!({
        "schemaVersion": 2, "checkpointId": "cp", "sessionId": "s", "createdAtMs": 1,
        "highWater": {"name": "manual", "seq": 2}, "coverage": coverage,
        "summary": "## Goal\n- x", "limitations": [], "estimatedTokens": 3
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn event_parsing_never_panics(text in ".{0,200}", pick in any::<u64>(), junk in arbitrary_json()) {
        if let Err(error) = RuntimeEvent::from_json(&text) {
            prop_assert!(is_code(error.code()));
        }
        let mutated = mutate(valid_event(), pick, junk);
        // The typed fast path of `from_json` agrees with the `Value` route, errors included.
        prop_assert_eq!(
            RuntimeEvent::from_json(&mutated.to_string()),
            RuntimeEvent::from_value(mutated.clone())
        );
        match RuntimeEvent::from_value(mutated) {
            Ok(event) => {
                // Whatever parses survives a round trip unchanged (nothing silently dropped).
                let again = RuntimeEvent::from_value(serde_json::to_value(&event).expect("serializes"));
                prop_assert_eq!(again, Ok(event));
            }
            Err(error) => prop_assert!(is_code(error.code())),
        }
        let jsonl = format!("{}\n{text}\n", valid_event());
        if let Err(error) = RuntimeEvent::parse_jsonl(&jsonl) {
            prop_assert!(error.line >= 1 && is_code(error.source.code()));
        }
    }

    #[test]
    fn checkpoint_parsing_never_panics(text in ".{0,200}", pick in any::<u64>(), junk in arbitrary_json()) {
        if let Err(error) = HistoryCompactCheckpoint::from_json(&text) {
            prop_assert!(is_code(error.code()));
        }
        let mutated = mutate(valid_checkpoint(), pick, junk);
        match HistoryCompactCheckpoint::from_value(mutated) {
            Ok(checkpoint) => {
                let again = HistoryCompactCheckpoint::from_value(checkpoint.to_value());
                prop_assert_eq!(again, Ok(checkpoint));
            }
            Err(error) => prop_assert!(is_code(error.code())),
        }
    }

    #[test]
    fn imports_never_panic(pick in any::<u64>(), junk in arbitrary_json()) {
        let ids = ImportContext::new("s");
        let chat = json!([
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": [{"type": "text", "text": "hi"}]},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "a.rs"}
        ]);
        if let Err(error) = import_openai_chat(&mutate(chat, pick, junk.clone()), &ids) {
            prop_assert!(is_code(error.code()));
        }
        let anthropic = json!({"system": "s", "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "ls", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "a"}]}
        ]});
        if let Err(error) = import_anthropic(&mutate(anthropic, pick, junk), &ids) {
            prop_assert!(is_code(error.code()));
        }
    }

    #[test]
    fn summary_validation_never_panics(text in "(?s).{0,400}", fold in 0u64..30_000) {
        for finish in [FinishReason::Stop, FinishReason::Length, FinishReason::parse("weird")] {
            if let Err(defect) = validate_summary(&text, finish, fold, &CharEstimator) {
                prop_assert!(is_code(defect.code().as_str()));
            }
        }
    }

    #[test]
    fn archive_addresses_never_panic(text in ".{0,160}", tail in "[a-f0-9/]{0,80}") {
        for candidate in [text.clone(), format!("contextfold://archive/{text}"), format!("contextfold://archive/s/{tail}")] {
            match ArchiveAddress::parse(&candidate) {
                Ok(address) => prop_assert_eq!(ArchiveAddress::parse(&address.to_uri()), Ok(address)),
                Err(error) => prop_assert!(is_code(error.code())),
            }
        }
    }

    #[test]
    fn recovery_never_panics(payloads in prop::collection::vec((any::<u64>(), arbitrary_json()), 0..6)) {
        let records: Vec<RecordedCheckpointEvent> = payloads
            .into_iter()
            .enumerate()
            .map(|(i, (pick, junk))| RecordedCheckpointEvent {
                event_id: format!("e{i}"),
                session_id: "s".into(),
                recorded_at_ms: i as u64,
                payload: mutate(valid_checkpoint(), pick, junk),
            })
            .collect();
        let recovery = select_recovered_checkpoint("s", &records);
        let ids: Vec<&str> = records.iter().map(|r| r.event_id.as_str()).collect();
        if let Some(event_id) = &recovery.selected_event_id {
            prop_assert!(ids.contains(&event_id.as_str()));
            prop_assert!(recovery.skipped.iter().all(|s| &s.event_id != event_id));
        }
        prop_assert_eq!(recovery.selected.is_some(), recovery.selected_event_id.is_some());
        for skipped in &recovery.skipped {
            prop_assert!(ids.contains(&skipped.event_id.as_str()) && is_code(skipped.reason.code()));
        }
        // Every record that parses as a checkpoint of this session is either selected,
        // skipped with a reason, or covers no more events than the selected one.
        for record in &records {
            if let Ok(cp) = HistoryCompactCheckpoint::from_value(record.payload.clone()) {
                let skipped = recovery.skipped.iter().any(|s| s.event_id == record.event_id);
                let selected = recovery.selected_event_id.as_deref() == Some(record.event_id.as_str());
                let covered = recovery.selected.as_ref().map_or(0, |s| s.coverage.event_count);
                prop_assert!(skipped || selected || cp.coverage.event_count <= covered || cp.session_id != "s");
            }
        }
    }
}

#[test]
fn a_repeated_key_keeps_its_last_value_on_both_routes() {
    // The typed read refuses the duplicate; `from_json` then takes the `Value` route.
    let text = valid_event().to_string().replacen("\"seq\":", "\"seq\":7,\"seq\":", 1);
    let event = RuntimeEvent::from_json(&text).expect("parses");
    let value: serde_json::Value = serde_json::from_str(&text).expect("json");
    assert_eq!(RuntimeEvent::from_value(value), Ok(event.clone()));
    assert_ne!(event.seq, 7, "the last occurrence wins");
}
