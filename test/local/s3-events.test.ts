import type { EventEmitter } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  CompleteMultipartUploadCommand,
  CopyObjectCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  HeadObjectCommand,
  PutObjectCommand,
  UploadPartCommand,
} from '@aws-sdk/client-s3';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { bareEtag } from '../../lambdas/storage/objects.js';
import type { S3ObjectCreatedEvent } from '../../lambdas/trigger/start-execution.js';
import { startLocalS3, type LocalS3 } from '../../local/s3/local-s3.js';
import {
  connectS3Events,
  ruleMatches,
  sequencerClock,
  type S3EventSource,
} from '../../local/emulator/s3-events.js';
import { uniqueDrop } from '../helpers/fixtures.js';
import { DOCUMENTED_OBJECT_CREATED } from './eventbridge-example.js';

/** Bound on every wait for a delivery. */
const WAIT_MS = 5_000;

let local: LocalS3;
beforeAll(async () => {
  local = await startLocalS3();
});
afterAll(async () => {
  await local.close();
});

const sources: S3EventSource[] = [];
afterEach(async () => {
  await Promise.all(sources.splice(0).map((source) => source.close()));
});

interface Connected {
  readonly delivered: S3ObjectCreatedEvent[];
  readonly errors: { key: string; error: unknown }[];
  readonly source: S3EventSource;
  /** Resolves once `count` events have been delivered (bounded). */
  deliveries(count: number): Promise<S3ObjectCreatedEvent[]>;
}

function connect(
  deliver: (event: S3ObjectCreatedEvent) => Promise<unknown> = () => Promise.resolve(),
  s3: LocalS3 = local,
): Connected {
  const delivered: S3ObjectCreatedEvent[] = [];
  const errors: { key: string; error: unknown }[] = [];
  const source = connectS3Events({
    server: s3.server,
    s3: s3.client,
    deliver: (event) => {
      delivered.push(event);
      return deliver(event);
    },
    onError: (key, error) => errors.push({ key, error }),
  });
  sources.push(source);
  return {
    delivered,
    errors,
    source,
    async deliveries(count) {
      for (let waited = 0; delivered.length < count && waited < WAIT_MS; waited += 10) await sleep(10);
      expect(delivered.length, `deliveries after ${String(WAIT_MS)} ms`).toBeGreaterThanOrEqual(count);
      return delivered;
    },
  };
}

async function put(key: string, body: string | Buffer): Promise<string> {
  const answer = await local.client.send(
    new PutObjectCommand({ Bucket: local.bucket, Key: key, Body: body }),
  );
  return bareEtag(answer.ETag ?? '');
}

/** Resolves once s3rver has announced an event for `key` (it has then gone to every listener). */
function announced(key: string): Promise<void> {
  const emitter = local.server as unknown as EventEmitter;
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      emitter.off('event', onEvent);
      reject(new Error(`no s3rver event for ${key}`));
    }, WAIT_MS);
    const onEvent = (notification: { Records: { s3: { object: { key: string } } }[] }): void => {
      if (!notification.Records.some((record) => record.s3.object.key === key)) return;
      clearTimeout(timer);
      emitter.off('event', onEvent);
      resolve();
    };
    emitter.on('event', onEvent);
  });
}

describe('ruleMatches', () => {
  it.each([
    ['inbox/a/train.json', true],
    ['inbox/reviews-2026.v2 (final)/train.json', true],
    ['inbox/(a)+[b]*?/train.json', true],
    // The S3 wildcard matches deeper keys too; the trigger ignores those (they are not drops).
    ['inbox/a/b/train.json', true],
    ['inbox/train.json', false],
    ['inbox/a/train.jsonx', false],
    ['inbox/a/train.json/x', false],
    ['inbox/a/xtrain.jsonl', false],
    ['inbox/a/train-json', false],
    ['inbox/a/TRAIN.json', false],
    ['other/a/train.json', false],
    ['xinbox/a/train.json', false],
    ['inbox/a/data.csv', false],
  ])('%s: %s', (key, matches) => {
    expect(ruleMatches(key)).toBe(matches);
  });
});

describe('connectS3Events', () => {
  it('delivers an Object Created event for a train.json put into a drop', async () => {
    const events = connect();
    const drop = uniqueDrop('events');
    const key = `inbox/${drop}/train.json`;
    const body = '{"name":"reviews"}';
    const before = Date.now();
    const etag = await put(key, body);
    const [event] = await events.deliveries(1);
    expect(event).toMatchObject({
      source: 'aws.s3',
      'detail-type': 'Object Created',
      detail: {
        bucket: { name: local.bucket },
        object: { key, etag, size: Buffer.byteLength(body) },
      },
    });
    expect(event?.detail.object['version-id']).toMatch(/^\S+$/);
    expect(Date.parse(event?.time ?? '')).toBeGreaterThanOrEqual(before - 1_000);
    expect(events.delivered).toHaveLength(1);
    expect(events.errors).toEqual([]);
  });

  it('delivers nothing for other keys or for a deleted train.json', async () => {
    const drop = uniqueDrop('events');
    await put(`inbox/${drop}/train.json`, '{}'); // before listening: only its removal is seen
    const events = connect();
    await put(`inbox/${drop}/data.csv`, 'text\nhello\n');
    await put(`inbox/${drop}/train.jsonx`, '{}');
    await put('inbox/train.json', '{}');
    await put(`other/${drop}/train.json`, '{}');
    const removed = announced(`inbox/${drop}/train.json`);
    await local.client.send(
      new DeleteObjectCommand({ Bucket: local.bucket, Key: `inbox/${drop}/train.json` }),
    );
    await removed;
    // One that is delivered, last: events are delivered in order, so nothing else is still coming.
    const marker = `inbox/${drop}-marker/train.json`;
    await put(marker, '{}');
    const delivered = await events.deliveries(1);
    await sleep(50);
    expect(delivered.map((event) => event.detail.object.key)).toEqual([marker]);
  });

  it('delivers a deeper train.json, as the cloud rule does (the trigger ignores it)', async () => {
    const events = connect();
    const key = `inbox/${uniqueDrop('events')}/nested/train.json`;
    await put(key, '{}');
    const [event] = await events.deliveries(1);
    expect(event?.detail.object.key).toBe(key);
  });

  it("gives a train.json copied into a drop the object's etag (s3rver's copy event has none)", async () => {
    const events = connect();
    const drop = uniqueDrop('events');
    const source = `staging/${drop}/train.json`;
    await put(source, '{"name":"copied"}');
    const key = `inbox/${drop}/train.json`;
    await local.client.send(
      new CopyObjectCommand({ Bucket: local.bucket, Key: key, CopySource: `${local.bucket}/${source}` }),
    );
    const [event] = await events.deliveries(1);
    const head = await local.client.send(new HeadObjectCommand({ Bucket: local.bucket, Key: key }));
    expect(head.ETag).toBeDefined();
    expect(event?.detail.object).toMatchObject({ key, etag: bareEtag(head.ETag ?? '') });
    expect(event?.detail.object['version-id']).toMatch(/^\S+$/);
    expect(events.errors).toEqual([]);
  });

  it('gives every upload its own version id, the same bytes uploaded again included', async () => {
    const events = connect();
    const drop = uniqueDrop('events');
    const key = `inbox/${drop}/train.json`;
    const first = await put(key, '{}');
    const second = await put(key, '{}');
    const third = await put(`inbox/${drop}-other/train.json`, '{}');
    expect(second).toBe(first);
    expect(third).toBe(first);
    const delivered = await events.deliveries(3);
    const versions = delivered.map((event) => event.detail.object['version-id']);
    expect(new Set(versions).size).toBe(3);
    for (const version of versions) expect(version).not.toBe('');
  });

  it('tells onError about a delivery that fails, with the key', async () => {
    const failure = new Error('the trigger broke');
    const events = connect(() => Promise.reject(failure));
    const key = `inbox/${uniqueDrop('events')}/train.json`;
    await put(key, '{}');
    await events.deliveries(1);
    for (let waited = 0; events.errors.length === 0 && waited < WAIT_MS; waited += 10) await sleep(10);
    expect(events.errors).toEqual([{ key, error: failure }]);
  });

  it('goes on delivering after a delivery failed', async () => {
    let calls = 0;
    const events = connect(() => {
      calls += 1;
      return calls === 1 ? Promise.reject(new Error('first fails')) : Promise.resolve();
    });
    await put(`inbox/${uniqueDrop('events')}/train.json`, '{}');
    await put(`inbox/${uniqueDrop('events')}/train.json`, '{}');
    await events.deliveries(2);
    await events.source.close();
    expect(events.errors).toHaveLength(1);
  });

  describe('close', () => {
    it('waits for deliveries under way', async () => {
      let release: () => void = () => undefined;
      const released = new Promise<void>((resolve) => (release = resolve));
      let finished = false;
      const events = connect(async () => {
        await released;
        finished = true;
      });
      await put(`inbox/${uniqueDrop('events')}/train.json`, '{}');
      await events.deliveries(1);
      let closed = false;
      const closing = events.source.close().then(() => (closed = true));
      await sleep(50);
      expect(closed).toBe(false);
      release();
      await closing;
      expect(finished).toBe(true);
    });

    it('stops delivery', async () => {
      const events = connect();
      await events.source.close();
      const key = `inbox/${uniqueDrop('events')}/train.json`;
      const seen = announced(key);
      await put(key, '{}');
      await seen;
      await sleep(50);
      expect(events.delivered).toEqual([]);
    });
  });
});

/** Every leaf of `value` by its path (`detail.object.etag`, `resources[0]`). */
function leaves(value: unknown, path = ''): Map<string, unknown> {
  const found = new Map<string, unknown>();
  if (typeof value !== 'object' || value === null) return found.set(path, value);
  for (const [key, child] of Object.entries(value)) {
    const childPath = Array.isArray(value) ? `${path}[${key}]` : path === '' ? key : `${path}.${key}`;
    for (const [leaf, leafValue] of leaves(child, childPath)) found.set(leaf, leafValue);
  }
  return found;
}

/**
 * Each field's format, as the S3 user guide describes it ("EventBridge event message structure",
 * "Event message detail field"); every one is checked against AWS's example too.
 */
const FORMATS: Readonly<Record<string, RegExp>> = {
  version: /^0$/,
  id: /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/,
  'detail-type': /^Object Created$/,
  source: /^aws\.s3$/,
  account: /^\d{12}$/,
  // To the second, as EventBridge gives it.
  time: /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/,
  region: /^[a-z]{2}(-[a-z]+)+-\d$/,
  'resources[0]': /^arn:aws:s3:::[a-z0-9][a-z0-9.-]+$/,
  'detail.version': /^0$/,
  'detail.bucket.name': /^[a-z0-9][a-z0-9.-]+$/,
  'detail.object.key': /^.+$/,
  'detail.object.size': /^\d+$/,
  'detail.object.etag': /^[0-9a-f]{32}(-\d+)?$/,
  // URL-ready (S3 user guide, "How S3 Versioning works").
  'detail.object.version-id': /^[A-Za-z0-9._-]+$/,
  'detail.object.sequencer': /^[0-9a-f]{16}$/,
  'detail.request-id': /^[0-9A-Z]{16}$/,
  'detail.requester': /^\d{12}$/,
  'detail.source-ip-address': /^\d{1,3}(\.\d{1,3}){3}$/,
  'detail.reason': /^(PutObject|POST Object|CopyObject|CompleteMultipartUpload)$/,
};

/** Hex sequencers compared as S3 says: the shorter left-padded with zeros, then as strings. */
function laterSequencer(a: string, b: string): boolean {
  const width = Math.max(a.length, b.length);
  return a.padStart(width, '0') > b.padStart(width, '0');
}

describe('events exactly as EventBridge delivers them', () => {
  const documented = leaves(JSON.parse(DOCUMENTED_OBJECT_CREATED));

  it("AWS's documented example has exactly the fields whose formats are checked", () => {
    expect([...documented.keys()].sort()).toEqual(Object.keys(FORMATS).sort());
    for (const [path, value] of documented) expect(String(value), path).toMatch(FORMATS[path]!);
  });

  async function createdBy(request: 'put' | 'copy' | 'multipart'): Promise<S3ObjectCreatedEvent> {
    const events = connect();
    const drop = uniqueDrop('events');
    const key = `inbox/${drop}/train.json`;
    if (request === 'put') await put(key, '{}');
    if (request === 'copy') {
      await put(`staging/${drop}/train.json`, '{"copied":true}');
      await local.client.send(
        new CopyObjectCommand({
          Bucket: local.bucket,
          Key: key,
          CopySource: `${local.bucket}/staging/${drop}/train.json`,
        }),
      );
    }
    if (request === 'multipart') {
      const { UploadId } = await local.client.send(
        new CreateMultipartUploadCommand({ Bucket: local.bucket, Key: key }),
      );
      const part = await local.client.send(
        new UploadPartCommand({
          Bucket: local.bucket,
          Key: key,
          UploadId,
          PartNumber: 1,
          Body: '{"parts":1}',
        }),
      );
      await local.client.send(
        new CompleteMultipartUploadCommand({
          Bucket: local.bucket,
          Key: key,
          UploadId,
          MultipartUpload: { Parts: [{ PartNumber: 1, ETag: part.ETag }] },
        }),
      );
    }
    const [event] = await events.deliveries(1);
    expect(events.errors).toEqual([]);
    return event!;
  }

  it.each([
    ['put', 'PutObject'],
    ['copy', 'CopyObject'],
    ['multipart', 'CompleteMultipartUpload'],
  ] as const)(
    'a %s: every field present and formatted as in the example, reason %s',
    async (request, reason) => {
      const event = await createdBy(request);
      const fields = leaves(event);
      expect([...fields.keys()].sort()).toEqual([...documented.keys()].sort());
      for (const [path, value] of fields) {
        expect(typeof value, path).toBe(typeof documented.get(path));
        expect(String(value), path).toMatch(FORMATS[path]!);
      }
      expect(event.detail.reason).toBe(reason);
      expect(event.resources).toEqual([`arn:aws:s3:::${local.bucket}`]);
      const head = await local.client.send(
        new HeadObjectCommand({ Bucket: local.bucket, Key: event.detail.object.key }),
      );
      expect(event.detail.object).toMatchObject({
        etag: bareEtag(head.ETag ?? ''),
        size: head.ContentLength,
      });
    },
  );

  it('gives uploads of one key strictly increasing sequencers', async () => {
    const events = connect();
    const key = `inbox/${uniqueDrop('events')}/train.json`;
    for (let upload = 0; upload < 5; upload += 1) await put(key, '{}');
    const delivered = await events.deliveries(5);
    const sequencers = delivered.map((event) => event.detail.object.sequencer);
    for (let index = 1; index < sequencers.length; index += 1)
      expect(laterSequencer(sequencers[index]!, sequencers[index - 1]!), sequencers.join(' ')).toBe(true);
  });

  it('goes on increasing after a restart on the same data directory', async () => {
    const directory = await mkdtemp(join(tmpdir(), 'hopper-events-'));
    const key = `inbox/${uniqueDrop('events')}/train.json`;
    try {
      const sequencers: string[] = [];
      for (let start = 0; start < 2; start += 1) {
        const kept = await startLocalS3({ directory });
        try {
          const events = connect(() => Promise.resolve(), kept);
          await kept.client.send(new PutObjectCommand({ Bucket: kept.bucket, Key: key, Body: '{}' }));
          const [event] = await events.deliveries(1);
          sequencers.push(event!.detail.object.sequencer);
          await events.source.close();
        } finally {
          await kept.close();
        }
      }
      expect(laterSequencer(sequencers[1]!, sequencers[0]!), sequencers.join(' ')).toBe(true);
    } finally {
      await rm(directory, { recursive: true, force: true });
    }
  });

  it("a new process's sequencers start above an earlier one's, bursts within a millisecond included", () => {
    let now = 1_764_000_000_000;
    const earlier = sequencerClock(() => now);
    const burst = Array.from({ length: 100 }, () => earlier());
    expect(new Set(burst).size).toBe(100);
    now += 1;
    const restarted = sequencerClock(() => now);
    expect(laterSequencer(restarted(), burst.at(-1)!)).toBe(true);
    // A clock that stands still still gives greater sequencers.
    expect(laterSequencer(earlier(), burst.at(-1)!)).toBe(true);
  });
});
