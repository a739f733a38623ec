//! Row a: estimate error per content class, raw (the characters estimate `CharEstimator`, and
//! the `PieceEstimator` the runtime starts from) and calibrated (the session runtime's
//! estimator after one reported usage).
//!
//! Per class, one session (its own runtime over a SQLite file) sends 8 requests, each one user
//! message of new text of that class (about 1,500-3,000 tokens). Each request is estimated
//! with the runtime's estimator (`SessionRuntime::estimator`, calibrated from the usage facts
//! recorded so far), counted by the simulator (OpenAI Chat shape, `o200k_base`), and its usage
//! recorded with `record_usage`. Raw error: the raw estimate / count - 1 on every request;
//! calibrated error: the runtime's estimate / count - 1 on requests 2..8.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use contextfold_conformance::prng::SplitMix64;
use contextfold_core::budget::{CharEstimator, PieceEstimator, UsageFact, UsageReport};
use contextfold_core::compaction::{Compactor, ProviderIdentity};
use contextfold_core::projection::{Message, Part, Role, estimate_messages};
use contextfold_core::{ModelFacts, RuntimeEvent};
use contextfold_host::runtime::{
    ExtractiveSummarizer, NoNativeCompactor, SessionConfig, SessionRuntime,
};
use contextfold_host::simulator::{SimulatedProvider, SimulatorConfig, WireShape};
use contextfold_host::storage::Store;

use crate::billing::event_text;
use crate::session::BenchResult;
use crate::wire::{chat_body, send};

/// Requests per class.
const REQUESTS: usize = 8;
/// The goal: calibrated estimates within 10% of the count after one usage.
pub(crate) const GOAL: f64 = 0.10;

/// One class's measured errors.
pub(crate) struct ClassError {
    pub(crate) class: &'static str,
    pub(crate) tokens: (u64, u64),
    pub(crate) chars_median: f64,
    pub(crate) chars_worst: f64,
    pub(crate) raw_median: f64,
    pub(crate) raw_worst: f64,
    pub(crate) calibrated_median: f64,
    pub(crate) calibrated_worst: f64,
    pub(crate) running_median: f64,
    pub(crate) running_worst: f64,
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Joins `pieces` (each followed by `sep`) and cuts the text into chunks of `bytes` bytes (at
/// character boundaries), at most [`REQUESTS`] of them.
fn chunks(pieces: impl IntoIterator<Item = String>, bytes: usize, sep: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    for piece in pieces {
        let text = piece + sep;
        let mut rest = text.as_str();
        while !rest.is_empty() && out.len() < REQUESTS {
            let mut cut = (bytes - current.len()).min(rest.len());
            while !rest.is_char_boundary(cut) {
                cut -= 1;
            }
            current.push_str(&rest[..cut]);
            rest = &rest[cut..];
            if current.len() + 4 > bytes {
                out.push(std::mem::take(&mut current));
            }
        }
    }
    out
}

fn files_under(dir: &Path, ext: &str, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    paths.sort();
    for path in paths {
        if path.is_dir() {
            files_under(&path, ext, out);
        } else if path.extension().is_some_and(|e| e == ext) {
            out.push(path);
        }
    }
}

fn read_all(dir: &str, ext: &str) -> Vec<String> {
    let mut paths = Vec::new();
    files_under(&repo().join(dir), ext, &mut paths);
    paths.iter().filter_map(|p| std::fs::read_to_string(p).ok()).collect()
}

/// The texts of every class: prose, source code, minified JSON, CJK, base64, mixed.
pub(crate) fn classes() -> Vec<(&'static str, Vec<String>)> {
    let prose = chunks(read_all("docs", "md").into_iter().flat_map(paragraphs), 8_000, "\n\n");
    let code = chunks(read_all("core/src", "rs"), 8_000, "\n");
    let jsonl = read_all("tests/trajectories", "jsonl");
    let minified = jsonl.iter().flat_map(|f| f.lines()).filter_map(|line| {
        serde_json::from_str::<serde_json::Value>(line).ok().map(|v| v.to_string())
    });
    let json = chunks(minified, 6_000, "\n");
    let cjk_source = include_str!("cjk.txt");
    let cjk_paragraphs: Vec<String> =
        paragraphs(cjk_source.to_owned()).into_iter().filter(|p| !p.starts_with('#')).collect();
    let cjk = (0..REQUESTS)
        .map(|k| {
            let n = cjk_paragraphs.len();
            (0..n + 6)
                .map(|i| cjk_paragraphs[(k + i) % n].as_str())
                .collect::<Vec<_>>()
                .join("\n\n")
        })
        .collect();
    let mut rng = SplitMix64::new(0x0B64);
    let base64 = (0..REQUESTS)
        .map(|k| {
            let bytes: Vec<u8> =
                (0..2_000 + 150 * k).map(|_| (rng.next_u64() >> 56) as u8).collect();
            format!("data:image/png;base64,{}", encode_base64(&bytes))
        })
        .collect();
    let mixed_path =
        repo().join("tests/trajectories/mini-swe-agent/astroid-1333-deepseek-chat.jsonl");
    let mixed_events = std::fs::read_to_string(mixed_path).unwrap_or_default();
    let mixed = chunks(
        mixed_events
            .lines()
            .filter_map(|l| serde_json::from_str::<RuntimeEvent>(l).ok())
            .map(|e| event_text(&e)),
        7_000,
        "\n",
    );
    vec![
        ("prose", prose),
        ("source code", code),
        ("minified JSON", json),
        ("CJK", cjk),
        ("base64", base64),
        ("mixed", mixed),
    ]
}

fn paragraphs(text: String) -> Vec<String> {
    text.split("\n\n").map(str::trim).filter(|p| !p.is_empty()).map(str::to_owned).collect()
}

fn encode_base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [chunk[0], chunk.get(1).copied().unwrap_or(0), chunk.get(2).copied().unwrap_or(0)];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(f64::NAN)
}

fn worst(values: &[f64]) -> f64 {
    values.iter().copied().max_by(|a, b| a.abs().total_cmp(&b.abs())).unwrap_or(f64::NAN)
}

/// Measures one class: once recording only the first request's usage (the goal row: every
/// later estimate uses the ratio learned from one fact), once recording every usage (the
/// runtime as an agent drives it), each in its own session under `dir`.
pub(crate) async fn measure(
    class: &'static str,
    texts: &[String],
    dir: &Path,
) -> BenchResult<ClassError> {
    if texts.len() < 6 {
        return Err(format!("{class}: only {} requests of text", texts.len()).into());
    }
    let (counts, mut chars, mut raw, mut one) = errors(class, texts, dir, false).await?;
    let (_, _, _, mut running) = errors(class, texts, dir, true).await?;
    let tokens =
        (counts.iter().copied().min().unwrap_or(0), counts.iter().copied().max().unwrap_or(0));
    Ok(ClassError {
        class,
        tokens,
        chars_worst: worst(&chars),
        chars_median: median(&mut chars),
        raw_worst: worst(&raw),
        raw_median: median(&mut raw),
        calibrated_worst: worst(&one),
        calibrated_median: median(&mut one),
        running_worst: worst(&running),
        running_median: median(&mut running),
    })
}

type Errors = (Vec<u64>, Vec<f64>, Vec<f64>, Vec<f64>);

/// Counts, characters-estimate errors, raw errors and calibrated errors (requests 2..n) of one
/// session of `texts`.
async fn errors(
    class: &'static str,
    texts: &[String],
    dir: &Path,
    record_every_usage: bool,
) -> BenchResult<Errors> {
    let session_id = format!("estimate-{}-{record_every_usage}", class.replace(' ', "-"));
    let store = Arc::new(Store::open(dir.join(format!("{session_id}.sqlite")))?);
    let config = SessionConfig {
        session_id,
        model: ModelFacts { context_window: Some(128_000), ..Default::default() },
        provider: ProviderIdentity {
            provider: "bench".into(),
            connection_slug: "offline".into(),
            model_id: "bench-model".into(),
        },
        compactor: Compactor::TextSummary,
    };
    let runtime = SessionRuntime::new(store, config, ExtractiveSummarizer, NoNativeCompactor);
    let provider = SimulatedProvider::new(SimulatorConfig::default());
    let (mut chars, mut raw, mut calibrated, mut counts) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for (index, text) in texts.iter().enumerate() {
        let messages =
            [Message { role: Role::User, parts: vec![Part::Text { text: text.clone() }] }];
        let base = estimate_messages(&PieceEstimator, &messages);
        let char_estimate = estimate_messages(&CharEstimator, &messages);
        let estimate = estimate_messages(&runtime.estimator().await?, &messages);
        let usage =
            send(&provider, WireShape::OpenAiChat, &chat_body(&messages, "bench-model")?, 1_000)?;
        let UsageReport::Response { input_tokens, .. } = usage else {
            return Err(format!("{class}: request {index} overflowed").into());
        };
        counts.push(input_tokens);
        chars.push(char_estimate as f64 / input_tokens as f64 - 1.0);
        raw.push(base as f64 / input_tokens as f64 - 1.0);
        if index > 0 {
            calibrated.push(estimate as f64 / input_tokens as f64 - 1.0);
        }
        if index == 0 || record_every_usage {
            let fact = UsageFact {
                provider: "bench".into(),
                model: "bench-model".into(),
                estimated_input_tokens: base,
                report: usage,
            };
            runtime.record_usage(fact).await?;
        }
    }
    Ok((counts, chars, raw, calibrated))
}
