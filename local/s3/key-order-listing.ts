/**
 * A bucket's listing in S3's order: keys sorted by their UTF-8 bytes, pages that end after
 * `maxKeys` keys and common prefixes together, each page starting after the last key of the one
 * before. s3rver's own listing follows its folders on disk instead ("many/…" before "many-x",
 * though "-" sorts before "/") and cuts pages there, so a listing of several pages skips keys.
 */
import { readdir } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { join, relative, sep } from 'node:path';

export interface ListOptions {
  readonly prefix?: string;
  readonly delimiter?: string;
  readonly startAfter?: string;
  readonly maxKeys?: number;
}

/** What s3rver's controller expects of a store's listObjects, and the last key the page covers. */
export interface KeyOrderListing {
  readonly objects: readonly unknown[];
  readonly commonPrefixes: readonly string[];
  readonly isTruncated: boolean;
  /** The last key this page covers (a common prefix covers every key under it); the next starts after it. */
  readonly lastKey: string | undefined;
}

/** The parts of s3rver's FilesystemStore the listing uses. */
export interface ListableStore {
  getBucketPath(bucket: string): string;
  getMetadata(bucket: string, key: string): Promise<Record<string, string>>;
}

type S3ObjectClass = new (bucket: string, key: string, content: null, metadata: unknown) => { key: string };

const require = createRequire(import.meta.url);
const S3Object = require('s3rver/lib/models/object.js') as S3ObjectClass;

/** How s3rver names the file holding an object's bytes: `<key>._S3rver_object`. */
const OBJECT_SUFFIX = '._S3rver_object';

/**
 * s3rver keeps an object in files named after its key's parts (`<last part>._S3rver_metadata.json`,
 * 22 bytes more), and a file name takes 255 bytes while an S3 key takes 1024. A longer part is kept
 * as folders of at most PIECE_BYTES each, all but the last named with CONTINUED after them (a key
 * part ending so is the one name this store cannot hold as is).
 */
const CONTINUED = '._hopper_continued';
const PART_BYTES = 255 - '._S3rver_metadata.json'.length;
const PIECE_BYTES = PART_BYTES - CONTINUED.length;

/** Where the store keeps `key`, relative to the bucket's folder (`/` separated). */
export function keyPath(key: string): string {
  const parts = key.split('/');
  return parts
    .map((part) => (Buffer.byteLength(part) <= PART_BYTES ? part : pieces(part).join(`${CONTINUED}/`)))
    .join('/');
}

function pieces(part: string): string[] {
  const cut: string[] = [];
  let piece = '';
  for (const char of part) {
    if (Buffer.byteLength(piece + char) > PIECE_BYTES) {
      cut.push(piece);
      piece = '';
    }
    piece += char;
  }
  return [...cut, piece];
}

export function byteOrder(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a), Buffer.from(b));
}

export async function listInKeyOrder(
  store: ListableStore,
  bucket: string,
  options: ListOptions,
): Promise<KeyOrderListing> {
  const { prefix = '', delimiter = '', startAfter = '', maxKeys = Infinity } = options;
  const keys = (await storedKeys(store.getBucketPath(bucket), prefix))
    .filter((key) => key.startsWith(prefix) && byteOrder(key, startAfter) > 0)
    .sort(byteOrder);
  const objectKeys: string[] = [];
  const commonPrefixes: string[] = [];
  let lastKey: string | undefined;
  let isTruncated = false;
  for (const key of keys) {
    const cut = delimiter === '' ? -1 : key.indexOf(delimiter, prefix.length);
    const group = cut === -1 ? undefined : key.slice(0, cut + delimiter.length);
    // Keys under one common prefix are next to each other in byte order.
    if (group !== undefined && group === commonPrefixes.at(-1)) {
      lastKey = key;
      continue;
    }
    if (objectKeys.length + commonPrefixes.length >= maxKeys) {
      isTruncated = true;
      break;
    }
    if (group === undefined) objectKeys.push(key);
    else commonPrefixes.push(group);
    lastKey = key;
  }
  const objects = await Promise.all(
    objectKeys.map(async (key) => {
      // An object deleted since the folder was read is left out, as s3rver does.
      const metadata = await store.getMetadata(bucket, key).catch((error: unknown) => {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
        throw error;
      });
      return metadata === undefined ? undefined : new S3Object(bucket, key, null, metadata);
    }),
  );
  return {
    objects: objects.filter((object) => object !== undefined),
    commonPrefixes,
    isTruncated,
    lastKey,
  };
}

/** Every key stored in the bucket folder `bucketPath` at or under `prefix`'s folder. */
async function storedKeys(bucketPath: string, prefix: string): Promise<string[]> {
  const below = join(bucketPath, keyPath(prefix.slice(0, prefix.lastIndexOf('/') + 1)));
  // A prefix with ".." segments would lead out of the bucket's folder: walk all of it instead.
  const folder = relative(bucketPath, below).startsWith('..') ? bucketPath : below;
  const entries = await readdir(folder, { recursive: true, withFileTypes: true }).catch((error: unknown) => {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  });
  return entries
    .filter((entry) => entry.isFile() && entry.name.endsWith(OBJECT_SUFFIX))
    .map((entry) =>
      relative(bucketPath, join(entry.parentPath, entry.name))
        .split(sep)
        .join('/')
        .slice(0, -OBJECT_SUFFIX.length)
        .replaceAll(`${CONTINUED}/`, ''),
    );
}
