/**
 * A streamed body written to S3 in parts, at the speed of the stream and with a fixed amount
 * of memory. Written here rather than with @aws-sdk/lib-storage's Upload, which measured at a
 * third of a plain pipe's speed and three times its CPU (docs/performance.md): it concatenates
 * every part into a freshly allocated buffer (a copy, page faults and garbage per part) and its
 * Buffer parts are hashed with SHA-256 for the request signature. Here:
 *
 * - parts are filled into a small pool of buffers (queueSize + 1), reused for the whole upload:
 *   one copy per byte, no garbage, memory fixed at (queueSize + 1) x partBytes;
 * - parts are sent with `x-amz-content-sha256: UNSIGNED-PAYLOAD` (what the SDK already does for
 *   every streamed body): the bytes are protected by TLS, and by the CRC32 checksum the SDK adds
 *   to each part where checksums are on (the default outside local mode), which S3 checks on
 *   the part and again on completion;
 * - a body that fits in one part is sent with one PutObject.
 *
 * Failure leaves nothing behind: parts in flight are cancelled, the multipart upload is aborted
 * (the bucket's lifecycle rule catches an abort that fails) and the body is destroyed.
 */
import type { Readable } from 'node:stream';
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  ListPartsCommand,
  PutObjectCommand,
  UploadPartCommand,
  type CompletedPart,
  type Part,
  type UploadPartCommandInput,
  type S3Client,
} from '@aws-sdk/client-s3';
import type { BuildMiddleware } from '@smithy/types';

/** S3's floor for every part but the last. */
export const MIN_PART_BYTES = 5 * 1024 * 1024;
/** S3's ceiling on the parts of one upload. */
export const MAX_PARTS = 10_000;
export const DEFAULT_PART_BYTES = 8 * 1024 * 1024;
export const DEFAULT_QUEUE_SIZE = 2;

export interface StreamUploadOptions {
  /** Bytes per part (at least MIN_PART_BYTES); raised to fit `expectedBytes` in MAX_PARTS parts. */
  readonly partBytes?: number;
  /** Parts in flight at once, while the next one fills. Memory is about (queueSize + 1) x partBytes. */
  readonly queueSize?: number;
  /** The body's size when known: only to choose the part size. */
  readonly expectedBytes?: number;
  readonly contentType?: string;
  /** Goes on with this upload: the body is then the object's bytes from `resume.bytes` on. */
  readonly resume?: UploadResume | undefined;
  /**
   * Asked before each part but the first one sent: true stops the upload there, left open, and
   * uploadStream returns its place (a time box: the next invocation goes on with it).
   */
  readonly stopBefore?: () => boolean;
  /**
   * Told the multipart upload's place once it is open. With it, a failure leaves the upload open,
   * for the caller to go on with or abort; without it, a failure aborts the upload.
   */
  readonly onOpen?: (place: UploadPlace) => void;
}

/** An open multipart upload, as much as another invocation needs to go on with it. */
export interface UploadPlace {
  readonly uploadId: string;
  /** The size of every part but the last: part n starts at byte (n - 1) x partBytes. */
  readonly partBytes: number;
}

/** An open upload and its parts stored from part 1 on, one after another: `bytes` of the object. */
export interface UploadResume {
  readonly place: UploadPlace;
  readonly parts: readonly CompletedPart[];
  readonly bytes: number;
}

/** A part's bytes: a view of one of the pool's buffers, handed back when the part is sent. */
interface FilledPart {
  readonly number: number;
  readonly data: Buffer;
  readonly buffer: Buffer;
  /** True when the body ended within this part. */
  readonly last: boolean;
}

const UNSIGNED_PAYLOAD = 'UNSIGNED-PAYLOAD';

/** The pool of part buffers: at most `size` exist, each reused once its part is sent. */
class BufferPool {
  readonly #free: Buffer[] = [];
  readonly #waiting: ((buffer: Buffer) => void)[] = [];
  #created = 0;

  constructor(
    readonly bytes: number,
    readonly size: number,
  ) {}

  async take(): Promise<Buffer> {
    const free = this.#free.pop();
    if (free !== undefined) return free;
    if (this.#created < this.size) {
      this.#created++;
      // Not from Node's shared slab, and not zeroed: every byte sent is written first.
      return Buffer.allocUnsafeSlow(this.bytes);
    }
    return new Promise((resolve) => this.#waiting.push(resolve));
  }

  give(buffer: Buffer): void {
    const waiter = this.#waiting.shift();
    if (waiter === undefined) this.#free.push(buffer);
    else waiter(buffer);
  }
}

/**
 * The body cut into parts of `pool.bytes` (the last one shorter), numbered from `first`, each
 * filled into a pooled buffer.
 */
async function* partsOf(
  body: AsyncIterable<Uint8Array>,
  pool: BufferPool,
  first: number,
): AsyncGenerator<FilledPart, void> {
  let number = first;
  let buffer = await pool.take();
  let filled = 0;
  for await (const chunk of body) {
    let offset = 0;
    while (offset < chunk.length) {
      const copied = Math.min(chunk.length - offset, buffer.length - filled);
      buffer.set(chunk.subarray(offset, offset + copied), filled);
      filled += copied;
      offset += copied;
      if (filled === buffer.length) {
        yield { number: number++, data: buffer, buffer, last: false };
        buffer = await pool.take();
        filled = 0;
      }
    }
  }
  // An empty last part only when the body is empty (S3 refuses empty parts after the first).
  if (filled > 0 || number === 1) {
    yield { number, data: buffer.subarray(0, filled), buffer, last: true };
  } else {
    pool.give(buffer);
  }
}

/** Sends the request with an unsigned payload: the signature then covers the headers only. */
const unsignedPayloadMiddleware: BuildMiddleware<object, object> = (next) => (args) => {
  const request = args.request as { headers?: Record<string, string> };
  if (request.headers !== undefined) request.headers['x-amz-content-sha256'] = UNSIGNED_PAYLOAD;
  return next(args);
};

function unsignedPayload<C extends PutObjectCommand | UploadPartCommand>(command: C): C {
  (
    command.middlewareStack as { add(middleware: BuildMiddleware<object, object>, options: object): void }
  ).add(unsignedPayloadMiddleware, { step: 'build', name: 'hopperUnsignedPayload' });
  return command;
}

/**
 * Writes `body` to the object in parts (one PutObject when it fits in one, unless resuming).
 * Returns null once S3 holds the whole object, or the upload's place when `stopBefore` stopped it;
 * on failure nothing is left behind, unless `onOpen` took the upload (see above).
 */
export async function uploadStream(
  s3: S3Client,
  bucket: string,
  key: string,
  body: Readable,
  options: StreamUploadOptions = {},
): Promise<UploadPlace | null> {
  // The body's own failure is the one to report (a download that failed), not what it caused.
  let bodyError: unknown;
  body.on('error', (error) => {
    bodyError ??= error;
  });
  const workers = options.queueSize ?? DEFAULT_QUEUE_SIZE;
  // The configured part size, or larger when the object needs it.
  const fitting = options.expectedBytes === undefined ? 0 : Math.ceil(options.expectedBytes / MAX_PARTS);
  const { resume } = options;
  const partBytes =
    resume?.place.partBytes ?? Math.max(MIN_PART_BYTES, options.partBytes ?? DEFAULT_PART_BYTES, fitting);
  const pool = new BufferPool(partBytes, workers + 1);
  const parts = partsOf(body, pool, (resume?.parts.length ?? 0) + 1);
  const object = { Bucket: bucket, Key: key, ContentType: options.contentType };
  try {
    const first = await parts.next();
    // None only for a resumed upload whose parts are all stored (its body is empty).
    const firstPart = first.done === true ? undefined : first.value;
    if (resume === undefined && firstPart?.last === true) {
      await s3.send(unsignedPayload(new PutObjectCommand({ ...object, Body: firstPart.data })));
      return null;
    }
    const place = await uploadParts(s3, object, firstPart, parts, { ...options, pool, body, workers });
    if (place !== null) body.destroy(); // stopped: the rest is for another invocation
    return place;
  } catch (error) {
    body.destroy();
    throw bodyError ?? error;
  }
}

/**
 * The parts of the open upload at `place` that a resumed upload keeps: from part 1 on, each of the
 * place's part size (ListParts); null when the upload is no longer open.
 */
export async function storedParts(
  s3: S3Client,
  object: { readonly Bucket: string; readonly Key: string },
  place: UploadPlace,
): Promise<UploadResume | null> {
  const listed: Part[] = [];
  try {
    // Pages of 1000 parts, while IsTruncated (which the SDK's paginator does not read).
    let marker: string | undefined;
    for (let page = 0; page <= MAX_PARTS / 1000; page++) {
      const answer = await s3.send(
        new ListPartsCommand({ ...object, UploadId: place.uploadId, PartNumberMarker: marker }),
      );
      listed.push(...(answer.Parts ?? []));
      marker = answer.NextPartNumberMarker;
      if (answer.IsTruncated !== true || marker === undefined) break;
    }
  } catch (error) {
    if (error instanceof Error && error.name === 'NoSuchUpload') return null;
    throw error;
  }
  listed.sort((a, b) => (a.PartNumber ?? 0) - (b.PartNumber ?? 0));
  const parts: CompletedPart[] = [];
  for (const { PartNumber, ETag, Size, ChecksumCRC32 } of listed) {
    // A part out of order or short (the last, or cut) is sent again, with those after it.
    if (PartNumber !== parts.length + 1 || Size !== place.partBytes) break;
    parts.push({ PartNumber, ETag, ...(ChecksumCRC32 === undefined ? {} : { ChecksumCRC32 }) });
  }
  return { place, parts, bytes: parts.length * place.partBytes };
}

/** Aborts the upload at `place`; its own failure is not reported (the bucket's lifecycle rule ends it). */
export async function abortUpload(
  s3: S3Client,
  object: { readonly Bucket: string; readonly Key: string },
  place: UploadPlace,
): Promise<void> {
  await s3
    .send(new AbortMultipartUploadCommand({ ...object, UploadId: place.uploadId }))
    .catch(() => undefined);
}

/**
 * The multipart upload of a body of more than one part (or the rest of a resumed one): null once
 * completed, its place when stopped; aborted if a part fails, unless `run.onOpen` took it.
 */
async function uploadParts(
  s3: S3Client,
  object: { readonly Bucket: string; readonly Key: string; readonly ContentType: string | undefined },
  first: FilledPart | undefined,
  parts: AsyncGenerator<FilledPart, void>,
  run: SendRun,
): Promise<UploadPlace | null> {
  // Where the SDK adds checksums (WHEN_SUPPORTED, its default), the upload is declared with
  // CRC32 and each part's checksum goes into the completion, as S3 requires.
  const checksum = (await s3.config.requestChecksumCalculation()) === 'WHEN_SUPPORTED' ? 'CRC32' : undefined;
  const place = run.resume?.place ?? (await createUpload(s3, object, checksum, run.pool.bytes));
  run.onOpen?.(place);
  const upload = { Bucket: object.Bucket, Key: object.Key, UploadId: place.uploadId };
  try {
    const sending: UploadPart = { ...upload, ChecksumAlgorithm: checksum };
    const { sent, stopped } =
      first === undefined ? { sent: [], stopped: false } : await sendParts(s3, sending, first, parts, run);
    if (stopped) {
      await parts.return(undefined);
      return place;
    }
    const all = [...(run.resume?.parts ?? []), ...sent].sort(
      (a, b) => (a.PartNumber ?? 0) - (b.PartNumber ?? 0),
    );
    await s3.send(new CompleteMultipartUploadCommand({ ...upload, MultipartUpload: { Parts: all } }));
    return null;
  } catch (error) {
    await parts.return(undefined).catch(() => undefined);
    // Its own failure is not the one to report (a store may not implement abort).
    if (run.onOpen === undefined) await abortUpload(s3, object, place);
    throw error;
  }
}

async function createUpload(
  s3: S3Client,
  object: { readonly Bucket: string; readonly Key: string; readonly ContentType: string | undefined },
  checksum: 'CRC32' | undefined,
  partBytes: number,
): Promise<UploadPlace> {
  const created = await s3.send(new CreateMultipartUploadCommand({ ...object, ChecksumAlgorithm: checksum }));
  if (created.UploadId === undefined)
    throw new Error(`CreateMultipartUpload of ${object.Key} answered no UploadId`);
  return { uploadId: created.UploadId, partBytes };
}

interface SendRun extends Pick<StreamUploadOptions, 'resume' | 'stopBefore' | 'onOpen'> {
  readonly pool: BufferPool;
  readonly body: Readable;
  readonly workers: number;
}

type UploadPart = Pick<UploadPartCommandInput, 'Bucket' | 'Key' | 'UploadId' | 'ChecksumAlgorithm'>;

/**
 * Sends every part, `workers` at a time: each worker sends one part and takes the next filled
 * one when it is done, while the generator fills the next (next() calls on it queue in order).
 * The first failure stops the others: parts in flight are cancelled, and the body is destroyed.
 * `run.stopBefore` stops them before a part but the first: the parts in flight are finished.
 */
async function sendParts(
  s3: S3Client,
  upload: UploadPart,
  first: FilledPart,
  parts: AsyncGenerator<FilledPart, void>,
  run: SendRun,
): Promise<{ sent: CompletedPart[]; stopped: boolean }> {
  const cancel = new AbortController();
  const completed: CompletedPart[] = [];
  let pending: FilledPart | undefined = first;
  let stopped = false;
  // Once the last part is taken there is nothing left to stop before.
  let ended = first.last;
  const worker = async (): Promise<void> => {
    for (;;) {
      if (pending === undefined && !ended && (stopped || run.stopBefore?.() === true)) {
        stopped = true;
        return;
      }
      const part = pending ?? (await parts.next()).value;
      pending = undefined;
      if (part === undefined) return;
      if (part.last) ended = true;
      try {
        completed.push(await sendPart(s3, upload, part, cancel.signal));
      } finally {
        run.pool.give(part.buffer);
      }
    }
  };
  let failure: { error: unknown } | undefined;
  await Promise.all(
    Array.from({ length: run.workers }, () =>
      worker().catch((error: unknown) => {
        if (failure !== undefined) return;
        failure = { error };
        cancel.abort();
        run.body.destroy();
      }),
    ),
  );
  if (failure !== undefined) throw failure.error;
  return { sent: completed, stopped };
}

async function sendPart(
  s3: S3Client,
  upload: UploadPart,
  part: FilledPart,
  signal: AbortSignal,
): Promise<CompletedPart> {
  const command = new UploadPartCommand({ ...upload, PartNumber: part.number, Body: part.data });
  const answer = await s3.send(unsignedPayload(command), { abortSignal: signal });
  if (answer.ETag === undefined)
    throw new Error(`UploadPart ${String(part.number)} of ${upload.Key ?? ''} answered no ETag`);
  return {
    PartNumber: part.number,
    ETag: answer.ETag,
    ...(answer.ChecksumCRC32 === undefined ? {} : { ChecksumCRC32: answer.ChecksumCRC32 }),
  };
}
