/**
 * Memory of the pipeline's two large transfers, each against a buffered baseline, side by side
 * in one run:
 *   copy_model    service -> S3: the real step (download streamed into a multipart upload) vs
 *                 the whole model read into memory and sent with one PutObject;
 *   upload_files  S3 -> service: the real step (GetObject streamed into the presigned PUT) vs
 *                 the whole object read into memory, then uploaded.
 * Streaming holds when its peak stays a small, flat amount (about part size x queue for the
 * copy) while the baseline grows with the object (peak / size near 1 or more). The local S3
 * server and the simulated service run in this process, so their share of each transfer is in
 * every figure. Streamed runs go first: memory a buffered run frees stays in the process and
 * would hide later growth.
 *
 *   npm run bench:s3 [-- <size in MiB, default 256>]
 */
import { Readable } from 'node:stream';
import { GetObjectCommand, HeadObjectCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { Logger } from '@aws-lambda-powertools/logger';
import { createRuntime, type Runtime } from '../lambdas/run/runtime.js';
import type { StepEnv } from '../lambdas/run/handler.js';
import { datasetSlot, modelSlot } from '../lambdas/run/slots.js';
import type { RunState } from '../lambdas/run/state.js';
import type { TrainingServiceClient } from '../lambdas/service-client/index.js';
import { inboxKey, TRAIN_JSON } from '../lambdas/storage/keys.js';
import { objectSize } from '../lambdas/storage/objects.js';
import { uploadStream } from '../lambdas/storage/streams.js';
import { copyModelStep } from '../lambdas/steps/copy-model.js';
import { uploadFilesStep } from '../lambdas/steps/upload-files.js';
import { startLocalS3, type LocalS3 } from '../local/s3/local-s3.js';
import { startSimulatedService, type SimulatedService } from '../local/service/index.js';
import { gc, jsonlSource, measure } from './memory.js';

const MiB = 1024 * 1024;
const sizeArgument = process.argv[2] ?? '256';
if (!/^\d+$/.test(sizeArgument) || Number(sizeArgument) < 1) {
  throw new Error(`size must be a whole number of MiB >= 1, got ${sizeArgument}`);
}
const SIZE = Number(sizeArgument) * MiB;

function env(runtime: Runtime): StepEnv {
  return { runtime, remainingMs: () => 15 * 60_000, requestId: 'bench' };
}

let drops = 0;

/** A drop with one data file of `bytes` (put by streaming), pinned as validate_drop would. */
async function dropWithFile(s3: LocalS3, client: TrainingServiceClient, bytes: number): Promise<RunState> {
  const drop = `bench-${String(++drops)}`;
  const key = inboxKey(drop, 'data.jsonl');
  await uploadStream(s3.client, s3.bucket, key, jsonlSource(bytes));
  await s3.client.send(
    new PutObjectCommand({ Bucket: s3.bucket, Key: inboxKey(drop, TRAIN_JSON), Body: '{}' }),
  );
  const head = await s3.client.send(new HeadObjectCommand({ Bucket: s3.bucket, Key: key }));
  const etag = (head.ETag ?? '').replaceAll('"', '');
  const dataset = await client.createDataset({ name: drop, files: [{ name: 'data.jsonl', bytes }] });
  return {
    run: { runId: drop, bucket: s3.bucket, drop, key: inboxKey(drop, TRAIN_JSON), etag: 'e', startedAt: '' },
    config: {
      name: drop,
      files: [{ name: 'data.jsonl', bytes, etag }],
      labels: null,
      encoder: null,
      decisions: 'service',
      maxAttempts: 1,
    },
    dataset: datasetSlot(dataset, undefined, Date.now()),
  };
}

/** A model of `bytes` trained to `download`, and the state copy_model starts from. */
async function trainedModel(
  s3: LocalS3,
  service: SimulatedService,
  client: TrainingServiceClient,
  bytes: number,
): Promise<RunState> {
  service.configure({ modelBytes: bytes });
  const drop = `bench-${String(++drops)}`;
  const dataset = await client.createDataset({ name: drop, files: [{ name: 'd.jsonl', bytes: 13 }] });
  await client.uploadFile(dataset.id, dataset.files[0]!, () =>
    Readable.from([Buffer.from('{"text":"a"}\n')]),
  );
  await client.structure(dataset.id);
  const model = await client.getModel((await client.startTraining(dataset.id, 'enc-small')).id);
  return {
    run: { runId: drop, bucket: s3.bucket, drop, key: inboxKey(drop, TRAIN_JSON), etag: 'e', startedAt: '' },
    model: modelSlot(model, 1, undefined, Date.now()),
  };
}

async function streamedCopy(runtime: Runtime, state: RunState): Promise<void> {
  const slot = await copyModelStep.run(state, env(runtime));
  const expected = state.model?.onnxBytes;
  if (slot.bytes !== expected) throw new Error(`copied ${slot.bytes} of ${String(expected)} bytes`);
}

async function bufferedCopy(s3: LocalS3, client: TrainingServiceClient, state: RunState): Promise<void> {
  const chunks: Buffer[] = [];
  for await (const chunk of client.downloadModel(state.model!.id, { expectedBytes: SIZE })) {
    chunks.push(chunk as Buffer);
  }
  const body = Buffer.concat(chunks);
  const key = `bench-buffered/${state.model!.id}/model.onnx`;
  await s3.client.send(new PutObjectCommand({ Bucket: s3.bucket, Key: key, Body: body }));
  await check(s3.client, s3.bucket, key);
}

async function check(s3: S3Client, bucket: string, key: string): Promise<void> {
  const size = await objectSize(s3, bucket, key);
  if (size !== SIZE) throw new Error(`${key} holds ${String(size)} of ${SIZE} bytes`);
}

async function streamedUpload(runtime: Runtime, state: RunState): Promise<void> {
  const slot = await uploadFilesStep.run(state, env(runtime));
  if (slot.nextAction === 'upload_files') throw new Error('the upload did not finish');
}

async function bufferedUpload(s3: LocalS3, client: TrainingServiceClient, state: RunState): Promise<void> {
  const answer = await s3.client.send(
    new GetObjectCommand({ Bucket: s3.bucket, Key: inboxKey(state.run.drop, 'data.jsonl') }),
  );
  const body = Buffer.from((await answer.Body?.transformToByteArray()) ?? []);
  const dataset = await client.getDataset(state.dataset!.id);
  await client.uploadFile(dataset.id, dataset.files[0]!, () => Readable.from([body]));
}

const s3 = await startLocalS3();
const service = await startSimulatedService({
  heldOutCount: 0,
  readingMs: 0,
  structuringMs: 0,
  queuedMs: 0,
  trainingMs: 0,
  credits: 100,
});
const runtime = createRuntime({
  s3: s3.client,
  serviceUrl: service.apiUrl,
  apiKey: () => Promise.resolve(service.apiKey),
  logger: new Logger({ logLevel: 'SILENT' }),
});
const client = await runtime.service();
try {
  if (gc === undefined) console.log('(run with node --expose-gc for steadier numbers)');
  // Warm up code paths so the first measurement does not pay for JIT and pools.
  const warmModel = await trainedModel(s3, service, client, 6 * MiB);
  await streamedCopy(runtime, warmModel);
  await streamedUpload(runtime, await dropWithFile(s3, client, 6 * MiB));

  // Set-up (training, putting the data file) happens outside the measurements.
  const copyState = await trainedModel(s3, service, client, SIZE);
  const uploadState = await dropWithFile(s3, client, SIZE);
  const baselineCopyState = await trainedModel(s3, service, client, SIZE);
  const baselineUploadState = await dropWithFile(s3, client, SIZE);

  const copyStreamed = await measure(() => streamedCopy(runtime, copyState));
  const uploadStreamed = await measure(() => streamedUpload(runtime, uploadState));
  const copyBuffered = await measure(() => bufferedCopy(s3, client, baselineCopyState));
  const uploadBuffered = await measure(() => bufferedUpload(s3, client, baselineUploadState));

  const mib = (n: number) => `${(n / MiB).toFixed(1)} MiB`.padStart(12);
  const size = `${String(SIZE / MiB)} MiB`;
  console.log(`Node ${process.version}; ${size} objects; peak RSS growth while the transfer runs`);
  console.log(
    `${''.padEnd(34)}${'streamed'.padStart(12)}${'buffered'.padStart(14)}  ${'streamed / buffered'.padStart(20)}`,
  );
  for (const [name, streamed, buffered] of [
    ['copy_model (service -> S3)', copyStreamed, copyBuffered],
    ['upload_files (S3 -> service)', uploadStreamed, uploadBuffered],
  ] as const) {
    console.log(
      `${name.padEnd(34)}${mib(streamed.peak)}  ${mib(buffered.peak)}  ${(streamed.peak / buffered.peak).toFixed(3).padStart(20)}`,
    );
  }
  console.log(
    `peak / size: copy streamed ${(copyStreamed.peak / SIZE).toFixed(3)}, buffered ${(copyBuffered.peak / SIZE).toFixed(3)}; ` +
      `upload streamed ${(uploadStreamed.peak / SIZE).toFixed(3)}, buffered ${(uploadBuffered.peak / SIZE).toFixed(3)}`,
  );
  console.log(
    `held after a GC: copy ${mib(copyStreamed.retained)} / ${mib(copyBuffered.retained)}, ` +
      `upload ${mib(uploadStreamed.retained)} / ${mib(uploadBuffered.retained)} (streamed / buffered)`,
  );
} finally {
  await client.close();
  await service.close();
  await s3.close();
}
