/**
 * What a drop folder holds: every object under inbox/<drop>/, paged through ListObjectsV2, split
 * into the plain files of the folder and objects in sub-folders (which a drop may not have).
 */
import { ListObjectsV2Command, type S3Client } from '@aws-sdk/client-s3';
import { RunError } from '../core/errors/errors.js';
import { tooManyObjectsMessage } from '../core/errors/messages.js';
import type { DropFile } from '../core/state/state.js';
import { inboxPrefix } from '../storage/keys.js';
import { bareEtag } from '../storage/objects.js';
import { printable } from './user-text.js';

export interface DropListing {
  /** Objects directly in the folder, by name, each with its size and etag (no quotes). */
  readonly files: ReadonlyMap<string, DropFile>;
  /** Names relative to the folder (`sub/a.csv`) of objects in sub-folders. */
  readonly nested: readonly string[];
  /** When each object of the folder, sub-folders included, was last written (ms since the epoch; S3 keeps seconds). */
  readonly modifiedAt: ReadonlyMap<string, number>;
  /** The latest write of any object under the folder, sub-folders included (0 for an empty one). */
  readonly newestModifiedAt: number;
}

/**
 * The listing S3 gives of a drop whose objects are `found` (names relative to the folder, with
 * `/` in sub-folders): in the order of the keys' UTF-8 bytes, as S3 lists them, so that the rules'
 * messages name files in the same order wherever the drop is judged.
 */
export function listingOf(found: readonly DropFile[]): Pick<DropListing, 'files' | 'nested'> {
  const sorted = [...found].sort((a, b) => Buffer.compare(Buffer.from(a.name), Buffer.from(b.name)));
  const plain = sorted.filter((file) => !file.name.includes('/'));
  return {
    files: new Map(plain.map((file) => [file.name, file])),
    nested: sorted.filter((file) => file.name.includes('/')).map((file) => file.name),
  };
}

/** 1000 keys a page: a million objects is far past any drop (the service takes 1000 files). */
export const MAX_LIST_PAGES = 1000;

export async function listDrop(s3: S3Client, bucket: string, drop: string): Promise<DropListing> {
  const prefix = inboxPrefix(drop);
  const found: DropFile[] = [];
  const modifiedAt = new Map<string, number>();
  let token: string | undefined;
  for (let page = 0; page < MAX_LIST_PAGES; page++) {
    const answer = await s3.send(
      new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix, ContinuationToken: token }),
    );
    for (const object of answer.Contents ?? []) {
      const name = (object.Key ?? '').slice(prefix.length);
      // The zero-byte marker the S3 console creates for the folder itself.
      if (name === '') continue;
      found.push({ name, bytes: object.Size ?? 0, etag: bareEtag(object.ETag ?? '') });
      modifiedAt.set(name, object.LastModified?.getTime() ?? 0);
    }
    if (answer.IsTruncated !== true || answer.NextContinuationToken === undefined) {
      const newestModifiedAt = [...modifiedAt.values()].reduce((newest, at) => Math.max(newest, at), 0);
      return { ...listingOf(found), modifiedAt, newestModifiedAt };
    }
    token = answer.NextContinuationToken;
  }
  throw new RunError('too_many_files', tooManyObjectsMessage(printable(prefix), MAX_LIST_PAGES));
}
