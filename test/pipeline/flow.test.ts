/**
 * The whole pipeline in one process: the state machine definition synthesized from the CDK
 * stack, run by aws-local-stepfunctions, each Task state calling its real handler over the local
 * S3 server and the simulated service (real HTTP on loopback). Waits and retry pauses are cut
 * short; the service's phases take a few milliseconds of real time.
 *
 * This checks that handlers and definition fit together (slots, ResultPaths, Choices, Catch to
 * Report). Local mode's own runner and its end-to-end tests cover the commands and every path.
 */
import { readFile, readdir } from 'node:fs/promises';
import { createHash } from 'node:crypto';
import { GetObjectCommand } from '@aws-sdk/client-s3';
import { beforeAll, describe, expect, it } from 'vitest';
import { synthesizeLocalDefinition, type LocalDefinition } from '../../infra/definition.js';
import { TASKS, type TaskName } from '../../infra/tasks.js';
import type { TaskHandler } from '../../lambdas/run/handler.js';
import type { Runtime } from '../../lambdas/run/runtime.js';
import type { RunStatus } from '../../lambdas/run/status.js';
import type { RunState, SlotName } from '../../lambdas/run/state.js';
import { modelFileKey, modelRecordKey, statusKey } from '../../lambdas/storage/keys.js';
import type { SimulatedServiceOptions } from '../../local/service/index.js';
import { modelBytesAt } from '../../local/service/model-bytes.js';
import { executeLocally } from '../helpers/local-execution.js';
import {
  invocationContext,
  putDrop,
  readText,
  runStateFor,
  uniqueDrop,
  usePipelineFixtures,
} from '../helpers/pipeline.js';

const fixtures = usePipelineFixtures();
let local: LocalDefinition;
const handlers = new Map<TaskName, TaskHandler<SlotName>>();

beforeAll(async () => {
  local = synthesizeLocalDefinition();
  for (const task of TASKS) {
    const module = (await import(local.handlers[task.name].path)) as { handler: TaskHandler<SlotName> };
    handlers.set(task.name, module.handler);
  }
});

/** A few milliseconds per phase of real time, so a run moves on its own. */
const BRISK: Partial<SimulatedServiceOptions> = {
  manualClockStart: undefined,
  readingMs: 20,
  structuringMs: 20,
  queuedMs: 20,
  trainingMs: 40,
  modelBytes: 300_000,
};

/** Runs the definition once over `runtime`; resolves with the execution's error, if any. */
async function execute(runtime: Runtime, input: RunState): Promise<unknown> {
  return (await executeLogged(runtime, input)).error;
}

/** The same, with every event of the execution as JSON (each state's input and output among them). */
async function executeLogged(
  runtime: Runtime,
  input: RunState,
): Promise<{ error: unknown; events: string[] }> {
  const taskHandlers: Record<string, (input: unknown) => Promise<unknown>> = {};
  for (const task of TASKS) {
    const handler = handlers.get(task.name)?.withRuntime(runtime);
    if (handler === undefined) throw new Error(`no handler for ${task.name}`);
    taskHandlers[task.name] = async (event) => {
      try {
        return await handler(event, invocationContext(task.timeoutSeconds * 1000));
      } catch (error) {
        // What Step Functions gets from Lambda: the error type as name, a JSON cause.
        const { name, message } = error as Error;
        throw Object.assign(new Error(JSON.stringify({ errorType: name, errorMessage: message })), { name });
      }
    };
  }
  const { error, events } = await executeLocally(local.definition, input, taskHandlers, { waitMs: 10 });
  return { error, events: events.map((event) => JSON.stringify(event)) };
}

async function statusOf(drop: string): Promise<RunStatus> {
  const { client, bucket } = fixtures.s3();
  return JSON.parse((await readText(client, bucket, statusKey(drop))) ?? 'null') as RunStatus;
}

async function exampleDrop(): Promise<Record<string, Buffer>> {
  const folder = new URL('../../examples/reviews/', import.meta.url);
  const files: Record<string, Buffer> = {};
  for (const name of await readdir(folder)) files[name] = await readFile(new URL(name, folder));
  return files;
}

function sha256(bytes: Buffer | string): string {
  return createHash('sha256').update(bytes).digest('hex');
}

describe('the synthesized state machine with the real handlers', () => {
  it('trains the bundled example end to end: model.onnx byte for byte, model.json, status succeeded', async () => {
    const service = await fixtures.service({ ...BRISK, heldOutCount: 8 });
    const { client, bucket } = fixtures.s3();
    const drop = uniqueDrop('reviews');
    await putDrop(client, bucket, drop, await exampleDrop());

    const error = await execute(
      fixtures.runtime(service, { now: Date.now }),
      await runStateFor(client, bucket, drop),
    );
    expect(error).toBeUndefined();

    const status = await statusOf(drop);
    expect(status).toMatchObject({
      state: 'succeeded',
      stage: 'report',
      next_action: 'download',
      attempts: 1,
      labelled: 8,
      error: null,
    });
    const modelId = status.model_id ?? '';
    const onnx = await client.send(
      new GetObjectCommand({
        Bucket: bucket,
        Key: modelFileKey(drop, modelId),
      }),
    );
    const bytes = Buffer.from((await onnx.Body?.transformToByteArray()) ?? []);
    expect(bytes.length).toBe(300_000);
    expect(sha256(bytes)).toBe(sha256(modelBytesAt(modelId, 0, 300_000)));
    const record = JSON.parse((await readText(client, bucket, modelRecordKey(drop, modelId))) ?? 'null') as {
      model: { id: string };
      cost: { credits: number };
    };
    expect(record.model.id).toBe(modelId);
    expect(record.cost.credits).toBe(1);
    expect(service.credits()).toBe(9);
  });

  it('retries a failed training and, when every attempt fails, ends failed with training_failed and no credit spent', async () => {
    const service = await fixtures.service({ ...BRISK, failTrainings: 5 });
    const { client, bucket } = fixtures.s3();
    const drop = uniqueDrop('failing');
    await putDrop(client, bucket, drop, {
      'reviews.csv': 'id,text\nr1,good\nr2,bad\nr3,fine\n',
      'train.json': '{"maxAttempts": 2}',
    });
    await putDrop(client, bucket, drop, {
      'labels.csv': 'id,label\nr1,positive\nr2,negative\nr3,neutral\n',
    });

    const error = await execute(
      fixtures.runtime(service, { now: Date.now }),
      await runStateFor(client, bucket, drop),
    );
    expect(error).toMatchObject({ name: 'training_failed' });

    const status = await statusOf(drop);
    expect(status).toMatchObject({ state: 'failed', attempts: 2, max_attempts: 2 });
    expect(status.error?.code).toBe('training_failed');
    expect(status.error?.message).toContain('training failed on 2 of 2 attempts (maxAttempts)');
    expect(service.requestCount('createModel')).toBe(2);
    expect(service.credits()).toBe(10);
  });

  it('ends a run whose data the service cannot read with dataset_unreadable and the service reason', async () => {
    const service = await fixtures.service({ ...BRISK, unreadable: true });
    const { client, bucket } = fixtures.s3();
    const drop = uniqueDrop('unreadable');
    await putDrop(client, bucket, drop, { 'reviews.csv': 'id,text\nr1,good\n', 'train.json': '{}' });

    await execute(fixtures.runtime(service, { now: Date.now }), await runStateFor(client, bucket, drop));

    const status = await statusOf(drop);
    expect(status).toMatchObject({ state: 'failed', next_action: 'start_over' });
    expect(status.error?.code).toBe('dataset_unreadable');
    expect(status.error?.message).toContain('reviews.csv');
  });

  it('reports a drop error from the first step with its code and message, through Catch and Report', async () => {
    const service = await fixtures.service(BRISK);
    const { client, bucket } = fixtures.s3();
    const drop = uniqueDrop('typo');
    await putDrop(client, bucket, drop, {
      'reviews.csv': 'id,text\nr1,good\n',
      'train.json': '{"maxAttempt": 2}',
    });

    await execute(fixtures.runtime(service, { now: Date.now }), await runStateFor(client, bucket, drop));

    const status = await statusOf(drop);
    expect(status.state).toBe('failed');
    expect(status.error?.code).toBe('invalid_train_json');
    expect(status.error?.message).toContain('maxAttempts');
    expect(service.requestCount('createDataset')).toBe(0);
  });

  it("never puts the API key in a state's input or output, an error, the status file or model.json", async () => {
    const key = 'sk-hopper-7Qx2-SECRET';
    const { client, bucket } = fixtures.s3();

    // A run that succeeds with the key, and one the service refuses because the key is wrong.
    const service = await fixtures.service({ ...BRISK, apiKey: key });
    const good = uniqueDrop('key-good');
    await putDrop(client, bucket, good, await exampleDrop());
    const success = await executeLogged(
      fixtures.runtime(service, { now: Date.now }),
      await runStateFor(client, bucket, good),
    );
    expect(success.error).toBeUndefined();

    const wrongKey = `${key}-WRONG`;
    const refused = uniqueDrop('key-wrong');
    await putDrop(client, bucket, refused, { 'reviews.csv': 'id,text\nr1,good\n', 'train.json': '{}' });
    const failure = await executeLogged(
      fixtures.runtime(service, { now: Date.now, apiKey: wrongKey }),
      await runStateFor(client, bucket, refused),
    );
    expect((await statusOf(refused)).error?.code).toBe('unauthorized');

    const status = await statusOf(good);
    const written = [
      JSON.stringify(status),
      (await readText(client, bucket, modelRecordKey(good, status.model_id ?? ''))) ?? '',
      JSON.stringify(await statusOf(refused)),
    ];
    expect(success.events.length).toBeGreaterThan(20);
    // The events carry the states' data, so a key in any slot would show here.
    expect(success.events.some((event) => event.includes(status.dataset_id ?? 'no dataset'))).toBe(true);
    expect(failure.events.length).toBeGreaterThan(3);
    for (const text of [...success.events, ...failure.events, ...written, String(failure.error)]) {
      expect(text).not.toContain(key);
    }
  });
});
