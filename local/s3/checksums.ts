/**
 * S3's additional checksums in the local S3 (consistent-store.ts), which s3rver ignores: with the
 * SDK's default (a CRC32 on every PutObject and UploadPart) local mode then runs the code path
 * Lambda runs, and a wrong checksum is refused here as S3 refuses it.
 *
 * - A PutObject or UploadPart that carries `x-amz-checksum-<algorithm>` (crc32, crc32c,
 *   crc64nvme, sha1, sha256), in a header or in the trailer of an `aws-chunked` body
 *   (`x-amz-trailer`, what the SDK sends for a streamed body), is checked against its bytes:
 *   400 BadDigest when they differ, 400 InvalidRequest for a value that is no checksum; the
 *   chunk framing is taken off (s3rver would store it as the object's bytes).
 * - The checksum is stored with the object (or the part) and answered: on the PutObject or
 *   UploadPart, and on HeadObject and GetObject of the whole object with `x-amz-checksum-mode:
 *   ENABLED`, with `x-amz-checksum-type`.
 * - A multipart upload declared with an algorithm (`x-amz-checksum-algorithm`) completes only
 *   when CompleteMultipartUpload names each part's checksum, and the one stored for the part
 *   (InvalidRequest when one is missing, InvalidPart when one differs); the object's checksum is
 *   then S3's composite one, the checksum of the parts' checksums with `-<part count>`.
 *
 * Not modelled: FULL_OBJECT checksums of multipart uploads (crc64nvme, or `x-amz-checksum-type:
 * FULL_OBJECT`) are refused with NotImplemented; and S3's own CRC64NVME of an object sent without a
 * checksum is not computed (such an object answers no checksum).
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { createHash } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { Transform, type TransformCallback } from 'node:stream';
import { Crc32, Crc32c, Crc64Nvme } from '@aws-sdk/checksums/crc';
import { S3Error } from './s3-error.js';

const ALGORITHMS = ['crc32', 'crc32c', 'crc64nvme', 'sha1', 'sha256'] as const;
export type ChecksumAlgorithm = (typeof ALGORITHMS)[number];
const DIGEST_BYTES: Record<ChecksumAlgorithm, number> = {
  crc32: 4,
  crc32c: 4,
  crc64nvme: 8,
  sha1: 20,
  sha256: 32,
};
const HEADER = 'x-amz-checksum-';
const TYPE_HEADER = 'x-amz-checksum-type';

/** A checksum as the store keeps it: with the object in its metadata, with a part in its record. */
export interface StoredChecksum {
  readonly algorithm: ChecksumAlgorithm;
  /** Base64, with `-<part count>` when composite. */
  readonly value: string;
  readonly type: 'FULL_OBJECT' | 'COMPOSITE';
}

interface Digest {
  update(chunk: Uint8Array): void;
  digest(): Promise<Uint8Array>;
}

function digestOf(algorithm: ChecksumAlgorithm): Digest {
  if (algorithm === 'crc32') return new Crc32();
  if (algorithm === 'crc32c') return new Crc32c();
  if (algorithm === 'crc64nvme') return new Crc64Nvme();
  const hash = createHash(algorithm);
  return { update: (chunk) => hash.update(chunk), digest: () => Promise.resolve(hash.digest()) };
}

/** What the request being served sends and is answered, for the store (which sees no headers). */
interface ChecksumRequest {
  /** A GetObject or HeadObject (path-style: `/<bucket>/<key>`), whose answer may name its checksum. */
  readonly objectRead: boolean;
  /** The algorithm of the checksum the body comes with, null when it comes with none. */
  readonly algorithm: ChecksumAlgorithm | null;
  /** The checksum it names: from its header, or from its trailer once the body has ended. */
  expected: string | undefined;
  /** Over the body's bytes (unframed), when it names a checksum. */
  readonly digest: Digest | null;
  /** CompleteMultipartUpload's parts, as s3rver parsed the request's XML. */
  readonly completionParts: () => readonly Record<string, unknown>[];
  /** The stored checksum the response names, set by the store. */
  answer?: StoredChecksum;
}
const requests = new AsyncLocalStorage<ChecksumRequest>();

/** The part of s3rver's (Koa) request context the middleware uses. */
export interface ChecksumContext {
  readonly method: string;
  readonly path: string;
  readonly query: Readonly<Record<string, string | string[] | undefined>>;
  readonly headers: Record<string, string | string[] | undefined>;
  req: IncomingMessage;
  readonly request: { readonly body?: unknown };
  status: number;
  body: unknown;
  set(field: string, value: string): void;
}

/** The checksums of each request (install just before s3rver's routes). */
export async function checksumMiddleware(context: ChecksumContext, next: () => Promise<void>): Promise<void> {
  const algorithm = requestAlgorithm(context.headers);
  const isRead = context.method === 'GET' || context.method === 'HEAD';
  const request: ChecksumRequest = {
    objectRead: isRead && /^\/[^/]+\/./.test(context.path) && context.query.uploadId === undefined,
    algorithm: algorithm?.name ?? null,
    expected: algorithm?.value,
    digest: algorithm === null ? null : digestOf(algorithm.name),
    completionParts: () => completionParts(context.request.body),
  };
  if (context.method === 'PUT') replaceBody(context, request);
  await requests.run(request, next);
  const { answer } = request;
  if (answer === undefined || context.status >= 300) return;
  // A range of the object is not the object the checksum is of.
  if (isRead && (context.status !== 200 || context.headers['x-amz-checksum-mode'] !== 'ENABLED')) return;
  context.set(`${HEADER}${answer.algorithm}`, answer.value);
  if (isRead) context.set(TYPE_HEADER, answer.type);
  const result = (context.body as { CompleteMultipartUploadResult?: Record<string, string> } | undefined)
    ?.CompleteMultipartUploadResult;
  if (result !== undefined) {
    result[`Checksum${answer.algorithm.toUpperCase()}`] = answer.value;
    result.ChecksumType = answer.type;
  }
}

/** The checksum the request's headers announce, null when none; InvalidRequest for a malformed one. */
function requestAlgorithm(headers: ChecksumContext['headers']) {
  const trailer = typeof headers['x-amz-trailer'] === 'string' ? headers['x-amz-trailer'].trim() : '';
  const named = ALGORITHMS.filter((name) => headers[`${HEADER}${name}`] !== undefined);
  if (trailer.startsWith(HEADER)) named.push(algorithmNamed(trailer.slice(HEADER.length), 'x-amz-trailer'));
  if (named.length > 1)
    throw new S3Error(
      'InvalidRequest',
      'Expecting a single x-amz-checksum- header. Multiple checksum Types are not allowed.',
    );
  const sdkAlgorithm = headers['x-amz-sdk-checksum-algorithm'];
  const [name] = named;
  if (name === undefined) {
    if (typeof sdkAlgorithm === 'string' && sdkAlgorithm !== '')
      throw new S3Error(
        'InvalidRequest',
        'x-amz-sdk-checksum-algorithm specified, but no corresponding x-amz-checksum-* or x-amz-trailer headers were found.',
      );
    return null;
  }
  const value = headers[`${HEADER}${name}`];
  if (value !== undefined) assertChecksumValue(name, value);
  return { name, value: typeof value === 'string' ? value : undefined };
}

function algorithmNamed(name: string, header: string): ChecksumAlgorithm {
  const algorithm = ALGORITHMS.find((known) => known === name.toLowerCase());
  if (algorithm === undefined) throw new S3Error('InvalidRequest', `Value for ${header} header is invalid.`);
  return algorithm;
}

function assertChecksumValue(algorithm: ChecksumAlgorithm, value: unknown): asserts value is string {
  const valid =
    typeof value === 'string' &&
    /^[A-Za-z\d+/]*={0,2}$/.test(value) &&
    Buffer.from(value, 'base64').length === DIGEST_BYTES[algorithm];
  if (!valid) throw new S3Error('InvalidRequest', `Value for ${HEADER}${algorithm} header is invalid.`);
}

/** The body as the store reads it: unframed when `aws-chunked`, digested when it names a checksum. */
function replaceBody(context: ChecksumContext, request: ChecksumRequest): void {
  const { headers } = context;
  const encodings = String(headers['content-encoding'] ?? '')
    .split(',')
    .map((encoding) => encoding.trim())
    .filter((encoding) => encoding !== '');
  const chunked = encodings.includes('aws-chunked');
  if (!chunked && request.digest === null) return;
  if (chunked) {
    // S3 takes aws-chunked off the object's encoding, and its length is the decoded one.
    const rest = encodings.filter((encoding) => encoding !== 'aws-chunked');
    if (rest.length === 0) delete headers['content-encoding'];
    else headers['content-encoding'] = rest.join(',');
    headers['content-length'] = String(headers['x-amz-decoded-content-length'] ?? '');
  }
  const { req } = context;
  const body = req.pipe(new BodyReader(chunked, request));
  req.on('error', (error) => body.destroy(error));
  // s3rver's controllers read the body from context.req (and the store its headers); Koa's
  // request keeps the original for the URL.
  context.req = Object.assign(body, {
    headers,
    url: req.url,
    method: req.method,
  }) as unknown as IncomingMessage;
}

/** Passes the body's bytes on, taking off aws-chunked framing, into the request's digest. */
class BodyReader extends Transform {
  #pending: Buffer = Buffer.alloc(0);
  /** Bytes of the current chunk still to come; null while reading a chunk's size line. */
  #chunkLeft: number | null = null;
  #trailers = false;

  constructor(
    readonly chunked: boolean,
    readonly request: ChecksumRequest,
  ) {
    super();
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    if (!this.chunked) {
      this.#pass(chunk);
      done();
      return;
    }
    this.#pending = this.#pending.length === 0 ? chunk : Buffer.concat([this.#pending, chunk]);
    try {
      this.#unframe();
      done();
    } catch (error) {
      done(error as Error);
    }
  }

  #pass(bytes: Buffer): void {
    this.request.digest?.update(bytes);
    this.push(bytes);
  }

  /** `<hex size>[;chunk-signature=...]\r\n<bytes>\r\n` ... `0\r\n<trailer lines>\r\n`. */
  #unframe(): void {
    for (;;) {
      if (this.#chunkLeft !== null && this.#chunkLeft > 0) {
        const bytes = this.#pending.subarray(0, this.#chunkLeft);
        this.#chunkLeft -= bytes.length;
        this.#pending = this.#pending.subarray(bytes.length);
        if (bytes.length > 0) this.#pass(bytes);
        if (this.#chunkLeft > 0) return;
      }
      const end = this.#pending.indexOf('\r\n');
      if (end < 0) return;
      const line = this.#pending.subarray(0, end).toString('latin1');
      this.#pending = this.#pending.subarray(end + 2);
      if (this.#chunkLeft === 0) {
        this.#chunkLeft = null; // the CRLF after a chunk's bytes
        if (line !== '') throw malformedChunks();
      } else if (this.#trailers) this.#trailer(line);
      else this.#sizeLine(line);
    }
  }

  #sizeLine(line: string): void {
    const size = Number.parseInt(line.split(';')[0] ?? '', 16);
    if (!Number.isSafeInteger(size) || size < 0) throw malformedChunks();
    if (size === 0) this.#trailers = true;
    else this.#chunkLeft = size;
  }

  #trailer(line: string): void {
    const colon = line.indexOf(':');
    if (colon < 0) return; // the blank line that ends the trailers
    const name = line.slice(0, colon).trim().toLowerCase();
    if (this.request.algorithm !== null && name === `${HEADER}${this.request.algorithm}`) {
      const value = line.slice(colon + 1).trim();
      if (!isChecksumValue(this.request.algorithm, value)) throw malformedTrailer();
      this.request.expected = value;
    }
  }
}

function isChecksumValue(algorithm: ChecksumAlgorithm, value: string): boolean {
  try {
    assertChecksumValue(algorithm, value);
    return true;
  } catch {
    return false;
  }
}

const malformedChunks = () =>
  new S3Error('IncompleteBody', 'The request body terminated unexpectedly (aws-chunked framing).');
const malformedTrailer = () =>
  new S3Error(
    'MalformedTrailerError',
    'The request contained trailing data that was not well-formed or did not conform to our published schema.',
  );

/**
 * The checksum of the body the store has just read whole, null when the request names none.
 * @throws S3Error BadDigest when it is not the checksum the request names
 */
export async function verifiedBody(): Promise<StoredChecksum | null> {
  const request = requests.getStore();
  if (request?.algorithm == null || request.digest === null) return null;
  const { algorithm } = request;
  if (request.expected === undefined) throw malformedTrailer();
  const value = Buffer.from(await request.digest.digest()).toString('base64');
  if (value !== request.expected)
    throw new S3Error(
      'BadDigest',
      `The ${algorithm.toUpperCase()} you specified did not match the calculated checksum.`,
    );
  const stored: StoredChecksum = { algorithm, value, type: 'FULL_OBJECT' };
  request.answer = stored;
  return stored;
}

/** The metadata entries that keep `checksum` with its object (and the reverse, checksumOf). */
export function checksumMetadata(checksum: StoredChecksum | null): Record<string, string> {
  return checksum === null
    ? {}
    : { [`${HEADER}${checksum.algorithm}`]: checksum.value, [TYPE_HEADER]: checksum.type };
}

/** The checksum kept in an object's stored metadata, null when it has none. */
function checksumOf(metadata: Readonly<Record<string, string>>): StoredChecksum | null {
  const algorithm = ALGORITHMS.find((name) => metadata[`${HEADER}${name}`] !== undefined);
  if (algorithm === undefined) return null;
  const type = metadata[TYPE_HEADER] === 'COMPOSITE' ? 'COMPOSITE' : 'FULL_OBJECT';
  return { algorithm, value: metadata[`${HEADER}${algorithm}`] ?? '', type };
}

/** Metadata keys the store keeps beside s3rver's own. */
export const isChecksumMetadata = (key: string): boolean => key.startsWith(HEADER);

/** Notes the checksum of an object a GET or HEAD reads, for its answer. */
export function noteRead(metadata: Readonly<Record<string, string>>): void {
  const request = requests.getStore();
  if (request?.objectRead !== true) return;
  request.answer = checksumOf(metadata) ?? undefined;
}

/** The algorithm a multipart upload was declared with (its CreateMultipartUpload's headers), or null. */
export function uploadAlgorithm(uploadHeaders: Readonly<Record<string, unknown>>): ChecksumAlgorithm | null {
  const declared = uploadHeaders['x-amz-checksum-algorithm'];
  if (typeof declared !== 'string' || declared === '') return null;
  return algorithmNamed(declared, 'x-amz-checksum-algorithm');
}

/** Refuses what S3 refuses at CreateMultipartUpload and does not model here (see above). */
export function assertUploadSupported(uploadHeaders: Readonly<Record<string, unknown>>): void {
  const algorithm = uploadAlgorithm(uploadHeaders);
  if (algorithm === 'crc64nvme' || uploadHeaders[TYPE_HEADER] === 'FULL_OBJECT')
    throw new S3Error('NotImplemented', 'The local S3 keeps no FULL_OBJECT checksum of a multipart upload.');
}

/**
 * UploadPart's checksum: the one its body came with, refused when it is not of the upload's
 * algorithm (InvalidRequest, as S3 answers). A part with a checksum in an upload declared without
 * one is taken: the SDK adds a CRC32 to every part by default, and S3 no longer documents a refusal.
 */
export async function verifiedPart(declared: ChecksumAlgorithm | null): Promise<StoredChecksum | null> {
  const algorithm = requests.getStore()?.algorithm ?? null;
  if (declared !== null && algorithm !== null && algorithm !== declared)
    throw new S3Error(
      'InvalidRequest',
      `Checksum Type mismatch occurred, expected checksum Type: ${declared}, actual checksum Type: ${algorithm}`,
    );
  return verifiedBody();
}

/** A stored part, as the completion sees it. */
export interface PartChecksum {
  readonly number: number;
  readonly checksum?: StoredChecksum | null;
}

/**
 * The composite checksum of an upload of `declared` whose parts are `stored`, after checking the
 * completion's parts name each part's checksum; null when the upload has no algorithm.
 * @throws S3Error InvalidRequest when the request leaves a part's checksum out, InvalidPart when
 *   it names another
 */
export async function completedChecksum(
  declared: ChecksumAlgorithm | null,
  stored: readonly PartChecksum[],
): Promise<StoredChecksum | null> {
  const request = requests.getStore();
  if (declared === null || request === undefined) return null;
  const field = `Checksum${declared.toUpperCase()}`;
  const given = new Map(request.completionParts().map((part) => [Number(part.PartNumber), part[field]]));
  const digest = digestOf(declared);
  for (const part of stored) {
    const named = given.get(part.number);
    if (typeof named !== 'string' || named === '')
      throw new S3Error(
        'InvalidRequest',
        `The upload was created using a ${declared} checksum. The complete request must include the checksum for each part. It was missing for part ${String(part.number)} in the request.`,
      );
    if (part.checksum?.value !== named)
      throw new S3Error(
        'InvalidPart',
        "One or more of the specified parts could not be found.  The part may not have been uploaded, or the specified entity tag may not match the part's entity tag.",
        { PartNumber: String(part.number) },
      );
    digest.update(Buffer.from(named, 'base64'));
  }
  const value = `${Buffer.from(await digest.digest()).toString('base64')}-${String(stored.length)}`;
  const checksum: StoredChecksum = { algorithm: declared, value, type: 'COMPOSITE' };
  request.answer = checksum;
  return checksum;
}

function completionParts(body: unknown): readonly Record<string, unknown>[] {
  const parts = (body as { CompleteMultipartUpload?: { Part?: unknown } } | undefined)
    ?.CompleteMultipartUpload?.Part;
  return ([] as unknown[]).concat(parts ?? []).filter((part): part is Record<string, unknown> => {
    return typeof part === 'object' && part !== null;
  });
}
