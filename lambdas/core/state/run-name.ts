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

/**
 * The ARN of execution `name` of `stateMachineArn`: Step Functions names executions
 * `arn:<partition>:states:<region>:<account>:execution:<state machine name>:<execution name>`.
 */
export function executionArnOf(stateMachineArn: string, name: string): string {
  const marker = ':stateMachine:';
  if (!stateMachineArn.includes(marker))
    throw new RangeError(`${stateMachineArn} is not a state machine ARN`);
  return `${stateMachineArn.replace(marker, ':execution:')}:${name}`;
}

/**
 * The ARN of run `runId`'s execution, from that of another execution of the same state machine:
 * a run's id is its execution's name, so a step can ask after the drop's other runs knowing only
 * its own ARN (its input's `run.executionArn`).
 */
export function siblingExecutionArn(executionArn: string, runId: string): string {
  const cut = executionArn.lastIndexOf(':');
  if (!executionArn.includes(':execution:') || cut < 0)
    throw new RangeError(`${executionArn} is not an execution ARN`);
  return `${executionArn.slice(0, cut + 1)}${runId}`;
}
