/**
 * Measured clients of the transfer benchmark (bench/transfers.ts), each run in a fresh process:
 * Hopper's copy_model and upload_files steps, and the baselines between the same endpoints they
 * are compared with: a bare multipart upload of the copy's bytes, and plain pipes.
 */
import type { Readable } from 'node:stream';
import { GetObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { request } from 'undici';
import { inboxKey, modelFileKey } from '../../lambdas/storage/keys.js';
import { objectSize } from '../../lambdas/storage/objects.js';
import { DEFAULT_PART_BYTES, DEFAULT_QUEUE_SIZE, uploadStream } from '../../lambdas/storage/multipart.js';
import { copiedModel } from '../../lambdas/core/state/index.js';
import { createCopyModelStep } from '../../lambdas/steps/copy-model.js';
import { uploadFilesStep } from '../../lambdas/steps/upload-files.js';
import type { ClientResult, Measure } from '../harness/protocol.js';
import {
  connect,
  datasetForDrop,
  endpointsOf,
  jsonlSource,
  numberArg,
  stepEnv,
  trainedModel,
} from './setup.js';

const DATA_FILE = 'data.jsonl';

function optionalNumber(args: Record<string, unknown>, name: string): number | undefined {
  return args[name] === undefined ? undefined : numberArg(args, name);
}

/** copy_model, as the state machine runs it (part size and queue from args when given, for tuning). */
export async function hopperCopy(args: Record<string, unknown>, measure: Measure): Promise<ClientResult> {
  const connected = await connect(endpointsOf(args));
  const state = await trainedModel(connected, String(args.drop));
  const partBytes = optionalNumber(args, 'partBytes');
  const queueSize = optionalNumber(args, 'queueSize');
  const step = createCopyModelStep({
    ...(partBytes === undefined ? {} : { partBytes }),
    ...(queueSize === undefined ? {} : { queueSize }),
  });
  const { result, measurement } = await measure(() => step.run(state, stepEnv(connected.runtime)));
  const copied = copiedModel(result);
  if (copied?.bytes !== state.model?.onnxBytes) throw new Error(`copied ${copied?.bytes ?? 'no'} bytes`);
  return { ...measurement, bytes: copied?.bytes ?? 0 };
}

/** The floor for the copy: the download link's body piped into one streamed PutObject. */
export async function pipeCopy(args: Record<string, unknown>, measure: Measure): Promise<ClientResult> {
  const connected = await connect(endpointsOf(args));
  const state = await trainedModel(connected, String(args.drop));
  const model = state.model!;
  const link = await connected.client.getDownloadLink(model.id);
  const key = modelFileKey(state.run.drop, model.id);
  const { measurement } = await measure(async () => {
    const response = await request(link.url);
    await connected.runtime.s3.send(
      new PutObjectCommand({
        Bucket: connected.bucket,
        Key: key,
        Body: response.body,
        ContentLength: model.onnxBytes ?? undefined,
      }),
    );
  });
  const stored = await objectSize(connected.runtime.s3, connected.bucket, key);
  if (stored !== model.onnxBytes) throw new Error(`the pipe stored ${String(stored)} bytes`);
  return { ...measurement, bytes: stored };
}

/**
 * The floor for the copy's S3 work: the download link's body cut into parts of copy_model's size
 * and sent as a bare multipart upload (CreateMultipartUpload, UploadPart with as many parts in
 * flight as copy_model, CompleteMultipartUpload) with undici alone: no SDK and no signature
 * (s3rver takes unsigned requests, and checks no payload hash of a signed one either). Each part
 * is one buffer, reused once its part is sent, as copy_model's are.
 */
export async function bareMultipartCopy(
  args: Record<string, unknown>,
  measure: Measure,
): Promise<ClientResult> {
  const connected = await connect(endpointsOf(args));
  const state = await trainedModel(connected, String(args.drop));
  const model = state.model!;
  const link = await connected.client.getDownloadLink(model.id);
  const key = modelFileKey(state.run.drop, model.id);
  const objectUrl = `${endpointsOf(args).s3Endpoint}/${connected.bucket}/${key.split('/').map(encodeURIComponent).join('/')}`;
  const partBytes = optionalNumber(args, 'partBytes') ?? DEFAULT_PART_BYTES;
  const queueSize = optionalNumber(args, 'queueSize') ?? DEFAULT_QUEUE_SIZE;
  const { measurement } = await measure(async () => {
    const download = await request(link.url);
    const created = await (await request(`${objectUrl}?uploads`, { method: 'POST' })).body.text();
    const uploadId = /<UploadId>([^<]+)<\/UploadId>/.exec(created)?.[1];
    if (uploadId === undefined) throw new Error(`CreateMultipartUpload answered ${created}`);
    const etags: string[] = [];
    const free: Buffer[] = [];
    const inFlight = new Set<Promise<void>>();
    const send = async (buffer: Buffer, bytes: number): Promise<void> => {
      if (inFlight.size >= queueSize) await Promise.race(inFlight);
      const number = etags.push('');
      const sending: Promise<void> = request(
        `${objectUrl}?partNumber=${String(number)}&uploadId=${uploadId}`,
        {
          method: 'PUT',
          body: buffer.subarray(0, bytes),
        },
      ).then(async (answer) => {
        await answer.body.dump();
        if (answer.statusCode !== 200)
          throw new Error(`UploadPart ${String(number)} answered ${answer.statusCode}`);
        etags[number - 1] = String(answer.headers.etag);
        free.push(buffer);
        inFlight.delete(sending);
      });
      inFlight.add(sending);
    };
    let part: Buffer = Buffer.allocUnsafeSlow(partBytes);
    let filled = 0;
    for await (const data of download.body) {
      const chunk = data as Buffer;
      for (let offset = 0; offset < chunk.length;) {
        const copied = chunk.copy(part, filled, offset);
        filled += copied;
        offset += copied;
        if (filled === partBytes) {
          await send(part, filled);
          part = free.pop() ?? Buffer.allocUnsafeSlow(partBytes);
          filled = 0;
        }
      }
    }
    if (filled > 0) await send(part, filled);
    await Promise.all(inFlight);
    const parts = etags.map(
      (etag, index) => `<Part><PartNumber>${String(index + 1)}</PartNumber><ETag>${etag}</ETag></Part>`,
    );
    const completed = await request(`${objectUrl}?uploadId=${uploadId}`, {
      method: 'POST',
      body: `<CompleteMultipartUpload>${parts.join('')}</CompleteMultipartUpload>`,
    });
    const answer = await completed.body.text();
    if (completed.statusCode !== 200 || answer.includes('<Error>'))
      throw new Error(`CompleteMultipartUpload answered ${answer}`);
  });
  const stored = await objectSize(connected.runtime.s3, connected.bucket, key);
  if (stored !== model.onnxBytes) throw new Error(`the bare multipart upload stored ${String(stored)} bytes`);
  return { ...measurement, bytes: stored };
}

/** Puts a data file of `bytes` into inbox/<drop>/ (set-up of the upload benchmark, not measured). */
export async function seedDataFile(args: Record<string, unknown>, measure: Measure): Promise<ClientResult> {
  const connected = await connect(endpointsOf(args));
  const bytes = numberArg(args, 'bytes');
  const { measurement } = await measure(() =>
    uploadStream(
      connected.runtime.s3,
      connected.bucket,
      inboxKey(String(args.drop), DATA_FILE),
      jsonlSource(bytes),
      {
        expectedBytes: bytes,
      },
    ),
  );
  return { ...measurement };
}

/** upload_files for a drop of one data file (seeded by seedDataFile). */
export async function hopperUpload(args: Record<string, unknown>, measure: Measure): Promise<ClientResult> {
  const connected = await connect(endpointsOf(args));
  const bytes = numberArg(args, 'bytes');
  const state = await datasetForDrop(connected, String(args.drop), [{ name: DATA_FILE, bytes }]);
  const { result, measurement } = await measure(() => uploadFilesStep.run(state, stepEnv(connected.runtime)));
  if (result.nextAction === 'upload_files') throw new Error('upload_files did not finish');
  return { ...measurement };
}

/** The floor for the upload: GetObject's body piped into the presigned PUT. */
export async function pipeUpload(args: Record<string, unknown>, measure: Measure): Promise<ClientResult> {
  const connected = await connect(endpointsOf(args));
  const bytes = numberArg(args, 'bytes');
  const drop = String(args.drop);
  const dataset = await connected.client.createDataset({
    name: `${drop}-pipe`,
    files: [{ name: DATA_FILE, bytes }],
  });
  const url = dataset.files[0]?.upload_url;
  if (url === undefined || url === null) throw new Error('the dataset has no upload URL');
  const { measurement } = await measure(async () => {
    const object = await connected.runtime.s3.send(
      new GetObjectCommand({ Bucket: connected.bucket, Key: inboxKey(drop, DATA_FILE) }),
    );
    const response = await request(url, {
      method: 'PUT',
      headers: { 'content-length': String(bytes), 'content-type': 'application/octet-stream' },
      body: object.Body as Readable,
    });
    await response.body.dump();
    if (response.statusCode !== 200) throw new Error(`the pipe's PUT answered ${response.statusCode}`);
  });
  return { ...measurement };
}
