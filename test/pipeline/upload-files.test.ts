import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import { DeleteObjectCommand, HeadObjectCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { describe, expect, it } from 'vitest';
import type { StepEnv, Runtime } from '../../lambdas/runtime/index.js';
import { datasetSlot } from '../../lambdas/core/state/index.js';
import type { DropFile, RunState } from '../../lambdas/core/state/index.js';
import { inboxKey } from '../../lambdas/storage/keys.js';
import {
  INITIAL_BYTES_PER_SECOND,
  MIN_MARGIN_MS,
  UPLOAD_CONCURRENCY,
  UploadRate,
  uploadFilesStep,
  uploadMarginMs,
} from '../../lambdas/steps/upload-files.js';
import type { SimulatedService } from '../../local/service/index.js';
import { HOUR } from '../client/helpers.js';
import { putDrop, runStateFor, stepEnv, usePipelineFixtures } from '../helpers/pipeline.js';
import { uniqueDrop } from '../helpers/fixtures.js';
import { runErrorOf } from '../helpers/run-errors.js';

const fixtures = usePipelineFixtures();
const MiB = 1024 * 1024;

/** `bytes` of JSON Lines the service can read, every line different. */
function jsonl(bytes: number, tag = 'row'): Buffer {
  const lines: string[] = [];
  let size = 0;
  for (let i = 0; size < bytes; i++) {
    const line = `{"id":"${tag}-${i}","text":"review ${i} of ${tag}: fine"}\n`;
    lines.push(line);
    size += line.length;
  }
  return Buffer.from(lines.join('')).subarray(0, bytes);
}

function sha256(data: Buffer): string {
  return createHash('sha256').update(data).digest('hex');
}

/** The drop files as validate_drop pins them: name, size and etag from HEAD. */
async function pinned(s3: S3Client, bucket: string, drop: string, names: string[]): Promise<DropFile[]> {
  return Promise.all(
    names.map(async (name) => {
      const head = await s3.send(new HeadObjectCommand({ Bucket: bucket, Key: inboxKey(drop, name) }));
      return { name, bytes: head.ContentLength ?? 0, etag: (head.ETag ?? '').replaceAll('"', '') };
    }),
  );
}

interface Setup {
  readonly service: SimulatedService;
  readonly runtime: Runtime;
  readonly state: RunState;
  readonly drop: string;
}

/**
 * A drop put into the bucket and a dataset created for `files` (declared with `declared` sizes
 * when given): the state upload_files starts from.
 */
async function setUp(
  files: Record<string, Buffer>,
  declared: Partial<Record<string, number>> = {},
): Promise<Setup> {
  const { client: s3, bucket } = fixtures.s3();
  const service = await fixtures.service({ heldOutCount: 0 });
  const runtime = fixtures.runtime(service);
  const drop = uniqueDrop('upload');
  await putDrop(s3, bucket, drop, { ...files, 'train.json': '{}' });
  const dropFiles = await pinned(s3, bucket, drop, Object.keys(files));
  const client = await runtime.service();
  const record = await client.createDataset({
    name: drop,
    files: dropFiles.map((file) => ({ name: file.name, bytes: declared[file.name] ?? file.bytes })),
  });
  const state: RunState = {
    ...(await runStateFor(s3, bucket, drop)),
    config: {
      name: drop,
      files: dropFiles,
      labels: null,
      encoder: null,
      decisions: 'service',
      maxAttempts: 3,
    },
    dataset: datasetSlot(record, undefined, runtime.now()),
  };
  return { service, runtime, state, drop };
}

/** An env whose remaining time is read from `script` (then plenty): the time box without waiting. */
function scriptedEnv(runtime: Runtime, script: number[]): StepEnv {
  return { runtime, remainingMs: () => script.shift() ?? 15 * 60_000, requestId: 'scripted' };
}

describe('upload_files', () => {
  it('streams every pending file byte for byte, completes them, and moves the dataset on', async () => {
    const files = {
      'big.jsonl': jsonl(6 * MiB + 123, 'big'),
      'a.jsonl': jsonl(2_000, 'a'),
      'b.jsonl': jsonl(500, 'b'),
    };
    const { service, runtime, state } = await setUp(files);

    const slot = await uploadFilesStep.run(state, stepEnv(runtime));

    for (const [name, data] of Object.entries(files)) {
      expect(service.fileDigest(slot.id, name)).toEqual({ bytes: data.length, sha256: sha256(data) });
    }
    expect(service.requestCount('fileUpload')).toBe(3);
    expect(service.requestCount('completeFile')).toBe(3);
    expect(slot.nextAction).not.toBe('upload_files');
    const dataset = await (await runtime.service()).getDataset(slot.id);
    expect(dataset.files.map((file) => file.status)).toEqual(['uploaded', 'uploaded', 'uploaded']);
    expect(slot).toMatchObject({ id: dataset.id, step: dataset.step, nextAction: dataset.next_action });
  });

  it('skips files already uploaded (a retried or looped invocation)', async () => {
    const files = { 'a.jsonl': jsonl(1_000, 'a'), 'b.jsonl': jsonl(1_000, 'b') };
    const { service, runtime, state } = await setUp(files);
    const client = await runtime.service();
    const record = await client.getDataset(state.dataset!.id);
    await client.uploadFile(record.id, record.files[0]!, () => Readable.from([files['a.jsonl']]));
    expect(service.requestCount('fileUpload')).toBe(1);

    const slot = await uploadFilesStep.run(state, stepEnv(runtime));

    expect(service.requestCount('fileUpload')).toBe(2); // b only
    expect(service.fileDigest(slot.id, 'b.jsonl')?.sha256).toBe(sha256(files['b.jsonl']));
    expect(slot.nextAction).not.toBe('upload_files');

    // Nothing left: a further call uploads nothing and reports the same dataset.
    const again = await uploadFilesStep.run({ ...state, dataset: slot }, stepEnv(runtime));
    expect(service.requestCount('fileUpload')).toBe(2);
    expect(again.id).toBe(slot.id);
  });

  it('recovers from an upload URL that expires before the PUT: a fresh URL and a fresh S3 stream', async () => {
    const files = { 'a.jsonl': jsonl(50_000, 'a') };
    const { service, runtime, state } = await setUp(files);
    const s3 = fixtures.s3().client;
    // The URL from GET dataset expires while the step opens the S3 object.
    let opened = 0;
    s3.middlewareStack.add(
      (next, context) => (args) => {
        if (context.commandName === 'GetObjectCommand' && opened++ === 0) service.clock.advance(2 * HOUR);
        return next(args);
      },
      { step: 'initialize', name: 'advanceServiceClock' },
    );
    try {
      const slot = await uploadFilesStep.run(state, stepEnv(runtime));
      expect(service.fileDigest(slot.id, 'a.jsonl')?.sha256).toBe(sha256(files['a.jsonl']));
    } finally {
      s3.middlewareStack.remove('advanceServiceClock');
    }
    expect(opened).toBe(2); // one stream per attempt
    expect(service.requestCount('fileUpload')).toBe(2); // 403 url_expired, then 200
  });

  it('fails with drop_changed, naming the file, when it changed after validation', async () => {
    const files = { 'a.jsonl': jsonl(1_000, 'a'), 'b.jsonl': jsonl(1_000, 'b') };
    const { service, runtime, state, drop } = await setUp(files);
    const { client: s3, bucket } = fixtures.s3();
    // Same size, other bytes: only the etag tells.
    await s3.send(
      new PutObjectCommand({ Bucket: bucket, Key: inboxKey(drop, 'b.jsonl'), Body: jsonl(1_000, 'B') }),
    );

    const error = await runErrorOf(uploadFilesStep.run(state, stepEnv(runtime)));

    expect(error.code).toBe('drop_changed');
    expect(error.retryable).toBe(false);
    expect(error.detail).toBe(
      `inbox/${drop}/b.jsonl changed after validation; drop the folder again, train.json last`,
    );
    expect(service.fileDigest(state.dataset!.id, 'b.jsonl')).toBeUndefined();
  });

  it("maps the service's size_mismatch to drop_changed", async () => {
    const files = { 'a.jsonl': jsonl(1_000, 'a') };
    // The dataset declares another size than the object has (as if it changed between HEAD and create).
    const { runtime, state, drop } = await setUp(files, { 'a.jsonl': 1_001 });

    const error = await runErrorOf(uploadFilesStep.run(state, stepEnv(runtime)));

    expect(error.code).toBe('drop_changed');
    expect(error.detail).toContain(`inbox/${drop}/a.jsonl changed after validation`);
  });

  it('fails with missing_file when a file was deleted after validation', async () => {
    const files = { 'a.jsonl': jsonl(1_000, 'a') };
    const { runtime, state, drop } = await setUp(files);
    const { client: s3, bucket } = fixtures.s3();
    await s3.send(new DeleteObjectCommand({ Bucket: bucket, Key: inboxKey(drop, 'a.jsonl') }));

    const error = await runErrorOf(uploadFilesStep.run(state, stepEnv(runtime)));

    expect(error.code).toBe('missing_file');
    expect(error.detail).toContain(`inbox/${drop}/a.jsonl`);
  });

  it('uploads nothing once the dataset has expired, and reports it for the state machine to route', async () => {
    const { service, runtime, state } = await setUp({ 'a.jsonl': jsonl(1_000, 'a') });
    service.clock.advance(8 * 24 * HOUR);

    const slot = await uploadFilesStep.run(state, stepEnv(runtime));

    expect(slot.nextAction).toBe('expired');
    expect(service.requestCount('fileUpload')).toBe(0);
  });

  it('stops starting files when time runs short, and the next invocation finishes', async () => {
    const files = {
      'a.jsonl': jsonl(1_000, 'a'),
      'b.jsonl': jsonl(1_000, 'b'),
      'c.jsonl': jsonl(1_000, 'c'),
    };
    const { service, runtime, state } = await setUp(files);

    // Time for the first file, then less than the margin.
    const first = await uploadFilesStep.run(
      state,
      scriptedEnv(runtime, [2 * MIN_MARGIN_MS, MIN_MARGIN_MS - 1]),
    );
    expect(first.nextAction).toBe('upload_files');
    expect(service.requestCount('fileUpload')).toBe(1);
    expect(service.fileDigest(first.id, 'a.jsonl')).toBeDefined();

    const second = await uploadFilesStep.run({ ...state, dataset: first }, stepEnv(runtime));
    expect(second.nextAction).not.toBe('upload_files');
    expect(service.requestCount('fileUpload')).toBe(3);
    for (const [name, data] of Object.entries(files)) {
      expect(service.fileDigest(second.id, name)?.sha256).toBe(sha256(data));
    }
  });

  it('asks for more time for a larger file, never more than a fresh invocation has', () => {
    expect(uploadMarginMs(0)).toBe(MIN_MARGIN_MS);
    expect(uploadMarginMs(1024 * MiB)).toBeGreaterThan(MIN_MARGIN_MS);
    expect(uploadMarginMs(100 * 1024 * MiB)).toBeLessThan(15 * 60_000 - MIN_MARGIN_MS);
  });

  it('sends files side by side, never more than UPLOAD_CONCURRENCY at once at the service', async () => {
    const files = Object.fromEntries(
      Array.from({ length: 2 * UPLOAD_CONCURRENCY + 3 }, (_, i) => [`f${i}.jsonl`, jsonl(500, `f${i}`)]),
    );
    const { service, runtime, state } = await setUp(files);
    // Each upload is held at the service a moment, so uploads sent side by side overlap there.
    service.configure({ faults: [{ endpoint: 'fileUpload', kind: 'stall', rate: 1, stallMs: 200 }] });

    const slot = await uploadFilesStep.run(state, stepEnv(runtime));

    expect(slot.nextAction).not.toBe('upload_files');
    expect(service.requestCount('fileUpload')).toBe(Object.keys(files).length);
    expect(service.uploadsInFlight()).toEqual({ now: 0, max: UPLOAD_CONCURRENCY });
    for (const [name, data] of Object.entries(files)) {
      expect(service.fileDigest(slot.id, name)?.sha256).toBe(sha256(data));
    }
  });

  it('with files side by side, starts none once the time box closes and returns with none in flight', async () => {
    const files = Object.fromEntries(
      Array.from({ length: 12 }, (_, i) => [`g${i}.jsonl`, jsonl(500, `g${i}`)]),
    );
    const { service, runtime, state } = await setUp(files);
    service.configure({ faults: [{ endpoint: 'fileUpload', kind: 'stall', rate: 1, stallMs: 100 }] });

    const started = 5;
    const slot = await uploadFilesStep.run(
      state,
      scriptedEnv(runtime, [...Array.from({ length: started }, () => 2 * MIN_MARGIN_MS), MIN_MARGIN_MS - 1]),
    );

    expect(slot.nextAction).toBe('upload_files');
    expect(service.requestCount('fileUpload')).toBe(started);
    // Every file started was finished and completed before the step returned.
    expect(service.uploadsInFlight().now).toBe(0);
    const record = await (await runtime.service()).getDataset(slot.id);
    expect(record.files.filter((file) => file.status === 'uploaded')).toHaveLength(started);
  });

  it("estimates a file's time from the rate measured in the invocation, not a constant", () => {
    const rate = new UploadRate();
    expect(rate.bytesPerSecond).toBe(INITIAL_BYTES_PER_SECOND);
    rate.record(200 * MiB, 1_000);
    rate.record(100 * MiB, 1_000);
    expect(rate.bytesPerSecond).toBe(150 * MiB);
    expect(uploadMarginMs(1024 * MiB, rate.bytesPerSecond)).toBe(
      MIN_MARGIN_MS + Math.ceil((1024 / 150) * 1000),
    );
    // At the initial rate, the same file asks for 512 s more.
    expect(uploadMarginMs(1024 * MiB)).toBe(MIN_MARGIN_MS + 512_000);
  });
});
