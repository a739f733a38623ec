//! The summary corpus (`core/tests/compaction/summary/corpus/`, conventions in its `README.md`): every
//! file under `accepted/` must pass validation, and every file under `refused/` must be refused
//! with the reason code its name ends with (`missing-goal.malformed_summary_missing_section.md`).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use contextfold_core::compaction::{FinishReason, validate_summary};
use contextfold_core::{CharEstimator, ReasonCode};

/// The corpus must not shrink below these sizes.
const MIN_ACCEPTED: usize = 40;
const MIN_REFUSED: usize = 20;
/// The fold size used when a file has no `fold_tokens` directive (below the large-fold rule).
const DEFAULT_FOLD_TOKENS: u64 = 500;
/// Every code a refused file may expect; the refused corpus must cover each one.
const REFUSAL_CODES: [ReasonCode; 9] = [
    ReasonCode::EmptySummary,
    ReasonCode::MalformedSummaryLengthFinish,
    ReasonCode::MalformedSummaryErrorText,
    ReasonCode::MalformedSummaryOpenFence,
    ReasonCode::MalformedSummaryTruncated,
    ReasonCode::MalformedSummaryMissingSection,
    ReasonCode::MalformedSummarySectionOrder,
    ReasonCode::MalformedSummaryEmptySection,
    ReasonCode::MalformedSummaryTooSmall,
];

/// One corpus file, with its optional first-line directive applied.
#[derive(Debug)]
struct Case {
    name: String,
    text: String,
    finish: FinishReason,
    fold_tokens: u64,
}

impl Case {
    fn verdict(&self) -> Result<(), ReasonCode> {
        validate_summary(&self.text, self.finish.clone(), self.fold_tokens, &CharEstimator)
            .map(|_| ())
            .map_err(|defect| defect.code())
    }
}

fn corpus_dir(kind: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/compaction/summary/corpus").join(kind)
}

/// Reads `<!-- corpus: fold_tokens=N finish=VALUE -->` from the first line, if present, and
/// returns the text without that line.
fn parse_case(name: String, raw: &str) -> Case {
    let mut case = Case {
        name,
        text: raw.to_owned(),
        finish: FinishReason::Stop,
        fold_tokens: DEFAULT_FOLD_TOKENS,
    };
    let Some(rest) = raw.strip_prefix("<!-- corpus:") else { return case };
    let (directive, text) = rest.split_once('\n').unwrap_or((rest, ""));
    let directive = directive.trim().strip_suffix("-->").expect("directive closes on its line");
    for pair in directive.split_whitespace() {
        match pair.split_once('=').expect("key=value") {
            ("fold_tokens", value) => case.fold_tokens = value.parse().expect("fold_tokens"),
            ("finish", value) => case.finish = FinishReason::parse(value),
            (key, _) => panic!("{}: unknown directive key {key}", case.name),
        }
    }
    case.text = text.to_owned();
    case
}

fn load(kind: &str) -> Vec<Case> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(corpus_dir(kind))
        .expect("corpus directory")
        .map(|entry| entry.expect("entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "md"))
        .collect();
    paths.sort();
    paths
        .into_iter()
        .map(|path| {
            let name = path.file_name().expect("name").to_string_lossy().into_owned();
            let raw = std::fs::read_to_string(&path).expect("UTF-8 corpus file");
            parse_case(name, &raw)
        })
        .collect()
}

/// The reason code a refused file's name ends with: `<slug>.<reason_code>.md`.
fn expected_code(name: &str) -> ReasonCode {
    let stem = name.strip_suffix(".md").expect(".md");
    let (_, code) = stem.rsplit_once('.').unwrap_or_else(|| panic!("{name}: no reason code"));
    ReasonCode::parse(code).unwrap_or_else(|| panic!("{name}: unknown reason code {code}"))
}

#[test]
fn every_accepted_corpus_summary_passes() {
    let cases = load("accepted");
    assert!(cases.len() >= MIN_ACCEPTED, "only {} accepted summaries", cases.len());
    let failures: Vec<String> = cases
        .iter()
        .filter_map(|case| case.verdict().err().map(|code| format!("{}: {code}", case.name)))
        .collect();
    assert!(failures.is_empty(), "accepted summaries were refused:\n{}", failures.join("\n"));
}

#[test]
fn every_refused_corpus_summary_is_refused_with_its_expected_code() {
    let cases = load("refused");
    assert!(cases.len() >= MIN_REFUSED, "only {} refused summaries", cases.len());
    let mut failures = Vec::new();
    let mut covered = BTreeSet::new();
    for case in &cases {
        let expected = expected_code(&case.name);
        assert!(REFUSAL_CODES.contains(&expected), "{}: not a summary code", case.name);
        covered.insert(expected);
        match case.verdict() {
            Err(code) if code == expected => {}
            Err(code) => failures.push(format!("{}: refused as {code}", case.name)),
            Ok(()) => failures.push(format!("{}: accepted", case.name)),
        }
    }
    assert!(failures.is_empty(), "refused summaries misjudged:\n{}", failures.join("\n"));
    let missing: Vec<_> = REFUSAL_CODES.iter().filter(|code| !covered.contains(code)).collect();
    assert!(missing.is_empty(), "no refused summary expects {missing:?}");
}

#[test]
fn refused_corpus_names_parse_and_directives_apply() {
    assert_eq!(
        expected_code("x.y.malformed_summary_open_fence.md"),
        ReasonCode::MalformedSummaryOpenFence
    );
    let case = parse_case("a.md".into(), "<!-- corpus: fold_tokens=20000 finish=length -->\nB\n");
    assert_eq!((case.text.as_str(), case.fold_tokens), ("B\n", 20_000));
    assert_eq!(case.finish, FinishReason::Length);
    let plain = parse_case("b.md".into(), "## Goal\n");
    assert_eq!((plain.text.as_str(), plain.fold_tokens), ("## Goal\n", DEFAULT_FOLD_TOKENS));
}
