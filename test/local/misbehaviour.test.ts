/**
 * A misbehaving service end to end in local mode, where retrying cannot help: the API key
 * rotated mid-run, a model download whose bytes differ from onnx_bytes, and a model list whose
 * cursor repeats. Each run ends (bounded) with a clear code in status/<drop>.json, at most one
 * credit spent, no handler crashing (every failure is a coded Hopper error, never internal_error)
 * and nothing half-written under models/<drop>/.
 */
import { describe, expect, it } from 'vitest';
import { MAX_LOOP_ROUNDS_PER_RUN } from '../../lambdas/core/schedule/index.js';
import { inboxKey, TRAIN_JSON } from '../../lambdas/storage/keys.js';
import {
  dropAndRun,
  finished,
  type FinishedRun,
  nextExecution,
  serviceList,
  simulatedOf,
  statesEntered,
  useLocalMode,
} from '../helpers/local-mode.js';
import { expectFailed, expectSucceeded } from '../helpers/local-runs.js';
import { putDrop } from '../helpers/pipeline.js';
import { reviewsDrop } from '../helpers/fixtures.js';

const fixture = useLocalMode();
const CREDITS = 5;

/** The states the run failed in: each Task that ended in a Catch to Report. */
function failedStates(run: FinishedRun): string[] {
  return run.events.flatMap((event) => (event.type === 'StateCaught' ? [event.state.name] : []));
}

describe('a misbehaving service, end to end in local mode', () => {
  it('the API key rotated while the training runs: unauthorized, the paid model named; resumed, it is adopted: one credit', async () => {
    let rotated = false;
    const local = await fixture.start({
      simulated: { credits: CREDITS, trainingMs: 200 },
      // The key is rotated at the service as the first poll of the training begins.
      wrapTask: (name, task) =>
        name !== 'PollModel'
          ? task
          : async (input) => {
              if (!rotated) {
                rotated = true;
                simulatedOf(local).configure({ apiKey: 'rotated-key' });
              }
              return task(input);
            },
    });
    const service = simulatedOf(local);
    const key = service.apiKey;
    const run = await dropAndRun(local, 'rotated', reviewsDrop());

    const status = await expectFailed(local, run, 'unauthorized');
    expect(rotated).toBe(true);
    expect(failedStates(run)).toEqual(['PollModel']);
    expect(status.error?.message).toContain('the key may have been rotated');
    expect(status.error?.message).toContain('hopper retry rotated');
    // The training was paid and goes on at the service: the status names it and its credit.
    const [model] = await serviceList<{ id: string; status: string }>(service, 'models');
    expect(status.model_id).toBe(model?.id);
    expect(status.summary?.credits).toBe(1);
    expect(status.error?.message).toContain(
      `Its model ${model?.id ?? '?'} was paid for (1 credit) and was queued at the service: hopper retry rotated adopts it and copies it without a second credit`,
    );
    expect(service.credits()).toBe(CREDITS - 1);
    expect(service.requestCount('startTraining')).toBe(1);

    // The key put right (here: the service takes the old one again), the resumed run adopts the
    // paid model and copies it: still one credit.
    service.configure({ apiKey: key });
    const started = nextExecution(local, inboxKey('rotated', TRAIN_JSON));
    await putDrop(local.s3.client, local.bucket, 'rotated', { [TRAIN_JSON]: '{"resume": true}' });
    const resumed = await finished(local, await started.execution);
    expect(expectSucceeded(resumed.status, resumed.execution.name)).toBe(model?.id);
    expect(service.credits()).toBe(CREDITS - 1);
    expect(service.requestCount('startTraining')).toBe(1);
  });

  it('a download whose bytes differ from onnx_bytes: model_size_mismatch, model.json never written, one credit', async () => {
    const local = await fixture.start({
      simulated: { credits: CREDITS, faults: [{ endpoint: 'fileDownload', kind: 'wrong_bytes' }] },
    });
    const service = simulatedOf(local);
    const run = await dropAndRun(local, 'wrong-bytes', reviewsDrop());

    // expectFailed: nothing at all under models/<drop>/ (no model.onnx, no model.json).
    const status = await expectFailed(local, run, 'model_size_mismatch');
    expect(failedStates(run)).toEqual(['CopyModel']);
    const [model] = await serviceList<{ id: string; status: string }>(service, 'models');
    expect(status.error?.message).toContain(`model ${model?.id ?? '?'}`);
    expect(status.error?.message).toContain(`Its model ${model?.id ?? '?'} was paid for (1 credit)`);
    expect(status.error?.message).toMatch(/the file has \d+ bytes, \d+ were expected/);
    expect(status.model_id).toBe(model?.id);
    expect(status.summary?.credits).toBe(1);
    expect(service.credits()).toBe(CREDITS - 1);
    expect(service.requestCount('startTraining')).toBe(1);
    expect(service.requestCount('fileDownload')).toBe(1);
  });

  it('a model list whose cursor repeats: unexpected_response before any training, no credit, bounded', async () => {
    const local = await fixture.start({
      simulated: { credits: CREDITS, faults: [{ endpoint: 'listModels', kind: 'repeat_cursor' }] },
    });
    const service = simulatedOf(local);
    const run = await dropAndRun(local, 'repeat-cursor', reviewsDrop());

    const status = await expectFailed(local, run, 'unexpected_response');
    expect(failedStates(run)).toEqual(['StartTraining']);
    expect(statesEntered(run.events).filter((name) => name === 'StartTraining')).toHaveLength(1);
    expect(status.error?.message).toContain(
      'GET /v1/models: the service returned a cursor it had returned before',
    );
    expect(status.model_id).toBeNull();
    expect(service.credits()).toBe(CREDITS);
    expect(service.requestCount('startTraining')).toBe(0);
    // Bounded: the list was read a handful of times, not paged forever.
    expect(service.requestCount('listModels')).toBeLessThanOrEqual(4);
  });

  it('labels/next answers 204 while tasks are open: LabelExamples goes round without progress until history_limit ends the run (bound shrunk), no credit', async () => {
    // The run's rounds start 5 short of the bound at its first label batch: a run that went
    // round 1,995 times before, without spending minutes here on them.
    const ROUNDS_LEFT = 5;
    let shrunk = false;
    const local = await fixture.start({
      simulated: { credits: CREDITS, faults: [{ endpoint: 'nextLabelTask', kind: 'no_task' }] },
      wrapTask: (name, task) =>
        name !== 'LabelExamples'
          ? task
          : async (input) => {
              if (shrunk) return task(input);
              shrunk = true;
              const state = input as { dataset: { totalPolls: number } };
              const totalBatches = MAX_LOOP_ROUNDS_PER_RUN - ROUNDS_LEFT - state.dataset.totalPolls;
              return task({ ...state, dataset: { ...state.dataset, totalBatches } });
            },
    });
    const service = simulatedOf(local);
    const run = await dropAndRun(local, 'no-task', reviewsDrop());

    const status = await expectFailed(local, run, 'history_limit');
    expect(failedStates(run)).toEqual(['LabelExamples']);
    // Each batch left the dataset at label_examples for another: the rounds left, then the one past.
    expect(statesEntered(run.events).filter((name) => name === 'LabelExamples')).toHaveLength(
      ROUNDS_LEFT + 1,
    );
    expect(status.error?.message).toContain(
      `went round its loops ${String(MAX_LOOP_ROUNDS_PER_RUN + 1)} times while labelling (0 labels so far)`,
    );
    expect(status.error?.message).toContain('25,000 events');
    expect(status).toMatchObject({ next_action: 'label_examples', labelled: 0, model_id: null });
    expect(service.requestCount('startTraining')).toBe(0);
    expect(service.credits()).toBe(CREDITS);
  });
});
