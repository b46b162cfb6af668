/**
 * Local EventBridge: s3rver's object-created notifications become the events the cloud rule
 * delivers (S3's "Object Created" for a key matching `inbox/*\/train.json`) and go to the same
 * trigger handler. Each created object gets a version id, standing in for the versioned bucket
 * the stack deploys: writing train.json again is a new run, as in the cloud, while a repeated
 * delivery of one event keeps its version id and is a duplicate.
 */
import { createHash } from 'node:crypto';
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

/** The EventBridge event S3 sends for a new object (built here from s3rver's events; the account is a placeholder). */
export function s3ObjectCreatedEvent(object: {
  readonly bucket: string;
  readonly key: string;
  readonly etag: string;
  readonly size: number;
  readonly time?: string;
  readonly versionId?: string;
}): S3ObjectCreatedEvent {
  const time = object.time ?? new Date().toISOString();
  return {
    version: '0',
    id: createHash('sha256').update(`${object.bucket}\n${object.key}\n${object.etag}\n${time}`).digest('hex'),
    'detail-type': 'Object Created',
    source: 'aws.s3',
    account: '000000000000',
    time,
    region: 'us-east-1',
    resources: [`arn:aws:s3:::${object.bucket}`],
    detail: {
      version: '0',
      bucket: { name: object.bucket },
      object: {
        key: object.key,
        size: object.size,
        etag: bareEtag(object.etag),
        'version-id': object.versionId ?? '',
        sequencer: '',
      },
      'request-id': '',
      requester: '',
      'source-ip-address': '127.0.0.1',
      reason: 'PutObject',
    },
  };
}

export interface S3EventSourceOptions {
  readonly server: S3rver;
  /** Reads the etag of objects whose notification lacks one (s3rver's copies). */
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
}

export interface S3EventSource {
  /** Stops listening and waits for deliveries under way. */
  close(): Promise<void>;
}

export function connectS3Events(options: S3EventSourceOptions): S3EventSource {
  const emitter = options.server as unknown as EventEmitter;
  const pending = new Set<Promise<void>>();
  let version = 0;

  const forward = async (record: S3NotificationRecord, versionId: string): Promise<void> => {
    const { bucket, object } = record.s3;
    try {
      const etag = object.eTag ?? (await headEtag(options.s3, bucket.name, object.key));
      await options.deliver(
        s3ObjectCreatedEvent({
          bucket: bucket.name,
          key: object.key,
          etag,
          size: object.size ?? 0,
          time: record.eventTime,
          versionId,
        }),
      );
    } catch (error) {
      options.onError(object.key, error);
    }
  };

  const listener = (notification: { Records?: readonly S3NotificationRecord[] }): void => {
    for (const record of notification.Records ?? []) {
      if (!record.eventName.startsWith('ObjectCreated:') || !ruleMatches(record.s3.object.key)) continue;
      version += 1;
      const delivery = forward(
        record,
        `${options.versionPrefix ?? 'local-'}${String(version).padStart(8, '0')}`,
      );
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

async function headEtag(s3: S3Client, bucket: string, key: string): Promise<string> {
  const head = await s3.send(new HeadObjectCommand({ Bucket: bucket, Key: key }));
  if (head.ETag === undefined) throw new Error(`s3://${bucket}/${key} has no ETag`);
  return head.ETag;
}
