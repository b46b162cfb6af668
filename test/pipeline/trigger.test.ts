import type { EventEmitter } from 'node:events';
import { HeadObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { Logger } from '@aws-lambda-powertools/logger';
import { describe, expect, it } from 'vitest';
import { RunError } from '../../lambdas/core/errors/index.js';
import { executionName } from '../../lambdas/core/state/index.js';
import {
  createTriggerHandler,
  repeatedStartOutcome,
  runInputFromEvent,
  type ExecutionInput,
  type ExecutionStarter,
  type KnownExecution,
} from '../../lambdas/trigger/start-execution.js';
import { DOCTOR_PROBE_PREFIX, doctorProbeKey, probeSeenKey } from '../../lambdas/storage/keys.js';
import { readJson } from '../../lambdas/storage/objects.js';
import { stepUnderWay } from '../../lambdas/records/status/index.js';
import { readStatus, writeStatus, type RunStatus } from '../../lambdas/records/status/index.js';
import { s3ObjectCreatedEvent } from '../../local/emulator/s3-events.js';
import { usePipelineFixtures } from '../helpers/pipeline.js';
import { uniqueDrop } from '../helpers/fixtures.js';

const fixtures = usePipelineFixtures();
const NOW = Date.parse('2026-03-01T12:00:00.000Z');
const SILENT = new Logger({ logLevel: 'SILENT' });

/**
 * A starter that records what it is asked to start and answers a name it has seen by Step
 * Functions' rule (repeatedStartOutcome): the same input while open is that execution, other
 * input or a closed execution is already_exists. `close` ends an execution.
 */
function recordingStarter(): ExecutionStarter & {
  readonly started: { name: string; input: ExecutionInput }[];
  close(name: string): void;
} {
  const started: { name: string; input: ExecutionInput }[] = [];
  const known = new Map<string, KnownExecution>();
  return {
    started,
    start(name, input) {
      const inputText = JSON.stringify(input);
      const existing = known.get(name);
      if (existing !== undefined) return Promise.resolve(repeatedStartOutcome(existing, inputText));
      started.push({ name, input });
      const execution = { executionArn: `arn:aws:states:::execution:sm:${name}`, startDate: new Date(NOW) };
      known.set(name, { ...execution, inputText, open: true });
      return Promise.resolve({ outcome: 'running', ...execution });
    },
    close(name) {
      const existing = known.get(name);
      if (existing !== undefined) known.set(name, { ...existing, open: false });
    },
  };
}

/** One upload's sequencer: a redelivery of its event carries the same one. */
const SEQUENCER = '0062E99A88DC407460';

function event(key: string, etag = 'd41d8cd98f00b204e9800998ecf8427e', bucket = 'hopper-bucket') {
  return s3ObjectCreatedEvent({
    bucket,
    key,
    etag,
    size: 2,
    time: '2026-03-01T11:59:59Z',
    sequencer: SEQUENCER,
  });
}

describe('execution names', () => {
  const NAME = /^[A-Za-z0-9_-]{1,80}$/;

  it('are the same for the same bucket, key and etag, and differ when any of them changes', () => {
    const name = executionName('b', 'inbox/reviews/train.json', 'abc');
    expect(name).toMatch(NAME);
    expect(name).toMatch(/^reviews-[0-9a-f]{32}$/);
    expect(executionName('b', 'inbox/reviews/train.json', 'abc')).toBe(name);
    expect(executionName('b', 'inbox/reviews/train.json', '"abc"')).toBe(name); // quotes are not the etag
    const others = [
      executionName('b2', 'inbox/reviews/train.json', 'abc'),
      executionName('b', 'inbox/reviews2/train.json', 'abc'),
      executionName('b', 'inbox/reviews/train.json', 'abd'),
    ];
    expect(new Set([name, ...others]).size).toBe(4);
  });

  it('keep long and odd drop names within 80 allowed characters', () => {
    const drops = ['x'.repeat(300), 'my drop (v2) [final]', 'ünïcödé-日本語', 'a.b.c', '*?', '--__--', '%20'];
    for (const drop of drops) {
      const name = executionName('bucket', `inbox/${drop}/train.json`, 'etag');
      expect(name, drop).toMatch(NAME);
      expect(name.length, drop).toBeLessThanOrEqual(80);
    }
    expect(executionName('b', `inbox/${'x'.repeat(300)}/train.json`, 'e')).toMatch(/^x{40}-[0-9a-f]{32}$/);
    expect(executionName('b', 'inbox/my drop (v2)/train.json', 'e')).toMatch(/^my-drop-v2--[0-9a-f]{32}$/);
    // Sanitising can make two drops look alike; the hash keeps them apart.
    expect(executionName('b', 'inbox/a b/train.json', 'e')).not.toBe(
      executionName('b', 'inbox/a-b/train.json', 'e'),
    );
  });

  it("are refused for keys that are not a drop's train.json", () => {
    expect(() => executionName('b', 'inbox/a/data.csv', 'e')).toThrow(RangeError);
  });
});

describe('runInputFromEvent', () => {
  it("builds the run from the event: the name as run id, the etag without quotes, the event's time as start", () => {
    const run = runInputFromEvent(event('inbox/reviews/train.json', '"0123abcd"'), NOW);
    expect(run).toEqual({
      runId: executionName('hopper-bucket', 'inbox/reviews/train.json', '0123abcd'),
      bucket: 'hopper-bucket',
      drop: 'reviews',
      key: 'inbox/reviews/train.json',
      etag: '0123abcd',
      sequencer: SEQUENCER,
      startedAt: '2026-03-01T11:59:59.000Z',
    });
  });

  it('starts the run now when the event has no usable time', () => {
    const { time: _time, ...timeless } = event('inbox/reviews/train.json');
    expect(runInputFromEvent(timeless, NOW)?.startedAt).toBe('2026-03-01T12:00:00.000Z');
    expect(runInputFromEvent({ ...timeless, time: 'yesterday' }, NOW)?.startedAt).toBe(
      '2026-03-01T12:00:00.000Z',
    );
  });

  it('on a versioned bucket names each upload of the same train.json apart, and a repeated event alike', () => {
    const upload = (versionId: string) =>
      s3ObjectCreatedEvent({ bucket: 'b', key: 'inbox/r/train.json', etag: 'same', size: 2, versionId });
    const first = runInputFromEvent(upload('v1'), NOW)?.runId;
    expect(runInputFromEvent(upload('v1'), NOW + 1000)?.runId).toBe(first);
    expect(runInputFromEvent(upload('v2'), NOW)?.runId).not.toBe(first);
    // Without versions (s3rver, an unversioned bucket) the name is bucket, key and etag alone.
    expect(runInputFromEvent(upload(''), NOW)?.runId).toBe(executionName('b', 'inbox/r/train.json', 'same'));
  });

  it('gives null for other keys', () => {
    expect(runInputFromEvent(event('inbox/reviews/data.csv'), NOW)).toBeNull();
  });
});

/** The trigger over the local S3 server (where it writes each run's first status), at `now`. */
function triggerOf(starter: ExecutionStarter, now: number) {
  return createTriggerHandler(starter, { now: () => now, logger: SILENT, s3: fixtures.s3().client });
}

/** An event of `key` in the local S3 server's bucket. */
function at(key: string, etag?: string) {
  return event(key, etag, fixtures.s3().bucket);
}

describe('the trigger handler', () => {
  it('starts one execution with {run} as input', async () => {
    const starter = recordingStarter();
    const handler = triggerOf(starter, NOW);

    const result = await handler(at('inbox/reviews/train.json'));

    const run = runInputFromEvent(at('inbox/reviews/train.json'), NOW);
    expect(run?.startedAt).toBe('2026-03-01T11:59:59.000Z');
    expect(result).toEqual({ started: true, runId: run?.runId });
    expect(starter.started).toEqual([{ name: run?.runId, input: { run } }]);
  });

  it("writes the run's first status before the start, and leaves a file that holds this run or a newer one", async () => {
    const { client, bucket } = fixtures.s3();
    const drop = uniqueDrop('first-status');
    const key = `inbox/${drop}/train.json`;
    const upload = (etag: string, time: string, sequencer: string) =>
      s3ObjectCreatedEvent({ bucket, key, etag, size: 2, time, sequencer });
    const inner = recordingStarter();
    const atStart: (RunStatus | null)[] = [];
    const starter: ExecutionStarter = {
      start: async (name, input) => {
        atStart.push(await readStatus(client, bucket, drop));
        return await inner.start(name, input);
      },
    };
    const handler = triggerOf(starter, NOW);
    const older = upload('etag-1', '2026-03-01T11:59:59Z', '0062E99A88DC407460');

    const first = await handler(older);

    // Visible before its execution ran a step: running, about to validate, nothing taken yet.
    expect(atStart[0]).toMatchObject({
      run_id: first.runId,
      state: 'running',
      hopper_step: 'validate_drop',
      config_fingerprint: null,
      dataset_id: null,
      summary: null,
      superseded_runs: [],
    });
    expect(stepUnderWay(atStart[0] as RunStatus)).toBe('validate_drop');
    // The run's own status since (here: it failed) is not undone by a repeated event.
    await writeStatus(client, bucket, { ...(atStart[0] as RunStatus), state: 'failed' });
    await handler(older);
    expect(await readStatus(client, bucket, drop)).toMatchObject({ run_id: first.runId, state: 'failed' });

    // A newer upload takes the file at once, the older run named below it.
    const newer = await handler(upload('etag-2', '2026-03-01T12:00:05Z', '0062E99A88DC407470'));
    const taken = await readStatus(client, bucket, drop);
    expect(taken).toMatchObject({ run_id: newer.runId, state: 'running' });
    expect(taken?.superseded_runs?.map((run) => run.run_id)).toEqual([first.runId]);
    // A late event of a run older than the file's leaves it; its execution starts and gives way.
    const late = await handler(upload('etag-0', '2026-03-01T11:59:59Z', '0062E99A88DC407450'));
    expect(await readStatus(client, bucket, drop)).toEqual(taken);
    expect(inner.started.map((start) => start.name)).toEqual([first.runId, newer.runId, late.runId]);
  });

  it('starts the run although its first status cannot be written (other runs of the drop writing the file)', async () => {
    const { client, bucket } = fixtures.s3();
    const drop = uniqueDrop('contended');
    // Every conditional write of the status file loses, as under a burst of runs of one drop.
    const contended = {
      send: (command: unknown) =>
        command instanceof PutObjectCommand
          ? Promise.reject(
              Object.assign(new Error('At least one of the pre-conditions you specified did not hold'), {
                name: 'PreconditionFailed',
                $metadata: { httpStatusCode: 412 },
              }),
            )
          : client.send(command as HeadObjectCommand),
    } as unknown as typeof client;
    const starter = recordingStarter();
    const handler = createTriggerHandler(starter, { now: () => NOW, logger: SILENT, s3: contended });
    const result = await handler(event(`inbox/${drop}/train.json`, 'etag-1', bucket));
    expect(result).toMatchObject({ started: true });
    expect(starter.started.map((start) => start.name)).toEqual([result.runId]);
    expect(await readStatus(client, bucket, drop)).toBeNull();
  });

  it('starts nothing new for a repeated event: the open run answers it, an ended one refuses it', async () => {
    const starter = recordingStarter();
    const handler = triggerOf(starter, NOW);
    const first = await handler(at('inbox/reviews/train.json'));
    // EventBridge may deliver the same event again, later: the same input while the run is open.
    const later = triggerOf(starter, NOW + 5_000);

    const whileOpen = await later(at('inbox/reviews/train.json'));

    expect(first).toEqual({ started: true, runId: expect.any(String) as string });
    expect(whileOpen).toEqual(first);
    expect(starter.started).toHaveLength(1);

    // After the run has ended the same event is ExecutionAlreadyExists: a duplicate, no error.
    starter.close(first.runId ?? '');
    const afterEnd = await later(at('inbox/reviews/train.json'));
    expect(afterEnd).toMatchObject({ started: false, runId: first.runId });
    expect(afterEnd.started ? '' : afterEnd.reason).toMatch(/^duplicate: .*ExecutionAlreadyExists/);
    expect(starter.started).toHaveLength(1);

    // train.json dropped again (a new etag) is a new run.
    const third = await handler(at('inbox/reviews/train.json', 'another-etag'));
    expect(third.started).toBe(true);
    expect(starter.started).toHaveLength(2);
  });

  it('refuses a repeated event whose input differs (no event time) while the run is open', async () => {
    const starter = recordingStarter();
    const { time: _time, ...timeless } = at('inbox/reviews/train.json');
    const first = await triggerOf(starter, NOW)(timeless);
    const again = await triggerOf(starter, NOW + 1)(timeless);

    expect(first.started).toBe(true);
    expect(again).toMatchObject({ started: false, runId: first.runId });
    expect(starter.started).toHaveLength(1);
  });

  it.each([
    'inbox/reviews/data.csv',
    'inbox/reviews/sub/train.json',
    'inbox/train.json',
    'status/reviews/train.json',
    'inbox/reviews/train.json.bak',
    'inbox/reviews/Train.json',
  ])('ignores %s', async (key) => {
    const starter = recordingStarter();
    const handler = triggerOf(starter, NOW);

    const result = await handler(at(key));

    expect(result).toEqual({ started: false, reason: `ignored: ${key} is not inbox/<drop>/train.json` });
    expect(starter.started).toEqual([]);
  });

  it("records hopper doctor's probe in status/.doctor/ and starts no run; a probe-like key of another shape is no probe", async () => {
    const { client, bucket } = fixtures.s3();
    const starter = recordingStarter();
    const handler = triggerOf(starter, NOW);
    const probeId = `doctor-${uniqueDrop('p')}`;
    const key = doctorProbeKey(probeId);

    const result = await handler(s3ObjectCreatedEvent({ bucket, key, etag: '"abc"', size: 2 }));

    expect(result).toEqual({
      started: false,
      reason: `probe: hopper doctor's probe ${probeId} seen and recorded, no run started`,
    });
    expect(starter.started).toEqual([]);
    expect((await readJson(client, bucket, probeSeenKey(probeId)))?.value).toMatchObject({
      probe_id: probeId,
      key,
      etag: 'abc',
      seen_at: new Date(NOW).toISOString(),
      run_started: false,
    });
    // Deeper than a probe, or with a folder name that is no probe id: ignored as any deeper key.
    const deeper = `${DOCTOR_PROBE_PREFIX}a/b/train.json`;
    expect(await handler(at(deeper))).toEqual({
      started: false,
      reason: `ignored: ${deeper} is not inbox/<drop>/train.json`,
    });
  });

  it("ignores events that are not S3's Object Created, and rejects what is not an S3 event at all", async () => {
    const starter = recordingStarter();
    const handler = triggerOf(starter, NOW);

    const deleted = { ...at('inbox/reviews/train.json'), 'detail-type': 'Object Deleted' };
    expect(await handler(deleted)).toMatchObject({ started: false });
    await expect(handler({ hello: 'world' })).rejects.toThrow(RunError);
    await expect(handler({ hello: 'world' })).rejects.toMatchObject({ code: 'invalid_event' });
    expect(starter.started).toEqual([]);
  });

  it('names the run after the etag the local S3 server gives train.json, as HEAD reads it', async () => {
    const { client, bucket } = fixtures.s3();
    // s3rver is an EventEmitter ('event': S3 notifications), which its type declarations leave out.
    const server = fixtures.s3().server as unknown as EventEmitter;
    const drop = uniqueDrop('trigger');
    const key = `inbox/${drop}/train.json`;
    const seen: { key: string; eTag?: string; size?: number }[] = [];
    const onEvent = (notification: {
      Records: { s3: { object: { key: string; eTag?: string; size?: number } } }[];
    }) => {
      for (const record of notification.Records) seen.push(record.s3.object);
    };
    server.on('event', onEvent);
    try {
      await client.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: '{}' }));
    } finally {
      server.off('event', onEvent);
    }
    const created = seen.find((object) => object.key === key);
    expect(created?.eTag).toBeDefined();
    const starter = recordingStarter();
    const handler = triggerOf(starter, NOW);

    const result = await handler(
      s3ObjectCreatedEvent({ bucket, key, etag: created?.eTag ?? '', size: created?.size ?? 0 }),
    );

    const head = await client.send(new HeadObjectCommand({ Bucket: bucket, Key: key }));
    expect(result).toEqual({ started: true, runId: executionName(bucket, key, head.ETag ?? '') });
    expect(starter.started[0]?.input.run).toMatchObject({
      drop,
      etag: (head.ETag ?? '').replaceAll('"', ''),
    });
  });
});
