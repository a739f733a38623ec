// The build-log tool loop the AI SDK tests drive (ai@6 on Node 20): a `run_shell` tool whose
// output is 300-1,500 tokens of a build log, and the o200k_base count of a provider-level prompt
// that the scripted models compare with their window. Shared by ai-sdk-adapter.test.js and
// ai-sdk-resume.test.js.
import { tool } from 'ai';
import { getEncoding } from 'js-tiktoken';
import { z } from 'zod';

/** The o200k_base encoding the scripted providers count with. */
export const encoding = getEncoding('o200k_base');

/** Tool output of 300-1,500 tokens: lines of a build log. */
export function output(step) {
  const lines = 10 + ((step * 37) % 40);
  return Array.from({ length: lines }, (_, i) => `   Compiling crate_${step}_${i} v0.${i % 7}.${step} (src/module_${i}/parser_${step}.rs) error[E0${300 + ((i * step) % 300)}]`).join('\n');
}

/** `run_shell`: `$ <command>` and the build log of the step the command names (`…_<step>`). */
export const tools = {
  run_shell: tool({ inputSchema: z.object({ command: z.string() }), execute: async ({ command }) => `$ ${command}\n${output(Number(command.split('_').at(-1)))}` }),
};

/** The o200k tokens of a provider-level prompt (texts, tool inputs and outputs, 3 an item). */
export function promptTokens(prompt) {
  let tokens = 0;
  for (const message of prompt) {
    const parts = typeof message.content === 'string' ? [{ type: 'text', text: message.content }] : message.content;
    for (const part of parts) {
      const text = part.text ?? (part.type === 'tool-call' ? JSON.stringify(part.input) : part.type === 'tool-result' ? JSON.stringify(part.output) : JSON.stringify(part));
      tokens += encoding.encode(text).length + 3;
    }
  }
  return tokens;
}
