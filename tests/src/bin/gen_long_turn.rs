//! Writes one seeded long single-turn session as RuntimeEvent JSON Lines.
//!
//! Usage: `cargo run -p contextfold-conformance --bin gen-long-turn -- --seed N --steps N
//! [--prior-turns N] [--session ID] --out FILE`. The file imports with `contextfold import
//! --format events-jsonl`; see `contextfold_conformance::long_turn` for what it contains.

use std::process::ExitCode;

use contextfold_conformance::long_turn::{LongTurnSpec, long_turn_session, to_jsonl};

const USAGE: &str =
    "usage: gen-long-turn --seed N --steps N [--prior-turns N] [--session ID] --out FILE";

fn number<T: std::str::FromStr>(flag: &str, value: Option<String>) -> Result<T, String> {
    let value = value.ok_or_else(|| format!("{flag} needs a value"))?;
    value.parse().map_err(|_| format!("{flag} must be an unsigned integer, got `{value}`"))
}

fn parse(args: impl Iterator<Item = String>) -> Result<(LongTurnSpec, String), String> {
    let (mut seed, mut steps, mut prior, mut session, mut out) = (None, None, 0u32, None, None);
    let mut args = args.peekable();
    while let Some(flag) = args.next() {
        match flag.as_str() {
            "--seed" => seed = Some(number::<u64>(&flag, args.next())?),
            "--steps" => steps = Some(number::<u32>(&flag, args.next())?),
            "--prior-turns" => prior = number::<u32>(&flag, args.next())?,
            "--session" => session = Some(args.next().ok_or("--session needs a value")?),
            "--out" => out = Some(args.next().ok_or("--out needs a value")?),
            "-h" | "--help" => return Err(USAGE.to_owned()),
            other => return Err(format!("unknown argument `{other}`")),
        }
    }
    let seed = seed.ok_or("--seed is required")?;
    let steps = steps.ok_or("--steps is required")?;
    let out = out.ok_or("--out is required")?;
    let mut spec = LongTurnSpec::new(seed, steps).with_prior_turns(prior);
    if let Some(session) = session {
        spec.session_id = session;
    }
    Ok((spec, out))
}

fn main() -> ExitCode {
    let (spec, out) = match parse(std::env::args().skip(1)) {
        Ok(parsed) => parsed,
        Err(message) => {
            eprintln!("gen-long-turn: {message}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let events = long_turn_session(&spec);
    if let Err(error) = std::fs::write(&out, to_jsonl(&events)) {
        eprintln!("gen-long-turn: cannot write {out}: {error}");
        return ExitCode::FAILURE;
    }
    eprintln!(
        "gen-long-turn: wrote {} events ({} steps) of session {} to {out}",
        events.len(),
        spec.steps,
        spec.session_id
    );
    ExitCode::SUCCESS
}
