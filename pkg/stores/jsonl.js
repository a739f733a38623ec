// A session in two JSON Lines files for Node (docs/npm.md#stores):
//
//   <session>.events.jsonl   one RuntimeEvent per line, as the ledger stores it (`ledgerRows`:
//                            the canonical JSON when it parses back to the same event, else the
//                            serde JSON): `contextfold import --format events-jsonl` reads it
//   <session>.records.jsonl  one record per line: `{"type":"events","count":N}` (the events
//                            committed so far), `{"type":"checkpoint","record":…}` (a recorded
//                            checkpoint event), `{"type":"circuit","circuit":…}` and
//                            `{"type":"usage","record":…}` (a usage fact, `payload` the fact),
//                            `{"type":"retraction","retraction":…}` (a checkpoint taken back)
//   <session>.lock           the writer's pid (./lock-file.js)
//
// An append resolves only after its bytes are on disk (`datasync`); an event batch counts once
// the `events` record naming its new length is on disk too, so a batch is all or nothing. At
// open, what follows the last committed line of either file (a crash in the middle of an append
// that was never acknowledged) is truncated away and reported in `storageDiagnostics`; a
// committed line that does not parse is `store_corrupt`, never dropped.
import { mkdir, open, readFile } from 'node:fs/promises';
import path from 'node:path';
import { ContextfoldError, ledgerRows } from 'contextfold';
import { SessionStore, requireSessionId } from './session-store.js';
import { acquireLock } from './lock-file.js';

/** The file name stem of a session (any session id is a safe file name once encoded). */
const stem = (sessionId) => encodeURIComponent(sessionId);

/** Writes all of `bytes` at the end of the append-mode file `handle`, then `datasync`s it. */
async function appendDurably(handle, text) {
  const bytes = Buffer.from(text, 'utf8');
  let offset = 0;
  while (offset < bytes.length) {
    const { bytesWritten } = await handle.write(bytes, offset, bytes.length - offset);
    offset += bytesWritten;
  }
  await handle.datasync();
}

/** Makes the directory entries in `directory` durable (a no-op where directories cannot sync). */
async function syncDirectory(directory) {
  let handle;
  try {
    handle = await open(directory, 'r');
    await handle.sync();
  } catch (error) {
    if (process.platform !== 'win32') throw error;
  } finally {
    await handle?.close();
  }
}

/** Makes new files in `directory` durable, and the directories `mkdir` created (`created`). */
async function syncNewEntries(directory, created) {
  const target = path.resolve(directory);
  const top = created ? path.dirname(path.resolve(created)) : target;
  for (let dir = target; ; dir = path.dirname(dir)) {
    await syncDirectory(dir);
    if (dir === top || dir === path.dirname(dir)) break;
  }
}

/**
 * The complete lines of `bytes` (a `Buffer`): `{ lines, end }`, where `end` is the offset just
 * after the last newline (bytes beyond it are a torn line).
 */
function splitLines(bytes) {
  const lines = [];
  let start = 0;
  for (let at = bytes.indexOf(10); at !== -1; at = bytes.indexOf(10, start)) {
    lines.push({ start, end: at + 1 });
    start = at + 1;
  }
  return { lines, end: start };
}

function corrupt(file, detail, cause) {
  return new ContextfoldError('store_corrupt', `${file}: ${detail}`, cause ? { cause } : undefined);
}

/** A session kept in JSON Lines files in a directory, durable on each append, single writer. */
export class JsonlFileStore extends SessionStore {
  #events;
  #records;
  #release;
  /** What the open repaired: `{ code: 'torn_tail_truncated', file, bytes }` per truncated file. */
  storageDiagnostics = [];

  /** Use {@link JsonlFileStore.open}. */
  constructor(sessionId, handles) {
    super(sessionId);
    this.#events = handles.events;
    this.#records = handles.records;
    this.#release = handles.release;
  }

  /**
   * Opens (creating them if needed) the files of `sessionId` in `directory`. Throws
   * `store_locked` while another live writer has them open, `store_corrupt` when a committed
   * line does not parse or acknowledged events are missing, and the core's code (wrapped in
   * `store_corrupt`) when the stored events are not a valid log.
   */
  static async open({ directory, sessionId } = {}) {
    requireSessionId(sessionId);
    if (typeof directory !== 'string' || directory === '') {
      throw new ContextfoldError('invalid_argument', 'JsonlFileStore.open needs a directory');
    }
    const created = await mkdir(directory, { recursive: true });
    const base = path.join(directory, stem(sessionId));
    const release = await acquireLock(`${base}.lock`);
    const handles = { release };
    try {
      const existed = await Promise.all([`${base}.events.jsonl`, `${base}.records.jsonl`].map((file) => readFile(file).then(() => true, () => false)));
      handles.events = await open(`${base}.events.jsonl`, 'a+');
      handles.records = await open(`${base}.records.jsonl`, 'a+');
      if (!existed.every(Boolean)) await syncNewEntries(directory, created);
      const store = new JsonlFileStore(sessionId, handles);
      await store.#load(base);
      return store;
    } catch (error) {
      await handles.events?.close();
      await handles.records?.close();
      await release();
      throw error;
    }
  }

  /** Reads both files, truncates torn tails and restores the session. */
  async #load(base) {
    const recordsName = `${path.basename(base)}.records.jsonl`;
    const eventsName = `${path.basename(base)}.events.jsonl`;
    const recordBytes = await readFile(`${base}.records.jsonl`);
    const split = splitLines(recordBytes);
    const parsed = [];
    for (const [index, line] of split.lines.entries()) {
      try {
        parsed.push(JSON.parse(recordBytes.subarray(line.start, line.end).toString('utf8')));
      } catch (cause) {
        if (index < split.lines.length - 1) throw corrupt(recordsName, `line ${index + 1} does not parse`, cause);
        split.end = line.start; // the final line is torn (a crash while it was written)
      }
    }
    await this.#truncate(this.#records, recordsName, recordBytes.length, split.end);
    let committed = 0;
    const records = [];
    let circuit = null;
    const usage = [];
    const retractions = [];
    for (const [index, line] of parsed.entries()) {
      if (line?.type === 'events' && Number.isSafeInteger(line.count)) committed = line.count;
      else if (line?.type === 'checkpoint' && line.record) records.push(line.record);
      else if (line?.type === 'circuit') circuit = line.circuit ?? null;
      else if (line?.type === 'usage' && line.record) usage.push(line.record.payload);
      else if (line?.type === 'retraction' && line.retraction) retractions.push(line.retraction);
      else throw corrupt(recordsName, `line ${index + 1} is not a store record`);
    }
    const eventBytes = await readFile(`${base}.events.jsonl`);
    const events = splitLines(eventBytes);
    if (events.lines.length < committed) {
      throw corrupt(eventsName, `${committed} events were committed; the file holds ${events.lines.length}`);
    }
    const end = committed === 0 ? 0 : events.lines[committed - 1].end;
    await this.#truncate(this.#events, eventsName, eventBytes.length, end);
    try {
      this.restore({ events: eventBytes.subarray(0, end).toString('utf8'), records, retractions, circuit, usage });
    } catch (cause) {
      throw corrupt(eventsName, `the stored events are not a valid log: ${cause?.message ?? cause}`, cause);
    }
  }

  /** Cuts `file` back to `end` bytes (durably) when it is longer, and reports it. */
  async #truncate(handle, file, length, end) {
    if (length === end) return;
    await handle.truncate(end);
    await handle.sync();
    this.storageDiagnostics.push({ code: 'torn_tail_truncated', file, bytes: length - end });
  }

  async persistEvents(events, before) {
    const text = ledgerRows(events).map((row) => `${row.json}\n`).join('');
    await appendDurably(this.#events, text);
    await appendDurably(this.#records, `${JSON.stringify({ type: 'events', count: before + events.length })}\n`);
  }

  async persistCheckpoint(record) {
    await appendDurably(this.#records, `${JSON.stringify({ type: 'checkpoint', record })}\n`);
  }

  async persistCircuit(circuit) {
    await appendDurably(this.#records, `${JSON.stringify({ type: 'circuit', circuit })}\n`);
  }

  async persistRetraction(retraction) {
    await appendDurably(this.#records, `${JSON.stringify({ type: 'retraction', retraction })}\n`);
  }

  async persistUsage(record) {
    await appendDurably(this.#records, `${JSON.stringify({ type: 'usage', record })}\n`);
  }

  async closeStorage() {
    await this.#events.close();
    await this.#records.close();
    await this.#release();
  }
}
