/**
 * What the handler wrapper tells an operator besides the status file: the embedded-metric
 * lines (Powertools Metrics) each invocation prints, the per-invocation log keys (Lambda
 * context, run, dataset and model ids) that never leak between overlapping invocations, and
 * the tracing of service client calls. Steps run through the real wrapper over the local S3
 * server; the report step is the real one.
 */
import type { Tracer } from '@aws-lambda-powertools/tracer';
import type { Context } from 'aws-lambda';
import { Logger } from '@aws-lambda-powertools/logger';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { LocalEventBus } from '../../local/emulator/event-bus.js';
import {
  stepHandler,
  type Step,
  METRIC,
  METRICS_NAMESPACE,
  SERVICE_NAME,
  createRuntime,
  runtimeFromEnvironment,
  type Runtime,
  trainingService,
  TRAINING_SERVICE,
  tracedClient,
} from '../../lambdas/runtime/index.js';
import type { CreditBudget } from '../../lambdas/ownership/index.js';
import type { DatasetSlot, RunState } from '../../lambdas/core/state/index.js';
import type { Model } from '../../lambdas/service-client/index.js';
import { CREDIT_LEDGER_KEY } from '../../lambdas/storage/keys.js';
import { deleteObject } from '../../lambdas/storage/objects.js';
import { reportStep } from '../../lambdas/steps/report.js';
import { invocationContext, usePipelineFixtures } from '../helpers/pipeline.js';
import { configOf, datasetSlotOf, modelSlotOf, stateOf } from '../helpers/fixtures.js';
import { gate } from '../../testkit/timeout.js';

const fixtures = usePipelineFixtures();

/** Every line written to stdout while `work` runs (metrics and logs both go there). */
async function stdoutOf(work: () => Promise<unknown>): Promise<string[]> {
  const written: string[] = [];
  const spy = vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
    written.push(typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString());
    return true;
  });
  try {
    await work().catch(() => undefined);
  } finally {
    spy.mockRestore();
  }
  return written
    .join('')
    .split('\n')
    .filter((line) => line.trim() !== '');
}

interface EmfLine {
  readonly _aws: {
    readonly CloudWatchMetrics: readonly {
      readonly Namespace: string;
      readonly Dimensions: readonly (readonly string[])[];
      readonly Metrics: readonly { readonly Name: string; readonly Unit: string }[];
    }[];
  };
  readonly [key: string]: unknown;
}

function isEmf(value: unknown): value is EmfLine {
  return typeof value === 'object' && value !== null && '_aws' in value;
}

function emfLines(lines: readonly string[]): EmfLine[] {
  return lines.flatMap((line) => {
    const parsed: unknown = JSON.parse(line);
    return isEmf(parsed) ? [parsed] : [];
  });
}

/** Each metric's value and the line's dimensions, by metric name (a name may appear twice). */
function metricsIn(lines: readonly EmfLine[]): { name: string; value: unknown; dimensions: string[] }[] {
  return lines.flatMap((line) =>
    line._aws.CloudWatchMetrics.flatMap((directive) => {
      expect(directive.Namespace).toBe(METRICS_NAMESPACE);
      return directive.Metrics.map((metric) => ({
        name: metric.Name,
        value: line[metric.Name],
        dimensions: (directive.Dimensions[0] ?? []).map((name) => `${name}=${String(line[name])}`),
      }));
    }),
  );
}

function runtimeWith(
  options: { emitMetrics?: boolean; logger?: Logger; creditBudget?: CreditBudget } = {},
): Runtime {
  return createRuntime({
    s3: fixtures.s3().client,
    logger: options.logger ?? new Logger({ logLevel: 'SILENT' }),
    emitMetrics: options.emitMetrics ?? true,
    events: new LocalEventBus(),
    creditBudget: options.creditBudget,
  });
}

function datasetOf(overrides: Partial<DatasetSlot> = {}): DatasetSlot {
  return datasetSlotOf({
    id: 'ds-1',
    step: 2,
    status: 'ready',
    nextAction: 'structure',
    expiresAt: '2026-02-01T00:00:00.000Z',
    ...overrides,
  });
}

/** A step that returns `slot` as upload_files would (its effects are not what is tested here). */
function returning(name: 'upload_files' | 'label_examples', slot: DatasetSlot): Step<typeof name> {
  return { name, run: () => Promise.resolve(slot) };
}

afterEach(() => {
  vi.restoreAllMocks();
  vi.unstubAllEnvs();
});

describe('metrics (EMF lines on stdout, namespace Hopper)', () => {
  it("a run's first invocation counts a run started, even when it fails; its retry does not count another", async () => {
    const runtime = runtimeWith();
    const state = stateOf(fixtures.s3().bucket, { config: configOf() });
    const failing: Step<'validate_drop'> = {
      name: 'validate_drop',
      run: () => Promise.reject(new Error('S3 hiccup')),
    };
    const first = metricsIn(
      emfLines(await stdoutOf(() => stepHandler(failing).withRuntime(runtime)(state, invocationContext()))),
    );
    expect(first.map((metric) => metric.name).sort()).toEqual([METRIC.runsStarted, METRIC.stepDuration]);
    expect(first.find((metric) => metric.name === METRIC.stepDuration)?.dimensions).toEqual([
      'service=hopper',
      'Step=validate_drop',
    ]);
    expect(first.find((metric) => metric.name === METRIC.runsStarted)).toMatchObject({ value: 1 });

    const retried: Step<'validate_drop'> = { name: 'validate_drop', run: () => Promise.resolve(configOf()) };
    const second = metricsIn(
      emfLines(await stdoutOf(() => stepHandler(retried).withRuntime(runtime)(state, invocationContext()))),
    );
    expect(second.map((metric) => metric.name)).toEqual([METRIC.stepDuration]);
  });

  it('bytes uploaded once the upload is done, and labels answered by the difference an invocation made', async () => {
    const runtime = runtimeWith();
    const config = configOf({
      files: [
        { name: 'a.csv', bytes: 1000, etag: 'a' },
        { name: 'b.csv', bytes: 234, etag: 'b' },
      ],
    });
    const state = stateOf(fixtures.s3().bucket, { config, dataset: datasetOf({ labelled: 3 }) });
    const uploaded = metricsIn(
      emfLines(
        await stdoutOf(() =>
          stepHandler(returning('upload_files', datasetOf({ nextAction: 'wait', labelled: 3 }))).withRuntime(
            runtime,
          )(state, invocationContext()),
        ),
      ),
    );
    expect(uploaded.find((metric) => metric.name === METRIC.bytesUploaded)).toMatchObject({ value: 1234 });
    expect(uploaded.some((metric) => metric.name === METRIC.labelsAnswered)).toBe(false);

    const labelled = metricsIn(
      emfLines(
        await stdoutOf(() =>
          stepHandler(
            returning('label_examples', datasetOf({ nextAction: 'label_examples', labelled: 10 })),
          ).withRuntime(runtime)(state, invocationContext()),
        ),
      ),
    );
    expect(labelled.find((metric) => metric.name === METRIC.labelsAnswered)).toMatchObject({ value: 7 });
    expect(labelled.some((metric) => metric.name === METRIC.bytesUploaded)).toBe(false);
  });

  it("a credit taken from the budget: the budget's share in use", async () => {
    const runtime = runtimeWith({ creditBudget: { perDay: 4 } });
    const { bucket, client } = fixtures.s3();
    await deleteObject(client, bucket, CREDIT_LEDGER_KEY);
    const { run } = stateOf(bucket);
    const start = () => Promise.resolve({ id: 'm-1', status: 'queued' } as Model);
    const metrics = metricsIn(emfLines(await stdoutOf(() => runtime.credits.spend(run, 1, start))));
    expect(metrics).toEqual([
      { name: METRIC.creditBudgetUsed, value: 25, dimensions: [`service=${SERVICE_NAME}`] },
    ]);
  });

  it('a succeeded report: runs succeeded, credits spent, run duration, estimated cost', async () => {
    const runtime = runtimeWith();
    const state: RunState = {
      ...stateOf(fixtures.s3().bucket, {
        config: configOf(),
        dataset: datasetOf({ nextAction: 'start_training' }),
      }),
      model: modelSlotOf({
        id: 'm-1',
        step: 5,
        status: 'done',
        nextAction: 'download',
        onnxBytes: 10,
        gpuUsd: 0.5,
        jevUsd: 0.05,
      }),
      copy: { modelKey: 'models/x/m-1/model.onnx', recordKey: 'models/x/m-1/model.json', bytes: 10 },
    };
    const metrics = metricsIn(
      emfLines(
        await stdoutOf(() => stepHandler(reportStep).withRuntime(runtime)(state, invocationContext())),
      ),
    );
    const byName = new Map(metrics.map((metric) => [metric.name, metric]));
    expect(byName.get(METRIC.runsSucceeded)?.value).toBe(1);
    expect(byName.get(METRIC.creditsSpent)?.value).toBe(1);
    expect(byName.get(METRIC.runDuration)?.value).toBeGreaterThan(0);
    expect(byName.get(METRIC.runAwsCost)?.value).toBeGreaterThan(0);
    expect(byName.has(METRIC.runsFailed)).toBe(false);
  });

  it('a failed report: runs failed, once in total and once with its error code as a dimension', async () => {
    const runtime = runtimeWith();
    const state: RunState = {
      ...stateOf(fixtures.s3().bucket, {
        config: configOf(),
        dataset: datasetOf({ nextAction: 'start_over' }),
      }),
      stop: { code: 'dataset_unreadable' },
    };
    const failed = metricsIn(
      emfLines(
        await stdoutOf(() => stepHandler(reportStep).withRuntime(runtime)(state, invocationContext())),
      ),
    ).filter((metric) => metric.name === METRIC.runsFailed);
    expect(failed.map((metric) => metric.dimensions)).toEqual(
      expect.arrayContaining([['service=hopper'], ['service=hopper', 'ErrorCode=dataset_unreadable']]),
    );
    expect(failed).toHaveLength(2);
  });

  it('a superseded report: runs superseded, not runs failed (the run gave way, it did not fail)', async () => {
    const runtime = runtimeWith();
    const state: RunState = {
      ...stateOf(fixtures.s3().bucket, { config: configOf(), dataset: datasetOf() }),
      failure: { Error: 'Hopper.Failed', Cause: 'superseded: a newer train.json of the drop took over' },
    };
    const names = metricsIn(
      emfLines(
        await stdoutOf(() => stepHandler(reportStep).withRuntime(runtime)(state, invocationContext())),
      ),
    ).map((metric) => metric.name);
    expect(names.filter((name) => name === METRIC.runsSuperseded)).toHaveLength(1);
    expect(names).not.toContain(METRIC.runsFailed);
    expect(names).not.toContain(METRIC.runsSucceeded);
  });

  it('prints nothing when the runtime does not emit metrics (local mode)', async () => {
    const runtime = runtimeWith({ emitMetrics: false });
    const state = stateOf(fixtures.s3().bucket, { config: configOf() });
    const lines = await stdoutOf(() =>
      stepHandler(returning('upload_files', datasetOf())).withRuntime(runtime)(state, invocationContext()),
    );
    expect(emfLines(lines)).toEqual([]);
  });
});

describe('log keys', () => {
  it('two overlapping invocations each log their own run, request id and ids; the shared logger keeps none', async () => {
    const logger = new Logger({ serviceName: 'hopper', logLevel: 'INFO' });
    const runtime = runtimeWith({ emitMetrics: false, logger });
    const barrier = gate();
    let entered = 0;
    const overlapping: Step<'poll_dataset'> = {
      name: 'poll_dataset',
      async run(state, env) {
        entered += 1;
        if (entered === 2) barrier.open();
        await barrier.opened;
        env.runtime.logger.info('inside', { dataset: state.dataset?.id });
        return datasetOf({ id: state.dataset?.id ?? 'none' });
      },
    };
    const bucket = fixtures.s3().bucket;
    const a = stateOf(bucket, { config: configOf(), dataset: datasetOf({ id: 'ds-a' }) });
    const b = stateOf(bucket, { config: configOf(), dataset: datasetOf({ id: 'ds-b' }) });
    const handler = stepHandler(overlapping).withRuntime(runtime);
    const contextA = { ...invocationContext(), functionName: 'PollDataset', memoryLimitInMB: '256' };
    const contextB = { ...invocationContext(), functionName: 'PollDataset', memoryLimitInMB: '256' };
    const lines = (await stdoutOf(() => Promise.all([handler(a, contextA), handler(b, contextB)]))).map(
      (line) => JSON.parse(line) as Record<string, unknown>,
    );

    const inside = lines.filter((line) => line.message === 'inside');
    expect(inside).toHaveLength(2);
    for (const line of inside) {
      const mine =
        line.dataset === 'ds-a' ? { state: a, context: contextA } : { state: b, context: contextB };
      expect(line).toMatchObject({
        run_id: mine.state.run.runId,
        drop: mine.state.run.drop,
        dataset_id: line.dataset,
        function_request_id: mine.context.awsRequestId,
        function_name: 'PollDataset',
        function_memory_size: 256,
        hopper_step: 'poll_dataset',
      });
    }
    // The function's first invocation is its cold start, the second is not.
    expect(inside.map((line) => line.cold_start).sort()).toEqual([false, true]);
    // The shared logger carries nothing of either invocation afterwards.
    const after = await stdoutOf(() => {
      logger.info('later');
      return Promise.resolve();
    });
    const later = JSON.parse(after[0] ?? '{}') as Record<string, unknown>;
    expect(later).not.toHaveProperty('run_id');
    expect(later).not.toHaveProperty('function_request_id');
  });
});

describe('log keys of the shared service client', () => {
  it('logs each service request with the keys of the invocation that made it', async () => {
    const service = await fixtures.service();
    const logger = new Logger({ serviceName: 'hopper', logLevel: 'DEBUG' });
    const runtime = createRuntime({
      s3: fixtures.s3().client,
      service: trainingService({ serviceUrl: service.apiUrl, apiKey: () => Promise.resolve(service.apiKey) }),
      logger,
    });
    const asking: Step<'structure'> = {
      name: 'structure',
      async run(state) {
        await (await runtime.service()).listEncoders();
        return datasetOf({ id: state.dataset?.id ?? 'none' });
      },
    };
    const state = stateOf(fixtures.s3().bucket, { config: configOf(), dataset: datasetOf({ id: 'ds-7' }) });
    const lines = (
      await stdoutOf(() => stepHandler(asking).withRuntime(runtime)(state, invocationContext()))
    ).map((line) => JSON.parse(line) as Record<string, unknown>);
    const requests = lines.filter((line) => String(line.message).includes('/v1/encoders'));
    expect(requests.length).toBeGreaterThan(0);
    for (const line of requests) {
      expect(line).toMatchObject({
        level: 'DEBUG',
        run_id: state.run.runId,
        dataset_id: 'ds-7',
        hopper_step: 'structure',
      });
    }
    await (await runtime.service()).close();
  });
});

describe('tracing of service calls', () => {
  /** A tracer that records the subsegments opened and closed (no X-Ray daemon here). */
  function recordingTracer(): { tracer: Tracer; opened: string[]; closed: string[]; errors: string[] } {
    const opened: string[] = [];
    const closed: string[] = [];
    const errors: string[] = [];
    const segment = {
      addNewSubsegment(name: string) {
        opened.push(name);
        return {
          close: () => closed.push(name),
          addError: () => errors.push(name),
        };
      },
    };
    const tracer = { isTracingEnabled: () => true, getSegment: () => segment } as unknown as Tracer;
    return { tracer, opened, closed, errors };
  }

  class Client {
    readonly #secret = 'private field';
    async get(id: string): Promise<string> {
      await new Promise((resolve) => setTimeout(resolve, 5));
      return `${id}:${this.#secret}`;
    }
    async fail(): Promise<never> {
      await Promise.resolve();
      throw new Error('refused');
    }
  }

  it('each call is a subsegment closed when its promise settles; errors are flagged; private fields work', async () => {
    const recorded = recordingTracer();
    const client = tracedClient(new Client(), recorded.tracer, '### service');
    const pending = client.get('m1');
    expect(recorded.opened).toEqual(['### service.get']);
    expect(recorded.closed).toEqual([]);
    await expect(pending).resolves.toBe('m1:private field');
    expect(recorded.closed).toEqual(['### service.get']);
    await expect(client.fail()).rejects.toThrow('refused');
    expect(recorded.errors).toEqual(['### service.fail']);
    expect(recorded.closed).toEqual(['### service.get', '### service.fail']);
  });

  it('without an enabled tracer the client is returned as it is', () => {
    const client = new Client();
    expect(tracedClient(client, undefined, 'service')).toBe(client);
  });
});

describe("a Lambda container's runtime", () => {
  it('emits metrics and has a tracer, which turns itself off outside Lambda (no X-Ray daemon is tried)', async () => {
    const runtime = await runtimeFromEnvironment(
      {
        HOPPER_SERVICE_URL: 'https://train.example.com',
        HOPPER_API_KEY_SECRET_ARN: 'arn:aws:secretsmanager:us-east-1:123456789012:secret:key',
      },
      { service: TRAINING_SERVICE },
    );
    expect(runtime.emitMetrics).toBe(true);
    expect(runtime.tracer).toBeDefined();
    expect(process.env.AWS_LAMBDA_FUNCTION_NAME).toBeUndefined();
    expect(runtime.tracer?.isTracingEnabled()).toBe(false);
  });
});

describe("the trigger's logs", () => {
  it('carry the Lambda context: request id, function, cold start on the first invocation only', async () => {
    // What Lambda sets for an on-demand container; Powertools reports no cold start without it.
    vi.stubEnv('AWS_LAMBDA_INITIALIZATION_TYPE', 'on-demand');
    const { handler } = await import('../../lambdas/handlers/trigger.handler.js');
    const event = {
      source: 'aws.s3',
      'detail-type': 'Object Created',
      detail: { bucket: { name: 'b' }, object: { key: 'inbox/x/readme.txt', etag: 'e', size: 1 } },
    };
    const contextOf = (awsRequestId: string) =>
      ({
        awsRequestId,
        functionName: 'Hopper-Trigger',
        functionVersion: '$LATEST',
        memoryLimitInMB: '256',
        invokedFunctionArn: 'arn:aws:lambda:us-east-1:123456789012:function:Hopper-Trigger',
      }) as unknown as Context;
    const logged = async (awsRequestId: string) =>
      (await stdoutOf(() => handler(event, contextOf(awsRequestId)))).map(
        (line) => JSON.parse(line) as Record<string, unknown>,
      );
    const first = await logged('req-1');
    const second = await logged('req-2');
    expect(first[0]).toMatchObject({
      function_request_id: 'req-1',
      function_name: 'Hopper-Trigger',
      cold_start: true,
    });
    expect(second[0]).toMatchObject({ function_request_id: 'req-2', cold_start: false });
  });
});
