import { createHash } from 'node:crypto';
import type { EventEmitter } from 'node:events';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import {
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
} from '@aws-sdk/client-s3';
import { Logger } from '@aws-lambda-powertools/logger';
import { describe, expect, it } from 'vitest';
import { RunError } from '../../lambdas/core/errors/index.js';
import { createRuntime, type Runtime, trainingService } from '../../lambdas/runtime/index.js';
import {
  datasetSlot,
  modelSlot,
  trainingPlan,
  copiedModel,
  copyWaitOf,
  type CopySlot,
  type CopyWaitSlot,
  type RunState,
} from '../../lambdas/core/state/index.js';
import type { Model } from '../../lambdas/service-client/index.js';
import { modelFileKey, modelPrefix, modelRecordKey } from '../../lambdas/storage/keys.js';
import { copyModelStep, createCopyModelStep, type ModelDocument } from '../../lambdas/steps/copy-model.js';
import { modelBytesAt, type SimulatedService } from '../../local/service/index.js';
import { HOUR } from '../client/helpers.js';
import { putDrop, readText, runStateFor, stepEnv, usePipelineFixtures } from '../helpers/pipeline.js';
import { uniqueDrop } from '../helpers/fixtures.js';
import { runErrorOf } from '../helpers/run-errors.js';

const fixtures = usePipelineFixtures();
const MiB = 1024 * 1024;
const DATA = Buffer.from('{"id":"1","text":"fine"}\n{"id":"2","text":"poor"}\n');

interface Trained {
  readonly service: SimulatedService;
  readonly runtime: Runtime;
  readonly model: Model;
  readonly state: RunState;
}

/** A model trained to `download` at the service, and the state copy_model starts from. */
async function trained(modelBytes = MiB, runtime?: (service: SimulatedService) => Runtime): Promise<Trained> {
  const { client: s3, bucket } = fixtures.s3();
  const service = await fixtures.service({ heldOutCount: 0, modelBytes });
  const rt = runtime?.(service) ?? fixtures.runtime(service);
  const drop = uniqueDrop('copy');
  await putDrop(s3, bucket, drop, { 'data.jsonl': DATA, 'train.json': '{}' });
  const client = await rt.service();
  const created = await client.createDataset({
    name: drop,
    files: [{ name: 'data.jsonl', bytes: DATA.length }],
  });
  await client.uploadFile(created.id, created.files[0]!, () => Readable.from([DATA]));
  const dataset = await client.structure(created.id);
  const started = await client.startTraining(dataset.id, 'enc-base');
  const model = await client.getModel(started.id);
  expect(model.next_action).toBe('download');
  const state: RunState = {
    ...(await runStateFor(s3, bucket, drop)),
    config: {
      name: drop,
      files: [{ name: 'data.jsonl', bytes: DATA.length, etag: 'etag' }],
      labels: null,
      encoder: 'enc-base',
      decisions: 'service',
      maxAttempts: 3,
    },
    dataset: { ...datasetSlot(await client.getDataset(dataset.id), undefined, rt.now()), labelled: 4 },
    model: modelSlot(model, trainingPlan(2, 3), undefined, rt.now()),
  };
  return { service, runtime: rt, model, state };
}

async function objectSha256(key: string): Promise<{ bytes: number; sha256: string }> {
  const { client, bucket } = fixtures.s3();
  const answer = await client.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
  const hash = createHash('sha256');
  let bytes = 0;
  for await (const chunk of answer.Body as Readable) {
    hash.update(chunk as Buffer);
    bytes += (chunk as Buffer).length;
  }
  return { bytes, sha256: hash.digest('hex') };
}

function expectedSha256(modelId: string, bytes: number): string {
  const hash = createHash('sha256');
  for (let at = 0; at < bytes; at += MiB) hash.update(modelBytesAt(modelId, at, Math.min(MiB, bytes - at)));
  return hash.digest('hex');
}

async function keysUnder(prefix: string): Promise<string[]> {
  const { client, bucket } = fixtures.s3();
  const list = await client.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix }));
  return (list.Contents ?? []).map((object) => object.Key ?? '');
}

/** s3rver is an EventEmitter ('event': S3 notifications), which its type declarations leave out. */
function s3Events(): EventEmitter {
  return fixtures.s3().server as unknown as EventEmitter;
}

/** Records the names of the S3 commands sent while `work` runs. */
async function recordingCommands<T>(work: () => Promise<T>): Promise<{ result: T; commands: string[] }> {
  const s3 = fixtures.s3().client;
  const commands: string[] = [];
  s3.middlewareStack.add(
    (next, context) => (args) => {
      commands.push(context.commandName ?? '');
      return next(args);
    },
    { step: 'initialize', name: 'recordCommands' },
  );
  try {
    return { result: await work(), commands };
  } finally {
    s3.middlewareStack.remove('recordCommands');
  }
}

/** The slot of a copy that is done, not put off. */
function copied(slot: CopySlot | CopyWaitSlot): CopySlot {
  const copy = copiedModel(slot);
  if (copy === undefined) throw new Error(`the copy was put off: ${JSON.stringify(slot)}`);
  return copy;
}

describe('copy_model', () => {
  it('copies the model byte for byte and writes model.json with the record, the run and the cost', async () => {
    const { service, runtime, model, state } = await trained(MiB + 7);
    const { drop, bucket } = state.run;

    const slot = copied(await copyModelStep.run(state, stepEnv(runtime)));

    expect(slot).toEqual({
      modelKey: modelFileKey(drop, model.id),
      recordKey: modelRecordKey(drop, model.id),
      bytes: MiB + 7,
    });
    expect(await objectSha256(slot.modelKey)).toEqual({
      bytes: MiB + 7,
      sha256: expectedSha256(model.id, MiB + 7),
    });
    const document = JSON.parse(
      (await readText(fixtures.s3().client, bucket, slot.recordKey)) ?? '',
    ) as ModelDocument;
    expect(document).toEqual({
      model: JSON.parse(JSON.stringify(await (await runtime.service()).getModel(model.id))) as unknown,
      run: {
        run_id: state.run.runId,
        drop,
        dataset_id: model.dataset_id,
        attempts: 2,
        started_at: state.run.startedAt,
        finished_at: new Date(service.clock.now()).toISOString(),
        encoder: 'enc-base',
        files: ['data.jsonl'],
        labels: null,
        labelled: 4,
      },
      cost: { credits: 1, gpu_usd: model.gpu_usd, jev_usd: model.jev_usd },
      // Outside the handler wrapper no usage is tracked (test/local/usage.test.ts has it).
      summary: null,
    });
    expect(document.model.onnx_bytes).toBe(MiB + 7);
  });

  it('streams a larger model in parts, and writes model.json only after model.onnx is complete', async () => {
    const bytes = 12 * MiB + 5;
    const { model, runtime, state } = await trained(bytes);
    const created: string[] = [];
    const onEvent = (event: { Records: { s3: { object: { key: string } } }[] }) => {
      for (const record of event.Records) created.push(record.s3.object.key);
    };
    s3Events().on('event', onEvent);
    try {
      const { result, commands } = await recordingCommands(() =>
        createCopyModelStep({ partBytes: 5 * MiB }).run(state, stepEnv(runtime)),
      );
      const slot = copied(result);
      expect(commands.filter((name) => name === 'UploadPartCommand')).toHaveLength(3);
      expect(commands).toContain('CompleteMultipartUploadCommand');
      // The size check comes between the model and its record.
      const order = ['CompleteMultipartUploadCommand', 'HeadObjectCommand', 'PutObjectCommand'];
      expect(commands.filter((name) => order.includes(name)).slice(-3)).toEqual(order);
      expect(await objectSha256(slot.modelKey)).toEqual({ bytes, sha256: expectedSha256(model.id, bytes) });
      expect(created).toEqual([slot.modelKey, slot.recordKey]);
    } finally {
      s3Events().off('event', onEvent);
    }
  });

  it('resumes a download cut mid-way and still copies exactly', async () => {
    const bytes = 6 * MiB;
    const { service, model, runtime, state } = await trained(bytes);
    service.configure({
      faults: [{ endpoint: 'fileDownload', kind: 'cut', count: 1, cutAfterBytes: 2 * MiB + 3 }],
    });

    const slot = copied(await createCopyModelStep({ partBytes: 5 * MiB }).run(state, stepEnv(runtime)));

    expect(service.requestCount('fileDownload')).toBe(2);
    expect(await objectSha256(slot.modelKey)).toEqual({ bytes, sha256: expectedSha256(model.id, bytes) });
  });

  it('deletes a stored model of the wrong size, writes no model.json, and puts the copy off to try again', async () => {
    const { model, runtime, state } = await trained(MiB);
    const s3 = fixtures.s3().client;
    // S3 stores less than it was sent (a storage fault): the size check must catch it.
    s3.middlewareStack.add(
      (next, context) => (args) => {
        const input = args.input as { Body?: unknown };
        if (context.commandName === 'PutObjectCommand' && Buffer.isBuffer(input.Body)) {
          input.Body = input.Body.subarray(0, input.Body.length - 10);
        }
        return next(args);
      },
      { step: 'initialize', name: 'truncateBodies' },
    );
    let slot: CopySlot | CopyWaitSlot;
    try {
      slot = await copyModelStep.run(state, stepEnv(runtime));
    } finally {
      s3.middlewareStack.remove('truncateBodies');
    }
    // A new copy may work: the run waits (WaitToCopy) and copies again while the files are there.
    const waiting = copyWaitOf(slot);
    expect(waiting?.reason).toContain('model_size_mismatch');
    expect(waiting?.reason).toContain(`${MiB - 10} bytes after the copy, the model has ${MiB}`);
    expect(waiting?.waitSeconds).toBeGreaterThan(0);
    expect(waiting?.filesDeadline).toBe(state.model?.filesExpireAt);
    expect(await keysUnder(modelPrefix(state.run.drop, model.id))).toEqual([]);
  });

  it.each([
    [
      'refunded',
      (service: SimulatedService, model: Model) => {
        service.removeModelFiles(model.id, 'refunded');
      },
    ],
    [
      'past files_expire_at',
      (service: SimulatedService) => {
        service.clock.advance(25 * HOUR);
      },
    ],
  ])('fails with model_files_gone when the files are gone (%s), writing nothing', async (_, removeFiles) => {
    const { service, model, runtime, state } = await trained();
    removeFiles(service, model);

    const error = await runErrorOf(copyModelStep.run(state, stepEnv(runtime)));

    expect(error.code).toBe('model_files_gone');
    const gone = await (await runtime.service()).getModel(model.id);
    expect(gone.files_deleted_at).not.toBeNull();
    expect(error.detail).toContain(
      `went at the service at ${gone.files_deleted_at ?? ''} (expired or refunded)`,
    );
    expect(error.detail).toContain(`hopper retry ${state.run.drop} trains the same dataset again`);
    expect(service.requestCount('fileDownload')).toBe(0);
    expect(await keysUnder(modelPrefix(state.run.drop, model.id))).toEqual([]);
  });

  it('says model_files_gone after failed copies in one wording, whether the deadline passed or the service says the files are gone', async () => {
    const { service, model, runtime, state } = await trained();
    const now = runtime.now();
    const since = new Date(now - 2 * HOUR).toISOString();
    const deadline = new Date(now - 1000).toISOString();
    // Copies have failed since `since`, until the files' deadline: the run put the copy off.
    const putOff: CopyWaitSlot = {
      waitSeconds: 60,
      polls: 5,
      waitedSeconds: 300,
      totalPolls: 9,
      totalWaitSeconds: 400,
      failingSince: since,
      filesDeadline: deadline,
      reason: 'service_unavailable: the training service did not answer',
    };
    const expectOneWording = (error: RunError): void => {
      expect(error.code).toBe('model_files_gone');
      expect(error.detail).toMatch(
        new RegExp(
          `^every copy of model ${model.id} from ${since} until its files could be gone at the service at .+ failed, the last with: .+; its files are gone by now, so the model cannot be downloaded any more and its credit is spent`,
          's',
        ),
      );
    };

    // The copy fails once more, past the deadline: the run gives up on it.
    service.configure({ faults: [{ endpoint: 'getDownloadLink', kind: '503', count: 100 }] });
    const pastDeadline = await runErrorOf(
      copyModelStep.run(
        { ...state, model: { ...state.model!, filesExpireAt: deadline }, copy: putOff },
        stepEnv(runtime),
      ),
    );
    expectOneWording(pastDeadline);
    expect(pastDeadline.detail).toContain(`at the service at ${deadline} failed`);

    // The service says the files are gone on the next try: the same words.
    service.configure({ faults: [] });
    service.removeModelFiles(model.id, 'refunded');
    const gone = await runErrorOf(copyModelStep.run({ ...state, copy: putOff }, stepEnv(runtime)));
    expectOneWording(gone);
    expect(gone.detail).toContain(`the last with: ${putOff.reason}; `);
  });

  it('fails with model_files_gone when the files go while the copy runs, leaving nothing behind', async () => {
    const bytes = 12 * MiB;
    let onResume = (): void => undefined;
    const { service, model, runtime, state } = await trained(bytes, (service) =>
      createRuntime({
        s3: fixtures.s3().client,
        service: trainingService({
          serviceUrl: service.apiUrl,
          apiKey: () => Promise.resolve(service.apiKey),
          // The client sleeps before it resumes a cut download: the files go in that gap.
          clientOptions: {
            sleep: () => {
              onResume();
              return Promise.resolve();
            },
          },
        }),
        logger: new Logger({ logLevel: 'SILENT' }),
        now: () => service.clock.now(),
      }),
    );
    try {
      onResume = () => {
        service.removeModelFiles(model.id, 'moved');
      };
      // Cut after the first part is on its way to S3.
      service.configure({
        faults: [{ endpoint: 'fileDownload', kind: 'cut', count: 1, cutAfterBytes: 6 * MiB + 1 }],
      });

      const { result: error, commands } = await recordingCommands(() =>
        runErrorOf(createCopyModelStep({ partBytes: 5 * MiB }).run(state, stepEnv(runtime))),
      );

      expect(error.code).toBe('model_files_gone');
      const moved = await (await runtime.service()).getModel(model.id);
      expect(error.detail).toContain(
        `the service moved its files to its hosting at ${moved.files_deleted_at ?? ''} (hf_repo ${moved.hf_repo ?? ''})`,
      );
      expect(error.detail).toContain(`usable as ${moved.hf_repo ?? ''}`);
      expect(error.detail).not.toContain('drop train.json again');
      expect(commands).toContain('UploadPartCommand');
      expect(commands).toContain('AbortMultipartUploadCommand');
      expect(commands).not.toContain('CompleteMultipartUploadCommand');
      expect(await keysUnder(modelPrefix(state.run.drop, model.id))).toEqual([]);
    } finally {
      await (await runtime.service()).close();
    }
  });

  it('copies a model too large for one invocation over three: each goes on from the parts S3 holds, fetching the rest from byte N', async () => {
    const bytes = 12 * MiB + 5; // parts of 5, 5 and 2 MiB
    const { model, runtime, state } = await trained(bytes);
    const asked: (number | undefined)[] = [];
    const wrapped = new WeakSet<object>();
    const recording: Runtime = {
      ...runtime,
      service: async (options) => {
        const client = await runtime.service(options);
        if (wrapped.has(client)) return client;
        wrapped.add(client);
        const download = client.downloadModel.bind(client);
        // The instance's own method: the client keeps its state in private fields.
        client.downloadModel = (id, wanted) => {
          asked.push(wanted?.from);
          return download(id, wanted);
        };
        return client;
      },
    };
    // Each invocation starts with less than the time box's margin left: it sends its first part only.
    const step = createCopyModelStep({ partBytes: 5 * MiB, marginMs: 60_000 });
    const invocation = () => stepEnv(recording, 60_000 - 1);
    let current = state;
    const slots: (CopySlot | CopyWaitSlot)[] = [];
    const parts: number[] = [];
    for (let round = 0; round < 5 && copiedModel(current.copy) === undefined; round++) {
      const { result, commands } = await recordingCommands(() => step.run(current, invocation()));
      slots.push(result);
      parts.push(commands.filter((name) => name === 'UploadPartCommand').length);
      current = { ...current, copy: result };
    }
    expect(slots).toHaveLength(3);
    expect(parts).toEqual([1, 1, 1]);
    expect(asked).toEqual([0, 5 * MiB, 10 * MiB]);
    const [first, second] = slots.map(copyWaitOf);
    expect(first).toMatchObject({ waitSeconds: 0, upload: { partBytes: 5 * MiB } });
    expect(second?.upload).toEqual(first?.upload);
    // What the state machine carries between invocations stays small.
    expect(JSON.stringify(first).length).toBeLessThan(600);
    const slot = copied(slots[2]!);
    expect(await objectSha256(slot.modelKey)).toEqual({ bytes, sha256: expectedSha256(model.id, bytes) });
    const { client, bucket } = fixtures.s3();
    const head = await client.send(
      new HeadObjectCommand({ Bucket: bucket, Key: slot.modelKey, ChecksumMode: 'ENABLED' }),
    );
    // The CRC32 path: each part's checksum checked by the local S3, the object's the composite one.
    expect([head.ChecksumCRC32?.endsWith('-3'), head.ChecksumType]).toEqual([true, 'COMPOSITE']);
  });

  it('goes on with the open upload after a failure put the copy off, rather than from byte 0', async () => {
    const bytes = 12 * MiB + 5;
    const { service, model, runtime, state } = await trained(bytes);
    const step = createCopyModelStep({ partBytes: 5 * MiB, queueSize: 1 });
    // The download fails for good in its third part (every attempt cut): the copy is put off.
    service.configure({
      faults: [
        { endpoint: 'fileDownload', kind: 'cut', count: 1, cutAfterBytes: 11 * MiB },
        { endpoint: 'fileDownload', kind: '503', count: 10 },
      ],
    });
    const waiting = copyWaitOf(await step.run(state, stepEnv(runtime)));
    expect(waiting?.upload?.partBytes).toBe(5 * MiB);
    service.configure({ faults: [] });
    const before = service.requestCount('fileDownload');
    const { result, commands } = await recordingCommands(() =>
      step.run({ ...state, copy: waiting }, stepEnv(runtime)),
    );
    expect(commands.filter((name) => name === 'UploadPartCommand')).toHaveLength(1);
    expect(service.requestCount('fileDownload')).toBe(before + 1);
    expect(await objectSha256(copied(result).modelKey)).toEqual({
      bytes,
      sha256: expectedSha256(model.id, bytes),
    });
  });

  it('fails the copy when a part checksum in the completion is not the stored one, leaving nothing behind', async () => {
    const bytes = 12 * MiB + 5;
    const { model, runtime, state } = await trained(bytes);
    const { client, bucket } = fixtures.s3();
    client.middlewareStack.add(
      (next, context) => (args) => {
        const input = args.input as { MultipartUpload?: { Parts?: { ChecksumCRC32?: string }[] } };
        const part = input.MultipartUpload?.Parts?.[1];
        if (context.commandName === 'CompleteMultipartUploadCommand' && part !== undefined)
          part.ChecksumCRC32 = 'AAAAAA==';
        return next(args);
      },
      { step: 'initialize', name: 'wrongPartChecksum' },
    );
    let outcome: unknown;
    try {
      outcome = await createCopyModelStep({ partBytes: 5 * MiB })
        .run(state, stepEnv(runtime))
        .catch((error: unknown) => error);
    } finally {
      client.middlewareStack.remove('wrongPartChecksum');
    }
    // S3 refuses it (400 InvalidPart): a final failure, not a copy to put off.
    expect(outcome).toBeInstanceOf(Error);
    expect((outcome as Error).message).toMatch(/InvalidPart|specified parts could not be found/);
    expect(await keysUnder(modelPrefix(state.run.drop, model.id))).toEqual([]);
    const uploads = join(fixtures.s3().directory, 'objects', bucket, '._S3rver_uploads');
    expect(await readdir(uploads)).toEqual([]);
  });

  it('does not copy again when an earlier attempt finished the copy (a retried Task)', async () => {
    const { service, runtime, state } = await trained();
    const first = copied(await copyModelStep.run(state, stepEnv(runtime)));
    const downloads = service.requestCount('fileDownload');

    const again = await copyModelStep.run(state, stepEnv(runtime));

    expect(again).toEqual(first);
    expect(service.requestCount('fileDownload')).toBe(downloads);
  });

  it('finishes an earlier attempt that copied model.onnx but not model.json, even after the files are gone', async () => {
    const { service, runtime, state, model } = await trained();
    const first = copied(await copyModelStep.run(state, stepEnv(runtime)));
    const { client, bucket } = fixtures.s3();
    await client.send(new DeleteObjectCommand({ Bucket: bucket, Key: first.recordKey }));
    service.removeModelFiles(model.id, 'refunded');
    const downloads = service.requestCount('fileDownload');

    const again = await copyModelStep.run(state, stepEnv(runtime));

    expect(again).toEqual(first);
    expect(service.requestCount('fileDownload')).toBe(downloads);
    const document = JSON.parse((await readText(client, bucket, first.recordKey)) ?? 'null') as ModelDocument;
    expect(document.model.id).toBe(model.id);
  });
});
