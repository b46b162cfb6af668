/**
 * The simulated service's records kept in a file, so that `hopper local --data-dir` finds its
 * datasets, models and credits again after a restart. The file is read once at start, written
 * (whole, through a temporary name) whenever the records changed, checked every SAVE_EVERY_MS,
 * and once more on close: a crash loses at most that much.
 */
import { readFile, rename, writeFile } from 'node:fs/promises';
import type { ServiceRecords, ServiceState } from './state.js';

const SAVE_EVERY_MS = 500;
const FORMAT = 'hopper-simulated-service/1';
/** How a Set is written: no record has a field of this name. */
const SET_MARK = '$set';

/**
 * Restores `state` from `file` when it exists, then keeps the file up to date; close() stops
 * the periodic writes and writes a last time.
 */
export async function persistState(state: ServiceState, file: string): Promise<{ close(): Promise<void> }> {
  const text = await readFile(file, 'utf8').catch((error: unknown) => {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw error;
  });
  if (text !== null) state.restore(parseRecords(text, file));
  let saved = text ?? '';
  let writing: Promise<void> = Promise.resolve();
  /** Writes the records if they changed since the last write. */
  const save = async (): Promise<void> => {
    const next = serializeRecords(state.records());
    if (next === saved) return;
    saved = next;
    // One write at a time, in order: the last one to finish holds the newest records.
    writing = writing.then(async () => {
      const partial = `${file}.partial`;
      await writeFile(partial, next);
      await rename(partial, file);
    });
    await writing;
  };
  const timer = setInterval(() => {
    save().catch((error: unknown) => {
      process.stderr.write(
        `hopper: could not save the simulated service's state to ${file}: ${String(error)}\n`,
      );
    });
  }, SAVE_EVERY_MS);
  timer.unref();
  return {
    async close() {
      clearInterval(timer);
      await save();
    },
  };
}

/** JSON, with the Sets some records hold (a read file's explicit ids) as arrays. */
export function serializeRecords(records: ServiceRecords): string {
  return JSON.stringify({ format: FORMAT, records }, (_key, value: unknown) =>
    value instanceof Set ? { [SET_MARK]: [...(value as Set<unknown>)] } : value,
  );
}

export function parseRecords(text: string, file: string): ServiceRecords {
  const parsed = JSON.parse(text, (_key, value: unknown) =>
    typeof value === 'object' && value !== null && Array.isArray((value as Record<string, unknown>)[SET_MARK])
      ? new Set((value as Record<string, unknown[]>)[SET_MARK])
      : value,
  ) as { format?: unknown; records?: ServiceRecords };
  if (parsed.format !== FORMAT || parsed.records === undefined) {
    throw new Error(`${file} is not a simulated service's state (${FORMAT}): move it away to start afresh`);
  }
  return parsed.records;
}
