/**
 * The corpus cases only a run can decide (the service's held-out examples, questions, encoders
 * and reading), end to end in one local mode, all drops at once: each trains, or fails with its
 * code and a message naming what is wrong, before a training is started (no credit spent).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalMode } from '../../../local/emulator/local-mode.js';
import { BRISK_SERVICE } from '../../../testkit/brisk-service.js';
import {
  dropAndRun,
  startBriskLocalMode,
  statesEntered,
  type FinishedRun,
} from '../../helpers/local-mode.js';
import { CASES } from './cases.js';

const RUN_CASES = CASES.filter((entry) => entry.through === 'run');
const CREDITS = 100;
/** Drops running at once: several, few enough for a busy two-core machine. */
const AT_ONCE = 4;
/** Bounds on one run, and on a test that waits for its run behind the others. */
const RUN_MS = 120_000;
const TEST_MS = 300_000;

let local: LocalMode | undefined;
const runs = new Map<string, Promise<FinishedRun>>();

beforeAll(async () => {
  local = await startBriskLocalMode({ simulated: { credits: CREDITS } });
  const started = local;
  // A bounded pool: each run starts when one of the AT_ONCE before it has ended.
  const slots: Promise<unknown>[] = [];
  RUN_CASES.forEach((entry, index) => {
    const before = slots[index - AT_ONCE] ?? Promise.resolve();
    const run = before.then(() => dropAndRun(started, `corpus-${String(index)}`, entry.files, RUN_MS));
    slots.push(run.catch(() => undefined));
    run.catch(() => undefined);
    runs.set(entry.name, run);
  });
}, 60_000);

afterAll(async () => {
  await Promise.allSettled(runs.values());
  await local?.close();
});

describe('bad-input corpus: what a run decides, in local mode', () => {
  it.each(RUN_CASES)(
    '$name',
    async ({ name, expect: expected }) => {
      const run = await (runs.get(name) ?? Promise.reject(new Error(`no run for ${name}`)));
      if (expected.trains === true) {
        expect(run.status?.error ?? null).toBeNull();
        expect(run.outcome.status).toBe('SUCCEEDED');
        expect(run.status?.model?.bytes).toBe(BRISK_SERVICE.modelBytes);
        return;
      }
      expect({ code: run.status?.error?.code, state: run.status?.state }).toEqual({
        code: expected.code,
        state: 'failed',
      });
      for (const text of expected.mentions) expect(run.status?.error?.message).toContain(text);
      // Failed before any training started: nothing was paid for.
      expect(run.status).toMatchObject({ model_id: null, attempts: 0 });
      expect(statesEntered(run.events)).not.toContain('PollModel');
    },
    TEST_MS,
  );

  it(
    'spent one credit per drop that trained, and none for the others',
    async () => {
      const finished = await Promise.all(runs.values());
      const trained = finished.filter((run) => run.outcome.status === 'SUCCEEDED').length;
      expect(trained).toBe(RUN_CASES.filter((entry) => entry.expect.trains === true).length);
      expect(local?.simulated?.credits()).toBe(CREDITS - trained);
    },
    TEST_MS,
  );
});
