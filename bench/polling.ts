/**
 * The poll schedule against a fixed 30 s poll, on the simulated clock (the schedule function
 * itself, test/helpers/poll-simulation.ts): polls and median detection delay for trainings of
 * 2 h, 72 h and 7 days, each over 41 durations spread ±1% around it, with the history of earlier
 * trainings like them (the dense window) and without. Pure computation: it takes milliseconds.
 */
import { expectedFinish } from '../lambdas/run/polling.js';
import { median, simulatePolling } from '../test/helpers/poll-simulation.js';
import type { Benchmark } from './harness/benchmark.js';
import { figure, type Figure } from './harness/figures.js';

const CASES = [
  { name: '2h', seconds: 2 * 3600 },
  { name: '72h', seconds: 72 * 3600 },
  { name: '7d', seconds: 7 * 24 * 3600 },
] as const;

export const polling: Benchmark = {
  name: 'polling',
  title: 'poll schedule vs a fixed 30 s poll (simulated clock)',
  run() {
    const figures: Figure[] = [];
    for (const { name, seconds } of CASES) {
      const durations = Array.from({ length: 41 }, (_, index) => seconds * (0.99 + (0.02 * index) / 40));
      const expected = expectedFinish(durations);
      const hopper = durations.map((duration) => simulatePolling(duration));
      const dense = durations.map((duration) => simulatePolling(duration, { expected }));
      const fixed = durations.map((duration) => simulatePolling(duration, {}, 30, 100_000));
      figures.push(
        figure({
          name: `polling.${name}.polls`,
          label: `${name} training: polls, no history (baseline: fixed 30 s)`,
          unit: 'polls',
          runs: [median(hopper.map((run) => run.polls))],
          baselineRuns: [median(fixed.map((run) => run.polls))],
          ...(name === '2h' ? { goal: { on: 'value' as const, op: '<=' as const, limit: 60 } } : {}),
        }),
        figure({
          name: `polling.${name}.median_delay_with_history`,
          label: `${name} training: median detection delay, earlier trainings ±1% (baseline: fixed 30 s)`,
          unit: 's',
          runs: [median(dense.map((run) => run.delaySeconds))],
          baselineRuns: [median(fixed.map((run) => run.delaySeconds))],
          goal: { on: 'value', op: '<=', limit: 15 },
        }),
      );
    }
    return Promise.resolve(figures);
  },
};
