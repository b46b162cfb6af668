/**
 * Hopper driven to each of its own limits stays inside Step Functions': every state's input and
 * output under 256 KiB, the history under 25,000 events, as local mode's state machine measures
 * the real execution (Execution.measures, local/emulator/limits.ts). Local mode end to end: the
 * synthesized definition, the real handler bundles, the local S3 and the simulated service over
 * HTTP (brisk phases; the longest training on the service's clock, moved by each Wait).
 */
import { describe, expect, it } from 'vitest';
import { MAX_CONFIG_BYTES } from '../../lambdas/drop/validate.js';
import { MAX_ATTEMPTS_LIMIT, MAX_ENCODERS, MAX_TRAIN_JSON_BYTES } from '../../lambdas/drop/train-json.js';
import type { RunState } from '../../lambdas/core/state/index.js';
import { MAX_WAIT_SECONDS_PER_RUN } from '../../lambdas/core/schedule/index.js';
import { MAX_HISTORY_EVENTS, MAX_PAYLOAD_BYTES, payloadBytes } from '../../local/emulator/limits.js';
import { fastClock } from '../helpers/fast-clock.js';
import {
  dropAndRun,
  RUN_TIMEOUT_MS,
  statesEntered,
  useLocalMode,
  type FinishedRun,
} from '../helpers/local-mode.js';
import { expectSucceeded } from '../helpers/local-runs.js';
import { labelledDrop, REVIEWS_FILES } from '../helpers/fixtures.js';

const fixture = useLocalMode();

/**
 * Held-out examples of the longest labelling here. The contract names no maximum; Hopper holds
 * 20,000 (docs/reliability.md), which test/reliability/long-run.test.ts runs at full size. A
 * run's state does not grow with labels (each batch returns the same slot), only its history, by
 * one batch per DEFAULT_LABEL_BATCH_LIMITS.maxTasks labels.
 */
const LABELS = 5_000;

/**
 * Bounds set from the work, not a guess of the whole run's wall time: a drop's run outside its
 * longest part (RUN_TIMEOUT_MS), plus what each attempt of the sweep (its StartTraining, Wait and
 * PollModel Tasks: about 0.2 s quiet) and each label (about 4 ms quiet) may take on a loaded machine.
 */
const ATTEMPT_BOUND_MS = 2_000;
const LABEL_BOUND_MS = 40;
const SWEEP_BOUND_MS = RUN_TIMEOUT_MS + MAX_ENCODERS * MAX_ATTEMPTS_LIMIT * ATTEMPT_BOUND_MS;
const LABELLING_BOUND_MS = RUN_TIMEOUT_MS + LABELS * LABEL_BOUND_MS;

/** Checks the run's measures inside the limits, and prints them (docs/local-mode.md quotes them). */
function expectInside(run: FinishedRun, what: string): void {
  const measures = run.execution.measures();
  console.log(`${what}: ${JSON.stringify(measures)}`);
  expect(measures.largestPayloadBytes).toBeLessThan(MAX_PAYLOAD_BYTES);
  expect(measures.historyEvents).toBeLessThan(MAX_HISTORY_EVENTS);
}

/** The run's configuration ($.config of its output). */
function configOf(run: FinishedRun): RunState['config'] {
  if (run.outcome.status !== 'SUCCEEDED') throw new Error(`the run ${run.outcome.status}`);
  return (run.outcome.output as RunState).config;
}

describe('the largest train.json Hopper accepts', () => {
  /** train.json with a `promote` metric of `length` characters: the one value that can grow freely. */
  const trainJson = (length: number): string =>
    JSON.stringify({ name: 'largest', promote: { metric: 'm'.repeat(length) } });

  it('its configuration at the run state`s share (MAX_CONFIG_BYTES) keeps every state under 256 KiB; one byte more is refused, naming train.json', async () => {
    const local = await fixture.start();
    const small = await dropAndRun(local, 'largest-train-json', {
      ...REVIEWS_FILES,
      'train.json': trainJson(1),
    });
    const length = 1 + MAX_CONFIG_BYTES - payloadBytes(configOf(small));

    const largest = await dropAndRun(local, 'largest-train-json', {
      'train.json': trainJson(length),
    });
    expectSucceeded(largest.status, largest.execution.name);
    expect(payloadBytes(configOf(largest))).toBe(MAX_CONFIG_BYTES);
    expectInside(largest, 'the largest train.json');

    const over = await dropAndRun(local, 'largest-train-json', { 'train.json': trainJson(length + 1) });
    expect(over.status?.error?.code).toBe('invalid_train_json');
    expect(over.status?.error?.message).toContain(
      `train.json's values make the run's configuration ${String(MAX_CONFIG_BYTES + 1)} bytes, and a run carries at most ${String(MAX_CONFIG_BYTES)} bytes`,
    );
    expectInside(over, 'a train.json one byte over');
  });

  it(`one of ${String(MAX_TRAIN_JSON_BYTES)} bytes (train.json's own cap) is refused as train.json's, not as the file list's`, async () => {
    const local = await fixture.start();
    const empty = JSON.stringify({ decisions: { q: '' } });
    const text = JSON.stringify({ decisions: { q: 'x'.repeat(MAX_TRAIN_JSON_BYTES - empty.length) } });
    expect(Buffer.byteLength(text)).toBe(MAX_TRAIN_JSON_BYTES);
    const run = await dropAndRun(local, 'huge-train-json', { ...REVIEWS_FILES, 'train.json': text });
    expect(run.status?.error?.code).toBe('invalid_train_json');
    expect(run.status?.error?.message).toContain('"decisions"');
    expectInside(run, 'a 1 MiB train.json');
  });
});

describe('the longest sweep', () => {
  it(
    `${String(MAX_ENCODERS)} encoders with ${String(MAX_ATTEMPTS_LIMIT)} attempts each, every attempt but each encoder's last failing`,
    async () => {
      const encoders = Array.from({ length: MAX_ENCODERS }, (_, index) => ({
        id: `enc-${String(index)}`,
        name: `Encoder ${String(index)}`,
        default: index === 0,
      }));
      const local = await fixture.start({
        simulated: {
          encoders,
          failTrainings: MAX_ATTEMPTS_LIMIT - 1,
          credits: 20,
          queuedMs: 0,
          trainingMs: 10,
        },
        // Each encoder's first nine trainings fail: the service fails the next nine after each success.
        wrapTask: (name, task) =>
          name !== 'PollModel'
            ? task
            : async (input) => {
                const result = (await task(input)) as { status?: string };
                if (result.status === 'done')
                  local.simulated?.configure({ failTrainings: MAX_ATTEMPTS_LIMIT - 1 });
                return result;
              },
      });
      const run = await dropAndRun(
        local,
        'longest-sweep',
        {
          ...REVIEWS_FILES,
          'train.json': JSON.stringify({ encoders: 'all', maxAttempts: MAX_ATTEMPTS_LIMIT }),
        },
        SWEEP_BOUND_MS,
      );
      expectSucceeded(run.status, run.execution.name);
      expect(statesEntered(run.events).filter((state) => state === 'StartTraining')).toHaveLength(
        MAX_ENCODERS * MAX_ATTEMPTS_LIMIT,
      );
      expectInside(run, 'the longest sweep');
    },
    SWEEP_BOUND_MS + 10_000,
  );
});

describe('the longest labelling', () => {
  it(
    `${String(LABELS)} held-out examples, each labelled from labels.csv`,
    async () => {
      const local = await fixture.start({ simulated: { heldOutCount: LABELS } });
      const run = await dropAndRun(local, 'longest-labelling', labelledDrop(LABELS), LABELLING_BOUND_MS);
      expectSucceeded(run.status, run.execution.name);
      expect(run.status?.labelled).toBe(LABELS);
      expectInside(run, `${String(LABELS)} labels`);
    },
    LABELLING_BOUND_MS + 10_000,
  );
});

describe('the longest training', () => {
  it('a training that ends a day before the run`s 14 days of waiting are up, polled all the way', async () => {
    const trainingSeconds = MAX_WAIT_SECONDS_PER_RUN - 24 * 3600;
    const clock = fastClock();
    const local = await fixture.start({
      simulated: {
        manualClockStart: '2026-01-01T00:00:00.000Z',
        queuedMs: 0,
        trainingMs: trainingSeconds * 1000,
        // The dataset outlives the training.
        datasetTtlMs: 2 * MAX_WAIT_SECONDS_PER_RUN * 1000,
      },
      waitMs: 1,
      wrapTask: clock.wrapTask,
      now: clock.now,
    });
    const simulated = local.simulated;
    if (simulated === undefined) throw new Error('no simulated service');
    clock.attach(simulated.clock);
    const run = await dropAndRun(local, 'longest-training', { ...REVIEWS_FILES, 'train.json': '{}' }, 60_000);
    expectSucceeded(run.status, run.execution.name);
    const polls = clock.modelPolls;
    expect((polls.at(-1)?.at ?? 0) - (polls[0]?.at ?? 0)).toBeGreaterThan((trainingSeconds - 3600) * 1000);
    expectInside(run, `a ${String(trainingSeconds / 86_400)}-day training, ${String(polls.length)} polls`);
  }, 60_000);
});
