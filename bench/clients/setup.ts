/**
 * What the measured clients share: a runtime on the benchmark's servers (which run in other
 * processes) and the set-up a measured step starts from. Set-up happens before measure().
 */
import { Readable } from 'node:stream';
import { HeadObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { Logger } from '@aws-lambda-powertools/logger';
import { createRuntime, type Runtime, trainingService } from '../../lambdas/runtime/index.js';
import type { StepEnv } from '../../lambdas/runtime/index.js';
import type { CreditBudget } from '../../lambdas/ownership/index.js';
import { datasetSlot, modelSlot, trainingPlan } from '../../lambdas/core/state/index.js';
import type { RunState } from '../../lambdas/core/state/index.js';
import type { Dataset, TrainingServiceClient } from '../../lambdas/service-client/index.js';
import { inboxKey, TRAIN_JSON } from '../../lambdas/storage/keys.js';
import { localS3Client } from '../../local/s3/local-s3.js';

/** Where the servers of a benchmark listen: every client call gets these in its args. */
export interface Endpoints {
  readonly s3Endpoint: string;
  readonly bucket: string;
  readonly apiUrl: string;
  readonly apiKey: string;
}

export function endpointsOf(args: Record<string, unknown>): Endpoints {
  for (const name of ['s3Endpoint', 'bucket', 'apiUrl', 'apiKey'] as const) {
    if (typeof args[name] !== 'string') throw new Error(`client args: ${name} is missing`);
  }
  return args as unknown as Endpoints;
}

export function numberArg(args: Record<string, unknown>, name: string): number {
  const value = args[name];
  if (typeof value !== 'number' || !Number.isFinite(value))
    throw new Error(`client args: ${name} must be a number`);
  return value;
}

export interface Connected {
  readonly runtime: Runtime;
  readonly client: TrainingServiceClient;
  readonly bucket: string;
}

export async function connect(endpoints: Endpoints, creditBudget?: CreditBudget): Promise<Connected> {
  const runtime = createRuntime({
    creditBudget,
    s3: localS3Client(endpoints.s3Endpoint),
    service: trainingService({
      serviceUrl: endpoints.apiUrl,
      apiKey: () => Promise.resolve(endpoints.apiKey),
    }),
    logger: new Logger({ logLevel: 'SILENT' }),
  });
  return { runtime, client: await runtime.service(), bucket: endpoints.bucket };
}

/** A step's surroundings as in Lambda: a full 15-minute invocation ahead. */
export function stepEnv(runtime: Runtime, remainingMs: () => number = () => 15 * 60_000): StepEnv {
  return { runtime, remainingMs, requestId: 'bench' };
}

function runInput(bucket: string, drop: string): RunState['run'] {
  return { runId: drop, bucket, drop, key: inboxKey(drop, TRAIN_JSON), etag: 'e', startedAt: '' };
}

/**
 * A dataset of one small file, structured, and the run of `drop` it belongs to: ready to train
 * once the service has read and structured it (no time at all for the benchmarks' services).
 */
export async function structuredDataset(
  connected: Connected,
  drop: string,
): Promise<{ run: RunState['run']; dataset: Dataset }> {
  const { client, bucket } = connected;
  const dataset = await client.createDataset({ name: drop, files: [{ name: 'd.jsonl', bytes: 13 }] });
  await client.uploadFile(dataset.id, dataset.files[0]!, () =>
    Readable.from([Buffer.from('{"text":"a"}\n')]),
  );
  await client.structure(dataset.id);
  return { run: runInput(bucket, drop), dataset };
}

/** A model trained to `download` (the service's modelBytes decide its size), and the state copy_model starts from. */
export async function trainedModel(connected: Connected, drop: string): Promise<RunState> {
  const { client } = connected;
  const { run, dataset } = await structuredDataset(connected, drop);
  const started = await client.startTraining(dataset.id, (await client.defaultEncoder()).id);
  // The benchmark's service trains in no time; a few reads at most.
  for (let attempt = 0; attempt < 50; attempt++) {
    const model = await client.getModel(started.id);
    if (model.next_action === 'download') {
      return { run, model: modelSlot(model, trainingPlan(1, 3), undefined, Date.now()) };
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`model ${started.id} did not finish training`);
}

export interface DropFileSpec {
  readonly name: string;
  readonly bytes: number;
}

/**
 * A dataset at upload_files for drop files already in the bucket (inbox/<drop>/<name>), pinned
 * as validate_drop would: the state upload_files starts from.
 */
export async function datasetForDrop(
  connected: Connected,
  drop: string,
  files: readonly DropFileSpec[],
): Promise<RunState> {
  const { client, bucket, runtime } = connected;
  const pinned = await Promise.all(
    files.map(async (file) => {
      const head = await runtime.s3.send(
        new HeadObjectCommand({ Bucket: bucket, Key: inboxKey(drop, file.name) }),
      );
      return { name: file.name, bytes: file.bytes, etag: (head.ETag ?? '').replaceAll('"', '') };
    }),
  );
  await runtime.s3.send(
    new PutObjectCommand({ Bucket: bucket, Key: inboxKey(drop, TRAIN_JSON), Body: '{}' }),
  );
  const dataset = await client.createDataset({
    name: drop,
    files: files.map(({ name, bytes }) => ({ name, bytes })),
  });
  return {
    run: runInput(bucket, drop),
    config: { name: drop, files: pinned, labels: null, encoder: null, decisions: 'service', maxAttempts: 1 },
    dataset: datasetSlot(dataset, undefined, Date.now()),
  };
}

/** `bytes` of JSON Lines the service reads, generated as they are pulled (no memory of its own). */
export function jsonlSource(bytes: number): Readable {
  const line = Buffer.from(`{"text":"${'a'.repeat(118)}"}\n`); // 128 bytes
  const block = Buffer.concat(Array.from({ length: 512 }, () => line)); // 64 KiB
  let left = bytes;
  return new Readable({
    read() {
      if (left === 0) {
        this.push(null);
        return;
      }
      const chunk = block.subarray(0, Math.min(block.length, left));
      left -= chunk.length;
      this.push(chunk);
    },
  });
}
