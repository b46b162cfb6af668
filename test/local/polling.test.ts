/**
 * Polling end to end: local mode runs the synthesized state machine on a fast clock (each Wait
 * moves the simulated service's clock by its seconds), so a 2-hour training takes well under a
 * second of real time and every figure below is measured on the service's clock.
 */
import { describe, expect, it } from 'vitest';
import type { LocalMode } from '../../local/emulator/local-mode.js';
import { dropAndRun, serviceGet, simulatedOf, useLocalMode } from '../helpers/local-mode.js';
import { expectSucceeded } from '../helpers/local-runs.js';
import { fastClock } from '../helpers/fast-clock.js';
import { reviewsDrop } from '../helpers/fixtures.js';

const fixture = useLocalMode();
const TWO_HOURS_MS = 2 * 3600_000;

/** The model record, straight from the simulated service. */
function serviceModel(local: LocalMode, id: string) {
  return serviceGet<{ created_at: string; steps: { finished_at: string } }>(
    simulatedOf(local),
    `/v1/models/${id}`,
  );
}

describe('polling a 2-hour training in local mode (fast clock)', () => {
  it('takes at most 60 polls, and a second training like it is noticed within seconds of its finish', async () => {
    const clock = fastClock();
    const local = await fixture.start({
      simulated: { manualClockStart: '2026-01-01T00:00:00.000Z', queuedMs: 0, trainingMs: TWO_HOURS_MS },
      waitMs: 1,
      wrapTask: clock.wrapTask,
      now: clock.now,
    });
    clock.attach(local.simulated!.clock);

    const delays: number[] = [];
    const polls: number[] = [];
    for (const drop of ['first', 'second']) {
      const before = clock.modelPolls.length;
      // Some 60 polls, each an invocation that reads and writes status.json: seconds on a busy machine.
      const run = await dropAndRun(local, drop, reviewsDrop(), 100_000);
      expectSucceeded(run.status, run.execution.name);
      const runPolls = clock.modelPolls.slice(before);
      polls.push(runPolls.length);
      const model = await serviceModel(local, run.status?.model_id ?? '');
      const finishedAt = Date.parse(model.steps.finished_at);
      expect(finishedAt - Date.parse(model.created_at)).toBe(TWO_HOURS_MS);
      const noticed = runPolls.at(-1)!;
      expect(noticed.nextAction).toBe('download');
      expect(runPolls.slice(0, -1).every((poll) => poll.nextAction === 'wait')).toBe(true);
      delays.push((noticed.at - finishedAt) / 1000);
    }
    // The first training of the account: the schedule alone.
    expect(polls[0]).toBeLessThanOrEqual(60);
    expect(delays[0]).toBeLessThanOrEqual(Math.max(60, 0.05 * 7200));
    // The second: the first one's duration puts dense polls around 2 h.
    expect(delays[1]).toBeLessThan(15);
    expect(polls[1]).toBeLessThanOrEqual(62);
  }, 240_000);
});
