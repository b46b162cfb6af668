import { inspect } from 'node:util';
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { Logger } from '@aws-lambda-powertools/logger';
import { describe, expect, it, vi } from 'vitest';
import { RunError } from '../../lambdas/core/errors/index.js';
import {
  stepHandler,
  type Step,
  DEADLINE_MARGIN_MS,
  LAMBDA_CLIENT_OPTIONS,
  createRuntime,
  type Runtime,
  trainingService,
} from '../../lambdas/runtime/index.js';
import { datasetSlot } from '../../lambdas/core/state/index.js';
import type { TrainingClaim } from '../../lambdas/ownership/index.js';
import type { RunState, StepName } from '../../lambdas/core/state/index.js';
import { readStatus, statusOf, writeStatus } from '../../lambdas/records/status/index.js';
import { createDatasetStep } from '../../lambdas/steps/create-dataset.js';
import { pollDatasetStep } from '../../lambdas/steps/poll-dataset.js';
import { startTrainingStep } from '../../lambdas/steps/start-training.js';
import { statusKey, trainingClaimKey } from '../../lambdas/storage/keys.js';
import { rejectionOf, trainableDataset } from '../client/helpers.js';
import { invocationContext, readText, usePipelineFixtures } from '../helpers/pipeline.js';
import { configOf, stateOf } from '../helpers/fixtures.js';

const fixtures = usePipelineFixtures();
const API_KEY = 'sk-test-0123456789-SECRET';

/** A step whose run throws `error`. */
function throwing(error: Error): Step<'poll_dataset'> {
  return { name: 'poll_dataset', run: () => Promise.reject(error) };
}

async function invoke<N extends StepName>(step: Step<N>, runtime: Runtime, state: unknown) {
  return stepHandler(step).withRuntime(runtime)(state, invocationContext());
}

/** What an error or a value shows: its JSON and its inspection at full depth, hidden fields too. */
function shown(value: unknown): string {
  return `${JSON.stringify(value)}\n${inspect(value, { depth: Infinity, showHidden: true })}`;
}

describe('the handler wrapper: errors', () => {
  it('a RunError leaves as it is: name from retryable, code and message kept', async () => {
    const service = await fixtures.service();
    const runtime = fixtures.runtime(service);
    const state = stateOf(fixtures.s3().bucket);
    const final = await rejectionOf(
      invoke(throwing(new RunError('labels_required', 'add labels.csv')), runtime, state),
    );
    expect(final).toMatchObject({ name: 'Hopper.Failed', code: 'labels_required', retryable: false });
    expect((final as Error).message).toBe('labels_required: add labels.csv');

    const transient = new RunError('storage_error', 'slow', { retryable: true });
    expect(await rejectionOf(invoke(throwing(transient), runtime, state))).toMatchObject({
      name: 'Hopper.Retryable',
      code: 'storage_error',
    });
  });

  it('a final failure of a run that a newer train.json took over while the step ran gives way (superseded)', async () => {
    const service = await fixtures.service();
    const runtime = fixtures.runtime(service);
    const { client, bucket } = fixtures.s3();
    const state = stateOf(bucket);
    const newer = { ...state.run, runId: `${state.run.runId}-newer`, startedAt: '2099-01-01T00:00:00.000Z' };
    // The step finds the drop changed under it (the user dropped it again) and fails for good;
    // the newer run's first status lands while it runs.
    const step: Step<'upload_files'> = {
      name: 'upload_files',
      run: async () => {
        await writeStatus(
          client,
          bucket,
          statusOf({ run: newer }, { hopperStep: 'validate_drop' }, Date.now()),
        );
        throw new RunError('drop_changed', 'reviews.csv changed after this run pinned it');
      },
    };

    const failure = await rejectionOf(invoke(step, runtime, state));

    expect(failure).toMatchObject({ name: 'Hopper.Failed', code: 'superseded' });
    expect((failure as RunError).detail).toContain('stopped before upload_files without starting a training');
    expect((await readStatus(client, bucket, state.run.drop))?.run_id).toBe(newer.runId);
  });

  it('a service that stays unavailable: Hopper.Retryable service_unavailable', async () => {
    const service = await fixtures.service({ faults: [{ endpoint: 'getDataset', kind: '503', count: 100 }] });
    const runtime = fixtures.runtime(service);
    const dataset = await (
      await runtime.service()
    ).createDataset({ name: 'r', files: [{ name: 'a.csv', bytes: 1 }] });
    const state = fixtures.withDataset(service, dataset);
    const error = await rejectionOf(invoke(pollDatasetStep, runtime, state));
    expect(error).toBeInstanceOf(RunError);
    expect(error).toMatchObject({ name: 'Hopper.Retryable', code: 'service_unavailable', retryable: true });
  });

  it('a refused request: Hopper.Failed service_error; a refused key: unauthorized', async () => {
    const service = await fixtures.service();
    const state = stateOf(fixtures.s3().bucket, {
      config: configOf({ files: [{ name: 'sub/a.csv', bytes: 1, etag: 'e' }] }),
    });
    expect(await rejectionOf(invoke(createDatasetStep, fixtures.runtime(service), state))).toMatchObject({
      name: 'Hopper.Failed',
      code: 'service_error',
      retryable: false,
    });

    const refused = await rejectionOf(
      invoke(
        createDatasetStep,
        fixtures.runtime(service, { apiKey: 'not-the-key' }),
        stateOf(fixtures.s3().bucket, { config: configOf() }),
      ),
    );
    expect(refused).toMatchObject({ name: 'Hopper.Failed', code: 'unauthorized', retryable: false });
  });

  it('S3 trouble: storage_error, retryable when AWS says so', async () => {
    const service = await fixtures.service();
    const runtime = fixtures.runtime(service);
    // The status cannot be written: the bucket does not exist.
    const missingBucket = stateOf('no-such-bucket', { config: configOf() });
    expect(await rejectionOf(invoke(createDatasetStep, runtime, missingBucket))).toMatchObject({
      name: 'Hopper.Failed',
      code: 'storage_error',
    });
    const network = Object.assign(new Error('socket hang up'), { $retryable: {} });
    expect(
      await rejectionOf(invoke(throwing(network), runtime, stateOf(fixtures.s3().bucket))),
    ).toMatchObject({
      name: 'Hopper.Retryable',
      code: 'storage_error',
    });
  });

  it('a bug: Hopper.Failed internal_error; a state without its run: invalid_event', async () => {
    const service = await fixtures.service();
    const runtime = fixtures.runtime(service);
    expect(
      await rejectionOf(
        invoke(throwing(new TypeError('x is undefined')), runtime, stateOf(fixtures.s3().bucket)),
      ),
    ).toMatchObject({ name: 'Hopper.Failed', code: 'internal_error' });
    expect(await rejectionOf(invoke(createDatasetStep, runtime, { config: configOf() }))).toMatchObject({
      name: 'Hopper.Failed',
      code: 'invalid_event',
    });
  });
});

describe('the handler wrapper: the invocation deadline', () => {
  it("reaches the step's service calls: a stalled service ends the step as retryable step_timeout, with time left", async () => {
    const service = await fixtures.service({
      faults: [{ endpoint: 'getDataset', kind: 'stall', stallMs: 10 * 60_000 }],
    });
    // Lambda's own client settings: 20 s per attempt, so only the deadline ends the call early.
    const runtime = fixtures.runtime(service, { clientOptions: LAMBDA_CLIENT_OPTIONS });
    const dataset = await (
      await runtime.service()
    ).createDataset({ name: 'r', files: [{ name: 'a.csv', bytes: 1 }] });
    const state = fixtures.withDataset(service, dataset);
    const context = invocationContext(DEADLINE_MARGIN_MS + 500);

    const error = await rejectionOf(stepHandler(pollDatasetStep).withRuntime(runtime)(state, context));

    expect(error).toMatchObject({ name: 'Hopper.Retryable', code: 'step_timeout', retryable: true });
    expect((error as Error).message).toContain("the call's deadline passed");
    expect(context.getRemainingTimeInMillis()).toBeGreaterThan(0);
    expect(service.requestCount('getDataset')).toBe(1);
    // The step said so in the status file before Lambda would have cut it off.
    expect(await readStatus(fixtures.s3().client, fixtures.s3().bucket, state.run.drop)).toMatchObject({
      run_id: state.run.runId,
    });
  });

  it("reaches the training claim's look at the holder's model: a stalled service ends the step as step_timeout", async () => {
    const service = await fixtures.service({
      faults: [{ endpoint: 'getModel', kind: 'stall', stallMs: 10 * 60_000 }],
    });
    const runtime = fixtures.runtime(service, { clientOptions: LAMBDA_CLIENT_OPTIONS });
    const { client, bucket } = fixtures.s3();
    const ready = await trainableDataset(await runtime.service());
    const state = fixtures.withDataset(service, ready);
    // Another run of the drop holds the claim with its training: the gate asks the service
    // whether that model is still under way (getModel), which stalls.
    const holder: TrainingClaim = {
      run_id: `${state.run.runId}-other`,
      started_at: state.run.startedAt,
      dataset_id: ready.id,
      model_id: 'm-held-by-the-other-run',
      claimed_at: new Date(service.clock.now()).toISOString(),
    };
    await client.send(
      new PutObjectCommand({
        Bucket: bucket,
        Key: trainingClaimKey(state.run.drop),
        Body: JSON.stringify(holder),
      }),
    );
    const context = invocationContext(DEADLINE_MARGIN_MS + 1_000);

    const error = await rejectionOf(stepHandler(pollDatasetStep).withRuntime(runtime)(state, context));

    expect(error).toMatchObject({ name: 'Hopper.Retryable', code: 'step_timeout', retryable: true });
    expect(context.getRemainingTimeInMillis()).toBeGreaterThan(0);
    expect(service.requestCount('getModel')).toBe(1);
  });
});

describe('the handler wrapper: status', () => {
  it('writes status/<drop>.json after a step, with the slot in place', async () => {
    const service = await fixtures.service();
    const runtime = fixtures.runtime(service);
    const { client, bucket } = fixtures.s3();
    const state = stateOf(bucket, { config: configOf() });

    const slot = await invoke(createDatasetStep, runtime, state);

    expect(await readStatus(client, bucket, state.run.drop)).toMatchObject({
      run_id: state.run.runId,
      state: 'running',
      hopper_step: 'create_dataset',
      step: 1,
      next_action: 'upload_files',
      dataset_id: slot.id,
      model_id: null,
      max_attempts: 3,
      updated_at: new Date(service.clock.now()).toISOString(),
      error: null,
    });
  });

  it('when the step fails, writes the state as it was, counting only the failed invocation', async () => {
    const service = await fixtures.service();
    const { client, bucket } = fixtures.s3();
    const state = stateOf(bucket, {
      config: configOf({ files: [{ name: 'sub/a.csv', bytes: 1, etag: 'e' }] }),
    });
    await rejectionOf(invoke(createDatasetStep, fixtures.runtime(service), state));
    const status = await readStatus(client, bucket, state.run.drop);
    expect(status).toMatchObject({
      state: 'running',
      hopper_step: 'create_dataset',
      dataset_id: null,
      error: null,
    });
    expect(status?.summary?.steps).toEqual({
      create_dataset: expect.objectContaining({ invocations: 1, failed: 1 }) as unknown,
    });
    // A failed invocation is one transition (its Task); a retry would enter the Task again.
    expect(status?.summary?.state_transitions).toBe(1);
  });
});

describe('the API key', () => {
  it('appears in no thrown error, returned slot or status file', async () => {
    const service = await fixtures.service({ apiKey: API_KEY });
    const runtime = fixtures.runtime(service);
    const { client, bucket } = fixtures.s3();
    const seen: string[] = [];

    // Success: the slots of two steps, and the status each wrote.
    const created = stateOf(bucket, { config: configOf() });
    const dataset = await invoke(createDatasetStep, runtime, created);
    seen.push(shown(dataset), (await readText(client, bucket, statusKey(created.run.drop))) ?? '');
    const ready = await trainableDataset(await runtime.service());
    const training: RunState = { ...created, dataset: datasetSlot(ready, undefined, service.clock.now()) };
    const model = await invoke(startTrainingStep, runtime, training);
    seen.push(shown(model), (await readText(client, bucket, statusKey(created.run.drop))) ?? '');

    // Failures: a dropped connection and a 503 on requests carrying the key, and a refusal of the key.
    for (const kind of ['drop', '503'] as const) {
      const down = await fixtures.service({ apiKey: API_KEY, faults: [{ endpoint: '*', kind, count: 100 }] });
      seen.push(shown(await rejectionOf(invoke(createDatasetStep, fixtures.runtime(down), created))));
    }
    const wrongKey = `${API_KEY}-WRONG`;
    const refused = await rejectionOf(
      invoke(createDatasetStep, fixtures.runtime(service, { apiKey: wrongKey }), created),
    );
    expect(refused).toMatchObject({ code: 'unauthorized' });
    seen.push(shown(refused));

    expect(seen).toHaveLength(7);
    for (const text of seen) {
      expect(text.length).toBeGreaterThan(0);
      expect(text).not.toContain(API_KEY);
      expect(text).not.toContain('SECRET');
    }
  });

  it('appears in no log line, at debug level, of a step that succeeds or fails', async () => {
    const lines: string[] = [];
    // Powertools writes info and debug to stdout, warnings and errors to stderr.
    const capture = (chunk: string | Uint8Array) => {
      lines.push(String(chunk));
      return true;
    };
    const writes = [
      vi.spyOn(process.stdout, 'write').mockImplementation(capture),
      vi.spyOn(process.stderr, 'write').mockImplementation(capture),
    ];
    try {
      for (const faults of [[], [{ endpoint: '*', kind: '503', count: 100 } as const]]) {
        const service = await fixtures.service({ apiKey: API_KEY, faults });
        const runtime = createRuntime({
          s3: fixtures.s3().client,
          service: trainingService({
            serviceUrl: service.apiUrl,
            apiKey: () => Promise.resolve(API_KEY),
            clientOptions: { timeoutMs: 5_000, backoffBaseMs: 1, backoffCapMs: 5, maxRetries: 2 },
          }),
          logger: new Logger({ serviceName: 'hopper', logLevel: 'DEBUG' }),
        });
        await invoke(createDatasetStep, runtime, stateOf(fixtures.s3().bucket, { config: configOf() })).catch(
          () => undefined,
        );
        await (await runtime.service()).close();
      }
    } finally {
      for (const write of writes) write.mockRestore();
    }
    const log = lines.join('');
    // The client's requests (debug), the step's end and its failure (warn) were all logged.
    expect(log).toContain('POST');
    expect(log).toContain('step done');
    expect(log).toContain('step failed');
    // The failure's line carries the error itself: its detail, stack and cause.
    const failedLine = lines.find((line) => line.includes('step failed')) ?? '';
    const failed = JSON.parse(failedLine) as {
      detail?: unknown;
      error?: { stack?: unknown; cause?: unknown };
    };
    expect(typeof failed.detail).toBe('string');
    expect(typeof failed.error?.stack).toBe('string');
    expect(failed.error?.cause).toBeDefined();
    expect(log).not.toContain(API_KEY);
    expect(log).not.toContain('SECRET');
  });
});
