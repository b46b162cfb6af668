/**
 * s3rver's filesystem store, made safe for a read and a write of one key at the same time.
 *
 * s3rver 3.7.1 (its last release) writes an object in place and its metadata after, and answers
 * a PutObject before the bytes are on disk; a GET in between streams a file shorter than the
 * Content-Length it announced, and the client hangs until the socket drops. Two runs of one drop
 * rewriting status/<drop>.json hit exactly that. Here an object is written whole to a temporary
 * file and renamed into place, and renaming plus writing its metadata, like a read's look at the
 * metadata plus opening the file, happen under a per-key lock. An opened file keeps its bytes
 * after a rename replaces it, so a read under way finishes with the version it started with.
 * Its listing, too, is replaced by one in S3's key order (key-order-listing.ts).
 *
 * s3rver also ignores a PutObject's conditional headers, which real S3 honours and Hopper relies
 * on: `If-None-Match: *` (a create that fails with 412 PreconditionFailed when the key exists:
 * the event markers, lambdas/records/events/event-bus.ts, and the training claim) and `If-Match: <etag>`
 * (a replace that fails with 412 PreconditionFailed when the object's ETag is another, and with
 * 404 NoSuchKey when there is no object: the status file, lambdas/records/status/status.ts). Here each
 * condition is checked under the key's lock, just before the rename, so of two conditional PUTs
 * made against the same state of a key exactly one succeeds.
 *
 * s3rver ignores checksums: here they are checked, kept and answered as S3 does (checksums.ts,
 * on the store's own steps: a body's checksum before its commit, a part's before its record, the
 * parts' at completion).
 *
 * s3rver refuses AbortMultipartUpload (405 MethodNotAllowed), so an upload a failed copy gave up
 * kept its parts on disk: here it is answered as S3 does, 204 with the parts removed, 404
 * NoSuchUpload for an upload the store does not hold.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { createHash, randomUUID } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdir, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import type { IncomingMessage } from 'node:http';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { Readable } from 'node:stream';
import type S3rver from 's3rver';
import * as checksums from './checksums.js';
import * as multipart from './multipart-upload.js';
import { S3Error } from './s3-error.js';
import { keyPath, listInKeyOrder, type KeyOrderListing, type ListOptions } from './key-order-listing.js';

/** The parts of s3rver's (untyped) FilesystemStore this module uses. */
interface StoredObject {
  readonly bucket: string;
  readonly key: string;
  readonly content: Buffer | Readable;
  readonly metadata: Record<string, string>;
}

/** An object's commit under way: written beside its bytes' file until the commit is done. */
const INTENT = '.committing';
type Commit = Omit<StoredObject, 'content'> & { readonly etag: string; readonly file: string };

interface FilesystemStore {
  getResourcePath(bucket: string, key: string | undefined, resource: string): string;
  getBucketPath(bucket: string): string;
  getMetadata(bucket: string, key: string): Promise<Record<string, string>>;
  deleteObject(bucket: string, key: string): Promise<void>;
  listObjects(bucket: string, options: ListOptions): Promise<unknown>;
  putMetadata(bucket: string, key: string, metadata: Record<string, string>, md5: string): Promise<void>;
  getObject(bucket: string, key: string, options?: unknown): Promise<unknown>;
  putObject(object: StoredObject): Promise<{ size: number; md5: string }>;
  initiateUpload(
    bucket: string,
    key: string,
    uploadId: string,
    metadata: Record<string, unknown>,
  ): Promise<void>;
  putPart(bucket: string, uploadId: string, partNumber: string, content: IncomingMessage): Promise<unknown>;
  putObjectMultipart(
    bucket: string,
    uploadId: string,
    parts: readonly multipart.PartRef[],
  ): Promise<{ size: number; md5: string }>;
}

type FilesystemStoreClass = new (rootDirectory: string) => FilesystemStore & { rootDirectory: string };

/** The part of s3rver's (Koa) request context the middleware here use. */
interface RequestContext {
  readonly method: string;
  readonly path: string;
  readonly query: Readonly<Record<string, string | string[] | undefined>>;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  status: number;
  body?: unknown;
}
type Middleware = (context: RequestContext, next: () => Promise<void>) => Promise<void>;

const require = createRequire(import.meta.url);
const BaseStore = require('s3rver/lib/stores/filesystem.js') as FilesystemStoreClass;
/** The metadata s3rver keeps of an object (its headers it stores). */
const { ALLOWED_METADATA } = require('s3rver/lib/models/object.js') as {
  ALLOWED_METADATA: readonly string[];
};

/** The conditions of the request being served, for the store (which sees no headers). */
interface WriteConditions {
  /** `If-None-Match: *`: only if there is no object. */
  readonly ifNoneMatch: boolean;
  /** `If-Match`: only if the object's ETag is this one (no quotes); null when absent. */
  readonly ifMatch: string | null;
}
const requestConditions = new AsyncLocalStorage<WriteConditions>();

/** Runs the rest of the request with its write conditions known to the store. */
const conditionsMiddleware: Middleware = (context, next) => {
  const noneMatch = context.headers['if-none-match'];
  const match = context.headers['if-match'];
  const isPut = context.method === 'PUT';
  const ifNoneMatch = isPut && typeof noneMatch === 'string' && noneMatch.trim() === '*';
  const ifMatch = isPut && typeof match === 'string' ? unquoted(match) : null;
  return requestConditions.run({ ifNoneMatch, ifMatch }, next);
};

function unquoted(etag: string): string {
  return etag.trim().replaceAll('"', '');
}

/** One promise chain per key: the next holder starts when the previous one has finished. */
class KeyLock {
  readonly #tails = new Map<string, Promise<unknown>>();

  with<T>(key: string, work: () => Promise<T>): Promise<T> {
    const result = (this.#tails.get(key) ?? Promise.resolve()).then(work);
    // The next holder waits for this one to end, however it ends; the last one takes the key out.
    const tail = result.catch(() => undefined);
    this.#tails.set(key, tail);
    void tail.then(() => {
      if (this.#tails.get(key) === tail) this.#tails.delete(key);
    });
    return result;
  }
}

class ConsistentStore extends BaseStore {
  readonly #locks = new KeyLock();
  readonly #partSizes: multipart.PartSizes = new Map();

  /**
   * @param partialDirectory where objects are written before they are renamed into place: on
   *   the same filesystem as `rootDirectory` but outside it (s3rver reads every folder in the
   *   root as a bucket), and apart from the object's own name, which may already be 255 bytes.
   */
  constructor(
    rootDirectory: string,
    readonly partialDirectory: string,
  ) {
    super(rootDirectory);
  }

  /** Keys S3 takes but a file name does not, kept in pieces (keyPath); a kept key is its own path. */
  override getResourcePath(bucket: string, key: string | undefined, resource: string): string {
    return super.getResourcePath(bucket, key === undefined ? undefined : keyPath(key), resource);
  }

  /** s3rver removes the key's emptied folders by the key's own parts: given its path, the kept ones. */
  override async deleteObject(bucket: string, key: string): Promise<void> {
    await super.deleteObject(bucket, keyPath(key));
  }

  /** Its checksum noted for a read's answer (checksums.ts): read with the bytes, under the key's lock. */
  override async getMetadata(bucket: string, key: string): Promise<Record<string, string>> {
    const metadata = await super.getMetadata(bucket, key);
    checksums.noteRead(metadata);
    return metadata;
  }

  /** s3rver's own, and the object's checksum (checksums.ts). */
  override async putMetadata(bucket: string, key: string, metadata: Record<string, string>, md5: string) {
    const kept = Object.entries(metadata).filter(
      ([name]) =>
        ALLOWED_METADATA.includes(name) ||
        name.startsWith('x-amz-meta-') ||
        checksums.isChecksumMetadata(name),
    );
    if (md5) await writeFile(this.getResourcePath(bucket, key, 'object.md5'), md5);
    await writeFile(
      this.getResourcePath(bucket, key, 'metadata.json'),
      JSON.stringify(Object.fromEntries(kept), null, 2),
    );
  }

  override async getObject(bucket: string, key: string, options?: unknown): Promise<unknown> {
    // The base resolves once the file is open: metadata and bytes are then of one version.
    return this.#locks.with(`${bucket}/${key}`, () => super.getObject(bucket, key, options));
  }

  /** In S3's key order, so that pages continue where the last one ended (key-order-listing.ts). */
  override async listObjects(bucket: string, options: ListOptions): Promise<KeyOrderListing> {
    return listInKeyOrder(this, bucket, options);
  }

  override async initiateUpload(
    bucket: string,
    key: string,
    uploadId: string,
    metadata: Record<string, unknown>,
  ) {
    checksums.assertUploadSupported(metadata);
    await super.initiateUpload(bucket, key, uploadId, metadata);
    this.#partSizes.set(this.#uploadDirectory(bucket, uploadId), null);
  }

  /** The upload's parts in one file, each at its place (multipart-upload.ts). */
  override async putPart(bucket: string, uploadId: string, partNumber: string, content: IncomingMessage) {
    const uploadDirectory = this.#uploadDirectory(bucket, uploadId);
    const number = Number(partNumber);
    return this.#locks.with(`${uploadDirectory}#${number}`, async () => {
      const declared = checksums.uploadAlgorithm(await multipart.uploadHeaders(uploadDirectory));
      const verified = () => checksums.verifiedPart(declared);
      return multipart.writePart(this.#partSizes, uploadDirectory, { number, content, verified });
    });
  }

  /** AbortMultipartUpload: the upload's parts removed, or NoSuchUpload when there is no such upload. */
  async abortUpload(bucket: string, uploadId: string): Promise<void> {
    const uploadDirectory = await this.#openUpload(bucket, uploadId);
    this.#partSizes.delete(uploadDirectory);
    // Retried: a part still arriving may add a file while the folder is removed.
    await rm(uploadDirectory, { recursive: true, force: true, maxRetries: 3 });
  }

  /** S3's completion: the parts' file renamed into place when they fill it in order (multipart-upload.ts). */
  override async putObjectMultipart(bucket: string, uploadId: string, parts: readonly multipart.PartRef[]) {
    const uploadDirectory = this.#uploadDirectory(bucket, uploadId);
    this.#partSizes.delete(uploadDirectory);
    const completed = await multipart.completedObject(uploadDirectory, parts, async (stored, headers) =>
      checksums.completedChecksum(checksums.uploadAlgorithm(headers), stored),
    );
    const { key, etag, size, checksum, ...bytes } = completed;
    const metadata = { ...completed.metadata, ...checksums.checksumMetadata(checksum) };
    const result =
      bytes.content === undefined
        ? await this.#commit({ bucket, key, metadata }, bytes.file, etag).then(() => ({ size, md5: etag }))
        : await this.putObject({ bucket, key, metadata, content: bytes.content }, etag);
    await rm(uploadDirectory, { recursive: true, force: true });
    return result;
  }

  /** `digest`: the ETag when it is known already (a completed multipart upload): no MD5 pass. */
  override async putObject(object: StoredObject, digest?: string): Promise<{ size: number; md5: string }> {
    const partial = join(this.partialDirectory, randomUUID());
    const md5 = digest === undefined ? createHash('md5') : undefined;
    try {
      const source = Buffer.isBuffer(object.content) ? Readable.from([object.content]) : object.content;
      const size = await multipart.writeCounted(source, createWriteStream(partial), md5);
      const etag = digest ?? md5?.digest('hex') ?? '';
      const checksum = checksums.checksumMetadata(await checksums.verifiedBody());
      await this.#commit({ ...object, metadata: { ...object.metadata, ...checksum } }, partial, etag);
      return { size, md5: etag };
    } catch (error) {
      await rm(partial, { force: true });
      throw error;
    }
  }

  /** `file` becomes the object, under the key's lock and if the request's conditions hold. */
  async #commit(object: Omit<StoredObject, 'content'>, file: string, etag: string): Promise<void> {
    const objectPath = this.getResourcePath(object.bucket, object.key, 'object');
    await mkdir(dirname(objectPath), { recursive: true });
    const conditions = requestConditions.getStore();
    await this.#locks.with(`${object.bucket}/${object.key}`, async () => {
      const refusal = await this.#conditionRefusal(object, objectPath, conditions);
      if (refusal !== null) throw refusal;
      // A kill between the bytes' rename and their metadata would leave an object s3rver cannot
      // read (InternalError on every read and listing): the intent, first, lets the next start
      // finish it (finishCommits).
      const intent = `${objectPath}${INTENT}`;
      const { bucket, key, metadata } = object; // (a PutObject's object holds its stream too)
      await writeFile(intent, JSON.stringify({ bucket, key, metadata, etag, file }));
      await rename(file, objectPath);
      await this.putMetadata(object.bucket, object.key, object.metadata, etag);
      await rm(intent);
    });
  }

  /** The commits a killed process left unfinished: metadata for bytes renamed into place. */
  async finishCommits(): Promise<void> {
    const root = this.rootDirectory;
    const intents = (await readdir(root, { recursive: true })).filter((path) => path.endsWith(INTENT));
    for (const path of intents.map((intent) => join(root, intent))) {
      const { bucket, key, metadata, etag, file } = JSON.parse(await readFile(path, 'utf8')) as Commit;
      if ((await stat(file).catch(() => null)) === null) await this.putMetadata(bucket, key, metadata, etag);
      await rm(path);
    }
  }

  /** ListParts: the upload's parts after part `marker`, at most `max` (1000 when not given, as in S3). */
  async listParts(bucket: string, uploadId: string, marker: number, max: number) {
    const uploadDirectory = await this.#openUpload(bucket, uploadId);
    const [key, headers, parts] = await Promise.all([
      readFile(join(uploadDirectory, 'key'), 'utf8'),
      multipart.uploadHeaders(uploadDirectory),
      multipart.storedParts(uploadDirectory),
    ]);
    const after = parts.filter((part) => part.number > marker);
    const page = after.slice(0, max);
    const algorithm = checksums.uploadAlgorithm(headers);
    const Part = page.map((part) => ({
      PartNumber: part.number,
      LastModified: part.modified.toISOString(),
      ETag: JSON.stringify(part.md5),
      Size: part.size,
      ...(part.checksum == null
        ? {}
        : { [`Checksum${part.checksum.algorithm.toUpperCase()}`]: part.checksum.value }),
    }));
    return {
      ListPartsResult: {
        Bucket: bucket,
        Key: key,
        UploadId: uploadId,
        PartNumberMarker: marker,
        // Only when truncated, as S3 documents it.
        ...(after.length > page.length ? { NextPartNumberMarker: page.at(-1)?.number } : {}),
        MaxParts: max,
        IsTruncated: after.length > page.length,
        Part,
        ...(algorithm === null ? {} : { ChecksumAlgorithm: algorithm.toUpperCase() }),
      },
    };
  }

  /** The folder of an upload the store holds; NoSuchUpload for any other. */
  async #openUpload(bucket: string, uploadId: string): Promise<string> {
    const uploadDirectory = this.#uploadDirectory(bucket, uploadId);
    // s3rver's ids are hex: anything else (a path) names no upload.
    if (!/^[\da-f]+$/.test(uploadId) || (await stat(uploadDirectory).catch(() => null)) === null)
      throw new S3Error('NoSuchUpload', 'The specified upload does not exist.', { UploadId: uploadId });
    return uploadDirectory;
  }

  #uploadDirectory(bucket: string, uploadId: string): string {
    return join(this.getResourcePath(bucket, undefined, 'uploads'), uploadId);
  }

  /** The error S3 answers when the request's conditions do not hold for the key now, or null. */
  async #conditionRefusal(
    object: Omit<StoredObject, 'content'>,
    objectPath: string,
    conditions: WriteConditions | undefined,
  ): Promise<Error | null> {
    if (conditions === undefined || (!conditions.ifNoneMatch && conditions.ifMatch === null)) return null;
    const present = (await stat(objectPath).catch(() => null)) !== null;
    if (conditions.ifNoneMatch && present) return preconditionFailed('If-None-Match');
    if (conditions.ifMatch !== null) {
      if (!present) return new S3Error('NoSuchKey', 'The specified key does not exist.', { Key: object.key });
      const current = unquoted((await this.getMetadata(object.bucket, object.key)).etag ?? '');
      // `*` matches any object that exists (RFC 9110); otherwise the ETag must be this one.
      if (conditions.ifMatch !== '*' && conditions.ifMatch !== current) return preconditionFailed('If-Match');
    }
    return null;
  }
}

/** AbortMultipartUpload (`DELETE /<bucket>/<key>?uploadId=`), which s3rver refuses as MethodNotAllowed. */
const abortMiddleware =
  (store: ConsistentStore): Middleware =>
  async (context, next) => {
    const { uploadId } = context.query;
    if (context.method !== 'DELETE' || typeof uploadId !== 'string') return next();
    await store.abortUpload(decodeURIComponent(context.path.split('/')[1] ?? ''), uploadId);
    context.status = 204;
  };

/** ListParts (`GET /<bucket>/<key>?uploadId=`), which s3rver does not answer. */
const listPartsMiddleware =
  (store: ConsistentStore): Middleware =>
  async (context, next) => {
    const { uploadId } = context.query;
    if (context.method !== 'GET' || typeof uploadId !== 'string') return next();
    const bucket = decodeURIComponent(context.path.split('/')[1] ?? '');
    const marker = Number(context.query['part-number-marker'] ?? 0) || 0;
    const max = Math.min(1000, Number(context.query['max-parts'] ?? 1000) || 1000);
    context.body = await store.listParts(bucket, uploadId, marker, max);
  };

function preconditionFailed(condition: string): Error {
  return new S3Error('PreconditionFailed', 'At least one of the pre-conditions you specified did not hold', {
    Condition: condition,
  });
}

/** Finishes what a killed process left half-committed in `directory`, before its partial writes go. */
export const finishCommits = (directory: string, partial: string): Promise<void> =>
  new ConsistentStore(directory, partial).finishCommits();

/**
 * Gives `server`, whose store is in `directory`, the consistent store, the conditional
 * PutObject headers (`If-None-Match: *`, `If-Match`) and AbortMultipartUpload (call before it
 * serves anything). `partialDirectory` must exist, outside
 * `directory` on the same filesystem.
 */
export function useConsistentStore(
  server: S3rver,
  directory: string,
  partialDirectory: string,
): Pick<FilesystemStore, 'getResourcePath'> {
  const store = new ConsistentStore(directory, partialDirectory);
  const internals = server as unknown as {
    store: unknown;
    context: { store: unknown };
    middleware: Middleware[];
  };
  internals.store = store;
  internals.context.store = store;
  // First, so the conditions are known for the whole request (Koa composes this list on listen).
  internals.middleware.unshift(conditionsMiddleware);
  // Just before s3rver's routes, the last: after its logging, error answers and bucket-in-host.
  internals.middleware.splice(
    -1,
    0,
    abortMiddleware(store),
    listPartsMiddleware(store),
    checksums.checksumMiddleware as unknown as Middleware,
  );
  return store;
}
