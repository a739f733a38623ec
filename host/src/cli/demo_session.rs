//! The bundled demo session, generated deterministically: a coding agent fixing a Rust
//! service over 40 turns, with large file reads and test logs, shell commands, failing tools
//! and parallel tool calls.

use serde_json::{Value, json};

/// Number of turns in the demo session.
pub(crate) const DEMO_TURNS: usize = 40;

const FILES: &[&str] = &[
    "src/ledger/append.rs",
    "src/ledger/replay.rs",
    "src/ledger/mod.rs",
    "src/http/routes.rs",
    "src/http/auth.rs",
    "src/storage/sqlite.rs",
    "src/storage/migrations.rs",
    "src/config.rs",
    "tests/replay_after_crash.rs",
    "tests/http_contract.rs",
];

const REQUESTS: &[&str] = &[
    "The ledger service drops events after a crash. Find out why `replay_after_crash` fails.",
    "Run the whole test suite and tell me which tests fail.",
    "Look at how src/ledger/replay.rs reads the WAL; I suspect the seq check.",
    "Keep the public API of Ledger::append unchanged, that is a hard constraint.",
    "Try fixing the off-by-one in replay and rerun the failing test.",
    "The HTTP contract tests also fail now. Check src/http/routes.rs.",
    "Do not touch the migrations, they are already deployed.",
    "Add a regression test for the gap detection.",
    "Why does cargo clippy complain about src/storage/sqlite.rs?",
    "Rename the `seqno` field to `seq` everywhere except in the SQL schema.",
];

/// SplitMix64: small, seeded, reproducible.
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Self {
        Self(seed)
    }

    pub(crate) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    pub(crate) fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// One tool call and the result the tool produced.
pub(crate) struct ToolExchange {
    pub(crate) call_id: String,
    pub(crate) tool: &'static str,
    pub(crate) input: Value,
    pub(crate) output: Value,
    pub(crate) is_error: bool,
}

/// One model response: reasoning plus parallel tool calls.
pub(crate) struct AgentStep {
    pub(crate) reasoning: String,
    pub(crate) calls: Vec<ToolExchange>,
}

/// One turn of the demo.
pub(crate) struct DemoTurn {
    pub(crate) request: String,
    pub(crate) steps: Vec<AgentStep>,
    pub(crate) answer: String,
}

/// Generates the demo session.
pub(crate) fn demo_turns() -> Vec<DemoTurn> {
    let mut rng = Rng::new(0x00C0_FFEE);
    (0..DEMO_TURNS).map(|turn| demo_turn(turn, &mut rng)).collect()
}

fn demo_turn(turn: usize, rng: &mut Rng) -> DemoTurn {
    let base = REQUESTS[turn % REQUESTS.len()];
    let mut request = if turn < REQUESTS.len() {
        base.to_owned()
    } else {
        format!("(round {}) {base}", turn / REQUESTS.len() + 1)
    };
    // Now and then the user pastes a whole CI log into the request, as users do: the new turn
    // alone can push the next request over the budget (the pre-turn trigger).
    if turn % 13 == 12 {
        let log = test_log(turn, 600, 3);
        request.push_str(&format!("\n\nHere is the CI log:\n```\n{log}```"));
    }
    let step_count = 1 + rng.below(3) as usize;
    let steps = (0..step_count)
        .map(|step| {
            let parallel = 1 + rng.below(3) as usize;
            let calls = (0..parallel).map(|call| exchange(turn, step, call, rng)).collect();
            AgentStep {
                reasoning: format!(
                    "Step {step} of turn {turn}: decide which files and commands to check next."
                ),
                calls,
            }
        })
        .collect();
    let file = FILES[rng.below(FILES.len() as u64) as usize];
    let answer = format!(
        "Turn {turn} done. I changed {file} and kept Ledger::append unchanged. Next: rerun `cargo test --test replay_after_crash`."
    );
    DemoTurn { request, steps, answer }
}

fn exchange(turn: usize, step: usize, call: usize, rng: &mut Rng) -> ToolExchange {
    let call_id = format!("call_{turn}_{step}_{call}");
    let file = FILES[rng.below(FILES.len() as u64) as usize];
    match rng.below(4) {
        0 | 1 => ToolExchange {
            call_id,
            tool: "read_file",
            input: json!({"path": file}),
            output: Value::String(source_file(file, 15 + rng.below(45) as usize)),
            is_error: false,
        },
        2 => {
            let failing = rng.below(3) as usize;
            ToolExchange {
                call_id,
                tool: "shell",
                input: json!({"command": "cargo test --workspace -- --nocapture"}),
                output: Value::String(test_log(turn, 30 + rng.below(40) as usize, failing)),
                is_error: failing > 0,
            }
        }
        _ => ToolExchange {
            call_id,
            tool: "grep",
            input: json!({"pattern": "seqno", "path": "src/"}),
            output: Value::String(
                (0..(5 + rng.below(30)))
                    .map(|i| {
                        format!(
                            "{}:{}:    let seqno = entry.seqno + {i};",
                            FILES[(i as usize) % FILES.len()],
                            10 + i * 7
                        )
                    })
                    .collect::<Vec<_>>()
                    .join("\n"),
            ),
            is_error: false,
        },
    }
}

fn source_file(path: &str, lines: usize) -> String {
    let module = path.trim_end_matches(".rs").replace('/', "::");
    let mut out = format!("// {path}\nuse crate::ledger::{{Entry, Seq}};\n\n");
    for i in 0..lines {
        out.push_str(&format!(
            "pub fn step_{i}(entries: &[Entry], from: Seq) -> Option<Seq> {{ entries.iter().map(|e| e.seqno).find(|s| *s > from + {i}) }} // {module}\n"
        ));
    }
    out
}

fn test_log(turn: usize, tests: usize, failing: usize) -> String {
    let mut out = format!(
        "   Compiling ledger-svc v0.3.{turn} (/work/ledger-svc)\n    Finished test profile\nrunning {tests} tests\n"
    );
    for i in 0..tests {
        let status = if i < failing { "FAILED" } else { "ok" };
        out.push_str(&format!("test ledger::tests::case_{i}_replays_entries ... {status}\n"));
    }
    for i in 0..failing {
        out.push_str(&format!(
            "\n---- ledger::tests::case_{i}_replays_entries stdout ----\nthread 'ledger::tests::case_{i}_replays_entries' panicked at src/ledger/replay.rs:{}:9:\nassertion `left == right` failed: gap after seq {}\n  left: {}\n right: {}\n",
            140 + i,
            1000 + turn,
            1001 + turn,
            1002 + turn
        ));
    }
    out.push_str(&format!(
        "\ntest result: {}. {} passed; {failing} failed\n",
        if failing > 0 { "FAILED" } else { "ok" },
        tests - failing
    ));
    out
}
