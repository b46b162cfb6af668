import { describe, expect, it } from 'vitest';
import { toRunError, RunError } from '../../lambdas/core/errors/index.js';
import { paidModelOf } from '../../lambdas/ownership/index.js';
import { datasetSlot } from '../../lambdas/core/state/index.js';
import type { ModelSlot, RunConfig, RunState } from '../../lambdas/core/state/index.js';
import { pollModelStep } from '../../lambdas/steps/poll-model.js';
import { startTrainingStep } from '../../lambdas/steps/start-training.js';
import { CREDIT_LEDGER_KEY } from '../../lambdas/storage/keys.js';
import { deleteObject, putJson } from '../../lambdas/storage/objects.js';
import type { SimulatedServiceOptions } from '../../local/service/index.js';
import { HOUR, MINUTE, rejectionOf, trainableDataset, uploadedDataset } from '../client/helpers.js';
import { stepEnv, usePipelineFixtures } from '../helpers/pipeline.js';
import { configOf, modelSlotOf, stateOf } from '../helpers/fixtures.js';

const fixtures = usePipelineFixtures();

/** A dataset at start_training, and a way to run the step on it (with the model slot so far). */
async function readyDataset(options: Partial<SimulatedServiceOptions> = {}, config: Partial<RunConfig> = {}) {
  const service = await fixtures.service(options);
  const runtime = fixtures.runtime(service);
  const client = await runtime.service();
  const dataset = await trainableDataset(client);
  const base: RunState = stateOf(fixtures.s3().bucket, {
    config: configOf(config),
    dataset: { ...datasetSlot(dataset, undefined, service.clock.now()), totalPolls: 7 },
  });
  const run = (model?: ModelSlot) => startTrainingStep.run({ ...base, model }, stepEnv(runtime));
  return { service, client, dataset, base, run };
}

describe('start_training', () => {
  it('takes a credit from the credit budget first: over it, the run stops with credit_budget before asking the service; a failed training gives its credit back', async () => {
    const { bucket, client: s3 } = fixtures.s3();
    await deleteObject(s3, bucket, CREDIT_LEDGER_KEY);
    const service = await fixtures.service({ queuedMs: MINUTE, failTrainings: 1 });
    const runtime = fixtures.runtime(service, { creditBudget: { perDay: 1 } });
    const client = await runtime.service();
    const [first, second] = await Promise.all(
      ['first', 'second'].map(async (name) => {
        const dataset = await trainableDataset(client, name);
        return fixtures.withDataset(service, dataset);
      }),
    );
    const start = (state: RunState) => startTrainingStep.run(state, stepEnv(runtime));
    const takenAt = service.clock.now();
    const trained = await start(first!);
    expect(trained).toMatchObject({ status: 'queued', attempts: 1 });

    const over = toRunError(await rejectionOf(start(second!)));
    expect(over).toMatchObject({ code: 'credit_budget', retryable: false });
    expect(over.message).toContain(`frees a credit at ${new Date(takenAt + 24 * HOUR).toISOString()}`);
    expect(service.requestCount('startTraining')).toBe(1);
    expect(service.credits()).toBe(9);

    // The first training fails: the service gives its credit back, and so does the budget.
    service.clock.advance(2 * MINUTE);
    const failed = await pollModelStep.run({ ...first!, model: trained }, stepEnv(runtime));
    expect(failed).toMatchObject({ status: 'failed', nextAction: 'retry' });
    expect(service.credits()).toBe(10);
    expect(await start(second!)).toMatchObject({ status: 'queued', attempts: 1 });
    expect(service.credits()).toBe(9);
  });

  it('a refunded training gives its credit back to the budget, as the service gives it to the account', async () => {
    const { bucket, client: s3 } = fixtures.s3();
    await deleteObject(s3, bucket, CREDIT_LEDGER_KEY);
    const service = await fixtures.service({ queuedMs: MINUTE });
    const runtime = fixtures.runtime(service, { creditBudget: { perDay: 1 } });
    const client = await runtime.service();
    const [first, second] = await Promise.all(
      ['first', 'second'].map(async (name) =>
        fixtures.withDataset(service, await trainableDataset(client, name)),
      ),
    );
    const start = (state: RunState) => startTrainingStep.run(state, stepEnv(runtime));
    const trained = await start(first!);
    expect(toRunError(await rejectionOf(start(second!))).code).toBe('credit_budget');

    // Trained, then refunded before the run polled it: the budget frees the credit at that poll.
    service.clock.advance(2 * MINUTE);
    service.removeModelFiles(trained.id, 'refunded');
    const refunded = await pollModelStep.run({ ...first!, model: trained }, stepEnv(runtime));
    expect(refunded).toMatchObject({ status: 'refunded', nextAction: 'none' });
    expect(service.credits()).toBe(10);
    expect(await start(second!)).toMatchObject({ status: 'queued', attempts: 1 });
  });

  it('a start the service refuses with any final answer (409 not_ready here) gives its credit back to the budget', async () => {
    const { bucket, client: s3 } = fixtures.s3();
    await deleteObject(s3, bucket, CREDIT_LEDGER_KEY);
    const service = await fixtures.service();
    const runtime = fixtures.runtime(service, { creditBudget: { perDay: 1 } });
    const client = await runtime.service();
    // Uploaded, not structured: the service answers the start 409 not_ready, and trains nothing.
    const notReady = fixtures.withDataset(service, await uploadedDataset(client, undefined, 'early'));
    const ready = fixtures.withDataset(service, await trainableDataset(client, 'ready'));
    const start = (state: RunState) => startTrainingStep.run(state, stepEnv(runtime));
    expect(toRunError(await rejectionOf(start(notReady))).retryable).toBe(false);
    expect(service.credits()).toBe(10);
    expect(await start(ready)).toMatchObject({ status: 'done', attempts: 1 });
    expect(service.credits()).toBe(9);
  });

  it("starts a training with the service's default encoder, for one credit", async () => {
    const { service, client, dataset, run } = await readyDataset({ queuedMs: MINUTE });
    const slot = await run();
    // A first training queued with enc-small; no model of the account is done yet, so nothing
    // caps the poll interval or tells its length (filesRetentionSeconds, expectedFinish null).
    expect(slot).toEqual(
      modelSlotOf({
        id: expect.any(String) as string,
        // A fresh backoff; the run's poll count goes on from the dataset's.
        waitSeconds: 2,
        totalPolls: 8,
        totalWaitSeconds: expect.any(Number) as number,
      }),
    );
    expect(service.credits()).toBe(9);
    expect((await client.getModel(slot.id)).dataset_id).toBe(dataset.id);
  });

  it("uses train.json's encoder", async () => {
    const { run } = await readyDataset({}, { encoder: 'enc-base' });
    expect(await run()).toMatchObject({ encoder: 'enc-base', nextAction: 'download' });
  });

  it.each([
    { what: 'queued', options: { queuedMs: MINUTE }, nextAction: 'wait' },
    { what: 'training', options: { trainingMs: MINUTE }, nextAction: 'wait' },
    { what: 'done', options: {}, nextAction: 'download' },
  ])(
    'a retried invocation adopts the $what model instead of paying again',
    async ({ options, nextAction }) => {
      const { service, run } = await readyDataset(options);
      const first = await run();
      const second = await run();
      expect(second).toMatchObject({ id: first.id, nextAction, attempts: 1 });
      expect(service.credits()).toBe(9);
      expect(service.requestCount('startTraining')).toBe(1);
    },
  );

  it('after a failed training it starts another, and counts the attempts', async () => {
    const { service, run } = await readyDataset({ failTrainings: 1 });
    const failed = await run();
    expect(failed).toMatchObject({ status: 'failed', nextAction: 'retry', attempts: 1, waitSeconds: 0 });
    expect(failed.error).toContain('training failed');
    expect(service.credits()).toBe(10);

    const retry = await run(failed);
    expect(retry).toMatchObject({ version: 2, nextAction: 'download', attempts: 2 });
    expect(retry.id).not.toBe(failed.id);
    expect(service.credits()).toBe(9);
  });

  it.each(['drop_after', 'garble'] as const)(
    'after an answer lost once the service had acted (%s), it finds the model it started and pays once',
    async (kind) => {
      const { service, run } = await readyDataset({
        queuedMs: MINUTE,
        faults: [
          { endpoint: 'startTraining', kind, count: 1, form: kind === 'garble' ? 'truncated' : undefined },
        ],
      });
      expect(await run()).toMatchObject({ status: 'queued', nextAction: 'wait', attempts: 1, version: 1 });
      expect(service.credits()).toBe(9);
      expect(service.requestCount('startTraining')).toBe(1);
    },
  );

  it('after an answer lost once the service had acted and the models unreadable, the next invocation adopts the model', async () => {
    const { service, run } = await readyDataset({
      queuedMs: MINUTE,
      faults: [
        { endpoint: 'startTraining', kind: 'drop_after', count: 1 },
        // The two lists before the training start pass; every one after it fails.
        { endpoint: 'listModels', kind: 'stall', stallMs: 0, count: 2 },
        { endpoint: 'listModels', kind: '503' },
      ],
    });
    const lost = toRunError(await rejectionOf(run()));
    expect(lost).toMatchObject({ code: 'service_unavailable', retryable: true, name: 'Hopper.Retryable' });
    expect(service.credits()).toBe(9);

    service.configure({ faults: [] });
    expect(await run()).toMatchObject({ status: 'queued', nextAction: 'wait', attempts: 1 });
    expect(service.credits()).toBe(9);
    expect(service.requestCount('startTraining')).toBe(1);
  });

  it.each([
    { what: 'queued', options: { queuedMs: MINUTE }, after: undefined, adopted: true },
    { what: 'done', options: {}, after: undefined, adopted: true },
    { what: 'done, then moved', options: {}, after: 'moved', adopted: false },
    { what: 'done, then refunded', options: {}, after: 'refunded', adopted: false },
    { what: 'failed', options: { failTrainings: 1 }, after: undefined, adopted: false },
  ] as const)(
    'adopts the $what model exactly when paidModelOf says the run holds its credit (one answer)',
    async ({ options, after, adopted }) => {
      const { service, base, run } = await readyDataset(options);
      const first = await run();
      if (after !== undefined) service.removeModelFiles(first.id, after);
      const seen = await pollModelStep.run({ ...base, model: first }, stepEnv(fixtures.runtime(service)));
      expect(paidModelOf({ ...base, model: seen }) !== null).toBe(adopted);
      const next = await run(seen);
      expect(next.id === first.id).toBe(adopted);
      expect(service.requestCount('startTraining')).toBe(adopted ? 1 : 2);
    },
  );

  it("a resumed run trains again when the failed run's model lost its files (model_files_gone)", async () => {
    const resumeFrom = { runId: 'earlier', datasetId: 'set below', errorCode: 'model_files_gone' };
    const { service, run } = await readyDataset({}, { resumeFrom });
    const done = await run();
    service.removeModelFiles(done.id, 'refunded');
    // The resumed run starts without a model slot: it finds the model gone and trains anew.
    const again = await run();
    expect(again).toMatchObject({ status: 'done', nextAction: 'download', attempts: 2, version: 2 });
    expect(again.id).not.toBe(done.id);
    expect(service.requestCount('startTraining')).toBe(2);
  });

  it("a resumed run adopts the earlier run's paid model as paid by that run, though it was created in the second this run's train.json came", async () => {
    const { service, base, dataset, run } = await readyDataset();
    const paid = await run();
    // EventBridge's time is to the second: this run "started" at the start of the model's second.
    const createdAt = (await (await fixtures.runtime(service).service()).getModel(paid.id)).created_at;
    const startedAt = new Date(Math.floor(Date.parse(createdAt) / 1000) * 1000).toISOString();
    const resumeFrom = {
      runId: 'earlier',
      datasetId: dataset.id,
      errorCode: 'training_failed',
      paidModelId: paid.id,
    };
    const resumed = await startTrainingStep.run(
      { ...base, run: { ...base.run, startedAt }, config: configOf({ resumeFrom }) },
      stepEnv(fixtures.runtime(service)),
    );
    expect(resumed).toMatchObject({ id: paid.id, paidBy: 'earlier' });
    expect(service.requestCount('startTraining')).toBe(1);
  });

  it('a train.json changed in the bucket since the run began stops it before it pays: superseded, naming the newer upload, no training started', async () => {
    const { service, base, run } = await readyDataset();
    const { bucket, client: s3 } = fixtures.s3();
    // The run began from etag-train; another train.json (another etag) is there now.
    await putJson(s3, bucket, base.run.key, { encoder: 'enc-large' });
    const stopped = toRunError(await rejectionOf(run()));
    expect(stopped).toMatchObject({ code: 'superseded', retryable: false });
    expect(stopped.message).toMatch(
      /a newer train\.json of drop "[^"]+" \(run [A-Za-z0-9_-]+-[0-9a-f]{32}, uploaded /,
    );
    expect(stopped.message).toContain('start_training');
    expect(service.requestCount('startTraining')).toBe(0);
    expect(service.credits()).toBe(10);
  });

  it('no credits: no_credits, saying what to do', async () => {
    const { dataset, run } = await readyDataset({ credits: 0 });
    const error = await rejectionOf(run());
    expect(error).toBeInstanceOf(RunError);
    expect(error).toMatchObject({ code: 'no_credits', retryable: false, name: 'Hopper.Failed' });
    expect((error as RunError).message).toContain(dataset.id);
    expect((error as RunError).message).toContain(
      'add credits at the service, then resume the run without uploading again (hopper retry <drop>',
    );
  });

  it("an encoder the service does not offer: unknown_encoder, listing the service's encoders", async () => {
    const { service, run } = await readyDataset({}, { encoder: 'enc-huge' });
    const error = (await rejectionOf(run())) as RunError;
    expect(error).toMatchObject({ code: 'unknown_encoder', retryable: false });
    expect(error.message).toContain('"enc-huge"');
    expect(error.message).toContain('"enc-small" (default), "enc-base"');
    expect(service.credits()).toBe(10);
  });

  it('never trains more than maxAttempts times, even when the state lost count', async () => {
    const { service, run } = await readyDataset({ failTrainings: 5 }, { maxAttempts: 2 });
    await run();
    const second = await run();
    expect(second).toMatchObject({ attempts: 2, nextAction: 'retry' });

    const error = (await rejectionOf(run(second))) as RunError;
    expect(error).toMatchObject({ code: 'training_failed', retryable: false });
    expect(error.message).toContain('training failed on 2 of 2 attempts (maxAttempts)');
    expect(error.message).toContain(second.id);
    expect(service.requestCount('startTraining')).toBe(2);
  });

  it('a dataset that expired before training: dataset_expired, saying when', async () => {
    const { service, dataset, run } = await readyDataset();
    service.clock.advance(7 * 24 * HOUR);
    const error = (await rejectionOf(run())) as RunError;
    expect(error).toMatchObject({ code: 'dataset_expired' });
    expect(error.message).toContain(dataset.expires_at);
    expect(service.requestCount('startTraining')).toBe(0);
  });

  it("finds the dataset's model beyond the first page, and stops paging at models older than the dataset", async () => {
    const { service, client, run } = await readyDataset({ credits: 200 });
    const other = await trainableDataset(client, 'other');
    const first = await run();
    for (let i = 0; i < 100; i++) await client.startTraining(other.id, 'enc-small');

    const pages = service.requestCount('listModels');
    expect(await run(first)).toMatchObject({ id: first.id, attempts: 1 });
    expect(service.requestCount('listModels') - pages).toBe(2);
    expect(service.requestCount('startTraining')).toBe(101);

    // A dataset created later: the newest model is already older, so one page settles it.
    service.clock.advance(1000);
    const later = await trainableDataset(client, 'later');
    const laterState = fixtures.withDataset(service, later);
    const before = service.requestCount('listModels');
    const slot = await startTrainingStep.run(laterState, stepEnv(fixtures.runtime(service)));
    expect(slot).toMatchObject({ version: 1, attempts: 1 });
    // One page settles the dataset's models; one more reads the account's done models (retention).
    expect(service.requestCount('listModels') - before).toBe(2);
  });

  it("learns when the training should finish from the account's earlier trainings, and polls there", async () => {
    const queuedMs = MINUTE;
    const trainingMs = 2 * HOUR;
    const { service, client, run } = await readyDataset({ queuedMs, trainingMs });
    // Two earlier models of the account, done: each took 2 h 1 min from creation to finish.
    for (const name of ['first', 'second']) {
      await client.startTraining((await trainableDataset(client, name)).id, 'enc-small');
      service.clock.advance(queuedMs + trainingMs);
    }
    const slot = await run();
    const expectedSeconds = (queuedMs + trainingMs) / 1000;
    expect(slot.expectedFinish).toEqual({
      fromSeconds: expectedSeconds - 10,
      toSeconds: expectedSeconds + 10,
    });
    // Earlier trainings took hours: no backoff from 2 s, the first poll a minute after the start.
    expect(slot.waitSeconds).toBe(60);
    // A retry carries what was learnt without reading the list again.
    const listed = service.requestCount('listModels');
    expect((await run(slot)).expectedFinish).toEqual(slot.expectedFinish);
    expect(service.requestCount('listModels') - listed).toBe(1);
  });
});
