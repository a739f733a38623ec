// The parts of a `Folding` step's request that are not history: the tokens its instructions and
// tool definitions take (measured with the core's estimator, as fixed overhead), and where the
// projection's system messages go in an ai@7 step (after the call's own instructions).
import { estimateEvents } from 'contextfold';

/** Estimated tokens of a text with the core's estimator (as a system note). */
export function estimateText(text) {
  if (!text) return 0;
  return estimateEvents([{ sessionId: 's', runId: 'r', turnId: 't', runtimeEventId: 'e', seq: 1, content: { type: 'system_note', text } }]);
}

/** Estimated tokens of a text with the core's estimator (cached for the last few texts). */
export function textTokens(cache, text) {
  if (!text) return 0;
  let tokens = cache.get(text);
  if (tokens === undefined) {
    tokens = estimateText(text);
    if (cache.size > 16) cache.clear();
    cache.set(text, tokens);
  }
  return tokens;
}

/** A call's instructions (a string, a system message or several) as one text to measure. */
export function instructionsText(instructions) {
  if (instructions === undefined || instructions === null) return '';
  if (typeof instructions === 'string') return instructions;
  return JSON.stringify(instructions);
}

/**
 * ai@7 refuses system messages among a step's messages (`streamText` checks every step): the
 * projection's system messages (a V2 checkpoint, system notes) go after the call's own
 * instructions (`initial`) instead. The override carries forward (`call.instructionsSet`), so
 * once set it is set on every step of the call. Returns the step's `{ messages, instructions? }`.
 */
export function withInstructions(call, messages, initial) {
  const system = messages.filter((message) => message.role === 'system');
  if (system.length === 0 && !call.instructionsSet) return { messages };
  call.instructionsSet = true;
  const own = initial === undefined || initial === null ? [] : typeof initial === 'string' ? [{ role: 'system', content: initial }] : [initial].flat();
  return { messages: messages.filter((message) => message.role !== 'system'), instructions: [...own, ...system] };
}

/**
 * How many of the leading system messages of a `prepareStep` request's provider prompt are the
 * call's own instructions: the rest are the last projection's (`projected`; ai@7 (`v7`): all its
 * system messages, moved into the instructions; ai@6: those it starts with).
 */
export function ownSystemCount(prompt, projected, v7) {
  const leading = (messages) => {
    const index = messages.findIndex((message) => message.role !== 'system');
    return index === -1 ? messages.length : index;
  };
  const fromProjection = v7 ? projected.filter((message) => message.role === 'system').length : leading(projected);
  return Math.max(0, leading(prompt) - fromProjection);
}
