// The tools of the scripted coding agent: deterministic file and shell outputs of realistic
// size (300-1,500 o200k tokens each), seeded by the call's input.
import { tool } from 'ai';
import { z } from 'zod';

/** A small seeded PRNG (mulberry32). */
function random(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function seedOf(text) {
  let h = 2166136261;
  for (const ch of text) h = Math.imul(h ^ ch.charCodeAt(0), 16777619);
  return h >>> 0;
}

const WORDS = ['token', 'span', 'parser', 'lexer', 'node', 'scope', 'symbol', 'buffer', 'cursor', 'error', 'module', 'visit', 'emit', 'resolve', 'check'];

/** Rust-like source text of `lines` lines. */
export function sourceText(path, lines) {
  const next = random(seedOf(path));
  const word = () => WORDS[Math.floor(next() * WORDS.length)];
  const out = [`// ${path}`, 'use crate::{ast, diagnostics::Error};', ''];
  for (let i = 0; out.length < lines; i += 1) {
    const name = `${word()}_${word()}_${i}`;
    out.push(`/// Returns the ${word()} of the ${word()} at \`${name}\`.`);
    out.push(`pub fn ${name}(${word()}: &mut ${word()[0].toUpperCase()}${word().slice(1)}, idx: usize) -> Result<u32, Error> {`);
    out.push(`    let ${word()} = self.${word()}s.get(idx).ok_or(Error::Missing(${Math.floor(next() * 9000)}))?;`);
    out.push(`    Ok(${word()}.len() as u32 + ${Math.floor(next() * 100)})`);
    out.push('}');
  }
  return out.join('\n');
}

/** A cargo build log of `lines` lines. */
export function shellText(command, lines) {
  const next = random(seedOf(command));
  const out = [`$ ${command}`];
  for (let i = 0; out.length < lines; i += 1) {
    const file = `src/${WORDS[Math.floor(next() * WORDS.length)]}/${WORDS[Math.floor(next() * WORDS.length)]}.rs`;
    if (next() < 0.3) out.push(`error[E0${300 + Math.floor(next() * 300)}]: mismatched types at ${file}:${Math.floor(next() * 800)}:${Math.floor(next() * 80)}`);
    else out.push(`   Compiling contextfold-${WORDS[Math.floor(next() * WORDS.length)]} v0.${Math.floor(next() * 9)}.${i} (${file})`);
  }
  return out.join('\n');
}

/** The agent's tools: `read_file` (24-103 lines of source) and `run_shell` (16-79 lines of log). */
export function agentTools() {
  return {
    read_file: tool({
      description: 'Read a file of the repository.',
      inputSchema: z.object({ path: z.string() }),
      execute: async ({ path }) => sourceText(path, 24 + (seedOf(path) % 80)),
    }),
    run_shell: tool({
      description: 'Run a shell command in the repository.',
      inputSchema: z.object({ command: z.string() }),
      execute: async ({ command }) => shellText(command, 16 + (seedOf(command) % 64)),
    }),
  };
}

/** The scripted agent: tool calls for `steps - 1` steps, then the final answer. */
export function scriptedAgent(steps) {
  return (step) => {
    if (step >= steps - 1) return { text: `Done after ${step} tool calls: the build passes.` };
    return step % 3 === 2
      ? { tool: 'run_shell', input: { command: `cargo build -p crate_${step}` } }
      : { tool: 'read_file', input: { path: `src/module_${step}/file_${step}.rs` } };
  };
}
