//! Seeded scenarios for the behaviour vectors (`tests/vectors/projection.json` and
//! `tests/vectors/compaction.json`): agent sessions with tool calls, checkpoints made by the
//! core itself, and scripted provider answers. Each case is `{name, op, input, expected}`, with
//! `expected = ops::evaluate(op, input)` on the native core.

use contextfold_core::compaction::SUMMARY_SECTIONS;
use contextfold_core::{LogBuilder, RuntimeEvent};
use serde_json::{Value, json};

use crate::ops;
use crate::prng::SplitMix64;

/// Tool-result sizes, in bytes, that scenarios draw from.
const RESULT_SIZES: &[usize] = &[80, 400, 1_500];
/// Context windows scenarios draw from: small enough that a few turns cross high water.
const WINDOWS: &[u64] = &[900, 1_500, 3_000];

fn body(size: usize, seed: u64) -> String {
    let line = format!("fn check_{seed}() {{ assert_eq!(parse(\"héllo 世界\"), Ok(())); }}\n");
    line.repeat(size / line.len() + 1)
}

/// A session of `turns` turns; the last one is the current turn.
pub(crate) fn session(prng: &mut SplitMix64, index: u64, turns: u64) -> Vec<RuntimeEvent> {
    let mut log = LogBuilder::new(&format!("conf-{index:02}"));
    for turn in 1..=turns {
        let file = prng.below(9);
        log.turn(&format!("t{turn}"))
            .user(&format!("turn {turn}: fix the failing test in src/mod_{file}.rs"));
        for step in 0..prng.below(3) {
            log.response(Some(&format!("resp-{turn}-{step}"))).reasoning("which file next?");
            let calls = 1 + prng.below(2);
            for call in 0..calls {
                let cmd = format!("cargo test -p mod_{call} -- --nocapture");
                log.tool_call(&format!("c{turn}-{step}-{call}"), "shell", json!({ "cmd": cmd }));
            }
            log.response(None);
            for call in 0..calls {
                let size = *prng.pick(RESULT_SIZES);
                let output = body(size, prng.below(1_000));
                log.tool_result(&format!("c{turn}-{step}-{call}"), "shell", json!(output));
            }
        }
        if turn < turns {
            log.response(Some(&format!("resp-{turn}-final")))
                .assistant(
                    "Done with this step; I decided to keep the parser change in src/parse.rs.",
                )
                .response(None);
        }
    }
    log.build()
}

pub(crate) fn to_values(events: &[RuntimeEvent]) -> Vec<Value> {
    events.iter().map(|e| serde_json::to_value(e).expect("events serialize")).collect()
}

pub(crate) fn case(name: String, op: &str, input: Value) -> Value {
    let expected = ops::evaluate(op, &input);
    json!({ "name": name, "op": op, "input": input, "expected": expected })
}

pub(crate) fn codex() -> Value {
    json!({"provider": "openai-codex", "connectionSlug": "codex-main", "modelId": "gpt-5-codex"})
}

pub(crate) fn transcript_input(
    events: &[Value],
    current: &str,
    window: u64,
    extra: Value,
) -> Value {
    let mut input = json!({
        "trigger": "manual",
        "events": events,
        "currentTurnId": current,
        "model": {"contextWindow": window},
        "provider": codex(),
        "compactor": "text-summary",
        "checkpointId": "cp-new",
        "nowMs": 1_800_000_000_000u64,
        "summarizerLabel": "extractive",
        "script": [{"summary": "extractive"}, {"append": "ok"}],
    });
    if let (Value::Object(map), Value::Object(more)) = (&mut input, extra) {
        map.extend(more);
    }
    input
}

/// The checkpoint a scripted compaction records, if it records one.
pub(crate) fn recorded_checkpoint(input: &Value) -> Option<Value> {
    let out = ops::evaluate("compaction", input);
    let checkpoint = out["outcome"]["checkpoint"].clone();
    (!checkpoint.is_null()).then_some(checkpoint)
}

/// Every behaviour case for `seed`: (projection cases, compaction cases).
pub(crate) fn behaviour_cases(seed: u64) -> (Vec<Value>, Vec<Value>) {
    let mut prng = SplitMix64::new(seed ^ 0xc0ff_ee00);
    let mut projection = Vec::new();
    let mut compaction = Vec::new();
    let mut circuit = Vec::new();
    for index in 0..6u64 {
        let turns = 3 + prng.below(5);
        let mut events = session(&mut prng, index, turns);
        if index == 5
            && let Some(last) = events.last_mut()
        {
            last.pinned = true;
        }
        let values = to_values(&events);
        let current = format!("t{turns}");
        let window = *prng.pick(WINDOWS);
        let name = |what: &str| format!("s{index}_{what}");

        for (label, tokens, turns_kept, cur) in [
            ("prefix_plain", 0u64, 0u64, Some(current.as_str())),
            ("prefix_no_current", 0, 0, None),
            ("prefix_reserve_tokens", 600, 0, Some(current.as_str())),
            ("prefix_reserve_turns", 0, 2, Some(current.as_str())),
        ] {
            let input = json!({"events": values, "currentTurnId": cur,
                "reserveTailTokens": tokens, "reserveTailTurns": turns_kept});
            projection.push(case(name(label), "select_safe_prefix", input));
        }

        let base = transcript_input(&values, &current, window, json!({}));
        let checkpoint = recorded_checkpoint(&base);
        let model = json!({"contextWindow": window});
        projection.push(case(
            name("project_raw"),
            "project",
            json!({"events": values, "currentTurnId": current, "model": model, "failOpen": false}),
        ));
        if let Some(cp) = &checkpoint {
            let replay = |events: &Value, model: Value| {
                json!({"events": events, "currentTurnId": current, "checkpoint": cp,
                       "model": model, "provider": codex()})
            };
            let all = Value::Array(values.clone());
            projection.push(case(
                name("replay_same_log"),
                "evaluate_replay",
                replay(&all, model.clone()),
            ));
            projection.push(case(
                name("replay_small_window"),
                "evaluate_replay",
                replay(&all, json!({"contextWindow": 400})),
            ));
            let mut tampered = values.clone();
            tampered[0]["content"]["text"] = json!("a different first request");
            projection.push(case(
                name("replay_tampered"),
                "evaluate_replay",
                replay(&Value::Array(tampered), model.clone()),
            ));
            let covered = cp["coverage"]["eventCount"].as_u64().unwrap_or(1) as usize;
            let short = Value::Array(values[..covered.saturating_sub(1)].to_vec());
            projection.push(case(
                name("replay_short_log"),
                "evaluate_replay",
                replay(&short, model.clone()),
            ));
            for (label, fail_open, window) in
                [("project_checkpoint", false, window), ("project_fail_open", true, 700)]
            {
                let input = json!({"events": values, "currentTurnId": current, "checkpoint": cp,
                    "model": {"contextWindow": window}, "provider": codex(), "failOpen": fail_open});
                projection.push(case(name(label), "project", input));
            }
            compaction.push(case(
                name("rolling_pre_turn"),
                "compaction",
                transcript_input(
                    &values,
                    &current,
                    window / 2,
                    json!({"trigger": "pre-turn", "checkpoint": cp, "checkpointId": "cp-rolled"}),
                ),
            ));
        }
        for (label, extra) in transcript_variants(&mut prng) {
            let mut input = transcript_input(&values, &current, window, extra);
            if input["script"] == "played" {
                input["script"] = played_script(&input);
            }
            compaction.push(case(name(label), "compaction", input));
        }
        circuit.extend(circuit_case(&compaction, &values, &current, window, index));
        projection.extend(summary_cases(&events, index));
    }
    // Appended last so the earlier cases keep their places in the file.
    compaction.extend(circuit);
    compaction.push(oversized_paste_case());
    let (project_media, compact_media) = attachment_cases();
    projection.push(project_media);
    // Appended after every older case so each keeps its place in the file.
    projection.extend(crate::epoch_cases::epoch_cases());
    compaction.push(compact_media);
    let (project_window, compact_window) = crate::window_cases::smaller_window_cases();
    projection.extend(project_window);
    compaction.extend(compact_window);
    (projection, compaction)
}

/// A pasted log larger than the summarizer's whole window (about 15,000 tokens against a
/// 6,000-token history budget): the request carries it as a marker naming its archive address,
/// so every runtime must compute the same address and marker text.
fn oversized_paste_case() -> Value {
    let mut log = LogBuilder::new("s-paste");
    log.turn("t0").user(&format!("CI log:\n{}", "error[E0308]: mismatched types\n".repeat(1_940)));
    log.assistant("The log shows one type error, in the parser.");
    log.turn("t1").user("Fix it.").assistant("Fixed in src/parser.rs.");
    log.turn("t2").user("Now run the tests.");
    let values = to_values(log.events());
    let extra =
        json!({"summarizerLabel": null, "script": [{"summary": "extractive"}, {"append": "ok"}]});
    case("text_oversized_paste".into(), "compaction", transcript_input(&values, "t2", 8_000, extra))
}

/// A browser agent's session with a screenshot on every turn, as a user image or inside a tool
/// result: the projection prunes the stale ones to their archive address and estimates the rest
/// by the image rules; the compaction's transcript carries their stand-ins, never the bytes.
fn attachment_cases() -> (Value, Value) {
    use contextfold_core::EventContent;
    use contextfold_core::event::Attachment;
    let png: &[u8] = include_bytes!("../../core/tests/fixtures/screenshot.png");
    let shot = Attachment::from_bytes(None, png, Some("viewport.png".into())).expect("a real PNG");
    let mut log = LogBuilder::new("s-media");
    for turn in 0..6 {
        log.turn(&format!("t{turn}"));
        log.push(EventContent::UserText {
            text: format!("turn {turn}: does the page render? {}", "details ".repeat(40)),
            attachments: vec![shot.clone()],
        });
        let call = format!("shot-{turn}");
        log.response(Some(&format!("resp-{turn}"))).tool_call(&call, "screenshot", json!({}));
        log.response(None);
        log.push(EventContent::ToolResult {
            call_id: call,
            tool_name: "screenshot".into(),
            output: json!("captured the viewport"),
            is_error: false,
            attachments: vec![shot.clone()],
        });
        log.response(Some(&format!("resp-{turn}-end"))).assistant("It renders.").response(None);
    }
    let values = to_values(log.events());
    let project_input = json!({"events": values, "currentTurnId": "t5",
        "model": {"contextWindow": 200_000}, "failOpen": false});
    let extra =
        json!({"summarizerLabel": null, "script": [{"summary": "extractive"}, {"append": "ok"}]});
    (
        case("attachments_project".into(), "project", project_input),
        case(
            "text_attachments".into(),
            "compaction",
            transcript_input(&values, "t5", 4_000, extra),
        ),
    )
}

/// The session's compaction after its summarizer was malformed twice: the transcript gets the
/// malformed-input circuit that run left armed (the `circuit` input), and the core refuses to
/// send the same request again. `None` when that run armed nothing.
fn circuit_case(
    compaction: &[Value],
    values: &[Value],
    current: &str,
    window: u64,
    index: u64,
) -> Option<Value> {
    let armed_by = format!("s{index}_text_malformed_twice");
    let armed = compaction.iter().find(|c| c["name"] == armed_by.as_str())?;
    let circuit = &armed["expected"]["circuit"];
    if circuit["fingerprints"].as_array().is_none_or(Vec::is_empty) {
        return None;
    }
    let input = transcript_input(values, current, window, json!({ "circuit": circuit }));
    Some(case(format!("s{index}_text_circuit_open"), "compaction", input))
}

/// The script a summarizer that answers every request with the extractive summary, and a
/// ledger that accepts every append, play for `input`: one entry per effect handed out. Rolling
/// steps use it, since how many requests a step makes (a retention repair or not) is the
/// transaction's decision.
fn played_script(input: &Value) -> Value {
    use contextfold_core::compaction::{Compaction, Effect, FinishReason, Step, SummaryResponse};
    let compact = crate::transcript::compact_input(input).expect("a valid transcript input");
    let events = compact.events.clone();
    let mut tx = Compaction::start(compact).expect("the transaction starts");
    let mut script = Vec::new();
    loop {
        match tx.poll().expect("driver order") {
            Step::Effect(Effect::Summarize(effect)) => {
                script.push(json!({"summary": "extractive"}));
                let text = contextfold_core::compaction::extractive_summary_for(&events, &effect);
                let answer = SummaryResponse { text, finish_reason: FinishReason::Stop };
                tx.handle_summary(Ok(answer)).expect("a summary is awaited");
            }
            Step::Effect(Effect::AppendCheckpoint(_)) => {
                script.push(json!({"append": "ok"}));
                tx.handle_append(Ok(())).expect("an append is awaited");
            }
            Step::Effect(other) => panic!("a text transcript handed out {other:?}"),
            Step::Done(_) => return Value::Array(script),
        }
    }
}

fn item(n: u64) -> Value {
    json!({"type": "compaction", "id": format!("cmp_{n}"), "encrypted_content": format!("gAAAA{n:016x}")})
}

fn transcript_variants(prng: &mut SplitMix64) -> Vec<(&'static str, Value)> {
    let malformed =
        json!({"summary": {"text": "## Goal\nfix it\n## Later\nstuff", "finish": "stop"}});
    let native = json!({"compactor": "openai-codex-native"});
    let n = prng.below(1 << 40);
    let with_native = |script: Value| {
        let mut extra = native.clone();
        extra["script"] = script;
        extra
    };
    let steps = |n: usize| {
        let step = [json!({"summary": "extractive"}), json!({"append": "ok"})];
        Value::Array(step.iter().cycle().take(2 * n).cloned().collect())
    };
    vec![
        ("text_recorded", json!({})),
        // Active-turn folding: the current turn's settled steps are covered, its task replayed.
        ("text_mid_turn_recorded", json!({"trigger": "mid-turn", "script": steps(4)})),
        // A summarizer with an input window (not the extractive one): the fold is split into
        // rolling steps whose inputs fit, each recorded before the next.
        ("text_rolling_steps", json!({"summarizerLabel": null, "script": "played"})),
        (
            "text_rolling_steps_mid_turn",
            json!({"summarizerLabel": null, "trigger": "mid-turn", "script": "played"}),
        ),
        (
            "text_below_high_water",
            json!({"trigger": "pre-turn", "model": {"contextWindow": 200_000}}),
        ),
        (
            "text_repaired",
            json!({"script": [malformed, {"summary": "extractive"}, {"append": "ok"}]}),
        ),
        ("text_malformed_twice", json!({"script": [malformed, malformed]})),
        (
            "text_length_finish",
            json!({"script": [{"summary": {"text": "## Goal\nx", "finish": "length"}}, {"summary": "extractive"}, {"append": "ok"}]}),
        ),
        (
            "text_overflow_then_ok",
            json!({"script": [{"failure": {"kind": "overflow", "message": "413"}}, {"summary": "extractive"}, {"append": "ok"}]}),
        ),
        (
            "text_unavailable",
            json!({"trigger": "mid-turn", "script": [{"failure": {"kind": "unavailable", "message": "503"}}]}),
        ),
        (
            "text_append_conflict",
            json!({"script": [{"summary": "extractive"}, {"append": {"conflict": true, "message": "lost the race"}}]}),
        ),
        (
            "text_append_failed",
            json!({"trigger": "overflow", "script": [{"summary": "extractive"}, {"append": {"conflict": false, "message": "disk full"}}]}),
        ),
        ("text_cancelled", json!({"script": [{"cancel": true}]})),
        (
            "native_recorded",
            with_native(
                json!([{"native": [{"type": "reasoning", "id": "rs_1"}, item(n)]}, {"append": "ok"}]),
            ),
        ),
        (
            "native_two_items_fallback",
            with_native(
                json!([{"native": [item(n), item(n + 1)]}, {"summary": "extractive"}, {"append": "ok"}]),
            ),
        ),
        (
            "native_rejected_fallback",
            with_native(
                json!([{"failure": {"kind": "rejected", "message": "400"}}, {"summary": "extractive"}, {"append": "ok"}]),
            ),
        ),
        (
            "native_rate_limited",
            with_native(json!([{"failure": {"kind": "rate_limited", "message": "429"}}])),
        ),
    ]
}

fn summary_cases(events: &[RuntimeEvent], index: u64) -> Vec<Value> {
    let good = contextfold_core::compaction::extractive_summary(None, events, 2_000);
    let last_title = SUMMARY_SECTIONS.last().map_or("Critical Context", |s| s.title);
    let variants = [
        ("ok", good.clone(), "stop", 500u64),
        ("ok_end_turn", good.clone(), "end_turn", 500),
        ("length", good.clone(), "length", 500),
        ("empty", "  \n".to_owned(), "stop", 500),
        ("missing_section", good.replace(&format!("## {last_title}"), "## Notes"), "stop", 500),
        ("open_fence", format!("{good}\n```rust\nfn cut("), "stop", 500),
        ("error_text", "Error: rate limit exceeded, please retry".to_owned(), "stop", 500),
        ("truncated", format!("{good}\n- and then…"), "stop", 500),
        ("too_small", good.clone(), "stop", 60_000),
        ("other_finish", good, "weird_reason", 500),
    ];
    variants
        .into_iter()
        .map(|(label, text, finish, fold_tokens)| {
            let input = json!({"text": text, "finish": finish, "foldTokens": fold_tokens});
            case(format!("s{index}_summary_{label}"), "validate_summary", input)
        })
        .collect()
}
