//! Stale tool-result pruning, archive addresses and bounded archive reads.

use std::borrow::Cow;

use contextfold_core::budget::{CharEstimator, estimate_value};
use contextfold_core::digest::digest_prefix;
use contextfold_core::event::{EventContent, RuntimeEvent};
use contextfold_core::projection::*;
use contextfold_core::{LogBuilder, ReasonCode};
use serde_json::{Value, json};

/// A string output estimated at exactly `tokens` tokens by the char estimator.
fn output_of(tokens: u64) -> Value {
    json!("x".repeat(tokens as usize * 4))
}

/// Four completed turns and a current one, each with one call/result pair of `tokens`.
fn log_with_turns(tokens: u64) -> Vec<RuntimeEvent> {
    let mut log = LogBuilder::new("s1");
    for turn in 0..5 {
        let call = format!("c{turn}");
        log.turn(&format!("t{turn}"))
            .user("next")
            .tool_call(&call, "shell", json!({"cmd": "cargo test"}))
            .tool_result(&call, "shell", output_of(tokens))
            .assistant("done");
    }
    log.build()
}

/// Prunes `log` as one request whose current turn, if named, is the suffix of that turn id.
fn prune_log<'a>(log: &'a [RuntimeEvent], current: Option<&str>) -> RequestPrune<'a> {
    let request: Vec<&RuntimeEvent> = log.iter().collect();
    let prior_end =
        log.iter().position(|e| Some(e.turn_id.as_str()) == current).unwrap_or(log.len());
    prune_request(&request, 0..prior_end, &CharEstimator)
}

fn output(event: &RuntimeEvent) -> Option<&Value> {
    match &event.content {
        EventContent::ToolResult { output, .. } | EventContent::HostedToolResult { output, .. } => {
            Some(output)
        }
        _ => None,
    }
}

#[test]
fn stale_results_outside_the_newest_two_turns_and_the_current_turn_are_replaced() {
    let log = log_with_turns(5_000);
    let pruned = prune_log(&log, Some("t4"));
    let ids: Vec<&str> = pruned.results.iter().map(|p| p.runtime_event_id.as_str()).collect();
    assert_eq!(ids, vec!["e3", "e7"], "results of t0 and t1 only, together one epoch");
    assert_eq!(pruned.cut.epochs, 1);
    assert_eq!(pruned.results[0].call_id, "c0");
    assert_eq!(pruned.results[0].tool_name, "shell");
    assert_eq!(pruned.results[0].original_tokens, 5_000);
    assert_eq!(pruned.events.len(), log.len());
    for (before, after) in log.iter().zip(&pruned.events) {
        if ids.contains(&before.runtime_event_id.as_str()) {
            let EventContent::ToolResult { call_id, tool_name, output, is_error, .. } =
                &after.content
            else {
                panic!("a pruned result stays a tool result");
            };
            assert_eq!(
                (call_id.as_str(), tool_name.as_str(), *is_error),
                (before.content.result_call_id().unwrap_or(""), "shell", false)
            );
            let text = output.as_str().unwrap_or_default();
            assert!(text.contains(&before.runtime_event_id) && text.contains("event log"));
            assert_eq!(after.with_content(before.content.clone()), *before);
            assert!(matches!(after, Cow::Owned(_)), "only a pruned event is a new value");
        } else {
            assert!(
                matches!(after, Cow::Borrowed(e) if std::ptr::eq(*e, before)),
                "borrowed, not copied"
            );
        }
    }
    let diagnostic = pruned.diagnostics().into_iter().next().expect("something was pruned");
    assert_eq!(diagnostic.code, ReasonCode::StaleToolResultsPruned);
    assert!(diagnostic.detail.contains("e3") && diagnostic.detail.contains("10000"));
}

#[test]
fn without_a_current_turn_the_newest_two_turns_are_protected() {
    let log = log_with_turns(5_000);
    let pruned = prune_log(&log, None);
    let ids: Vec<&str> = pruned.results.iter().map(|p| p.runtime_event_id.as_str()).collect();
    // t2's result is stale too, but alone it frees less than an epoch's minimum.
    assert_eq!(ids, vec!["e3", "e7"]);
    let more = log_with_turns(9_000);
    let pruned = prune_log(&more, None);
    assert_eq!(pruned.results.len(), 3, "each result is an epoch of its own");
    assert_eq!(pruned.cut.epochs, 3);
}

#[test]
fn the_threshold_is_strictly_above_4096_tokens() {
    let (at_log, above_log) =
        (log_with_turns(STALE_RESULT_MIN_TOKENS), log_with_turns(STALE_RESULT_MIN_TOKENS + 1));
    let at = prune_log(&at_log, None);
    assert!(at.results.is_empty());
    assert_eq!(at.diagnostics(), Vec::new());
    // Three stale results just above the threshold: two free less than the minimum, three more.
    let above = prune_log(&above_log, None);
    assert_eq!(above.results.len(), 3);
    assert_eq!(prune_log(&above_log, Some("t4")).results.len(), 0);
}

#[test]
fn pinned_partial_hosted_json_and_error_results_follow_the_rules() {
    let mut log = LogBuilder::new("s1");
    log.turn("t0").user("go");
    log.push(EventContent::HostedToolResult {
        call_id: "h1".into(),
        tool_name: "web_search".into(),
        output: json!({"hits": "y".repeat(40_000)}),
        is_error: true,
    });
    let result = |call: &str| EventContent::ToolResult {
        call_id: call.into(),
        tool_name: "shell".into(),
        output: output_of(5_000),
        is_error: false,
        attachments: Vec::new(),
    };
    log.push(result("c1")).pinned = true;
    log.push(result("c2")).partial = true;
    log.turn("t1").user("a").turn("t2").user("b");
    let log = log.build();
    let pruned = prune_log(&log, None);
    assert_eq!(pruned.results.len(), 1);
    let EventContent::HostedToolResult { call_id, tool_name, output, is_error } =
        &pruned.events[1].content
    else {
        panic!("hosted results stay hosted");
    };
    assert_eq!((call_id.as_str(), tool_name.as_str(), *is_error), ("h1", "web_search", true));
    assert!(output.as_str().is_some_and(|t| t.contains("\"web_search\"")));
    assert_eq!(*pruned.events[2], log[2], "pinned events stay raw");
    assert_eq!(*pruned.events[3], log[3], "partial events stay raw");
}

#[test]
fn placeholder_quotes_names_so_they_cannot_break_the_text() {
    let text = stale_result_placeholder("to\"ol\n]", "c1", "e1", None);
    assert!(text.contains(r#""to\"ol\n]""#));
    assert!(!text.contains('\n'));
    let address = ArchiveAddress::for_content("s", b"body").expect("address");
    let text = stale_result_placeholder("t", "c1", "e1", Some(&address));
    assert!(text.ends_with(&format!(", archived at {}.]", address.to_uri())), "{text}");
}

// ---------------------------------------------------------------- archive addresses

const SHA: &str = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";

fn err_code(uri: &str) -> &'static str {
    ArchiveAddress::parse(uri).expect_err(uri).code()
}

#[test]
fn address_of_content_round_trips() {
    let address = ArchiveAddress::for_content("sess-1", b"test").expect("valid");
    assert_eq!(address.content_sha256(), SHA);
    assert_eq!(address.byte_size(), 4);
    let uri = address.to_uri();
    assert_eq!(uri, format!("contextfold://archive/sess-1/{SHA}/4"));
    assert_eq!(ArchiveAddress::parse(&uri), Ok(address.clone()));
    let json = serde_json::to_value(&address).expect("serializes");
    assert_eq!(json, json!(uri));
    assert_eq!(serde_json::from_value::<ArchiveAddress>(json).ok(), Some(address));
    assert!(serde_json::from_value::<ArchiveAddress>(json!("contextfold://archive/x")).is_err());
}

#[test]
fn addresses_reject_everything_non_canonical() {
    let ok = |session: &str, hash: &str, size: &str| {
        format!("contextfold://archive/{session}/{hash}/{size}")
    };
    assert!(ArchiveAddress::parse(&ok("a.b_c:d-E9", SHA, "0")).is_ok());
    assert!(ArchiveAddress::parse(&ok(&"s".repeat(128), SHA, "1073741824")).is_ok());
    let cases: Vec<(String, ArchiveError)> = vec![
        (format!("https://archive/s/{SHA}/4"), ArchiveError::WrongScheme),
        (format!("CONTEXTFOLD://archive/s/{SHA}/4"), ArchiveError::WrongScheme),
        (format!("contextfold://archives/s/{SHA}/4"), ArchiveError::WrongScheme),
        (format!(" contextfold://archive/s/{SHA}/4"), ArchiveError::WrongScheme),
        (ok("s", SHA, "4?x=1"), ArchiveError::QueryOrFragment),
        (ok("s", SHA, "4#frag"), ArchiveError::QueryOrFragment),
        (ok("s", SHA, "4/"), ArchiveError::SegmentCount { found: 4 }),
        (ok("s", SHA, "4/extra"), ArchiveError::SegmentCount { found: 4 }),
        (format!("contextfold://archive/s/{SHA}"), ArchiveError::SegmentCount { found: 2 }),
        (ok("a/b", SHA, "4"), ArchiveError::SegmentCount { found: 4 }),
        (ok("", SHA, "4"), ArchiveError::InvalidSessionId { session_id: String::new() }),
        (
            ok(&"s".repeat(129), SHA, "4"),
            ArchiveError::InvalidSessionId { session_id: "s".repeat(129) },
        ),
        (ok("a b", SHA, "4"), ArchiveError::InvalidSessionId { session_id: "a b".into() }),
        (ok("%41", SHA, "4"), ArchiveError::InvalidSessionId { session_id: "%41".into() }),
        (ok("ü", SHA, "4"), ArchiveError::InvalidSessionId { session_id: "ü".into() }),
        (ok("..", SHA, "4"), ArchiveError::InvalidSessionId { session_id: "..".into() }),
        (ok(".", SHA, "4"), ArchiveError::InvalidSessionId { session_id: ".".into() }),
        (ok("s", &SHA.to_uppercase(), "4"), ArchiveError::InvalidSha256),
        (ok("s", &SHA[1..], "4"), ArchiveError::InvalidSha256),
        (ok("s", &format!("{SHA}0"), "4"), ArchiveError::InvalidSha256),
        (ok("s", &SHA.replace('9', "g"), "4"), ArchiveError::InvalidSha256),
        (ok("s", SHA, ""), ArchiveError::InvalidByteSize),
        (ok("s", SHA, "04"), ArchiveError::InvalidByteSize),
        (ok("s", SHA, "00"), ArchiveError::InvalidByteSize),
        (ok("s", SHA, "+4"), ArchiveError::InvalidByteSize),
        (ok("s", SHA, "-4"), ArchiveError::InvalidByteSize),
        (ok("s", SHA, "4.0"), ArchiveError::InvalidByteSize),
        (ok("s", SHA, "1073741825"), ArchiveError::SizeTooLarge { byte_size: 1_073_741_825 }),
        (
            ok("s", SHA, "99999999999999999999999"),
            ArchiveError::SizeTooLarge { byte_size: u64::MAX },
        ),
    ];
    for (uri, expected) in cases {
        assert_eq!(ArchiveAddress::parse(&uri), Err(expected), "{uri}");
        assert_eq!(err_code(&uri), "archive_address_invalid");
    }
    assert!(matches!(
        ArchiveAddress::new("s", SHA, MAX_ARCHIVE_BYTES + 1),
        Err(ArchiveError::SizeTooLarge { .. })
    ));
    assert!(ArchiveAddress::for_content("bad id", b"x").is_err());
}

// ---------------------------------------------------------------- archive reads

fn inspect(address: &ArchiveAddress, offset: u64, length: u64) -> ArchiveReadRequest {
    ArchiveReadRequest {
        address: address.to_uri(),
        mode: ArchiveReadMode::Inspect { offset, length },
    }
}

fn query(address: &ArchiveAddress, pattern: &str, max_matches: u32) -> ArchiveReadRequest {
    ArchiveReadRequest {
        address: address.to_uri(),
        mode: ArchiveReadMode::Query { pattern: pattern.into(), max_matches },
    }
}

fn read(request: &ArchiveReadRequest, stored: &[u8]) -> Result<ArchiveSlice, ArchiveError> {
    read_archive_slice(request, "s1", stored)
}

fn inspect_parts(slice: ArchiveSlice) -> (u64, u64, String, Option<u64>, bool) {
    match slice {
        ArchiveSlice::Inspect { offset, end, text, next_offset, lossy, .. } => {
            (offset, end, text, next_offset, lossy)
        }
        other => panic!("expected inspect, got {other:?}"),
    }
}

fn query_parts(slice: ArchiveSlice) -> (Vec<ArchiveMatch>, bool) {
    match slice {
        ArchiveSlice::Query { matches, more_matches, .. } => (matches, more_matches),
        other => panic!("expected query, got {other:?}"),
    }
}

#[test]
fn reads_validate_address_session_size_and_hash() {
    let body = b"line one\nline two\n";
    let address = ArchiveAddress::for_content("s1", body).expect("valid");
    assert!(read(&inspect(&address, 0, 100), body).is_ok());

    let bad = ArchiveReadRequest {
        address: "contextfold://archive/s1/zz/1".into(),
        ..inspect(&address, 0, 1)
    };
    assert_eq!(read(&bad, body).map_err(|e| e.code()), Err("archive_address_invalid"));
    let other = ArchiveAddress::for_content("s2", body).expect("valid");
    assert_eq!(
        read(&inspect(&other, 0, 1), body).map_err(|e| e.code()),
        Err("archive_session_mismatch")
    );
    assert_eq!(
        read(&inspect(&address, 0, 1), b"line one\n"),
        Err(ArchiveError::SizeMismatch { expected: 18, actual: 9 })
    );
    let tampered = b"line one\nline TWO\n";
    let error = read(&inspect(&address, 0, 1), tampered).expect_err("hash differs");
    assert!(
        matches!(&error, ArchiveError::HashMismatch { expected, .. } if expected == address.content_sha256())
    );
    assert_eq!(error.reason_code(), ReasonCode::ArchiveHashMismatch);
    assert_eq!(
        ArchiveError::SizeMismatch { expected: 1, actual: 2 }.code(),
        "archive_size_mismatch"
    );
}

#[test]
fn inspect_is_bounded_by_default_and_continues_from_next_offset() {
    let body = "abcdefgh".repeat(10_000).into_bytes();
    let address = ArchiveAddress::for_content("s1", &body).expect("valid");
    let request: ArchiveReadRequest =
        serde_json::from_value(json!({"address": address.to_uri(), "mode": "inspect"}))
            .expect("parses");
    assert_eq!(request.mode, ArchiveReadMode::Inspect { offset: 0, length: 16_384 });
    let (offset, end, text, next, lossy) = inspect_parts(read(&request, &body).expect("reads"));
    assert_eq!((offset, end, text.len(), next, lossy), (0, 16_384, 16_384, Some(16_384), false));
    let (_, _, text, _, _) =
        inspect_parts(read(&inspect(&address, 100, 1 << 40), &body).expect("reads"));
    assert_eq!(text.len(), MAX_INSPECT_BYTES, "a huge length is capped");
    let (_, end, text, next, _) =
        inspect_parts(read(&inspect(&address, 79_990, 100), &body).expect("reads"));
    assert_eq!((end, text.as_str(), next), (80_000, "ghabcdefgh", None));
    let (_, _, text, next, _) =
        inspect_parts(read(&inspect(&address, 80_000, 10), &body).expect("reads"));
    assert_eq!((text.as_str(), next), ("", None));
    assert_eq!(
        read(&inspect(&address, 80_001, 10), &body),
        Err(ArchiveError::OffsetBeyondEnd { offset: 80_001, byte_size: 80_000 })
    );
    assert_eq!(
        read(&inspect(&address, 0, 0), &body).map_err(|e| e.code()),
        Err("archive_read_invalid")
    );
}

#[test]
fn inspect_never_splits_a_character() {
    let body = "a日本🙂z".as_bytes().to_vec(); // a(1) 日(3) 本(3) 🙂(4) z(1)
    let address = ArchiveAddress::for_content("s1", &body).expect("valid");
    let slice = |offset, length| {
        inspect_parts(read(&inspect(&address, offset, length), &body).expect("reads"))
    };
    assert_eq!(
        slice(2, 3),
        (4, 7, "本".to_owned(), Some(7), false),
        "offset inside 日 moves forward"
    );
    assert_eq!(slice(0, 3), (0, 1, "a".to_owned(), Some(1), false), "stops before a split 日");
    assert_eq!(
        slice(7, 1),
        (7, 11, "🙂".to_owned(), Some(11), false),
        "one whole char rather than nothing"
    );
    let broken = [b'o', b'k', 0xFF, 0xE6, 0x97, b'!'];
    let address = ArchiveAddress::for_content("s1", &broken).expect("valid");
    let (_, end, text, _, lossy) =
        inspect_parts(read(&inspect(&address, 0, 100), &broken).expect("reads"));
    assert_eq!((end, text.as_str(), lossy), (6, "ok\u{FFFD}\u{FFFD}!", true));
}

#[test]
fn query_returns_bounded_matching_lines_with_numbers() {
    let mut body = String::new();
    for n in 1..=50 {
        body.push_str(&format!("line {n}: {}\r\n", if n % 2 == 0 { "error here" } else { "fine" }));
    }
    body.push_str(&format!("{} error at the far end", "z".repeat(2_000)));
    let address = ArchiveAddress::for_content("s1", body.as_bytes()).expect("valid");
    let (matches, more) =
        query_parts(read(&query(&address, "error", 100), body.as_bytes()).expect("reads"));
    assert_eq!(matches.len(), MAX_QUERY_MATCHES as usize, "capped at 20");
    assert!(more);
    assert_eq!(matches[0].line_number, 2);
    assert_eq!(matches[0].text, "line 2: error here");
    assert!(!matches[0].truncated);
    assert_eq!(&body.as_bytes()[matches[0].offset as usize..][..6], b"line 2");

    let (matches, more) =
        query_parts(read(&query(&address, "far end", 3), body.as_bytes()).expect("reads"));
    assert!(!more);
    let far = &matches[0];
    assert_eq!(far.line_number, 51);
    assert!(
        far.truncated
            && far.text.len() <= MAX_MATCH_LINE_BYTES
            && far.text.contains("error at the far end")
    );
    assert!(body[far.offset as usize..].starts_with(&far.text));

    let request: ArchiveReadRequest = serde_json::from_value(
        json!({"address": address.to_uri(), "mode": "query", "pattern": "fine"}),
    )
    .expect("parses");
    assert_eq!(request.mode, ArchiveReadMode::Query { pattern: "fine".into(), max_matches: 20 });
    let invalid = |pattern: &str, max| {
        read(&query(&address, pattern, max), body.as_bytes()).map_err(|e| e.code())
    };
    assert_eq!(invalid("", 5), Err("archive_read_invalid"));
    assert_eq!(invalid("a\nb", 5), Err("archive_read_invalid"));
    assert_eq!(invalid(&"p".repeat(MAX_PATTERN_BYTES + 1), 5), Err("archive_read_invalid"));
    assert_eq!(invalid("fine", 0), Err("archive_read_invalid"));
}

#[test]
fn read_requests_use_the_documented_json() {
    let request = query(&ArchiveAddress::for_content("s1", b"x").expect("valid"), "x", 3);
    let value = serde_json::to_value(&request).expect("serializes");
    assert_eq!(value["mode"], "query");
    assert_eq!(value["maxMatches"], 3);
    assert_eq!(serde_json::from_value::<ArchiveReadRequest>(value).ok(), Some(request));
    let bad = json!({"address": "a", "mode": "delete"});
    assert!(serde_json::from_value::<ArchiveReadRequest>(bad).is_err());
}

#[test]
fn active_prune_archives_first_and_the_placeholder_points_back() {
    let mut log = LogBuilder::new("s1");
    log.turn("t0").tool_call("c1", "shell", json!({})).tool_result(
        "c1",
        "shell",
        json!({"stdout": "big ".repeat(50)}),
    );
    let event = &log.events()[1];
    let prune = archive_tool_result(event, &CharEstimator).expect("valid").expect("a result");
    assert_eq!(prune.archive_bytes, event_output_bytes(event));
    assert_eq!(
        prune.address,
        ArchiveAddress::for_content("s1", &prune.archive_bytes).expect("valid")
    );
    let text = output(&prune.replacement).and_then(Value::as_str).unwrap_or_default().to_owned();
    assert!(text.contains(&prune.address.to_uri()) && text.contains("archive_read"));
    assert!(text.contains("\"mode\":\"inspect\"") && text.contains("\"mode\":\"query\""));
    assert!(!text.contains("big big"), "the body is never expanded");
    assert_eq!(prune.replacement.content.result_call_id(), Some("c1"));
    let request = inspect(&prune.address, 0, 16_384);
    let (_, _, back, _, _) = inspect_parts(read(&request, &prune.archive_bytes).expect("reads"));
    assert_eq!(back.as_bytes(), prune.archive_bytes.as_slice());
    assert_eq!(archive_tool_result(&log.events()[0], &CharEstimator), Ok(None));
    assert_eq!(placeholder_for(&prune.address, "shell", "c1", prune.original_tokens), text);
    assert_eq!(
        archive_read_input_schema()["properties"]["mode"]["enum"],
        json!(["inspect", "query"])
    );
}

fn event_output_bytes(event: &RuntimeEvent) -> Vec<u8> {
    output(event).map(|v| v.to_string().into_bytes()).unwrap_or_default()
}

#[cfg(not(target_arch = "wasm32"))]
mod properties {
    use super::*;
    use proptest::prelude::*;

    /// A log of turns with small and oversized results, and a coverage point.
    fn session() -> impl Strategy<Value = (Vec<RuntimeEvent>, usize, bool)> {
        let turn = prop::collection::vec((any::<bool>(), 0u64..9_000, any::<bool>()), 0..4);
        (prop::collection::vec(turn, 1..7), any::<prop::sample::Index>(), any::<bool>()).prop_map(
            |(turns, cut, has_current)| {
                let mut log = LogBuilder::new("s1");
                let mut call = 0;
                for (t, steps) in turns.iter().enumerate() {
                    log.turn(&format!("t{t}")).user("go");
                    for (hosted, tokens, pinned) in steps {
                        call += 1;
                        let id = format!("c{call}");
                        log.tool_call(&id, "shell", json!({"n": call}));
                        let out = json!("y".repeat(*tokens as usize * 4));
                        if *hosted {
                            log.push(EventContent::HostedToolResult {
                                call_id: id,
                                tool_name: "search".into(),
                                output: out,
                                is_error: false,
                            })
                            .pinned = *pinned;
                        } else {
                            log.tool_result(&id, "shell", out);
                        }
                    }
                    log.assistant("ok");
                }
                let events = log.build();
                let cut = cut.index(events.len());
                (events, cut, has_current)
            },
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(128))]

        #[test]
        fn pruning_changes_only_old_oversized_results_and_never_covered_bytes(
            (events, cut, has_current) in session(),
        ) {
            let (covered, tail) = events.split_at(cut);
            let current = if has_current { tail.last().map(|e| e.turn_id.clone()) } else { None };
            let covered_digest = digest_prefix(covered);
            let result = prune_log(tail, current.as_deref());

            let mut projected = covered.to_vec();
            projected.extend(result.events.iter().map(|event| event.clone().into_owned()));
            prop_assert_eq!(digest_prefix(&projected[..cut]), covered_digest);
            prop_assert_eq!(result.events.len(), tail.len());

            let mut turns: Vec<&str> = Vec::new();
            for event in tail.iter().rev() {
                if Some(event.turn_id.as_str()) != current.as_deref() && !turns.contains(&event.turn_id.as_str()) {
                    turns.push(&event.turn_id);
                }
            }
            let protected = |turn: &str| Some(turn) == current.as_deref() || turns.iter().take(2).any(|t| *t == turn);
            let pruned_ids: Vec<&str> = result.results.iter().map(|p| p.runtime_event_id.as_str()).collect();
            let (mut backlog, mut freed) = (0u64, 0u64);
            for (before, after) in tail.iter().zip(&result.events) {
                let oversized = output(before).is_some_and(|o| o.as_str().map_or(0, str::len) > 4 * 4_096);
                let eligible = oversized && !before.pinned && !protected(&before.turn_id);
                let pruned = pruned_ids.contains(&before.runtime_event_id.as_str());
                prop_assert!(!pruned || eligible, "only candidates are pruned");
                let gain = |a: &RuntimeEvent, b: &RuntimeEvent| {
                    let size = |e: &RuntimeEvent| output(e).map_or(0, |o| estimate_value(&CharEstimator, o));
                    size(a).saturating_sub(size(b))
                };
                if pruned {
                    freed += gain(before, after);
                    prop_assert_eq!(before.content.kind_name(), after.content.kind_name());
                    prop_assert_eq!(before.content.result_call_id(), after.content.result_call_id());
                    prop_assert_eq!(after.with_content(before.content.clone()), before.clone());
                } else {
                    if eligible && let (Some(text), Some(call)) = (output(before).and_then(Value::as_str), before.content.result_call_id()) {
                        let tool = if matches!(before.content, EventContent::HostedToolResult { .. }) { "search" } else { "shell" };
                        let address = ArchiveAddress::for_content(&before.session_id, text.as_bytes()).ok();
                        let placeholder = stale_result_placeholder(tool, call, &before.runtime_event_id, address.as_ref());
                        backlog += estimate_value(&CharEstimator, &json!(text)) - estimate_value(&CharEstimator, &json!(placeholder));
                    }
                    prop_assert_eq!(serde_json::to_vec(before).ok(), serde_json::to_vec(after).ok());
                }
            }
            // Each epoch frees at least the minimum; what is left over does not make one.
            prop_assert!(freed >= PRUNE_EPOCH_MIN_FREED_TOKENS * result.cut.epochs as u64);
            prop_assert!(backlog < PRUNE_EPOCH_MIN_FREED_TOKENS, "a backlog of {} tokens", backlog);
            // Pairs are intact: every result still answers a call with the same id.
            for event in &result.events {
                if let Some(id) = event.content.result_call_id() {
                    prop_assert!(projected.iter().any(|e| e.content.call_id() == Some(id)));
                }
            }
            // Pruning is idempotent.
            let again = prune_log(&projected[cut..], current.as_deref());
            prop_assert!(again.results.is_empty());
        }

        #[test]
        fn the_pruned_set_only_grows_and_each_change_frees_the_minimum(
            (events, _, has_current) in session(),
        ) {
            let pruned_at = |len: usize| {
                let log = &events[..len];
                let current = if has_current { log.last().map(|e| e.turn_id.as_str()) } else { None };
                let result = prune_log(log, current);
                let ids: Vec<(String, u64)> = result
                    .results
                    .iter()
                    .map(|p| (p.runtime_event_id.clone(), p.original_tokens))
                    .collect();
                ids
            };
            let mut previous = pruned_at(0);
            for len in 1..=events.len() {
                let now = pruned_at(len);
                prop_assert!(previous.iter().all(|p| now.contains(p)), "a pruned result came back");
                if now.len() > previous.len() {
                    let added: u64 = now.iter().filter(|p| !previous.contains(p)).map(|p| p.1).sum();
                    prop_assert!(added >= PRUNE_EPOCH_MIN_FREED_TOKENS, "an epoch of {} tokens", added);
                }
                previous = now;
            }
        }

        #[test]
        fn canonical_addresses_round_trip(
            session in "[A-Za-z0-9._:-]{1,128}",
            bytes in prop::collection::vec(any::<u8>(), 0..64),
            size in 0u64..=MAX_ARCHIVE_BYTES,
        ) {
            prop_assume!(session != "." && session != "..");
            let address = ArchiveAddress::for_content(&session, &bytes).expect("valid");
            prop_assert_eq!(ArchiveAddress::parse(&address.to_uri()), Ok(address.clone()));
            let sized = ArchiveAddress::new(&session, address.content_sha256(), size).expect("valid");
            prop_assert_eq!(ArchiveAddress::parse(&sized.to_uri()), Ok(sized));
        }

        #[test]
        fn parse_accepts_only_canonical_text(
            size in 0u64..2_000,
            at in any::<prop::sample::Index>(),
            edit in prop::sample::select(vec!["", "0", "/", "?", "#", "A", "%", "+", ".", " ", "é"]),
            replace in any::<bool>(),
        ) {
            // Mutate one position of a canonical address; whatever still parses is canonical.
            let uri = format!("contextfold://archive/s-1/{SHA}/{size}");
            let at = at.index(uri.len() + 1);
            let end = if replace { (at + 1).min(uri.len()) } else { at };
            let text = format!("{}{edit}{}", &uri[..at], &uri[end..]);
            match ArchiveAddress::parse(&text) {
                Ok(address) => prop_assert_eq!(address.to_uri(), text),
                Err(error) => prop_assert_eq!(error.code(), "archive_address_invalid"),
            }
        }

        #[test]
        fn inspect_of_text_is_exact_and_stitches_back(
            body in "\\PC{0,300}",
            start in any::<prop::sample::Index>(),
            length in 1u64..40,
        ) {
            let bytes = body.as_bytes();
            let address = ArchiveAddress::for_content("s1", bytes).expect("valid");
            let offset = start.index(bytes.len() + 1) as u64;
            let (from, end, text, next, lossy) = inspect_parts(read(&inspect(&address, offset, length), bytes).expect("reads"));
            prop_assert!(!lossy);
            prop_assert!(body.is_char_boundary(from as usize) && body.is_char_boundary(end as usize));
            prop_assert!(from >= offset && from - offset < 4);
            prop_assert_eq!(text.as_str(), &body[from as usize..end as usize]);
            prop_assert!(end - from <= length.max(4));
            prop_assert_eq!(next, (end < bytes.len() as u64).then_some(end));
            // Following nextOffset from 0 reconstructs the body.
            let mut rebuilt = String::new();
            let mut at = Some(0);
            while let Some(offset) = at {
                let (_, _, text, next, _) = inspect_parts(read(&inspect(&address, offset, length), bytes).expect("reads"));
                rebuilt.push_str(&text);
                at = next;
            }
            prop_assert_eq!(rebuilt, body);
        }

        #[test]
        fn reads_of_random_bytes_stay_bounded(
            bytes in prop::collection::vec(any::<u8>(), 0..20_000),
            start in any::<prop::sample::Index>(),
            length in 1u64..40_000,
            needle in prop::collection::vec(any::<u8>(), 1..3),
            max_matches in 1u32..60,
        ) {
            let address = ArchiveAddress::for_content("s1", &bytes).expect("valid");
            let offset = start.index(bytes.len() + 1) as u64;
            let (from, end, text, next, _) = inspect_parts(read(&inspect(&address, offset, length), &bytes).expect("reads"));
            prop_assert!(text.len() <= MAX_INSPECT_BYTES);
            prop_assert!(offset <= from && from <= end && end <= bytes.len() as u64);
            prop_assert!(from < end || from == bytes.len() as u64);
            prop_assert_eq!(next.is_none(), end == bytes.len() as u64);

            let pattern = String::from_utf8_lossy(&needle).replace(['\n', '\r'], "a");
            let (matches, _) = query_parts(read(&query(&address, &pattern, max_matches), &bytes).expect("reads"));
            prop_assert!(matches.len() <= max_matches.min(MAX_QUERY_MATCHES) as usize);
            let lines: Vec<&[u8]> = bytes.split(|&b| b == b'\n').collect();
            for found in &matches {
                prop_assert!(found.text.len() <= MAX_MATCH_LINE_BYTES);
                let line = lines[found.line_number as usize - 1];
                prop_assert!(line.windows(pattern.len()).any(|w| w == pattern.as_bytes()));
            }
        }
    }
}

/// One current turn "now" of `steps` agent steps, each a call and a result of `tokens` tokens.
fn long_turn(steps: usize, tokens: u64) -> Vec<RuntimeEvent> {
    let mut log = LogBuilder::new("s1");
    log.turn("now").user("fix the failing test");
    for step in 0..steps {
        let call = format!("c{step}");
        log.response(Some(&format!("r{step}")))
            .tool_call(&call, "shell", json!({"cmd": format!("cat src/file{step}.rs")}))
            .response(None)
            .tool_result(&call, "shell", output_of(tokens));
    }
    log.build()
}

fn result_positions(log: &[RuntimeEvent]) -> Vec<usize> {
    (0..log.len()).filter(|&i| output(&log[i]).is_some()).collect()
}

#[test]
fn older_observations_of_the_current_turn_are_masked_and_the_newest_results_kept() {
    let mut log = long_turn(24, 1_200);
    let results = result_positions(&log);
    // A pinned result and a small one are never masked, however old.
    log[results[1]].pinned = true;
    log[results[2]].content =
        log[results[2]].content.with_output(output_of(MASKED_RESULT_MIN_TOKENS)).expect("result");
    let request: Vec<&RuntimeEvent> = log.iter().collect();
    // The whole log is the current turn: no uncovered prior tail at all.
    let pruned = prune_request_within(&request, 0..0, 6_000, &CharEstimator);
    let masked: Vec<usize> =
        (0..log.len()).filter(|&i| matches!(pruned.events[i], Cow::Owned(_))).collect();
    let newest = &results[results.len() - KEPT_RECENT_RESULTS..];
    assert!(!masked.is_empty(), "older observations of the current turn are masked");
    assert!(masked.iter().all(|i| !newest.contains(i)), "the newest results stay whole");
    assert!(!masked.contains(&results[1]) && !masked.contains(&results[2]));
    // 24 results, the newest kept (their 1,200-token outputs exceed the kept share of 6,000),
    // 2 exempt: candidates of about 1,160 freed tokens each, epochs of at least 1,500 (a quarter
    // of 6,000): every second one closes an epoch.
    assert!(KEPT_RECENT_RESULTS as u64 * 1_200 > 6_000 * KEPT_RECENT_RESULTS_SHARE_PERCENT / 100);
    let candidates = 24 - KEPT_RECENT_RESULTS - 2;
    assert_eq!(pruned.cut.pruned, candidates / 2 * 2);
    assert_eq!(pruned.cut.epochs, candidates / 2);
    assert!(pruned.cut.freed_tokens >= pruned.cut.epochs as u64 * epoch_minimum(6_000));
    for &i in &masked {
        let EventContent::ToolResult { call_id, tool_name, output, is_error, .. } =
            &pruned.events[i].content
        else {
            panic!("a masked result stays a tool result");
        };
        assert_eq!(Some(call_id.as_str()), log[i].content.result_call_id());
        assert_eq!((tool_name.as_str(), *is_error), ("shell", false));
        let text = output.as_str().unwrap_or_default();
        assert!(text.contains(&format!("{:?}", log[i].runtime_event_id)), "{text}");
    }
    // The calls (the commands as issued) are never touched.
    for (before, after) in log.iter().zip(&pruned.events) {
        if output(before).is_none() {
            assert!(matches!(after, Cow::Borrowed(_)));
        }
    }
    let diagnostic = pruned.diagnostics().into_iter().next().expect("a diagnostic");
    assert_eq!(diagnostic.code, ReasonCode::StaleToolResultsPruned);
}

#[test]
fn masking_in_the_current_turn_changes_a_request_only_when_an_epoch_closes() {
    // Growing one long turn step by step, each request extends the previous one except at an
    // epoch, which frees at least the budget's minimum: a provider's prompt cache survives.
    let log = long_turn(40, 700);
    let minimum = epoch_minimum(6_000);
    let mut previous: Option<Vec<RuntimeEvent>> = None;
    let mut epochs = 0;
    for len in 2..=log.len() {
        let request: Vec<&RuntimeEvent> = log[..len].iter().collect();
        let pruned = prune_request_within(&request, 0..0, 6_000, &CharEstimator);
        let now: Vec<RuntimeEvent> = pruned.events.iter().map(|e| (**e).clone()).collect();
        if let Some(before) = &previous
            && now[..before.len()] != before[..]
        {
            let freed: u64 = before
                .iter()
                .zip(&now)
                .filter(|(a, b)| a != b)
                .map(|(a, b)| {
                    let (Some(a), Some(b)) = (output(a), output(b)) else {
                        panic!("only results change")
                    };
                    estimate_value(&CharEstimator, a) - estimate_value(&CharEstimator, b)
                })
                .sum();
            assert!(freed >= minimum, "at {len}: an epoch of {freed} tokens");
            epochs += 1;
        }
        previous = Some(now);
    }
    assert!(epochs >= 5, "the turn masks as it grows ({epochs} epochs)");
}

#[test]
fn a_long_current_turn_fits_its_budget_by_masking_its_older_observations() {
    use contextfold_core::budget::{ContextBudget, ModelFacts};
    use contextfold_core::projection::{ProjectInput, project};
    // 30 steps of 1,000-token results: about 31,000 tokens raw, over a 32k window's budget.
    let log = long_turn(30, 1_000);
    let model = ModelFacts { context_window: Some(32_000), ..ModelFacts::default() };
    let budget = ContextBudget::from_model(&model);
    let input = ProjectInput {
        events: &log,
        current_turn_id: Some("now"),
        checkpoint: None,
        model: &model,
        provider: None,
        fail_open: false,
    };
    let projection = project(&input, &CharEstimator).expect("projects");
    assert!(
        projection.fits,
        "{} tokens for {}",
        projection.estimated_tokens, budget.history_budget
    );
    assert!(projection.diagnostics.iter().any(|d| d.code == ReasonCode::StaleToolResultsPruned));
    // The newest results are all there, whole.
    let text = serde_json::to_string(&projection.messages).expect("json");
    let whole = "x".repeat(4_000);
    assert!(text.matches(&whole).count() >= KEPT_RECENT_RESULTS);
}
