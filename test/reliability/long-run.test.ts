/**
 * Long runs (issue 9): many held-out labels and a training of days must stay inside Step
 * Functions' 25,000-event execution history and Lambda's 15 minutes. The run goes through local
 * mode on a fast clock (each Wait moves the simulated service's clock by its seconds); this test
 * counts, from its event log, the history events Step Functions would record for it
 * (test/helpers/history.ts) and asserts the count.
 *
 * `npm test` runs a bounded form (2,000 labels, a 3-day training) and projects from its measured
 * figures what 20,000 labels and a 7-day training record, with the arithmetic below;
 * `npm run test:reliability` (HOPPER_RELIABILITY=full) runs 20,000 labels and a 7-day training
 * and prints the count. docs/reliability.md records the figures.
 */
import { expect, it } from 'vitest';
import { TASKS } from '../../infra/tasks.js';
import { MAX_LOOP_ROUNDS_PER_RUN } from '../../lambdas/core/schedule/index.js';
import { TIME_BOX } from '../../lambdas/runtime/index.js';
import { DEFAULT_LABEL_BATCH_LIMITS } from '../../lambdas/steps/label-examples.js';
import type { ExecutionEvent } from '../../local/emulator/state-machine.js';
import { fastClock } from '../helpers/fast-clock.js';
import { HISTORY_EVENT_LIMIT, historyEventsOf } from '../helpers/history.js';
import { dropAndRun, statesEntered, useLocalMode } from '../helpers/local-mode.js';
import { expectSucceeded } from '../helpers/local-runs.js';
import { labelledDrop } from '../helpers/fixtures.js';
import { simulatePolling } from '../../testkit/poll-simulation.js';

const FULL = process.env.HOPPER_RELIABILITY === 'full';
const DAY_SECONDS = 24 * 3600;
/** What Hopper promises to hold (issue 9). */
const TARGET = { labels: 20_000, trainingDays: 7 };
/** What this run does. */
const RUN = FULL ? TARGET : { labels: 2_000, trainingDays: 3 };
const RUN_MS = FULL ? 30 * 60_000 : 120_000;

const fixture = useLocalMode();

/** Real seconds from the first event of state `name` to its last. */
function spanSeconds(events: readonly ExecutionEvent[], name: string): number {
  const times = events
    .filter((event) => 'state' in event && event.state.name === name)
    .map((event) => event.timestamp);
  return times.length === 0 ? 0 : (Math.max(...times) - Math.min(...times)) / 1000;
}

/** History events of the states named (their entries, attempts and exits). */
function eventsOfStates(events: readonly ExecutionEvent[], names: readonly string[]): number {
  return events
    .filter((event) => 'state' in event && names.includes(event.state.name))
    .reduce((sum, event) => sum + historyEventsOf(event), 0);
}

it(
  `${String(RUN.labels)} held-out labels and a ${String(RUN.trainingDays)}-day training stay inside ${String(HISTORY_EVENT_LIMIT)} history events and Lambda's 15 minutes`,
  async () => {
    const clock = fastClock();
    const local = await fixture.start({
      simulated: {
        manualClockStart: '2026-01-01T00:00:00.000Z',
        heldOutCount: RUN.labels,
        queuedMs: 0,
        trainingMs: RUN.trainingDays * DAY_SECONDS * 1000,
        // A week and a half: the dataset outlives the longest training here.
        datasetTtlMs: 10 * DAY_SECONDS * 1000,
      },
      waitMs: 1,
      wrapTask: clock.wrapTask,
      now: clock.now,
    });
    clock.attach(local.simulated!.clock);

    const started = performance.now();
    const run = await dropAndRun(local, 'long', labelledDrop(RUN.labels), RUN_MS);
    const wallSeconds = (performance.now() - started) / 1000;
    const labellingSeconds = spanSeconds(run.events, 'LabelExamples');
    expectSucceeded(run.status, run.execution.name);
    expect(run.status?.labelled).toBe(RUN.labels);

    const events = run.events.reduce((count, event) => count + historyEventsOf(event), 0);
    expect(events).toBeLessThan(HISTORY_EVENT_LIMIT);

    // Where the events go: each labelling batch (LabelExamples, then RouteDataset) and each poll
    // of the training (WaitForModel, PollModel, RouteModel); the rest does not grow with the run.
    const entered = statesEntered(run.events);
    const labelBatches = entered.filter((name) => name === 'LabelExamples').length;
    const polls = entered.filter((name) => name === 'PollModel').length;
    const perBatch = eventsOfStates(run.events, ['LabelExamples']) / labelBatches + 2;
    const perPoll = eventsOfStates(run.events, ['WaitForModel', 'PollModel']) / polls + 2;
    expect(perBatch).toBe(7); // a Task (entered, 3 for its attempt, exited) and a Choice (2)
    expect(perPoll).toBe(9); // a Wait (2), a Task (5), a Choice (2)
    const fixed = events - labelBatches * perBatch - polls * perPoll;
    // The backstop fails a run before its history fills: the most rounds it allows, each at the
    // most events a round records, fit beside the rest of the run with room for Task retries.
    const worstCase = fixed + MAX_LOOP_ROUNDS_PER_RUN * Math.max(perPoll, perBatch);
    expect(worstCase).toBeLessThan(HISTORY_EVENT_LIMIT - 5_000);

    // The polls follow the schedule (lambdas/core/schedule/polling.ts): the pure simulation of it for the
    // same training gives the count, so it can give the count for the target's training too.
    const runDays = RUN.trainingDays * DAY_SECONDS;
    expect(Math.abs(polls - simulatePolling(runDays).polls)).toBeLessThanOrEqual(2);
    const targetPolls = simulatePolling(TARGET.trainingDays * DAY_SECONDS).polls;

    // Labelling: a batch takes labels until its 10-minute time box closes (or maxTasks), so a
    // batch holds at least batchMs / (time per label) labels. The history holds the target as
    // long as the target's batches fit in what the rest leaves:
    const room = HISTORY_EVENT_LIMIT - fixed - (targetPolls + 2) * perPoll;
    // ... and in the rounds the backstop leaves a run (lambdas/core/schedule/polling.ts: polls and batches
    // that leave work for another count together, MAX_LOOP_ROUNDS_PER_RUN at most):
    const maxBatches = Math.min(Math.floor(room / perBatch), MAX_LOOP_ROUNDS_PER_RUN - (targetPolls + 2));
    const minLabelsPerBatch = Math.ceil(TARGET.labels / maxBatches);
    // ... that is, as long as a label (GET labels/next and POST the label) takes at most:
    const maxSecondsPerLabel = TIME_BOX.batchMs / 1000 / minLabelsPerBatch;
    // A label is two requests, a fraction of a second each; the bound allows far slower.
    expect(maxSecondsPerLabel).toBeGreaterThanOrEqual(30);
    // Here, with local latency, batches are cut by maxTasks only.
    expect(labelBatches).toBe(Math.ceil(RUN.labels / DEFAULT_LABEL_BATCH_LIMITS.maxTasks));

    // Lambda's 15 minutes: a batch takes no new label after its time box or within the margin of
    // its timeout, and the box is inside the LabelExamples Lambda's timeout.
    const labelTask = TASKS.find((task) => task.name === 'LabelExamples');
    expect(TIME_BOX.batchMs + TIME_BOX.marginMs).toBeLessThanOrEqual((labelTask?.timeoutSeconds ?? 0) * 1000);
    expect(labelTask?.timeoutSeconds).toBeLessThanOrEqual(15 * 60);

    console.log(
      [
        `long run: ${String(RUN.labels)} labels, a ${String(RUN.trainingDays)}-day training: ${wallSeconds.toFixed(1)} s of real time, labelling ${labellingSeconds.toFixed(1)} s`,
        `  history events: ${String(events)} of ${String(HISTORY_EVENT_LIMIT)} (${String(fixed)} fixed, ${String(labelBatches)} label batches x ${String(perBatch)}, ${String(polls)} polls x ${String(perPoll)})`,
        `  projected for ${String(TARGET.labels)} labels and ${String(TARGET.trainingDays)} days: ${String(targetPolls)} polls; the history and the backstop (${String(MAX_LOOP_ROUNDS_PER_RUN)} rounds, at worst ${String(worstCase)} events) leave ${String(maxBatches)} label batches, so a label may take up to ${maxSecondsPerLabel.toFixed(0)} s`,
      ].join('\n'),
    );
  },
  RUN_MS + 30_000,
);
