//! A session that moves to a smaller window (issue 41): a checkpoint made at 32k covers the
//! whole safe prefix but does not fit 8k, so the next compaction compresses the same prefix
//! again (`recompress_for_budget`), and the request with its checkpoint fits. Every runtime
//! replays the compaction and the projection after it.

use contextfold_core::LogBuilder;
use serde_json::{Value, json};

use crate::scenarios::{case, recorded_checkpoint, to_values, transcript_input};

/// Session `session_id` of `turns` turns whose tool results carry a dozen distinct error lines
/// each: the exact artifacts the extractive summarizer keeps, so its 32k summary of 40 turns is
/// too large for 8k (the host's CLI tests use it too).
pub fn artifact_session(session_id: &str, turns: usize) -> LogBuilder {
    let mut log = LogBuilder::new(session_id);
    for n in 1..=turns {
        let errors: String = (1..=12)
            .map(|k| {
                format!("error[E{n:02}{k:02}]: mismatched types in src/m{n}/p{k}.rs:{}\n", n * k)
            })
            .collect();
        log.turn(&format!("t{n}"))
            .user(&format!("turn {n}: run `cargo test -p crate_{n}` and fix what fails"))
            .response(Some(&format!("resp-{n}-a")))
            .tool_call(
                &format!("c{n}"),
                "shell",
                json!({"cmd": format!("cargo test -p crate_{n}")}),
            )
            .response(None)
            .tool_result(&format!("c{n}"), "shell", json!(errors))
            .response(Some(&format!("resp-{n}-b")))
            .assistant(&format!("Fixed src/m{n}/p1.rs; `cargo test -p crate_{n}` passes."))
            .response(None);
    }
    log
}

/// (projection cases, compaction cases) of the 32k → 8k switch.
pub(crate) fn smaller_window_cases() -> (Vec<Value>, Vec<Value>) {
    let mut log = artifact_session("s-window", 40);
    let folded = to_values(log.events());
    let last = folded.len();
    let at_32k = transcript_input(&folded, "none", 32_000, json!({"currentTurnId": null}));
    let large = recorded_checkpoint(&at_32k).expect("the 32k compaction records");
    assert_eq!(large["coverage"]["eventCount"], json!(last));
    log.turn("t41").user("turn 41: now run the whole workspace's tests");
    let events = to_values(log.events());
    let at_8k = transcript_input(
        &events,
        "t41",
        8_000,
        json!({"trigger": "pre-turn", "checkpoint": large, "checkpointId": "cp-8k"}),
    );
    let small = recorded_checkpoint(&at_8k).expect("the 8k compaction records");
    let project = |checkpoint: &Value| {
        json!({"events": events, "currentTurnId": "t41", "checkpoint": checkpoint,
               "model": {"contextWindow": 8_000}, "provider": crate::scenarios::codex(),
               "failOpen": false})
    };
    let projection = vec![
        case("window_32k_checkpoint_at_8k".into(), "project", project(&large)),
        case("window_recompressed_at_8k".into(), "project", project(&small)),
    ];
    let compaction = vec![case("text_recompress_smaller_window".into(), "compaction", at_8k)];
    (projection, compaction)
}
