//! Property tests: pairing, trigger placement and budget of every built request, and
//! redaction of any encrypted payload.

use super::*;
use proptest::prelude::*;

/// One step of a generated fold. Calls carry how many later steps their result waits for
/// (`None`: never settled).
#[derive(Debug, Clone)]
enum Step {
    User(String),
    Assistant(String),
    Reasoning,
    Note,
    Call { hosted: bool, delay: Option<u8>, payload: usize, error: bool },
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        "[a-z ]{0,60}".prop_map(Step::User),
        "[a-z ]{0,60}".prop_map(Step::Assistant),
        Just(Step::Reasoning),
        Just(Step::Note),
        (any::<bool>(), proptest::option::weighted(0.8, 0u8..4), 0usize..600, any::<bool>())
            .prop_map(|(hosted, delay, payload, error)| Step::Call {
                hosted,
                delay,
                payload,
                error
            }),
    ]
}

fn fold(steps: &[Step]) -> LogBuilder {
    let mut log = LogBuilder::new("s");
    let mut pending: Vec<(u8, String, bool, usize, bool)> = Vec::new();
    for (index, step) in steps.iter().enumerate() {
        match step {
            Step::User(text) => {
                log.user(text);
            }
            Step::Assistant(text) => {
                log.assistant(text);
            }
            Step::Reasoning => {
                log.reasoning("thinking");
            }
            Step::Note => {
                log.push(EventContent::SystemNote { text: "note".into() });
            }
            Step::Call { hosted, delay, payload, error } => {
                let id = format!("call_{index}");
                let input = json!({ "n": index });
                let name = "tool".to_string();
                log.push(if *hosted {
                    EventContent::HostedToolCall { call_id: id.clone(), tool_name: name, input }
                } else {
                    EventContent::ToolCall { call_id: id.clone(), tool_name: name, input }
                });
                if let Some(delay) = delay {
                    pending.push((*delay, id, *hosted, *payload, *error));
                }
            }
        }
        let (due, waiting): (Vec<_>, Vec<_>) =
            pending.into_iter().partition(|(delay, ..)| *delay == 0);
        pending = waiting.into_iter().map(|(d, i, h, p, e)| (d - 1, i, h, p, e)).collect();
        due.into_iter().for_each(|due| push_result(&mut log, due));
    }
    pending.into_iter().for_each(|due| push_result(&mut log, due));
    log
}

fn push_result(
    log: &mut LogBuilder,
    (_, call_id, hosted, payload, is_error): (u8, String, bool, usize, bool),
) {
    let output = json!("r".repeat(payload));
    let tool_name = "tool".to_string();
    log.push(if hosted {
        EventContent::HostedToolResult { call_id, tool_name, output, is_error }
    } else {
        EventContent::ToolResult { call_id, tool_name, output, is_error, attachments: Vec::new() }
    });
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn every_call_has_exactly_one_output_and_the_trigger_is_last(
        steps in proptest::collection::vec(step(), 0..24),
        percent in 10u64..=110,
        rolling in any::<bool>(),
    ) {
        let log = fold(&steps);
        let previous = rolling.then(state);
        let unbounded = build_native_request(previous.as_ref(), log.events(), u64::MAX, &CharEstimator);
        let full = unbounded.expect("generated folds are valid").estimated_input_tokens;
        let budget = full * percent / 100;
        match build_native_request(previous.as_ref(), log.events(), budget, &CharEstimator) {
            Ok(request) => {
                prop_assert_eq!(request.input.last(), Some(&json!({"type": "compaction_trigger"})));
                let triggers = request.input.iter().filter(|i| i["type"] == "compaction_trigger").count();
                prop_assert_eq!(triggers, 1);
                prop_assert_eq!(rolling, request.input[0]["type"] == "compaction");
                prop_assert!(request.estimated_input_tokens <= budget);
                let mut calls: HashMap<String, (usize, usize)> = HashMap::new();
                let mut markers = 0;
                for (position, item) in request.input.iter().enumerate() {
                    prop_assert_ne!(&item["type"], "reasoning");
                    let call_id = item["call_id"].as_str().unwrap_or_default().to_owned();
                    match item["type"].as_str() {
                        Some("function_call") => {
                            let entry = calls.entry(call_id).or_insert((0, 0));
                            prop_assert_eq!(entry.1, 0, "output before its call");
                            entry.0 += 1;
                        }
                        Some("function_call_output") => {
                            calls.entry(call_id).or_insert((0, 0)).1 += 1;
                            prop_assert!(position > 0);
                            markers += usize::from(item["output"] == TOOL_RESULT_OMISSION_MARKER);
                        }
                        _ => {}
                    }
                }
                for (call_id, counts) in &calls {
                    prop_assert_eq!(*counts, (1, 1), "call {}", call_id);
                }
                prop_assert_eq!(markers as u64, request.omitted_tool_results);
            }
            Err(NativeInputError::CannotFit { needed, budget: reported }) => {
                prop_assert_eq!(reported, budget);
                prop_assert!(needed > budget);
            }
            Err(other) => prop_assert!(false, "generated folds are valid: {other:?}"),
        }
    }

    #[test]
    fn redaction_leaves_no_encrypted_payload(
        payloads in proptest::collection::vec("[A-Za-z0-9]{8,40}", 1..6),
        depth in 0usize..4,
        camel in proptest::collection::vec(any::<bool>(), 6),
    ) {
        let marked: Vec<String> = payloads.iter().map(|p| format!("ENC{p}")).collect();
        let mut items = Vec::new();
        for (index, payload) in marked.iter().enumerate() {
            let key = if camel[index % camel.len()] { "encryptedContent" } else { "encrypted_content" };
            let mut item = json!({ "type": "compaction", "id": format!("cmp_{index}") });
            item[key] = json!(payload);
            for _ in 0..depth {
                item = json!({ "wrapped": [item, "plain"] });
            }
            items.push(item);
        }
        let mut captured = json!({ "input": items, "model": "m" });
        redact_provider_state(&mut captured);
        let text = serde_json::to_string(&captured).expect("serializes");
        for payload in &marked {
            prop_assert!(!text.contains(payload.as_str()));
        }
        prop_assert_eq!(text.matches("[redacted]").count(), marked.len());
    }
}
