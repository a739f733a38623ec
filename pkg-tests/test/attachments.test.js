// Images and files through the built package: the AI SDK importer and every wire format, the
// real WebVoyager and OpenWebVoyager screenshot trajectories (Apache-2.0, tests/trajectories/
// multimodal/README.md) compacted at a small window with the summarizer never seeing a byte,
// and bad attachments refused with typed codes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import {
  EventLog, compact, digestPrefix, extractiveSummary, importAnthropic, importModelMessages,
  importOpenAIChat, importOpenAIResponses, project,
} from 'contextfold';
import { repoRoot } from './helpers.js';

const fixture = (name) => readFileSync(path.join(repoRoot, 'core', 'tests', 'fixtures', name));
const PNG = fixture('screenshot.png').toString('base64');
const PDF = fixture('report.pdf').toString('base64');
const trajectory = (name) => JSON.parse(readFileSync(
  path.join(repoRoot, 'tests', 'trajectories', 'multimodal', name), 'utf8'));

const history = [
  { role: 'user', content: [
    { type: 'text', text: 'What is on this page? The report is attached.' },
    { type: 'image', image: `data:image/png;base64,${PNG}`, mediaType: 'image/png' },
    { type: 'file', data: PDF, mediaType: 'application/pdf', filename: 'report.pdf' },
  ] },
  { role: 'assistant', content: [{ type: 'tool-call', toolCallId: 'shot-1', toolName: 'screenshot', input: {} }] },
  { role: 'tool', content: [{ type: 'tool-result', toolCallId: 'shot-1', toolName: 'screenshot', output: {
    type: 'content', value: [
      { type: 'text', text: 'Captured the viewport.' },
      { type: 'image-data', data: PNG, mediaType: 'image/png' },
    ] } }] },
];

test('AI SDK images and files import content-addressed and come back on every wire format', () => {
  const events = importModelMessages(history, { sessionId: 'media' });
  const [image, pdf] = events[0].content.attachments;
  assert.deepEqual([image.mediaType, image.width, image.height, image.byteLength], ['image/png', 64, 48, 6321]);
  assert.match(image.sha256, /^[0-9a-f]{64}$/);
  assert.equal(pdf.name, 'report.pdf');
  assert.equal(events[2].content.attachments.length, 1);

  const model = { contextWindow: 100_000 };
  const aiSdk = project({ events, model, format: 'ai-sdk' }).messages;
  assert.deepEqual(aiSdk[0].content[1], { type: 'image', image: PNG, mediaType: 'image/png' });
  assert.deepEqual(aiSdk[2].content[0].output.value[1], { type: 'image-data', data: PNG, mediaType: 'image/png' });
  const chat = project({ events, model, format: 'openai-chat' }).messages;
  assert.equal(chat[0].content[1].image_url.url, `data:image/png;base64,${PNG}`);
  assert.equal(chat[0].content[2].file.filename, 'report.pdf');
  const responses = project({ events, model, format: 'openai-responses' }).messages;
  assert.equal(responses[0].content[1].type, 'input_image');
  assert.equal(responses[2].output[1].type, 'input_image');
  const anthropic = project({ events, model, format: 'anthropic' }).messages;
  assert.equal(anthropic[0].content[2].type, 'document');
  assert.equal(anthropic[2].content[0].content[1].source.data, PNG);

  // The estimate follows the image rules (64 x 48: 255 tokens), not the 8.4 kB of base64.
  const textOnly = project({ events: events.slice(0, 1).map((e) => ({ ...e, content: { type: 'user_text', text: e.content.text } })), model });
  const withMedia = project({ events: events.slice(0, 1), model });
  assert.equal(withMedia.estimatedTokens - textOnly.estimatedTokens, 255 + 4 + 3000 + 4);
});

test('a Responses input with input_image and input_file reads back as the same request', () => {
  const events = importModelMessages(history, { sessionId: 'media' });
  const model = { contextWindow: 100_000 };
  const input = project({ events, model, format: 'openai-responses' }).messages;
  const back = importOpenAIResponses({ input }, { sessionId: 'media' });
  assert.deepEqual(project({ events: back, model, format: 'openai-responses' }).messages, input);
  assert.equal(back[0].content.attachments[1].name, 'report.pdf');
  assert.throws(() => importOpenAIResponses([{ role: 'user', content: [{ type: 'input_image', file_id: 'f' }] }], { sessionId: 'x' }),
    (error) => error.code === 'responses_import_unsupported');
});

test('the digest covers attachments through their hash, in JS exactly as natively', () => {
  const events = importModelMessages(history, { sessionId: 'media' });
  const log = new EventLog();
  log.append(events);
  assert.equal(log.digest(), digestPrefix(events));
  const tampered = structuredClone(events);
  tampered[0].content.attachments[0].sha256 = '0'.repeat(64);
  assert.throws(() => digestPrefix(tampered), (error) => error.code === 'event_invalid_attachment');
});

test('bad attachments are typed errors and nothing is imported', () => {
  const user = (part) => [{ role: 'user', content: [part] }];
  const cases = [
    [importModelMessages, user({ type: 'image', image: 'data:image/png;base64,@@@', mediaType: 'image/png' }), 'attachment_invalid_base64'],
    [importModelMessages, user({ type: 'image', image: PNG, mediaType: 'image/jpeg' }), 'attachment_media_type_mismatch'],
    [importModelMessages, user({ type: 'file', data: 'A'.repeat(45_000_000), mediaType: 'application/pdf' }), 'attachment_too_large'],
    [importOpenAIChat, user({ type: 'image_url', image_url: { url: 'file:///etc/passwd' } }), 'attachment_url_not_allowed'],
    [importAnthropic, user({ type: 'image', source: { type: 'base64', media_type: 'image/gif', data: PNG } }), 'attachment_media_type_mismatch'],
  ];
  for (const [importer, input, code] of cases) {
    assert.throws(() => importer(input, { sessionId: 'bad' }), (error) => error.code === code, code);
  }
  const urlPdf = importModelMessages(user({ type: 'file', data: 'https://example.com/r.pdf', mediaType: 'application/pdf' }), { sessionId: 'u' });
  assert.throws(() => project({ events: urlPdf, model: { contextWindow: 8000 }, format: 'openai-chat' }),
    (error) => error.code === 'attachment_url_not_allowed');
});

for (const [name, events, images] of [['webvoyager.json', 25, 3], ['openwebvoyager.json', 9, 4]]) {
  test(`a real screenshot trajectory compacts and the summarizer never sees a byte: ${name}`, async () => {
    const imported = importAnthropic(trajectory(name), { sessionId: 'web' });
    assert.equal(imported.length, events);
    const attachments = imported.flatMap((e) => e.content.attachments ?? []);
    assert.equal(attachments.length, images);
    assert.ok(attachments.every((a) => a.mediaType === 'image/png' && a.width > 0 && a.height > 0));
    const log = new EventLog();
    log.append(imported);
    const model = { contextWindow: 4000 };
    assert.equal(log.project({ model }).fits, false);
    const checkpoints = [];
    const seen = [];
    const outcome = await compact({ events: log, model, trigger: 'manual', summarizerLabel: 'extractive' }, {
      async summarize(request) {
        seen.push(JSON.stringify(request.messages));
        const fold = log.events().slice(request.fold.start, request.fold.end);
        return { text: extractiveSummary(request.previousSummary, fold, request.targetTokens), finishReason: 'stop' };
      },
      async appendCheckpoint(checkpoint) { checkpoints.push(checkpoint); },
    });
    assert.equal(outcome.outcome, 'recorded', JSON.stringify(outcome.diagnostics));
    const prefix = attachments[0].data.slice(0, 64);
    assert.ok(seen.length > 0 && seen.every((text) => !text.includes(prefix)), 'never the bytes');
    assert.ok(seen.some((text) => text.includes('[attachment image/png')), 'the stand-ins');
    const after = log.projectForRequest({ model, checkpoint: checkpoints.at(-1), format: 'anthropic' });
    assert.equal(after.fits, true);
  });
}
