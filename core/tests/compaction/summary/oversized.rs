//! One event larger than the summarizer's window: its payload reaches the summarizer as a
//! marker naming its archive address, never silently dropped and never in place of a split.

use contextfold_core::compaction::{
    SummaryInputError, SummaryRequest, TOOL_RESULT_OMISSION_MARKER,
    build_oversized_summary_request, build_summary_request, summary_payload,
};
use contextfold_core::projection::ArchiveAddress;
use contextfold_core::{CharEstimator, LogBuilder, RuntimeEvent};
use serde_json::json;

use super::request::{exact_estimate, text};

fn checked(request: &SummaryRequest) -> u64 {
    let exact = exact_estimate(request);
    assert_eq!(exact, request.estimated_input_tokens, "the estimate is the exact one");
    exact + request.repair_reserve_tokens
}

/// A task pasted with a 60,000-byte log, a call with a 30,000-byte input, and small pairs.
fn fold_with_a_huge_paste() -> Vec<RuntimeEvent> {
    let mut log = LogBuilder::new("s");
    log.user(&format!(
        "Why does CI fail? Log:\n{}",
        "error: E0308 mismatched types\n".repeat(2_000)
    ));
    log.tool_call("c1", "write_file", json!({"path": "big.rs", "body": "x".repeat(30_000)}));
    log.tool_result("c1", "write_file", json!(format!("wrote {}", "y".repeat(3_000))));
    log.tool_call("c2", "bash", json!({"cmd": "cargo test"}));
    log.tool_result("c2", "bash", json!("2 failed"));
    log.assistant("The paste shows a type mismatch in the parser.");
    log.build()
}

#[test]
fn the_plain_builder_never_replaces_anything_but_tool_results() {
    let fold = fold_with_a_huge_paste();
    let err = build_summary_request(None, &fold, 8_000, &CharEstimator).expect_err("too big");
    assert!(matches!(err, SummaryInputError::CannotFit { budget: 8_000, .. }));
    let fits = build_summary_request(None, &fold, u64::MAX, &CharEstimator).expect("unbounded");
    assert!(fits.omitted_payloads.is_empty());
}

#[test]
fn the_largest_payloads_become_addressed_markers_until_the_request_fits() {
    let fold = fold_with_a_huge_paste();
    let request =
        build_oversized_summary_request(None, &fold, 8_000, &CharEstimator).expect("fits");
    assert!(checked(&request) <= 8_000);
    let user = text(&request.messages[1]);

    // Tool-result outputs went first (the large one; the short one stays), then the two
    // payloads larger than the window, largest first, each named by its archive address.
    assert_eq!(request.omitted_tool_results, 1);
    assert!(user.contains(&format!("[tool result c1] write_file:\n{TOOL_RESULT_OMISSION_MARKER}")));
    assert!(user.contains("[tool result c2] bash:\n2 failed"));
    let ids: Vec<&str> =
        request.omitted_payloads.iter().map(|p| p.runtime_event_id.as_str()).collect();
    assert_eq!(ids, [fold[0].runtime_event_id.as_str(), fold[1].runtime_event_id.as_str()]);
    for (omitted, event) in request.omitted_payloads.iter().zip(&fold) {
        let payload = summary_payload(event).expect("a payload");
        let address = ArchiveAddress::for_content("s", payload.as_bytes()).expect("address");
        assert_eq!(omitted.address, address.to_uri());
        assert!(user.contains(&format!(
            "{} bytes, archived at {}",
            payload.len(),
            omitted.address
        )));
        assert!(!user.contains(&payload), "the payload itself is not sent");
    }
    assert!(user.contains("[user]\n[user text omitted to fit the compaction request"));
    assert!(user.contains("[tool call c1] write_file [tool-call input omitted"));
    // Everything small is verbatim: the pairs, the answer.
    assert!(user.contains("[tool call c2] bash {\"cmd\":\"cargo test\"}"));
    assert!(user.contains("The paste shows a type mismatch in the parser."));
}

#[test]
fn a_payload_is_replaced_only_when_needed() {
    let fold = fold_with_a_huge_paste();
    // Room for the call input (about 7,500 tokens) but not for the paste (about 15,500): only the paste is replaced.
    let full = build_summary_request(None, &fold, u64::MAX, &CharEstimator).expect("unbounded");
    let request =
        build_oversized_summary_request(None, &fold, checked(&full) - 12_000, &CharEstimator)
            .expect("fits");
    assert_eq!(request.omitted_payloads.len(), 1);
    assert_eq!(request.omitted_payloads[0].runtime_event_id, fold[0].runtime_event_id);
    assert!(text(&request.messages[1]).contains(&"x".repeat(30_000)));
}

#[test]
fn instructions_that_cannot_fit_still_refuse() {
    let fold = fold_with_a_huge_paste();
    let err =
        build_oversized_summary_request(None, &fold, 300, &CharEstimator).expect_err("no room");
    let SummaryInputError::CannotFit { needed, budget } = err else { panic!("variant") };
    assert_eq!(budget, 300);
    assert!(needed > 300);
}
