//! The hand-written checkpoint JSON against a copy of the derives it replaced: a V2 and a V3
//! checkpoint with every field, nested ones included, left out or given each of a few values
//! (and an unknown key added): the same accepted and built, the same refused; what is accepted
//! is written back to the same JSON.

use serde::Deserialize;
use serde_json::{Value, json};

use super::super::{CheckpointParseError, HistoryCompactCheckpoint};
use crate::json_read::test_support::{sample_values, variants};

#[derive(Debug, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct DerivedBoundary {
    run_id: String,
    turn_id: String,
    runtime_event_id: String,
}

#[derive(Debug, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct DerivedCoverage {
    event_count: u64,
    turn_count: u64,
    through: DerivedBoundary,
    source_digest: String,
}

#[derive(Debug, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct DerivedHighWater {
    name: String,
    seq: u64,
}

#[derive(Debug, PartialEq, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
enum DerivedProviderState {
    #[serde(rename_all = "camelCase")]
    OpenaiCodexRemoteV2 {
        connection_slug: String,
        model_id: String,
        item_id: String,
        encrypted_content: String,
    },
}

#[derive(Debug, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[allow(dead_code)]
struct DerivedWire {
    schema_version: u32,
    checkpoint_id: String,
    session_id: String,
    created_at_ms: u64,
    high_water: DerivedHighWater,
    coverage: DerivedCoverage,
    #[serde(default)]
    summary: Option<String>,
    #[serde(default)]
    provider_state: Option<DerivedProviderState>,
    limitations: Vec<String>,
    estimated_tokens: u64,
    #[serde(default)]
    previous_checkpoint_id: Option<String>,
    #[serde(default)]
    produced_by: Option<String>,
    #[serde(default)]
    manifest: Option<crate::checkpoint::ProjectionManifest>,
}

fn digest() -> String {
    format!("sha256:{}", "ab".repeat(32))
}

fn checkpoints() -> [Value; 2] {
    let coverage = json!({
        "eventCount": 4, "turnCount": 1,
        "through": { "runId": "r", "turnId": "t", "runtimeEventId": "e4" },
        "sourceDigest": digest(),
    });
    [
        json!({
            "schemaVersion": 2, "checkpointId": "cp", "sessionId": "s", "createdAtMs": 5,
            "highWater": { "name": "manual", "seq": 4 }, "coverage": coverage,
            "summary": "## Goal\nx", "limitations": ["l"], "estimatedTokens": 9,
            "previousCheckpointId": "cp0", "producedBy": "extractive",
        }),
        json!({
            "schemaVersion": 3, "checkpointId": "cp", "sessionId": "s", "createdAtMs": 5,
            "highWater": { "name": "mid_turn", "seq": 4 }, "coverage": coverage,
            "providerState": { "kind": "openai_codex_remote_v2", "connectionSlug": "c",
                               "modelId": "m", "itemId": "i", "encryptedContent": "enc" },
            "limitations": [], "estimatedTokens": 9,
        }),
    ]
}

/// What the old reader made of `case`: the derive, then the same schema rules.
fn derived(case: &Value) -> Result<(), String> {
    let wire: DerivedWire = serde_json::from_value(case.clone()).map_err(|e| e.to_string())?;
    let schema_ok = matches!(
        (wire.schema_version, &wire.summary, &wire.provider_state),
        (2, Some(_), None) | (3, None, Some(_))
    );
    let digest_ok = wire.coverage.source_digest.starts_with("sha256:")
        && wire.coverage.source_digest.len() == 71;
    if schema_ok && digest_ok && wire.coverage.event_count > 0 {
        Ok(())
    } else {
        Err("schema rules".to_owned())
    }
}

#[test]
fn checkpoints_read_as_the_derive_read_them() {
    let values = sample_values(&["openai_codex_remote_v2", "manual", "s"]);
    let (mut accepted, mut refused) = (0, 0);
    for base in checkpoints() {
        for case in variants(&base, &values) {
            let ours = HistoryCompactCheckpoint::from_value(case.clone());
            if matches!(ours, Err(CheckpointParseError::MissingSchemaVersion))
                || matches!(ours, Err(CheckpointParseError::UnsupportedSchemaVersion(_)))
            {
                continue; // decided before either reader runs
            }
            let struct_as_array =
                [&case["highWater"], &case["coverage"], &case["coverage"]["through"]]
                    .iter()
                    .any(|field| field.is_array());
            if case["providerState"]["kind"].is_number() || struct_as_array {
                // The derive took a variant's index as its tag and a struct written as the
                // array of its fields' values; no longer.
                assert!(ours.is_err(), "{case}");
                continue;
            }
            let old = derived(&case);
            assert_eq!(ours.is_ok(), old.is_ok(), "{case}: {ours:?} / {old:?}");
            match ours {
                Ok(checkpoint) => {
                    accepted += 1;
                    let written = checkpoint.to_value();
                    let without_nulls = |v: &Value| {
                        let mut v = v.clone();
                        v.as_object_mut().unwrap().retain(|_, field| !field.is_null());
                        v
                    };
                    assert_eq!(written, without_nulls(&case), "written back as read");
                }
                Err(_) => refused += 1,
            }
        }
    }
    assert!(accepted >= 6 && refused >= 100, "accepted {accepted}, refused {refused}");
}

#[test]
fn written_keys_keep_the_documented_order() {
    for base in checkpoints() {
        let checkpoint = HistoryCompactCheckpoint::from_value(base.clone()).unwrap();
        assert_eq!(checkpoint.to_json(), base.to_string());
        let again: HistoryCompactCheckpoint = serde_json::from_str(&base.to_string()).unwrap();
        assert_eq!(again, checkpoint);
    }
}
