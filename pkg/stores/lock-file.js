// A single-writer lock for the Node stores: a lock file created with O_EXCL that holds the
// writer's pid. A second open — in this process or in another live one — fails with
// `store_locked`. A lock left by a process that no longer exists (killed, crashed) is taken
// over; a live holder is never displaced. Node-only.
import { open, readFile, rename, link, stat, unlink } from 'node:fs/promises';
import { ContextfoldError } from 'contextfold';

/** Lock files this process holds (a second open in the same process is refused too). */
const held = new Set();

/** Whether a process with `pid` exists (a zombie counts: reap a child before reopening). */
function isAlive(pid) {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return error.code === 'EPERM';
  }
}

/** The pid a lock file names, or null when it is empty or unreadable (a torn lock). */
async function holderOf(path) {
  try {
    const text = await readFile(path, 'utf8');
    const pid = Number.parseInt(text, 10);
    return Number.isInteger(pid) ? pid : null;
  } catch (error) {
    if (error.code === 'ENOENT') return undefined;
    throw error;
  }
}

/** Whether the file at `path` was modified within the last second. */
async function isFresh(path) {
  try {
    return Date.now() - (await stat(path)).mtimeMs < 1000;
  } catch {
    return false;
  }
}

function locked(path, pid) {
  return new ContextfoldError('store_locked', `another writer holds ${path} (pid ${pid}); close it first`);
}

/**
 * Takes the lock `path` for this process; resolves to a release function. Throws
 * `store_locked` while a live process (this one included) holds it.
 */
export async function acquireLock(path) {
  if (held.has(path)) throw locked(path, process.pid);
  for (let attempt = 0; attempt < 8; attempt += 1) {
    try {
      const handle = await open(path, 'wx');
      try {
        await handle.writeFile(`${process.pid}\n`);
        await handle.sync();
      } finally {
        await handle.close();
      }
      held.add(path);
      return async () => {
        held.delete(path);
        await unlink(path).catch(() => {});
      };
    } catch (error) {
      if (error.code !== 'EEXIST') throw error;
    }
    const pid = await holderOf(path);
    if (pid === undefined) continue; // released meanwhile
    if (pid !== null && (pid === process.pid || isAlive(pid))) throw locked(path, pid);
    if (pid === null && (await isFresh(path))) {
      // An empty lock file: its writer may be between creating it and writing its pid.
      await new Promise((resolve) => setTimeout(resolve, 100));
      continue;
    }
    await takeOver(path, pid);
  }
  throw new ContextfoldError('store_locked', `could not take the lock ${path}: it keeps changing hands`);
}

/**
 * Removes a stale lock held by `stalePid` (dead, or null for a torn lock file). The file is
 * first renamed to a name only this process uses, so of several processes taking over at once
 * exactly one removes it; if what was moved is not the stale lock (another process took over
 * first), it is put back and the lock is reported held.
 */
async function takeOver(path, stalePid) {
  const aside = `${path}.stale-${process.pid}-${Math.random().toString(36).slice(2)}`;
  try {
    await rename(path, aside);
  } catch (error) {
    if (error.code === 'ENOENT') return;
    throw error;
  }
  const moved = await holderOf(aside);
  if (moved !== stalePid && moved !== null && isAlive(moved)) {
    await link(aside, path).catch(() => {});
    await unlink(aside).catch(() => {});
    throw locked(path, moved);
  }
  await unlink(aside).catch(() => {});
}
