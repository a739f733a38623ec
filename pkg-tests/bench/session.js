// A seeded generator of long coding sessions for the benchmark: user requests, tool calls with
// large unicode outputs (CJK, emoji, accents, quotes, backslashes, control characters) and
// assistant answers. The same seed gives the same events.
import { generator } from '../stores/random.js';

const WORDS = [
  'assertion', 'failed', 'left', 'right', 'src/lib.rs', 'ok', 'panicked', 'thread', 'main',
  '测试', '失败', 'ошибка', 'überprüfung', 'café', 'naïve', '🚀', '✅', '❌', '🦀', 'é',
  '"quoted"', 'back\\slash', 'tab\there', 'bell\u0007', '数据库', 'λ', '→', '∑', 'ü',
];

/** `count` events (a multiple of 4: user, tool call, tool result, answer per turn). */
export function generateSession(count, { seed = 7, outputBytes = 3000, sessionId = 'bench' } = {}) {
  const random = generator(seed);
  const word = () => WORDS[Math.floor(random() * WORDS.length)];
  const line = () => Array.from({ length: 8 + Math.floor(random() * 8) }, word).join(' ');
  const events = [];
  let seq = 1;
  const push = (turn, content, responseId) => {
    const event = {
      sessionId,
      runId: `run-${turn}`,
      turnId: `turn-${turn}`,
      runtimeEventId: `evt-${seq}`,
      seq,
      createdAtMs: 1_767_000_000_000 + seq * 1000,
      content,
    };
    if (responseId) event.responseId = responseId;
    events.push(event);
    seq += 1;
  };
  for (let turn = 0; events.length < count; turn += 1) {
    push(turn, { type: 'user_text', text: `Turn ${turn}: fix the failing test in src/模块_${turn}.rs — ${line()}` });
    const callId = `call-${turn}`;
    const input = { command: ['cargo', 'test', `module_${turn}`], cwd: '/work/项目', env: { RUST_LOG: 'debug' } };
    push(turn, { type: 'tool_call', callId, toolName: 'shell', input }, `resp-${turn}-a`);
    let output = '';
    while (output.length < outputBytes) output += `${line()}\n`;
    push(turn, { type: 'tool_result', callId, toolName: 'shell', output });
    push(turn, { type: 'assistant_text', text: `Fixed src/模块_${turn}.rs ✅ ${line()}` }, `resp-${turn}-b`);
  }
  return events.slice(0, count);
}
