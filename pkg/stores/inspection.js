// What `checkpoints()`, `verify()` and `retractCheckpoint()` of every store compute from the
// recorded checkpoint events and retractions: the same listing, checks and refusals as the
// native `contextfold checkpoints` / `verify` / `checkpoints --retract`, through the core's
// recovery (`recoverCheckpoint`, which skips a retracted checkpoint and every checkpoint built on
// it as `checkpoint_retracted`).
import { ContextfoldError, matchCheckpoint, parseCheckpoint, recoverCheckpoint } from 'contextfold';

/** The AgentRun kind of a retraction (the native ledger's `checkpoint_retracted`). */
export const CHECKPOINT_RETRACTED = 'checkpoint_retracted';

/** Why each retracted checkpoint record was taken back, by its event id. */
export function retractedByEvent(recovery) {
  const taken = new Map();
  for (const skip of recovery.skipped) {
    if (skip.reason === CHECKPOINT_RETRACTED) taken.set(skip.eventId, skip.detail);
  }
  return taken;
}

/** The listing of `checkpoints()` (see `SessionStore.checkpoints`). */
export function listCheckpoints(sessionId, records, retractions, currentEventId) {
  const retracted = retractedByEvent(recoverCheckpoint(sessionId, records, retractions));
  return records.map((record) => {
    try {
      const checkpoint = parseCheckpoint(record.payload);
      return {
        eventId: record.eventId,
        recordedAtMs: record.recordedAtMs,
        checkpointId: checkpoint.checkpointId,
        schemaVersion: checkpoint.schemaVersion,
        eventCount: Number(checkpoint.coverage.eventCount),
        turnCount: Number(checkpoint.coverage.turnCount),
        estimatedTokens: Number(checkpoint.estimatedTokens),
        previousCheckpointId: checkpoint.previousCheckpointId ?? null,
        producedBy: checkpoint.producedBy ?? null,
        current: record.eventId === currentEventId,
        retracted: retracted.get(record.eventId) ?? null,
      };
    } catch (error) {
      return { eventId: record.eventId, error: { code: error.code, message: error.message } };
    }
  });
}

/** The report of `verify()` over `events` (see `SessionStore.verify`). */
export function verifyRecords(sessionId, events, records, retractions, current) {
  const recovery = recoverCheckpoint(sessionId, records, retractions);
  const retracted = retractedByEvent(recovery);
  const checkpoints = records.map((record) => {
    const mark = (result) => (retracted.has(record.eventId) ? { ...result, retracted: retracted.get(record.eventId) } : result);
    try {
      const checkpoint = parseCheckpoint(record.payload);
      try {
        matchCheckpoint(checkpoint, events);
        return mark({ eventId: record.eventId, checkpointId: checkpoint.checkpointId, ok: true });
      } catch (error) {
        return mark({ eventId: record.eventId, checkpointId: checkpoint.checkpointId, ok: false, code: error.code, detail: error.message });
      }
    } catch (error) {
      return { eventId: record.eventId, checkpointId: null, ok: false, code: error.code, detail: error.message };
    }
  });
  const checkpointId = current?.checkpointId ?? null;
  const recoveredTip = recovery.checkpoint?.checkpointId ?? null;
  const projection = { ok: checkpointId === recoveredTip, checkpointId, recoveredTip };
  return { ok: projection.ok && checkpoints.every((c) => c.ok), events: events.length, checkpoints, retractions: retractions.slice(), projection };
}

/**
 * The retraction record of `checkpointId`, after the checks `contextfold checkpoints --retract`
 * makes: `invalid_argument` for a missing id or reason, `checkpoint_not_found` when no recorded
 * checkpoint has that id, `checkpoint_already_retracted` when it is taken back already.
 */
export function retractionFor(sessionId, records, retractions, checkpointId, reason) {
  if (typeof checkpointId !== 'string' || checkpointId === '' || typeof reason !== 'string' || reason === '') {
    throw new ContextfoldError('invalid_argument', 'retractCheckpoint needs a checkpoint id and a reason');
  }
  const named = records.filter((record) => record.payload?.checkpointId === checkpointId).map((record) => record.eventId);
  if (named.length === 0) {
    throw new ContextfoldError('checkpoint_not_found', `session ${sessionId} has no recorded checkpoint ${checkpointId}`);
  }
  const retracted = retractedByEvent(recoverCheckpoint(sessionId, records, retractions));
  if (named.some((eventId) => retracted.has(eventId))) {
    throw new ContextfoldError('checkpoint_already_retracted', `checkpoint ${checkpointId} is already retracted`);
  }
  const recordedAtMs = Date.now();
  return { eventId: `${CHECKPOINT_RETRACTED}:${checkpointId}:${recordedAtMs}`, sessionId, recordedAtMs, checkpointId, reason };
}
