/**
 * A run's name, which is its execution's: derived from the upload of train.json that started it
 * (bucket, key, etag, version), so the trigger names a repeated event's run as before, and a step
 * can name the run a newer upload starts (ownership/supersede.ts) before that run has written anything.
 */
import { createHash } from 'node:crypto';
import { dropOfTrainJsonKey } from '../../storage/keys.js';
import { bareEtag } from '../../storage/objects.js';

/** Characters of the drop kept in an execution name, and hex digits of the hash after it. */
export const NAME_DROP_CHARS = 40;
export const NAME_HASH_HEX = 32;

/**
 * `<drop, sanitised to [A-Za-z0-9_-], cut to 40>-<first 32 hex of sha256(bucket\nkey\netag)>`:
 * at most 73 characters (Step Functions allows 80), readable in the console, and the same for
 * a repeated event while any change of bucket, key or etag gives another name.
 *
 * On a versioned bucket (Hopper's own is) the event's version id joins the hash: uploading the
 * same train.json again is a new version and so a new run (what the error messages tell users
 * to do), while a repeated delivery of one event still carries the same version id.
 */
export function executionName(bucket: string, key: string, etag: string, versionId = ''): string {
  const drop = dropOfTrainJsonKey(key);
  if (drop === null) throw new RangeError(`${key} is not an inbox/<drop>/train.json key`);
  const readable = executionNameDrop(drop);
  const identity = `${bucket}\n${key}\n${bareEtag(etag)}${versionId === '' ? '' : `\n${versionId}`}`;
  const hash = createHash('sha256').update(identity).digest('hex').slice(0, NAME_HASH_HEX);
  return `${readable}-${hash}`;
}

/** The drop as it begins its runs' execution names (`hopper runs` finds a drop's runs by it). */
export function executionNameDrop(drop: string): string {
  return drop.replace(/[^A-Za-z0-9_-]+/g, '-').slice(0, NAME_DROP_CHARS);
}
