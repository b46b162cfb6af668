/**
 * Local EventBridge: s3rver's object-created notifications become the events the cloud rule
 * delivers (S3's "Object Created" for a key matching `inbox/*\/train.json`) and go to the same
 * trigger handler, field for field as EventBridge delivers them (time to the second, a sequencer
 * per event). Each created object gets a version id, standing in for the versioned bucket the
 * stack deploys: writing train.json again is a new run, as in the cloud, while a repeated
 * delivery of one event keeps its version id and is a duplicate.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import type { EventEmitter } from 'node:events';
import { HeadObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import type S3rver from 's3rver';
import { TRAIN_JSON_KEY_WILDCARD } from '../../lambdas/storage/keys.js';
import { bareEtag } from '../../lambdas/storage/objects.js';
import type { S3ObjectCreatedEvent } from '../../lambdas/trigger/start-execution.js';

/** One record of s3rver's S3-notification-shaped 'event' (not in its types). */
export interface S3NotificationRecord {
  readonly eventName: string;
  readonly eventTime: string;
  readonly requestParameters?: { readonly sourceIPAddress?: string };
  readonly responseElements?: { readonly 'x-amz-request-id'?: string };
  readonly s3: {
    readonly bucket: { readonly name: string };
    readonly object: { readonly key: string; readonly size?: number; readonly eTag?: string };
  };
}

/** The rule's key pattern as a regular expression: in an S3 wildcard `*` matches any characters. */
const RULE_KEY = new RegExp(
  `^${TRAIN_JSON_KEY_WILDCARD.split('*')
    .map((part) => part.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&'))
    .join('.*')}$`,
);

/** Whether the cloud rule would deliver an Object Created event for `key`. */
export function ruleMatches(key: string): boolean {
  return RULE_KEY.test(key);
}

/** The account and region local mode stands for (those of LOCAL_STATE_MACHINE_ARN). */
const LOCAL_ACCOUNT = '123456789012';
const LOCAL_REGION = 'us-east-1';

/** The request that created an object, as S3's `reason` names it. */
export type ObjectCreatedReason = 'PutObject' | 'POST Object' | 'CopyObject' | 'CompleteMultipartUpload';

/**
 * S3's sequencer: a hex string, greater (left-padded to the same length) for a later event on the
 * same key. Here microseconds since the epoch, and one more than the last when the clock has not
 * moved on: strictly increasing within a process, and across a restart since the clock has moved
 * on (it must not go back). 16 hex digits, as in AWS's example, until the year 2540.
 */
export function sequencerClock(now: () => number = Date.now): () => string {
  let last = 0;
  return () => {
    last = Math.max(Math.floor(now() * 1000), last + 1);
    return last.toString(16).padStart(16, '0');
  };
}

/** One clock for the process: every local S3 of it gives later events greater sequencers. */
const nextSequencer = sequencerClock();

/**
 * The EventBridge event S3 sends for a new object, field for field as AWS documents it (S3 user
 * guide, "EventBridge event message structure"; test/local/s3-events.test.ts compares it with
 * the documented example). What is not given is made up as S3 would: a sequencer, a request id,
 * the time now; the version id is empty unless given. The time is to the second, as EventBridge
 * gives it: two uploads of a key in one second are ordered by their sequencers (run-order.ts).
 */
export function s3ObjectCreatedEvent(object: {
  readonly bucket: string;
  readonly key: string;
  readonly etag: string;
  readonly size: number;
  readonly time?: string;
  readonly versionId?: string;
  readonly sequencer?: string;
  readonly reason?: ObjectCreatedReason;
  readonly requestId?: string;
  readonly sourceIp?: string;
}): S3ObjectCreatedEvent {
  return {
    version: '0',
    id: randomUUID(),
    'detail-type': 'Object Created',
    source: 'aws.s3',
    account: LOCAL_ACCOUNT,
    time: eventTimeOf(object.time === undefined ? new Date() : new Date(object.time)),
    region: LOCAL_REGION,
    resources: [`arn:aws:s3:::${object.bucket}`],
    detail: {
      version: '0',
      bucket: { name: object.bucket },
      object: {
        key: object.key,
        size: object.size,
        etag: bareEtag(object.etag),
        'version-id': object.versionId ?? '',
        sequencer: object.sequencer ?? nextSequencer(),
      },
      'request-id': object.requestId ?? randomBytes(8).toString('hex').toUpperCase(),
      requester: LOCAL_ACCOUNT,
      'source-ip-address': object.sourceIp ?? '127.0.0.1',
      reason: object.reason ?? 'PutObject',
    },
  };
}

/** A time as EventBridge writes an event's `time`: to the second, `2021-11-12T00:00:00Z`. */
export function eventTimeOf(time: Date): string {
  return time.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** The request behind one of s3rver's events (its Post is a form upload or a completed multipart). */
function reasonOf(record: S3NotificationRecord): ObjectCreatedReason {
  if (record.eventName === 'ObjectCreated:Copy') return 'CopyObject';
  if (record.eventName !== 'ObjectCreated:Post') return 'PutObject';
  // Only a multipart upload's ETag has the `-<part count>` suffix.
  return /-\d+$/.test(bareEtag(record.s3.object.eTag ?? '')) ? 'CompleteMultipartUpload' : 'POST Object';
}

/** The client's address as S3 reports it: IPv4 written as such. */
function sourceIpOf(record: S3NotificationRecord): string | undefined {
  return record.requestParameters?.sourceIPAddress?.replace(/^::ffff:/, '');
}

export interface S3EventSourceOptions {
  readonly server: S3rver;
  /** Reads the etag and size of objects whose notification lacks them (s3rver's copies). */
  readonly s3: S3Client;
  /** What the rule's target does with an event (the trigger handler). */
  readonly deliver: (event: S3ObjectCreatedEvent) => Promise<unknown>;
  /** Told about an event that could not be built or delivered (nothing else would notice). */
  readonly onError: (key: string, error: unknown) => void;
  /**
   * What the version ids start with (default `local-`). A bucket kept across restarts needs one
   * of its own per start: the count restarts, and a repeated version id would rename no run.
   */
  readonly versionPrefix?: string;
  /**
   * Milliseconds from now during which no event is delivered, as S3 may send none for minutes
   * after a bucket's EventBridge notifications are turned on (docs/deploy.md). Default 0.
   */
  readonly warmUpMs?: number;
}

export interface S3EventSource {
  /** Stops listening and waits for deliveries under way. */
  close(): Promise<void>;
}

export function connectS3Events(options: S3EventSourceOptions): S3EventSource {
  const emitter = options.server as unknown as EventEmitter;
  const pending = new Set<Promise<void>>();
  let version = 0;
  const deliversFrom = Date.now() + (options.warmUpMs ?? 0);

  const forward = async (
    record: S3NotificationRecord,
    created: { readonly versionId: string; readonly sequencer: string },
  ): Promise<void> => {
    const { bucket, object } = record.s3;
    try {
      const { etag, size } =
        object.eTag !== undefined && object.size !== undefined
          ? { etag: object.eTag, size: object.size }
          : await headOf(options.s3, bucket.name, object.key);
      await options.deliver(
        s3ObjectCreatedEvent({
          bucket: bucket.name,
          key: object.key,
          etag,
          size,
          time: record.eventTime,
          ...created,
          reason: reasonOf(record),
          ...optional('requestId', record.responseElements?.['x-amz-request-id']),
          ...optional('sourceIp', sourceIpOf(record)),
        }),
      );
    } catch (error) {
      options.onError(object.key, error);
    }
  };

  const listener = (notification: { Records?: readonly S3NotificationRecord[] }): void => {
    for (const record of notification.Records ?? []) {
      if (!record.eventName.startsWith('ObjectCreated:') || !ruleMatches(record.s3.object.key)) continue;
      // Still warming up: the event is lost, as on AWS, where nothing retries it.
      if (Date.now() < deliversFrom) continue;
      // Taken as the object is created, in order, before any await: later uploads get greater ones.
      version += 1;
      const versionId = `${options.versionPrefix ?? 'local-'}${String(version).padStart(8, '0')}`;
      const delivery = forward(record, { versionId, sequencer: nextSequencer() });
      pending.add(delivery);
      void delivery.finally(() => pending.delete(delivery));
    }
  };
  emitter.on('event', listener);
  return {
    async close() {
      emitter.off('event', listener);
      await Promise.all(pending);
    },
  };
}

function optional<K extends string>(name: K, value: string | undefined): Partial<Record<K, string>> {
  return (value === undefined ? {} : { [name]: value }) as Partial<Record<K, string>>;
}

async function headOf(s3: S3Client, bucket: string, key: string): Promise<{ etag: string; size: number }> {
  const head = await s3.send(new HeadObjectCommand({ Bucket: bucket, Key: key }));
  if (head.ETag === undefined) throw new Error(`s3://${bucket}/${key} has no ETag`);
  return { etag: head.ETag, size: head.ContentLength ?? 0 };
}
