// The guarantees every loopback run must keep, checked on what the server received and on what
// the store holds.
import assert from 'node:assert/strict';
import { DatabaseSync } from 'node:sqlite';
import { digestPrefix, matchCheckpoint } from 'contextfold';

/** Asserts: no refused request, every request paired, the task in every agent request. */
export function assertRequests(state) {
  assert.equal(state.refused.length, 0, `the provider refused ${state.refused.length} requests: ${JSON.stringify(state.refused.slice(0, 2))}`);
  for (const [index, request] of state.requests.entries()) {
    assert.equal(request.unpaired, 0, `request ${index} (${request.kind}) holds an unpaired tool call or result`);
    assert.equal(request.badCompaction, 0, `request ${index} replays a compaction item the server never issued`);
    if (request.kind === 'agent') assert.ok(request.hasTask, `agent request ${index} lost the task`);
  }
}

/** Every checkpoint the store recorded: a MemoryStore's snapshot, or a SQLite ledger's rows. */
function recordedCheckpoints(store) {
  if (typeof store.snapshot === 'function') return store.snapshot().records.map((record) => record.payload);
  const db = new DatabaseSync(store.path, { readOnly: true });
  try {
    return db.prepare("SELECT payload_json FROM agent_run_events WHERE session_id = ? AND kind = 'history_compact_checkpoint_recorded' ORDER BY ordinal")
      .all(store.sessionId).map((row) => JSON.parse(row.payload_json));
  } finally {
    db.close();
  }
}

/** Asserts every recorded checkpoint verifies against the stored events; returns them. */
export function assertCheckpoints(store) {
  const events = store.log.events();
  const checkpoints = recordedCheckpoints(store);
  for (const checkpoint of checkpoints) {
    const { covered } = matchCheckpoint(checkpoint, events);
    assert.equal(covered, checkpoint.coverage.eventCount, `${checkpoint.checkpointId} covers what it says`);
    assert.equal(checkpoint.coverage.sourceDigest, digestPrefix(events.slice(0, covered)), `${checkpoint.checkpointId} digest`);
  }
  return checkpoints;
}

/** The figures of a run, for the test's report line. */
export function figures(state, checkpoints) {
  const agent = state.requests.filter((r) => r.kind === 'agent');
  return {
    requests: state.requests.length,
    agentRequests: agent.length,
    compactionRequests: state.compactions,
    summarizeRequests: state.summaries,
    refused: state.refused.length,
    checkpoints: checkpoints.length,
    maxRequestTokens: Math.max(...state.requests.map((r) => r.tokens)),
  };
}
