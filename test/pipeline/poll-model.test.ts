import { describe, expect, it } from 'vitest';
import { toRunError } from '../../lambdas/core/errors/index.js';
import { MAX_LOOP_ROUNDS_PER_RUN } from '../../lambdas/core/schedule/index.js';
import { datasetSlot, modelSlot, trainingPlan } from '../../lambdas/core/state/index.js';
import type { ModelSlot } from '../../lambdas/core/state/index.js';
import { pollModelStep } from '../../lambdas/steps/poll-model.js';
import { startTrainingStep } from '../../lambdas/steps/start-training.js';
import { DEFAULT_OPTIONS, type SimulatedServiceOptions } from '../../local/service/index.js';
import { HOUR, MINUTE, rejectionOf, trainableDataset } from '../client/helpers.js';
import { stepEnv, usePipelineFixtures } from '../helpers/pipeline.js';
import { configOf, stateOf } from '../helpers/fixtures.js';

const fixtures = usePipelineFixtures();

/** A training just started (attempt `attempts`), and a way to poll it from a given slot. */
async function startedModel(options: Partial<SimulatedServiceOptions> = {}, attempts = 1) {
  const service = await fixtures.service(options);
  const runtime = fixtures.runtime(service);
  const client = await runtime.service();
  const dataset = await trainableDataset(client);
  const model = await client.startTraining(dataset.id, 'enc-small');
  const now = service.clock.now();
  const slot = modelSlot(model, trainingPlan(attempts, 3), datasetSlot(dataset, undefined, now), now);
  const state = stateOf(fixtures.s3().bucket, {
    config: configOf(),
    dataset: datasetSlot(dataset, undefined, now),
  });
  const poll = (from: ModelSlot) => pollModelStep.run({ ...state, model: from }, stepEnv(runtime));
  return { service, model, slot, poll, state };
}

describe('poll_model', () => {
  it('waits while the model is queued, then training, backing off across both', async () => {
    const { service, slot, poll } = await startedModel({ queuedMs: HOUR, trainingMs: HOUR }, 2);
    expect(slot).toMatchObject({ status: 'queued', nextAction: 'wait', waitSeconds: 2 });
    let current = slot;
    const waits: number[] = [slot.waitSeconds];
    for (let i = 0; i < 3; i++) {
      current = await poll(current);
      waits.push(current.waitSeconds);
    }
    expect(current).toMatchObject({ status: 'queued', step: 4, attempts: 2 });

    service.clock.advance(HOUR);
    current = await poll(current);
    waits.push(current.waitSeconds);
    expect(current).toMatchObject({ status: 'training', nextAction: 'wait', polls: 4, totalPolls: 5 });
    // An hour after the model's creation, 5% of the time it has waited: 180 s.
    expect(waits).toEqual([2, 6, 18, 54, 180]);

    service.clock.advance(HOUR);
    current = await poll(current);
    expect(current).toMatchObject({
      status: 'done',
      nextAction: 'download',
      waitSeconds: 0,
      polls: 0,
      totalPolls: 5,
    });
  });

  it("keeps polls under a quarter of the files' retention earlier models showed, so a finished model is still there to copy", async () => {
    const retentionMs = 8_000;
    const trainingMs = 30_000;
    const service = await fixtures.service({ queuedMs: 0, trainingMs, modelFilesTtlMs: retentionMs });
    const runtime = fixtures.runtime(service);
    const client = await runtime.service();
    // An earlier model of the account, done: it shows how briefly the service keeps files.
    await client.startTraining((await trainableDataset(client, 'earlier')).id, 'enc-small');
    service.clock.advance(trainingMs);

    const dataset = await trainableDataset(client);
    const state = fixtures.withDataset(service, dataset);
    let slot = await startTrainingStep.run(state, stepEnv(runtime));
    const finishesAt = service.clock.now() + trainingMs;
    const waits: number[] = [];
    for (let polls = 0; polls < 100 && slot.nextAction === 'wait'; polls++) {
      waits.push(slot.waitSeconds);
      service.clock.advance(slot.waitSeconds * 1000);
      slot = await pollModelStep.run({ ...state, model: slot }, stepEnv(runtime));
    }
    expect(slot).toMatchObject({ nextAction: 'download', filesRetentionSeconds: retentionMs / 1000 });
    expect(Math.max(...waits)).toBe(2);
    expect(service.clock.now() - finishesAt).toBeLessThanOrEqual(2_000);
  });

  it.each([
    { what: '72 hours', trainingMs: 72 * HOUR },
    { what: '7 days', trainingMs: 7 * 24 * HOUR },
  ])(
    'a training of $what finishes and is noticed within max(60 s, 5% of the wait)',
    async ({ trainingMs }) => {
      const { service, slot, poll } = await startedModel({ queuedMs: 0, trainingMs });
      const startedAt = service.clock.now();
      let current = slot;
      let polls = 0;
      for (; polls < 1000 && current.nextAction === 'wait'; polls++) {
        service.clock.advance(current.waitSeconds * 1000);
        current = await poll(current);
      }
      expect(current).toMatchObject({ status: 'done', nextAction: 'download' });
      const delayMs = service.clock.now() - (startedAt + trainingMs);
      expect(delayMs).toBeLessThanOrEqual(Math.max(60_000, 0.05 * trainingMs));
      expect(polls).toBeLessThanOrEqual(trainingMs > 3 * 24 * HOUR ? 260 : 165);
    },
  );

  it('a done model: download, with its size and when its files expire', async () => {
    const { service, model, slot, poll } = await startedModel({ queuedMs: MINUTE });
    service.clock.advance(MINUTE);
    expect(await poll(slot)).toMatchObject({
      id: model.id,
      step: 5,
      status: 'done',
      nextAction: 'download',
      onnxBytes: DEFAULT_OPTIONS.modelBytes,
      filesExpireAt: new Date(service.clock.now() + DEFAULT_OPTIONS.modelFilesTtlMs).toISOString(),
      error: null,
      attempts: 1,
    });
  });

  it('a failed training: retry, with the error, the attempts kept', async () => {
    const { service, slot, poll } = await startedModel({ queuedMs: MINUTE, failTrainings: 1 }, 2);
    service.clock.advance(MINUTE);
    const failed = await poll(slot);
    expect(failed).toMatchObject({
      step: 4,
      status: 'failed',
      nextAction: 'retry',
      attempts: 2,
      waitSeconds: 0,
    });
    expect(failed.error).toContain('training failed');
  });

  it.each([
    { what: 'expired', remove: undefined },
    { what: 'moved', remove: 'moved' as const },
    { what: 'refunded', remove: 'refunded' as const },
  ])('files gone ($what): none', async ({ remove }) => {
    const { service, model, slot, poll } = await startedModel();
    if (remove === undefined) service.clock.advance(DEFAULT_OPTIONS.modelFilesTtlMs);
    else service.removeModelFiles(model.id, remove);
    expect(await poll(slot)).toMatchObject({ step: 5, nextAction: 'none', waitSeconds: 0 });
  });

  it('stops the run with history_limit once the run has gone round its loops the most times', async () => {
    const { slot, poll } = await startedModel({ queuedMs: HOUR });
    const last = await poll({ ...slot, totalPolls: MAX_LOOP_ROUNDS_PER_RUN - 1 });
    expect(last.totalPolls).toBe(MAX_LOOP_ROUNDS_PER_RUN);
    expect(toRunError(await rejectionOf(poll(last)))).toMatchObject({
      code: 'history_limit',
      retryable: false,
    });
  });

  it('a service that fails every poll of the paid model is waited out, until its files could be gone', async () => {
    const { service, slot, poll } = await startedModel({
      queuedMs: HOUR,
      faults: [{ endpoint: 'getModel', kind: '503' }],
    });
    const firstFailure = service.clock.now();
    let current = await poll(slot);
    expect(current).toMatchObject({
      status: 'queued',
      nextAction: 'wait',
      unreachableSince: new Date(firstFailure).toISOString(),
      totalPolls: slot.totalPolls + 1,
    });
    expect(current.waitSeconds).toBeGreaterThan(0);
    // Ten hours of outage: every poll is one more wait, backing off.
    const waits: number[] = [];
    for (let polls = 0; polls < 200 && service.clock.now() - firstFailure < 10 * HOUR; polls++) {
      service.clock.advance(current.waitSeconds * 1000);
      current = await poll(current);
      waits.push(current.waitSeconds);
    }
    expect(current.unreachableSince).toBe(new Date(firstFailure).toISOString());
    expect(Math.max(...waits)).toBeGreaterThan(waits[0] ?? 0);

    // The service answers again: the poll sees the model done, and the outage mark is gone.
    service.configure({ faults: [] });
    service.clock.advance(HOUR);
    const done = await poll(current);
    expect(done).toMatchObject({ status: 'done', nextAction: 'download', waitSeconds: 0 });
    expect(done).not.toHaveProperty('unreachableSince');

    // Failing past the files' retention (24 h by default when no model showed it): the run ends.
    service.configure({ faults: [{ endpoint: 'getModel', kind: '503' }] });
    const stale = { ...current, unreachableSince: new Date(service.clock.now() - 24 * HOUR).toISOString() };
    expect(toRunError(await rejectionOf(poll(stale)))).toMatchObject({
      code: 'service_unavailable',
      retryable: true,
    });
  });

  it('a far Retry-After on a poll is waited out as asked; a final error (a rotated key) still fails the poll', async () => {
    const { service, slot, poll, state } = await startedModel({
      queuedMs: HOUR,
      faults: [{ endpoint: 'getModel', kind: '429', retryAfterSeconds: 600, count: 1 }],
    });
    const busy = await poll(slot);
    expect(busy).toMatchObject({ nextAction: 'wait', waitSeconds: 600 });
    expect(busy.unreachableSince).toBeDefined();

    // The key is rotated at the service; Hopper still holds the old one.
    const staleRuntime = fixtures.runtime(service, { apiKey: service.apiKey });
    service.configure({ apiKey: 'rotated-key' });
    const refused = toRunError(
      await rejectionOf(pollModelStep.run({ ...state, model: busy }, stepEnv(staleRuntime))),
    );
    expect(refused).toMatchObject({ code: 'unauthorized', retryable: false });
    expect(refused.message).toContain('GET /v1/models/{model} answered 401');
  });

  it('a next_action Hopper does not know fails the run, naming the value', async () => {
    const { service, slot, poll } = await startedModel({
      queuedMs: MINUTE,
      renameNextActions: { download: 'celebrate' },
    });
    service.clock.advance(MINUTE);
    const error = toRunError(await rejectionOf(poll(slot)));
    expect(error).toMatchObject({ code: 'unsupported_next_action', retryable: false });
    expect(error.message).toContain('celebrate');
  });
});
