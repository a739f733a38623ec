//! A `cdylib` that exercises the core (parsing, digesting, budgeting) so that CI can prove a
//! `wasm32-unknown-unknown` build of the core imports nothing from its host.
//! Built by `scripts/check-wasm-imports.sh`; not meant to be run natively.

#![allow(unsafe_code)] // `no_mangle` is the only way to export a symbol from a cdylib.

use contextfold_core::budget::{ContextBudget, ModelFacts};
use contextfold_core::{LogBuilder, digest::digest_prefix};

/// Builds a log of `turns` turns, digests it and returns the first digest byte plus the
/// history budget of a window of `turns * 1000` tokens, so nothing is optimized away.
#[unsafe(no_mangle)]
pub extern "C" fn contextfold_probe(turns: u32) -> u64 {
    let mut log = LogBuilder::new("probe");
    for turn in 0..turns {
        log.turn(&format!("t{turn}")).user("run the tests").tool_call(
            "c1",
            "shell",
            serde_json::json!({"cmd": "cargo test", "n": turn}),
        );
        log.tool_result("c1", "shell", serde_json::json!("ok: 12 passed, 0 failed ✓"));
    }
    let digest = digest_prefix(log.events());
    let facts = ModelFacts { context_window: Some(u64::from(turns) * 1000), ..Default::default() };
    let budget = ContextBudget::from_model(&facts);
    u64::from(digest.as_bytes()[7]) + budget.history_budget
}
