//! JSON of the calibration types, read and written by hand (see [`crate::json_read`]).

use serde_json::{Map, Value};

use super::{Calibration, ModelCalibration, UsageFact, UsageReport};
use crate::json_read::{Fields, JsonReadError, string, u32, u64, unknown_variant, vec};

const REPORT_KINDS: &[&str] = &["response", "overflow"];

impl UsageFact {
    /// Reads a fact: its own fields and, beside them, its report's (`kind` and the counts).
    /// Keys it does not know are ignored.
    pub fn from_json(value: &Value) -> Result<Self, JsonReadError> {
        let fields = Fields::of(value, "struct UsageFact", None)?;
        let kind = fields.tag("kind")?;
        let report = match kind {
            "response" => UsageReport::Response {
                input_tokens: fields.required("inputTokens", u64)?,
                cached_input_tokens: fields.or_default("cachedInputTokens", u64)?,
                cache_write_tokens: fields.or_default("cacheWriteTokens", u64)?,
                output_tokens: fields.or_default("outputTokens", u64)?,
            },
            "overflow" => UsageReport::Overflow {
                counted_tokens: fields.optional("countedTokens", u64)?,
                limit_tokens: fields.optional("limitTokens", u64)?,
            },
            other => return Err(unknown_variant(other, REPORT_KINDS)),
        };
        Ok(UsageFact {
            provider: fields.required("provider", string)?,
            model: fields.required("model", string)?,
            estimated_input_tokens: fields.required("estimatedInputTokens", u64)?,
            report,
        })
    }

    /// The fact as JSON, the report's fields after the fact's own.
    pub fn to_json(&self) -> Value {
        let mut map = Map::new();
        map.insert("provider".into(), self.provider.clone().into());
        map.insert("model".into(), self.model.clone().into());
        map.insert("estimatedInputTokens".into(), self.estimated_input_tokens.into());
        match &self.report {
            UsageReport::Response {
                input_tokens,
                cached_input_tokens,
                cache_write_tokens,
                output_tokens,
            } => {
                map.insert("kind".into(), "response".into());
                map.insert("inputTokens".into(), (*input_tokens).into());
                map.insert("cachedInputTokens".into(), (*cached_input_tokens).into());
                map.insert("cacheWriteTokens".into(), (*cache_write_tokens).into());
                map.insert("outputTokens".into(), (*output_tokens).into());
            }
            UsageReport::Overflow { counted_tokens, limit_tokens } => {
                map.insert("kind".into(), "overflow".into());
                if let Some(counted) = counted_tokens {
                    map.insert("countedTokens".into(), (*counted).into());
                }
                if let Some(limit) = limit_tokens {
                    map.insert("limitTokens".into(), (*limit).into());
                }
            }
        }
        Value::Object(map)
    }
}

crate::serde_via_value!(UsageFact);

impl Calibration {
    /// Reads a calibration (`models` may be absent; no other key).
    pub fn from_json(value: &Value) -> Result<Self, JsonReadError> {
        let fields = Fields::of(value, "struct Calibration", Some(&["models"]))?;
        Ok(Calibration { models: fields.or_default("models", |v| vec(v, model_from_json))? })
    }

    /// The calibration as JSON.
    pub fn to_json(&self) -> Value {
        let models = self.models.iter().map(model_to_json).collect();
        Value::Object(Map::from_iter([("models".to_owned(), Value::Array(models))]))
    }
}

crate::serde_via_value!(Calibration);

fn model_from_json(value: &Value) -> Result<ModelCalibration, JsonReadError> {
    let known: &[&str] = &["provider", "model", "samplesPermille"];
    let fields = Fields::of(value, "struct ModelCalibration", Some(known))?;
    Ok(ModelCalibration {
        provider: fields.required("provider", string)?,
        model: fields.required("model", string)?,
        samples_permille: fields.required("samplesPermille", |v| vec(v, u32))?,
    })
}

fn model_to_json(model: &ModelCalibration) -> Value {
    let samples = model.samples_permille.iter().map(|&s| Value::from(s)).collect();
    Value::Object(Map::from_iter([
        ("provider".to_owned(), Value::from(model.provider.clone())),
        ("model".to_owned(), Value::from(model.model.clone())),
        ("samplesPermille".to_owned(), Value::Array(samples)),
    ]))
}

#[cfg(test)]
mod tests {
    //! The hand-written JSON against a copy of the derives it replaced: every field of every
    //! shape left out or given each of a few values, the same values accepted and built, the
    //! same refused.
    use serde::Deserialize;
    use serde_json::{Value, json};

    use super::*;
    use crate::json_read::test_support::{sample_values, variants};

    #[derive(Debug, Deserialize)]
    #[serde(rename_all = "camelCase")]
    #[allow(dead_code)]
    struct DerivedFact {
        provider: String,
        model: String,
        estimated_input_tokens: u64,
        #[serde(flatten)]
        report: DerivedReport,
    }

    #[derive(Debug, Deserialize)]
    #[serde(tag = "kind", rename_all = "snake_case", rename_all_fields = "camelCase")]
    #[allow(dead_code)]
    enum DerivedReport {
        Response {
            input_tokens: u64,
            #[serde(default)]
            cached_input_tokens: u64,
            #[serde(default)]
            cache_write_tokens: u64,
            #[serde(default)]
            output_tokens: u64,
        },
        Overflow {
            #[serde(default)]
            counted_tokens: Option<u64>,
            #[serde(default)]
            limit_tokens: Option<u64>,
        },
    }

    #[derive(Debug, Deserialize)]
    #[serde(rename_all = "camelCase", deny_unknown_fields)]
    #[allow(dead_code)]
    struct DerivedCalibration {
        #[serde(default)]
        models: Vec<DerivedModel>,
    }

    #[derive(Debug, Deserialize)]
    #[serde(rename_all = "camelCase", deny_unknown_fields)]
    #[allow(dead_code)]
    struct DerivedModel {
        provider: String,
        model: String,
        samples_permille: Vec<u32>,
    }

    fn values() -> Vec<Value> {
        sample_values(&["response", "overflow"])
    }

    #[test]
    fn usage_facts_read_as_the_derive_read_them() {
        let facts = [
            json!({ "provider": "p", "model": "m", "estimatedInputTokens": 900, "kind": "response",
                    "inputTokens": 1000, "cachedInputTokens": 10, "cacheWriteTokens": 2, "outputTokens": 3 }),
            json!({ "provider": "p", "model": "m", "estimatedInputTokens": 900, "kind": "overflow",
                    "countedTokens": 1200, "limitTokens": 1000 }),
        ];
        let mut checked = 0;
        for base in &facts {
            for case in variants(base, &values()) {
                let ours = UsageFact::from_json(&case);
                let derived: Result<DerivedFact, _> = serde_json::from_value(case.clone());
                if case["kind"].is_number() {
                    // The derive took a variant's index as its tag (`"kind": 0`); no longer.
                    assert!(ours.is_err());
                    continue;
                }
                assert_eq!(ours.is_ok(), derived.is_ok(), "{case}: {ours:?} / {derived:?}");
                if let Ok(fact) = ours {
                    let again =
                        UsageFact::from_json(&fact.to_json()).expect("writes what it reads");
                    assert_eq!(again, fact);
                    checked += 1;
                }
            }
        }
        assert!(checked > 10, "accepted cases compared: {checked}");
    }

    #[test]
    fn calibrations_read_as_the_derive_read_them() {
        let model = json!({ "provider": "p", "model": "m", "samplesPermille": [1000, 1300] });
        let mut cases = variants(&json!({ "models": [model.clone()] }), &values());
        for case in variants(&model, &values()) {
            cases.push(json!({ "models": [case] }));
        }
        cases.extend([json!({}), json!([]), json!(null), json!("x")]);
        for case in cases {
            let ours = Calibration::from_json(&case);
            let derived: Result<DerivedCalibration, _> = serde_json::from_value(case.clone());
            if case.is_array() {
                // The derive read a struct from an array of its fields' values; no longer.
                assert!(ours.is_err());
                continue;
            }
            assert_eq!(ours.is_ok(), derived.is_ok(), "{case}: {ours:?} / {derived:?}");
            if let Ok(calibration) = ours {
                assert_eq!(Calibration::from_json(&calibration.to_json()), Ok(calibration));
            }
        }
    }

    #[test]
    fn serde_reads_and_writes_through_the_hand_written_json() {
        let text = r#"{"provider":"p","model":"m","estimatedInputTokens":900,"kind":"overflow","limitTokens":1000}"#;
        let fact: UsageFact = serde_json::from_str(text).unwrap();
        assert_eq!(
            fact.report,
            UsageReport::Overflow { counted_tokens: None, limit_tokens: Some(1000) }
        );
        assert_eq!(serde_json::to_string(&fact).unwrap(), text);
        let error = serde_json::from_str::<Calibration>(r#"{"model":[]}"#).unwrap_err();
        assert!(
            error.to_string().starts_with("unknown field `model`, expected `models`"),
            "{error}"
        );
    }
}
