//! Retention: which artifacts of the folded events a text (a summary, a whole request) still
//! carries verbatim.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::artifacts::{Artifact, ArtifactClass};
use crate::checkpoint::{Score, Scores};

/// Kept and total artifacts of one class.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClassRetention {
    /// Artifacts found verbatim.
    pub kept: u32,
    /// Artifacts looked for.
    pub total: u32,
}

impl ClassRetention {
    /// `kept / total`, or 1.0 when there was nothing to keep.
    pub fn share(&self) -> f64 {
        if self.total == 0 { 1.0 } else { f64::from(self.kept) / f64::from(self.total) }
    }
}

/// What a text kept of a set of artifacts.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Retention {
    /// Per class, in [`ArtifactClass::ALL`] order.
    pub classes: [ClassRetention; 6],
    /// The artifacts not found, in the order they were given.
    pub lost: Vec<Artifact>,
}

impl Retention {
    /// Scores `text` against `artifacts`: an artifact is kept when its exact text occurs in
    /// `text`.
    pub fn measure(artifacts: &[Artifact], text: &str) -> Self {
        let mut retention = Retention::default();
        for artifact in artifacts {
            let slot = &mut retention.classes[class_index(artifact.class)];
            slot.total += 1;
            if text.contains(artifact.text.as_str()) {
                slot.kept += 1;
            } else {
                retention.lost.push(artifact.clone());
            }
        }
        retention
    }

    /// One class's figures.
    pub fn class(&self, class: ArtifactClass) -> ClassRetention {
        self.classes[class_index(class)]
    }

    /// All classes pooled.
    pub fn overall(&self) -> ClassRetention {
        self.classes.iter().fold(ClassRetention::default(), |sum, c| ClassRetention {
            kept: sum.kept + c.kept,
            total: sum.total + c.total,
        })
    }

    /// The figures as a checkpoint manifest records them.
    pub fn scores(&self) -> Scores {
        let score = |c: ClassRetention| Score { kept: c.kept, total: c.total };
        let class = |class: ArtifactClass| score(self.class(class));
        Scores {
            constraint: class(ArtifactClass::Constraint),
            plan: class(ArtifactClass::Plan),
            error: class(ArtifactClass::Error),
            command: class(ArtifactClass::Command),
            path: class(ArtifactClass::Path),
            identifier: class(ArtifactClass::Identifier),
            overall: score(self.overall()),
        }
    }
}

fn class_index(class: ArtifactClass) -> usize {
    ArtifactClass::ALL.iter().position(|c| *c == class).unwrap_or(0)
}

/// The text a model reads in a request's messages (provider-neutral or wire JSON): every
/// string, and inside strings that are JSON themselves (tool-call arguments), their strings
/// too, one per line.
pub fn visible_text(messages: &Value) -> String {
    let mut out = String::new();
    collect(messages, &mut out);
    out
}

fn collect(value: &Value, out: &mut String) {
    match value {
        Value::String(text) => {
            out.push_str(text);
            out.push('\n');
            let trimmed = text.trim_start();
            if (trimmed.starts_with('{') || trimmed.starts_with('['))
                && let Ok(inner) = crate::json_read::text::value_from_text(text)
            {
                collect(&inner, out);
            }
        }
        Value::Array(items) => items.iter().for_each(|item| collect(item, out)),
        Value::Object(map) => map.values().for_each(|item| collect(item, out)),
        _ => {}
    }
}
