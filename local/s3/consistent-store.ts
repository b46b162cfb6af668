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
 */
import { createHash, randomUUID } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdir, rename, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type S3rver from 's3rver';
import { listInKeyOrder, type KeyOrderListing, type ListOptions } from './key-order-listing.js';

/** The parts of s3rver's (untyped) FilesystemStore this module uses. */
interface StoredObject {
  readonly bucket: string;
  readonly key: string;
  readonly content: Buffer | Readable;
  readonly metadata: Record<string, string>;
}

interface FilesystemStore {
  getResourcePath(bucket: string, key: string, resource: string): string;
  getBucketPath(bucket: string): string;
  getMetadata(bucket: string, key: string): Promise<Record<string, string>>;
  listObjects(bucket: string, options: ListOptions): Promise<unknown>;
  putMetadata(bucket: string, key: string, metadata: Record<string, string>, md5: string): Promise<void>;
  getObject(bucket: string, key: string, options?: unknown): Promise<unknown>;
  putObject(object: StoredObject): Promise<{ size: number; md5: string }>;
}

type FilesystemStoreClass = new (rootDirectory: string) => FilesystemStore;

const require = createRequire(import.meta.url);
const BaseStore = require('s3rver/lib/stores/filesystem.js') as FilesystemStoreClass;

/** One promise chain per key: the next holder starts when the previous one has finished. */
class KeyLock {
  readonly #tails = new Map<string, Promise<void>>();

  async with<T>(key: string, work: () => Promise<T>): Promise<T> {
    const previous = this.#tails.get(key) ?? Promise.resolve();
    let release: () => void = () => undefined;
    const tail = new Promise<void>((resolve) => {
      release = resolve;
    });
    this.#tails.set(key, tail);
    await previous;
    try {
      return await work();
    } finally {
      release();
      if (this.#tails.get(key) === tail) this.#tails.delete(key);
    }
  }
}

class ConsistentStore extends BaseStore {
  readonly #locks = new KeyLock();

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

  override async getObject(bucket: string, key: string, options?: unknown): Promise<unknown> {
    // The base resolves once the file is open: metadata and bytes are then of one version.
    return this.#locks.with(`${bucket}/${key}`, () => super.getObject(bucket, key, options));
  }

  /** In S3's key order, so that pages continue where the last one ended (key-order-listing.ts). */
  override async listObjects(bucket: string, options: ListOptions): Promise<KeyOrderListing> {
    return listInKeyOrder(this, bucket, options);
  }

  override async putObject(object: StoredObject): Promise<{ size: number; md5: string }> {
    const objectPath = this.getResourcePath(object.bucket, object.key, 'object');
    await mkdir(dirname(objectPath), { recursive: true });
    const partial = join(this.partialDirectory, randomUUID());
    const md5 = createHash('md5');
    let size = 0;
    try {
      const source = Buffer.isBuffer(object.content) ? Readable.from([object.content]) : object.content;
      const measure = new Transform({
        transform(chunk: Buffer, _encoding, callback) {
          md5.update(chunk);
          size += chunk.length;
          callback(null, chunk);
        },
      });
      await pipeline(source, measure, createWriteStream(partial));
    } catch (error) {
      await rm(partial, { force: true });
      throw error;
    }
    const digest = md5.digest('hex');
    await this.#locks.with(`${object.bucket}/${object.key}`, async () => {
      await rename(partial, objectPath);
      await this.putMetadata(object.bucket, object.key, object.metadata, digest);
    });
    return { size, md5: digest };
  }
}

/**
 * Gives `server`, whose store is in `directory`, the consistent store (call before it serves
 * anything). `partialDirectory` must exist, outside `directory` on the same filesystem.
 */
export function useConsistentStore(
  server: S3rver,
  directory: string,
  partialDirectory: string,
): Pick<FilesystemStore, 'getResourcePath'> {
  const store = new ConsistentStore(directory, partialDirectory);
  const internals = server as unknown as { store: unknown; context: { store: unknown } };
  internals.store = store;
  internals.context.store = store;
  return store;
}
