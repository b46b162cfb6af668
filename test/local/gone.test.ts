/**
 * A dataset or model that disappears at the service mid-run (deleted by someone, or purged),
 * end to end in local mode: the simulated service answers 404 not_found on it from the moment
 * its deleteRecord hook runs. The run fails at once with dataset_gone or model_gone, naming the
 * record and what to do, never retrying until a Task's timeout and never spending a second
 * credit; a model gone after its credit was spent is reported as paid and lost.
 * docs/reliability.md, "Records gone at the service".
 */
import { describe, expect, it } from 'vitest';
import type { TaskName } from '../../infra/tasks.js';
import type { LocalMode } from '../../local/emulator/local-mode.js';
import {
  dropAndRun,
  type FinishedRun,
  simulatedOf,
  statesEntered,
  useLocalMode,
  wrapOnly,
} from '../helpers/local-mode.js';
import { expectFailed, expectSaved } from '../helpers/local-runs.js';
import { reviewsDrop } from '../helpers/fixtures.js';

const fixture = useLocalMode();
const CREDITS = 10;

/** The id at `$.dataset.id` or `$.model.id` of a Task's input. */
function idIn(input: unknown, kind: 'dataset' | 'model'): string {
  const slot = (input as Record<string, { id?: unknown } | undefined> | null)?.[kind];
  if (typeof slot?.id !== 'string') throw new Error(`the state input has no $.${kind}.id`);
  return slot.id;
}

/**
 * Local mode whose service deletes the run's `kind` record just before the first invocation of
 * `task` (as if someone deleted it at the service while the run was there).
 */
async function startDeletingBefore(
  task: TaskName,
  kind: 'dataset' | 'model',
  simulated: Parameters<typeof fixture.start>[0] = {},
): Promise<{ local: LocalMode; deleted: () => string | undefined }> {
  let deletedId: string | undefined;
  const local = await fixture.start({
    ...simulated,
    wrapTask: wrapOnly(task, (run) => async (input) => {
      if (deletedId === undefined) {
        deletedId = idIn(input, kind);
        simulatedOf(local).deleteRecord(kind, deletedId);
      }
      return run(input);
    }),
  });
  return { local, deleted: () => deletedId };
}

/** How many times the run entered `state` (a Task retried in place counts once). */
function entries(run: FinishedRun, state: string): number {
  return statesEntered(run.events).filter((name) => name === state).length;
}

/** The states the run failed in: each Task that ended in a Catch to Report. */
function failedStates(run: FinishedRun): string[] {
  return run.events.flatMap((event) => (event.type === 'StateCaught' ? [event.state.name] : []));
}

describe('a dataset gone at the service mid-run', () => {
  it.each<[string, TaskName]>([
    ['while its files are uploaded', 'UploadFiles'],
    ['while the service processes it (polling)', 'PollDataset'],
    ['while it is structured', 'Structure'],
    ['while labelling', 'LabelExamples'],
    ['as the training is to start', 'StartTraining'],
  ])('%s: dataset_gone naming it, at once, no credit', async (_, task) => {
    // Reading takes long enough that the run polls it at least once.
    const { local, deleted } = await startDeletingBefore(task, 'dataset', { simulated: { readingMs: 200 } });
    const service = simulatedOf(local);
    const started = Date.now();
    const run = await dropAndRun(local, 'dataset-gone', reviewsDrop());

    const status = await expectFailed(local, run, 'dataset_gone');
    const id = deleted() ?? 'not deleted';
    expect(status.dataset_id).toBe(id);
    expect(status.error?.message).toContain(`dataset ${id} is gone at the service`);
    expect(status.error?.message).toContain('404 not_found');
    expect(status.error?.message).toContain('the run spent no credit');
    expect(status.error?.message).toContain('drop the folder again');
    // Failed at the Task that met the 404, in its first invocation: nothing retried it.
    expect(entries(run, task)).toBe(1);
    expect(failedStates(run)).toEqual([task]);
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(service.requestCount('startTraining')).toBe(0);
    expect(service.credits()).toBe(CREDITS);
  });

  it('while its model trains: the model outlives it, the run succeeds with one credit', async () => {
    const { local, deleted } = await startDeletingBefore('PollModel', 'dataset');
    const service = simulatedOf(local);
    const run = await dropAndRun(local, 'dataset-gone-training', reviewsDrop());

    expect(deleted()).toBeDefined();
    await expectSaved(local, run);
    expect(service.requestCount('startTraining')).toBe(1);
    expect(service.credits()).toBe(CREDITS - 1);
  });
});

describe('a model gone at the service after its credit was spent', () => {
  it.each<[string, TaskName]>([
    ['while it trains (polling)', 'PollModel'],
    ['as it is copied', 'CopyModel'],
  ])('%s: model_gone, the credit spent and the model lost, at once, no second training', async (_, task) => {
    const { local, deleted } = await startDeletingBefore(task, 'model');
    const service = simulatedOf(local);
    const run = await dropAndRun(local, 'model-gone', reviewsDrop());

    const status = await expectFailed(local, run, 'model_gone');
    const id = deleted() ?? 'not deleted';
    expect(status.model_id).toBe(id);
    expect(status.error?.message).toContain(`model ${id} is gone at the service`);
    expect(status.error?.message).toContain('paid for with 1 credit, which is spent');
    expect(status.error?.message).toContain('the model is lost at the service');
    expect(status.error?.message).toContain('hopper retry model-gone');
    // Not the note of a paid model still there to adopt.
    expect(status.error?.message).not.toContain('adopts it without a second credit');
    expect(status.summary?.credits).toBe(1);
    expect(entries(run, task)).toBe(1);
    expect(failedStates(run)).toEqual([task]);
    expect(service.requestCount('startTraining')).toBe(1);
    expect(service.credits()).toBe(CREDITS - 1);
  });
});
