/**
 * The local S3 server under a read and a write of one key at once (local/s3/consistent-store.ts):
 * what two runs of one drop do to status/<drop>.json. s3rver's own store fails this (a GET
 * announces one length and streams another, and the client hangs until the socket drops); and its
 * start after a process was killed in the middle of a write.
 */
import { createHash } from 'node:crypto';
import { mkdtemp, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { crc32 } from 'node:zlib';
import { GetObjectCommand, ListObjectsV2Command, PutObjectCommand } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLocalS3, type LocalS3 } from '../../local/s3/local-s3.js';

let s3: LocalS3;
beforeAll(async () => {
  s3 = await startLocalS3();
});
afterAll(async () => {
  await s3.close();
});

/** Version `n` of the object: a different length and content each time. */
function version(n: number): Buffer {
  return Buffer.alloc(50_000 + n * 7_919, `version ${String(n)};`);
}

function md5(bytes: Buffer): string {
  return createHash('md5').update(bytes).digest('hex');
}

async function put(key: string, body: Buffer): Promise<void> {
  await s3.client.send(new PutObjectCommand({ Bucket: s3.bucket, Key: key, Body: body }));
}

async function get(key: string): Promise<{ body: Buffer; etag: string }> {
  const answer = await s3.client.send(new GetObjectCommand({ Bucket: s3.bucket, Key: key }));
  const body = Buffer.from((await answer.Body?.transformToByteArray()) ?? []);
  return { body, etag: (answer.ETag ?? '').replaceAll('"', '') };
}

describe('the local S3 server, one key read and written at once', () => {
  it('answers every GET with one whole version and that version’s ETag', async () => {
    const key = 'status/busy.json';
    const versions = Array.from({ length: 12 }, (_, n) => version(n));
    const digests = new Set(versions.map(md5));
    await put(key, versions[0] ?? Buffer.alloc(0));
    // Twelve rounds, each a write racing three reads (bounded; each read must also end).
    for (let round = 1; round < versions.length; round++) {
      const results = await Promise.all([
        put(key, versions[round] ?? Buffer.alloc(0)),
        get(key),
        get(key),
        get(key),
      ]);
      for (const read of results.slice(1) as { body: Buffer; etag: string }[]) {
        expect(digests.has(md5(read.body))).toBe(true);
        expect(read.etag).toBe(md5(read.body));
      }
    }
  });

  it('shows a written object to the next GET, and no temporary file in a listing', async () => {
    const key = 'models/d/m/model.json';
    for (let n = 0; n < 5; n++) {
      await put(key, version(n));
      expect(md5((await get(key)).body)).toBe(md5(version(n)));
    }
    const listed = await s3.client.send(new ListObjectsV2Command({ Bucket: s3.bucket, Prefix: 'models/' }));
    expect((listed.Contents ?? []).map((object) => object.Key)).toEqual([key]);
  });
});

describe('the local S3 server, If-None-Match: * on PutObject', () => {
  async function putIfAbsent(key: string, body: string): Promise<'created' | 'PreconditionFailed'> {
    try {
      await s3.client.send(
        new PutObjectCommand({ Bucket: s3.bucket, Key: key, Body: body, IfNoneMatch: '*' }),
      );
      return 'created';
    } catch (error) {
      if (error instanceof Error && error.name === 'PreconditionFailed') return 'PreconditionFailed';
      throw error;
    }
  }

  it('creates a new key, and answers 412 PreconditionFailed for one that exists, keeping it', async () => {
    const key = 'status/.events/run-a/started';
    expect(await putIfAbsent(key, 'first')).toBe('created');
    expect(await putIfAbsent(key, 'second')).toBe('PreconditionFailed');
    expect((await get(key)).body.toString()).toBe('first');
    // Without the condition the key is overwritten, as in S3.
    await put(key, Buffer.from('third'));
    expect((await get(key)).body.toString()).toBe('third');
  });

  it('lets exactly one of several conditional PUTs of a new key through', async () => {
    const key = 'status/.events/run-b/succeeded';
    const results = await Promise.all(
      Array.from({ length: 8 }, (_, n) => putIfAbsent(key, `writer ${String(n)}`)),
    );
    expect(results.filter((result) => result === 'created')).toHaveLength(1);
    expect(results.filter((result) => result === 'PreconditionFailed')).toHaveLength(7);
    const winner = results.indexOf('created');
    expect((await get(key)).body.toString()).toBe(`writer ${String(winner)}`);
  });
});

describe('the local S3 server, If-Match: <etag> on PutObject', () => {
  /** The PUT's outcome: the new ETag, or the error's name and HTTP status, as S3 answers them. */
  async function putIfMatch(key: string, body: string, etag: string): Promise<string> {
    try {
      const answer = await s3.client.send(
        new PutObjectCommand({ Bucket: s3.bucket, Key: key, Body: body, IfMatch: etag }),
      );
      return `written ${(answer.ETag ?? '').replaceAll('"', '')}`;
    } catch (error) {
      const status = (error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
      return `${error instanceof Error ? error.name : String(error)} ${String(status)}`;
    }
  }

  it('replaces the object whose ETag matches (quoted or not), and answers 412 to a stale ETag', async () => {
    const key = 'status/if-match.json';
    await put(key, Buffer.from('first'));
    const first = (await get(key)).etag;
    expect(await putIfMatch(key, 'second', `"${first}"`)).toBe(`written ${md5(Buffer.from('second'))}`);
    // The first ETag is stale now: S3 refuses, and the object stays as it was.
    expect(await putIfMatch(key, 'third', first)).toBe('PreconditionFailed 412');
    expect((await get(key)).body.toString()).toBe('second');
    expect(await putIfMatch(key, 'third', md5(Buffer.from('second')))).toBe(
      `written ${md5(Buffer.from('third'))}`,
    );
  });

  it('answers 404 NoSuchKey when there is no object to match, and creates nothing', async () => {
    const key = 'status/if-match-absent.json';
    expect(await putIfMatch(key, 'x', md5(Buffer.from('x')))).toBe('NoSuchKey 404');
    await expect(get(key)).rejects.toMatchObject({ name: 'NoSuchKey' });
  });

  it('lets exactly one of several PUTs made against the same ETag through', async () => {
    const key = 'status/if-match-race.json';
    await put(key, Buffer.from('base'));
    const base = (await get(key)).etag;
    const results = await Promise.all(
      Array.from({ length: 8 }, (_, n) => putIfMatch(key, `writer ${String(n)}`, base)),
    );
    const winners = results.filter((result) => result.startsWith('written'));
    expect(winners).toHaveLength(1);
    expect(results.filter((result) => result === 'PreconditionFailed 412')).toHaveLength(7);
    const winner = results.findIndex((result) => result.startsWith('written'));
    expect((await get(key)).body.toString()).toBe(`writer ${String(winner)}`);
  });
});

/** Big-endian CRC32 in base64, as S3 keeps it. */
function crc32Of(text: string): string {
  const digest = Buffer.alloc(4);
  digest.writeUInt32BE(crc32(Buffer.from(text)));
  return digest.toString('base64');
}

describe('the local S3 server started again after a kill in the middle of a PutObject', () => {
  /**
   * `status/x.json` put as `v1`, then a commit of `v2` cut short as a kill cuts it: its intent
   * written beside the bytes' file, and `stage` of what followed done.
   */
  async function killedMidCommit(stage: 'before the rename' | 'during the metadata'): Promise<LocalS3> {
    const directory = await mkdtemp(join(tmpdir(), 'hopper-s3-kill-'));
    const before = await startLocalS3({ directory });
    const key = 'status/x.json';
    await before.client.send(new PutObjectCommand({ Bucket: before.bucket, Key: key, Body: 'v1' }));
    const objectFile = before.objectFile(key);
    await before.close();
    const metadataFile = objectFile.replace(/object$/, 'metadata.json');
    const metadata = JSON.parse(await readFile(metadataFile, 'utf8')) as Record<string, string>;
    const partial = join(directory, 'partial', 'v2');
    await writeFile(partial, 'v2, longer');
    const intent = {
      bucket: before.bucket,
      key,
      // v1's, with v2's checksum (the SDK sent v1's CRC32, kept with it)
      metadata: { ...metadata, 'x-amz-checksum-crc32': crc32Of('v2, longer') },
      etag: md5(Buffer.from('v2, longer')),
      file: partial,
    };
    await writeFile(`${objectFile}.committing`, JSON.stringify(intent));
    if (stage === 'during the metadata') {
      await rename(partial, objectFile);
      await writeFile(metadataFile, '{"content-ty'); // a write cut off: not JSON
    }
    return startLocalS3({ directory });
  }

  it.each([
    ['during the metadata', 'v2, longer'],
    ['before the rename', 'v1'],
  ] as const)('killed %s: serves %j, whole, with its ETag, and lists it', async (stage, body) => {
    const after = await killedMidCommit(stage);
    try {
      const answer = await after.client.send(
        new GetObjectCommand({ Bucket: after.bucket, Key: 'status/x.json' }),
      );
      expect(await answer.Body?.transformToString()).toBe(body);
      expect(answer.ETag).toBe(`"${md5(Buffer.from(body))}"`);
      const listed = await after.client.send(
        new ListObjectsV2Command({ Bucket: after.bucket, Prefix: 'status/' }),
      );
      expect(listed.Contents?.map((object) => [object.Key, object.Size])).toEqual([
        ['status/x.json', body.length],
      ]);
      expect(await readdir(dirname(after.objectFile('status/x.json')))).not.toContainEqual(
        expect.stringMatching(/committing$/),
      );
    } finally {
      await after.close();
      await rm(after.directory, { recursive: true, force: true });
    }
  });
});
