// A coding-agent session for the store tests (Node and Chromium): turns of a user request, a
// shell call, its long result and an answer, and a compaction over a store's log with the
// package's extractive summarizer, recorded through the store's compare-and-swap.
import { compact } from 'contextfold';

/** The provider identity of every test compaction. */
export const PROVIDER = { provider: 'offline', connectionSlug: 'local', modelId: 'm' };

/** The four events of turn `turn`, starting at `seq`. */
export function turnEvents(sessionId, turn, seq) {
  const base = { sessionId, runId: `run-${turn}`, turnId: `t${turn}` };
  const at = (offset) => ({ ...base, runtimeEventId: `e${seq + offset}`, seq: seq + offset, createdAtMs: 1_700_000_000_000 + (seq + offset) * 1000 });
  return [
    { ...at(0), content: { type: 'user_text', text: `Turn ${turn}: fix the failing test in src/module_${turn}.rs` } },
    { ...at(1), content: { type: 'tool_call', callId: `call-${turn}`, toolName: 'shell', input: { timeout: 30, command: ['cargo', 'test', `module_${turn}`] } } },
    { ...at(2), content: { type: 'tool_result', callId: `call-${turn}`, toolName: 'shell', output: `test module_${turn}::works ... FAILED\n`.repeat(60) } },
    { ...at(3), content: { type: 'assistant_text', text: `Fixed src/module_${turn}.rs; tests pass. \u6d4b\u8bd5 \ud83e\udd80` } },
  ];
}

/** `turns` turns of `sessionId` from turn `first` (seq continues from `first * 4 + 1`). */
export function sessionEvents(sessionId, turns, first = 0) {
  const events = [];
  for (let turn = first; turn < first + turns; turn += 1) events.push(...turnEvents(sessionId, turn, turn * 4 + 1));
  return events;
}

/**
 * Compacts the store's log (manual trigger, a small context window) and records the
 * checkpoint and circuit through the store. Resolves to the outcome.
 */
export async function compactStore(store, checkpointId, contextWindow = 1500) {
  const events = store.log.events();
  return compact(
    {
      events: store.log,
      checkpoint: store.checkpoint,
      model: { contextWindow },
      trigger: 'manual',
      provider: PROVIDER,
      checkpointId,
      nowMs: 1_760_000_000_000,
      summarizerLabel: 'extractive',
      ...(store.circuit ? { circuit: store.circuit } : {}),
    },
    {
      async summarize(_request, { extractiveSummary }) {
        return { text: extractiveSummary(), finishReason: 'stop' };
      },
      appendCheckpoint: (checkpoint) => store.appendCheckpoint(checkpoint),
      recordCircuit: (circuit) => store.recordCircuit(circuit),
    },
  );
}
