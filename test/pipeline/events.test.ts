/**
 * Run events: what they carry (lambdas/records/events/events.ts), that each goes out once although its
 * step is retried (lambdas/records/events/event-bus.ts, markers on the local S3 server), the EventBridge
 * bus over the real SDK client against a loopback stand-in of PutEvents, and the report and
 * validate_drop steps putting them.
 */
import { readFile } from 'node:fs/promises';
import { EventBridgeClient } from '@aws-sdk/client-eventbridge';
import { GetObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { afterEach, describe, expect, it } from 'vitest';
import {
  publishOnce,
  type PublishContext,
  type RunEventBus,
  RUN_EVENT_TYPES,
  runEndedEvent,
  runStartedEvent,
  type RunEvent,
  type RunEventDetail,
} from '../../lambdas/records/events/index.js';
import { RunError } from '../../lambdas/core/errors/index.js';
import { announceRun, eventBridgeBus, stepHandler } from '../../lambdas/runtime/index.js';
import type {
  CopySlot,
  DatasetSlot,
  ModelSlot,
  RunFailure,
  RunState,
} from '../../lambdas/core/state/index.js';
import { reportStep } from '../../lambdas/steps/report.js';
import { eventMarkerKey } from '../../lambdas/storage/keys.js';
import { LocalEventBus } from '../../local/emulator/event-bus.js';
import { CLIENT_SETTINGS, startAwsJsonEndpoint, type AwsJsonEndpoint } from '../helpers/aws-json-endpoint.js';
import { invocationContext, stepEnv, usePipelineFixtures } from '../helpers/pipeline.js';
import { configOf, modelSlotOf, stateOf, uniqueDrop } from '../helpers/fixtures.js';

const fixtures = usePipelineFixtures();

const ARN = 'arn:aws:states:us-east-1:123456789012:execution:hopper:drop-run';
const STARTED_AT = '2026-01-01T00:00:00.000Z';
const FINISHED = Date.parse('2026-01-01T00:12:30.000Z');

const DATASET: DatasetSlot = {
  id: 'ds-1',
  step: 5,
  status: 'ready',
  nextAction: 'start_training',
  expiresAt: '2026-01-08T00:00:00.000Z',
  error: null,
  labelled: 4,
  waitSeconds: 0,
  polls: 0,
  waitedSeconds: 0,
  totalPolls: 3,
  totalWaitSeconds: 0,
};

function model(overrides: Partial<ModelSlot> = {}): ModelSlot {
  return modelSlotOf({
    id: 'model-1',
    step: 3,
    status: 'done',
    nextAction: 'download',
    attempts: 2,
    onnxBytes: 1024,
    totalPolls: 9,
    ...overrides,
  });
}

function copyOf(drop: string): CopySlot {
  return {
    modelKey: `models/${drop}/model-1/model.onnx`,
    recordKey: `models/${drop}/model-1/model.json`,
    bytes: 1024,
  };
}

/** A run's state in `bucket` with the execution's ARN, as Hopper's starters give it. */
function runState(bucket: string, slots: Omit<RunState, 'run'>, drop = uniqueDrop()): RunState {
  return stateOf(
    bucket,
    { config: configOf(), ...slots },
    { drop, startedAt: STARTED_AT, executionArn: ARN },
  );
}

describe('run events: what they carry', () => {
  it('Started: the run, its drop and execution, and nothing it does not know yet', () => {
    const event = runStartedEvent(runState('b', {}, 'reviews'));
    expect(event.detailType).toBe('Hopper Run Started');
    expect(event.detail).toMatchObject({
      event_id: 'reviews-run/started',
      run_id: 'reviews-run',
      drop: 'reviews',
      execution_arn: ARN,
      state: 'running',
      train_json: 'inbox/reviews/train.json',
      dataset_id: null,
      model_id: null,
      model: null,
      attempts: 0,
      credits: 0,
      started_at: STARTED_AT,
      finished_at: null,
      error: null,
    });
    expect(event.detail.summary).toContain('reviews-run');
  });

  it('Succeeded: ids, where the model is, metrics, attempts, credits and duration, in the summary too', () => {
    const state = runState('b', { dataset: DATASET, model: model(), copy: copyOf('reviews') }, 'reviews');
    const event = runEndedEvent(state, {
      report: { outcome: 'succeeded', error: null },
      records: [{ model: { id: 'model-1', metrics: { accuracy: 0.91, f1: 0.88 }, onnx_bytes: 1024 } }],
      finishedAt: FINISHED,
      credits: 1,
    });
    expect(event.detailType).toBe('Hopper Run Succeeded');
    expect(event.detail).toMatchObject({
      event_id: 'reviews-run/succeeded',
      state: 'succeeded',
      dataset_id: 'ds-1',
      model_id: 'model-1',
      model: {
        onnx: 's3://b/models/reviews/model-1/model.onnx',
        record: 's3://b/models/reviews/model-1/model.json',
        bytes: 1024,
      },
      metrics: { accuracy: 0.91, f1: 0.88 },
      attempts: 2,
      credits: 1,
      finished_at: '2026-01-01T00:12:30.000Z',
      duration_seconds: 750,
      error: null,
    });
    expect(event.detail.summary).toMatch(
      /^Hopper run reviews-run of drop "reviews" succeeded in 12 min 30 s/,
    );
    expect(event.detail.summary).toContain('s3://b/models/reviews/model-1/model.onnx');
    expect(event.detail.summary).toContain('accuracy 0.91, f1 0.88');
  });

  it("a sweep's end: the model the promotion names (the best, not the last encoder's), the drop's current model, and each encoder's model and metrics", () => {
    const first = {
      encoder: 'enc-a',
      outcome: 'copied',
      model_id: 'model-a',
      attempts: 1,
      error: null,
    } as const;
    const last = model({
      id: 'model-b',
      encoder: 'enc-b',
      sweep: { encoders: ['enc-a', 'enc-b'], outcomes: [first] },
    });
    const copy = {
      modelKey: 'models/sweep/model-b/model.onnx',
      recordKey: 'models/sweep/model-b/model.json',
      bytes: 2048,
    };
    const state = runState('b', { dataset: DATASET, model: last, copy }, 'sweep');
    const recordOf = (id: string, f1: number) => ({ model: { id, metrics: { f1 }, onnx_bytes: 2048 } });
    const promotion = {
      model_id: 'model-a',
      promoted: true,
      reason: 'the drop had no current model',
      previous_model_id: null,
      differences: null,
    };
    const event = runEndedEvent(state, {
      report: { outcome: 'succeeded', error: null },
      records: [recordOf('model-a', 0.9), recordOf('model-b', 0.7)],
      promotion,
      finishedAt: FINISHED,
      credits: 2,
    });
    expect(event.detail).toMatchObject({
      model_id: 'model-a',
      model: {
        onnx: 's3://b/models/sweep/model-a/model.onnx',
        record: 's3://b/models/sweep/model-a/model.json',
        bytes: 2048,
      },
      metrics: { f1: 0.9 },
      promotion,
      current_model_id: 'model-a',
      encoders: [
        { ...first, metrics: { f1: 0.9 } },
        {
          encoder: 'enc-b',
          outcome: 'copied',
          model_id: 'model-b',
          attempts: 2,
          error: null,
          metrics: { f1: 0.7 },
        },
      ],
    });
    expect(event.detail.summary).toContain('model model-a,');
    // Not promoted: the drop's current model is the one it was compared with.
    const kept = {
      ...promotion,
      promoted: false,
      reason: 'f1 0.9 does not beat 0.95',
      previous_model_id: 'model-z',
    };
    const notPromoted = runEndedEvent(state, {
      report: { outcome: 'succeeded', error: null },
      records: [recordOf('model-a', 0.9)],
      promotion: kept,
      finishedAt: FINISHED,
      credits: 2,
    });
    expect(notPromoted.detail.current_model_id).toBe('model-z');
  });

  it('Failed: the code and message, what to do, and no credit for a training that failed', () => {
    const state = runState('b', {
      dataset: DATASET,
      model: model({ status: 'failed', nextAction: 'retry' }),
    });
    const error: RunFailure = {
      code: 'training_failed',
      message: 'training failed on 3 of 3 attempts; raise "maxAttempts"',
    };
    const event = runEndedEvent(state, {
      report: { outcome: 'failed', error },
      records: [],
      finishedAt: FINISHED,
      credits: 0,
    });
    expect(event.detailType).toBe('Hopper Run Failed');
    expect(event.detail).toMatchObject({ state: 'failed', error, credits: 0, model: null, metrics: null });
    expect(event.detail.summary).toContain(`failed in 12 min 30 s with training_failed: ${error.message}`);
    expect(event.detail.summary).toContain(
      'What to do: as the message says; the "training_failed" row of docs/errors.md',
    );
  });
});

/** A bus that records what it accepted; `failFirst` puts fail (before or after accepting). */
function recordingBus(options: { failFirst?: number; acceptThenFail?: number; delayMs?: number } = {}) {
  const accepted: RunEvent[] = [];
  let refusals = options.failFirst ?? 0;
  let crashes = options.acceptThenFail ?? 0;
  const bus: RunEventBus = {
    async put(event) {
      if (options.delayMs !== undefined) await new Promise((resolve) => setTimeout(resolve, options.delayMs));
      if (refusals > 0) {
        refusals--;
        throw new Error('the bus is down');
      }
      accepted.push(event);
      if (crashes > 0) {
        crashes--;
        throw new Error('the invocation died after PutEvents');
      }
    },
  };
  return { bus, accepted };
}

describe('publishOnce: each event once, though its step is retried', () => {
  function context(bus: RunEventBus, warnings: string[] = []): PublishContext {
    return {
      s3: fixtures.s3().client,
      bucket: fixtures.s3().bucket,
      bus,
      now: () => FINISHED,
      warn: (message) => warnings.push(message),
    };
  }
  const event = (drop: string): RunEvent => runStartedEvent(runState(fixtures.s3().bucket, {}, drop));

  async function marker(drop: string): Promise<unknown> {
    const { client, bucket } = fixtures.s3();
    const answer = await client.send(
      new GetObjectCommand({ Bucket: bucket, Key: eventMarkerKey(`${drop}-run`, 'started') }),
    );
    return JSON.parse((await answer.Body?.transformToString()) ?? '');
  }

  it('puts it, marks it sent, and puts nothing on the next attempt', async () => {
    const drop = uniqueDrop();
    const { bus, accepted } = recordingBus();
    expect(await publishOnce(context(bus), 'started', event(drop))).toBe('sent');
    expect(await publishOnce(context(bus), 'started', event(drop))).toBe('already sent');
    expect(accepted).toHaveLength(1);
    expect(await marker(drop)).toMatchObject({ state: 'sent', event_id: `${drop}-run/started` });
  });

  it('a bus that refuses: a retryable events_unavailable, and the next attempt puts it', async () => {
    const drop = uniqueDrop();
    const warnings: string[] = [];
    const { bus, accepted } = recordingBus({ failFirst: 1 });
    const error = await publishOnce(context(bus, warnings), 'started', event(drop)).catch(
      (caught: unknown) => caught,
    );
    expect(error).toBeInstanceOf(RunError);
    expect(error).toMatchObject({ code: 'events_unavailable', retryable: true });
    expect(await marker(drop)).toMatchObject({ state: 'pending' });
    expect(await publishOnce(context(bus, warnings), 'started', event(drop))).toBe('sent again');
    expect(accepted).toHaveLength(1);
    expect(warnings).toHaveLength(1);
  });

  it('an invocation that dies between PutEvents and the mark: put again, with the same event_id', async () => {
    const drop = uniqueDrop();
    const { bus, accepted } = recordingBus({ acceptThenFail: 1 });
    await expect(publishOnce(context(bus), 'started', event(drop))).rejects.toThrow(/died after PutEvents/);
    expect(await publishOnce(context(bus), 'started', event(drop))).toBe('sent again');
    expect(accepted.map((put) => put.detail.event_id)).toEqual([
      `${drop}-run/started`,
      `${drop}-run/started`,
    ]);
  });

  it('attempts at the same moment: one claims the marker (If-None-Match), the others wait for it', async () => {
    const drop = uniqueDrop();
    const { bus, accepted } = recordingBus({ delayMs: 50 });
    const results = await Promise.all(
      Array.from({ length: 5 }, () => publishOnce(context(bus), 'started', event(drop))),
    );
    expect(accepted).toHaveLength(1);
    expect(results.filter((result) => result === 'sent')).toHaveLength(1);
    expect(results.filter((result) => result === 'already sent')).toHaveLength(4);
  });
});

describe('eventBridgeBus: PutEvents on the default bus', () => {
  let endpoint: AwsJsonEndpoint | undefined;
  afterEach(async () => {
    await endpoint?.close();
    endpoint = undefined;
  });

  async function busAnswering(failed: boolean) {
    endpoint = await startAwsJsonEndpoint('application/x-amz-json-1.1', () => ({
      status: 200,
      body: failed
        ? {
            FailedEntryCount: 1,
            Entries: [{ ErrorCode: 'AccessDeniedException', ErrorMessage: 'not allowed' }],
          }
        : { FailedEntryCount: 0, Entries: [{ EventId: 'e-1' }] },
    }));
    const client = new EventBridgeClient({ ...CLIENT_SETTINGS, endpoint: endpoint.url, maxAttempts: 1 });
    return { bus: eventBridgeBus('acme.hopper', client), requests: endpoint.requests };
  }

  it('sends the source, the detail type, the detail as JSON and the execution as a resource', async () => {
    const { bus, requests } = await busAnswering(false);
    const event = runStartedEvent(runState('b', {}, 'reviews'));
    await bus.put(event);
    expect(requests).toHaveLength(1);
    expect(requests[0]?.target).toBe('AWSEvents.PutEvents');
    const entries = requests[0]?.body.Entries as Record<string, unknown>[];
    expect(entries).toHaveLength(1);
    expect(entries[0]).toMatchObject({
      Source: 'acme.hopper',
      DetailType: 'Hopper Run Started',
      Resources: [ARN],
    });
    // No EventBusName: the account's default bus, the only one the Lambdas may put on.
    expect(entries[0]).not.toHaveProperty('EventBusName');
    expect(JSON.parse(String(entries[0]?.Detail))).toEqual(event.detail);
  });

  it('throws when EventBridge refuses the entry (200 with FailedEntryCount)', async () => {
    const { bus } = await busAnswering(true);
    await expect(bus.put(runStartedEvent(runState('b', {})))).rejects.toThrow(
      /AccessDeniedException not allowed/,
    );
  });
});

describe('the report and validate_drop steps put the run events', () => {
  async function runtimeWith(events: RunEventBus) {
    const service = await fixtures.service();
    return fixtures.runtime(service, { now: () => FINISHED, events });
  }

  it('report: Started (validate_drop did not put it) and Succeeded with the model.json metrics; a retried report puts nothing more', async () => {
    const { client, bucket } = fixtures.s3();
    const drop = uniqueDrop();
    const copy = copyOf(drop);
    await client.send(
      new PutObjectCommand({
        Bucket: bucket,
        Key: copy.recordKey,
        Body: JSON.stringify({ model: { id: 'model-1', metrics: { accuracy: 0.9 } }, run: { run_id: 'r' } }),
      }),
    );
    const bus = new LocalEventBus();
    const runtime = await runtimeWith(bus);
    const state = runState(bucket, { dataset: DATASET, model: model(), copy }, drop);
    const report = stepHandler(reportStep).withRuntime(runtime);

    await report(state, invocationContext());
    await report(state, invocationContext());

    expect(bus.events().map((event) => event['detail-type'])).toEqual([
      RUN_EVENT_TYPES.started,
      RUN_EVENT_TYPES.succeeded,
    ]);
    expect(bus.events()[1]?.detail).toMatchObject({ metrics: { accuracy: 0.9 }, execution_arn: ARN });
  });

  it('report: a bus that stays down fails the step with a retryable events_unavailable, after the status', async () => {
    const { bucket } = fixtures.s3();
    const { bus } = recordingBus({ failFirst: 100 });
    const runtime = await runtimeWith(bus);
    const state = runState(bucket, {
      dataset: DATASET,
      failure: { Error: 'Hopper.Failed', Cause: 'no_credits: none' },
    });
    await expect(reportStep.run(state, stepEnv(runtime))).rejects.toMatchObject({
      code: 'events_unavailable',
      retryable: true,
    });
  });

  it('validate_drop: a bus that is down does not fail the run (the report puts Started later)', async () => {
    const { bucket } = fixtures.s3();
    const { bus } = recordingBus({ failFirst: 100 });
    const runtime = fixtures.runtime(await fixtures.service(), { events: bus });
    await expect(announceRun(runState(bucket, {}), stepEnv(runtime))).resolves.toBeUndefined();
  });
});

describe('docs/operations.md', () => {
  it('shows a sample Succeeded event that is exactly what Hopper builds for that run', async () => {
    const text = await readFile(new URL('../../docs/operations.md', import.meta.url), 'utf8');
    const block = /```json\n(\{\n {2}"version"[\s\S]+?)\n```/.exec(text)?.[1];
    expect(block).toBeDefined();
    const sample = JSON.parse(block ?? '') as {
      'detail-type': string;
      resources: string[];
      detail: RunEventDetail;
    };
    const { detail } = sample;
    const state: RunState = {
      run: {
        runId: detail.run_id,
        bucket: detail.bucket,
        drop: detail.drop,
        key: detail.train_json,
        etag: 'e',
        startedAt: detail.started_at,
        ...(detail.execution_arn === null ? {} : { executionArn: detail.execution_arn }),
      },
      dataset: { ...DATASET, id: detail.dataset_id ?? '' },
      model: model({ id: detail.model_id ?? '', attempts: detail.attempts }),
      copy: {
        modelKey: (detail.model?.onnx ?? '').replace(`s3://${detail.bucket}/`, ''),
        recordKey: (detail.model?.record ?? '').replace(`s3://${detail.bucket}/`, ''),
        bytes: detail.model?.bytes ?? 0,
      },
    };
    const built = runEndedEvent(state, {
      report: { outcome: 'succeeded', error: null },
      records: [
        {
          model: { id: detail.model_id ?? '', metrics: detail.metrics, onnx_bytes: detail.model?.bytes ?? 0 },
        },
      ],
      promotion: detail.promotion,
      finishedAt: Date.parse(detail.finished_at ?? ''),
      credits: detail.credits,
    });
    expect(sample['detail-type']).toBe(built.detailType);
    expect(sample.resources).toEqual([detail.execution_arn]);
    expect(detail).toEqual(built.detail);
  });
});
