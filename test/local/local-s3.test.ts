/** The local S3 server: on a port of the user's choice, listing past 1000 keys, multipart uploads. */
import { createHash } from 'node:crypto';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateBucketCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  ListObjectsCommand,
  ListObjectsV2Command,
  NoSuchKey,
  NoSuchUpload,
  paginateListObjectsV2,
  PutObjectCommand,
  S3ServiceException,
  UploadPartCommand,
} from '@aws-sdk/client-s3';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLocalS3, type LocalS3 } from '../../local/s3/local-s3.js';

describe('startLocalS3 on a given port', () => {
  it('names a port in use and what to do, instead of ending the process', async () => {
    const busy = createServer();
    await new Promise<void>((resolve) => busy.listen(0, '127.0.0.1', resolve));
    const { port } = busy.address() as AddressInfo;
    try {
      await expect(startLocalS3({ port })).rejects.toThrow(
        `the local S3 port ${String(port)} on 127.0.0.1 is in use: choose another (--s3-port), or leave it out for a free one`,
      );
    } finally {
      await new Promise((resolve) => busy.close(resolve));
    }
  });

  it('serves on a free port it is given', async () => {
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    const { port } = probe.address() as AddressInfo;
    await new Promise((resolve) => probe.close(resolve));
    const s3 = await startLocalS3({ port });
    try {
      expect(s3.endpoint).toBe(`http://127.0.0.1:${String(port)}`);
      const answer = await fetch(`${s3.endpoint}/${s3.bucket}`);
      // s3rver answers an unsigned request itself (listing or refusing it): it is serving.
      expect([200, 403]).toContain(answer.status);
    } finally {
      await s3.close();
    }
  });
});

describe('keys S3 takes whose parts are longer than a file name (255 bytes)', () => {
  it('puts, reads, lists and deletes them, up to 1024 bytes, as S3 does', async () => {
    const s3 = await startLocalS3();
    try {
      const drop = '😀'.repeat(63);
      const keys = [
        `inbox/${drop}/train.json`,
        `status/${drop}.json`,
        `status/.runs/${drop}/${'r'.repeat(80)}.json`,
        `x/${'é'.repeat(505)}.csv`,
        'k'.repeat(1024),
      ];
      expect(keys.map((key) => Buffer.byteLength(key) <= 1024)).toEqual(keys.map(() => true));
      for (const key of keys)
        await s3.client.send(new PutObjectCommand({ Bucket: s3.bucket, Key: key, Body: key }));
      for (const key of keys) {
        const got = await s3.client.send(new GetObjectCommand({ Bucket: s3.bucket, Key: key }));
        expect(await got.Body?.transformToString()).toBe(key);
      }
      const listed = await s3.client.send(new ListObjectsV2Command({ Bucket: s3.bucket }));
      expect(listed.Contents?.map((object) => object.Key)).toEqual([...keys].sort());
      const under = await s3.client.send(
        new ListObjectsV2Command({ Bucket: s3.bucket, Prefix: `inbox/${drop}/` }),
      );
      expect(under.Contents?.map((object) => object.Key)).toEqual([keys[0]]);
      for (const key of keys) await s3.client.send(new DeleteObjectCommand({ Bucket: s3.bucket, Key: key }));
      const left = await s3.client.send(new ListObjectsV2Command({ Bucket: s3.bucket }));
      expect(left.Contents ?? []).toEqual([]);
    } finally {
      await s3.close();
    }
  });
});

describe('ListObjectsV2 past one page (1000 keys)', () => {
  // More keys than one page holds, under a prefix, and a few outside it.
  const KEYS = Array.from({ length: 1203 }, (_, index) => `many/k${String(index).padStart(5, '0')}.csv`);
  const OTHERS = ['a-before.txt', 'many-not/x.csv', 'zz-after/y.csv'];
  let s3: LocalS3;
  beforeAll(async () => {
    s3 = await startLocalS3();
    const queue = [...KEYS, ...OTHERS];
    const put = async (): Promise<void> => {
      for (let key = queue.shift(); key !== undefined; key = queue.shift()) {
        await s3.client.send(new PutObjectCommand({ Bucket: s3.bucket, Key: key, Body: key }));
      }
    };
    await Promise.all(Array.from({ length: 8 }, put));
  }, 60_000);
  afterAll(async () => {
    await s3.close();
  });

  /** Every key the SDK's paginator lists under `prefix`, and the size of each page. */
  async function listAll(prefix: string, pageSize?: number): Promise<{ keys: string[]; pages: number[] }> {
    const keys: string[] = [];
    const pages: number[] = [];
    const paginator = paginateListObjectsV2(
      { client: s3.client, ...(pageSize === undefined ? {} : { pageSize }) },
      { Bucket: s3.bucket, Prefix: prefix },
    );
    for await (const page of paginator) {
      const listed = (page.Contents ?? []).map((object) => object.Key ?? '');
      keys.push(...listed);
      pages.push(listed.length);
      expect(page.KeyCount).toBe(listed.length);
    }
    return { keys, pages };
  }

  it('lists every key, in order, across pages of 1000 with continuation tokens', async () => {
    const { keys, pages } = await listAll('many/');
    expect(pages).toEqual([1000, 203]);
    expect(keys).toEqual(KEYS);
  });

  it('lists in smaller pages when asked, and the whole bucket too', async () => {
    const { keys, pages } = await listAll('many/', 500);
    expect(pages).toEqual([500, 500, 203]);
    expect(keys).toEqual(KEYS);
    const everything = await listAll('');
    expect(everything.keys).toEqual([...KEYS, ...OTHERS].sort());
  });

  it('answers a page as S3 does: the token given back, no StartAfter with a token', async () => {
    const first = await s3.client.send(
      new ListObjectsV2Command({
        Bucket: s3.bucket,
        Prefix: 'many/',
        MaxKeys: 2,
        StartAfter: 'many/k00010.csv',
      }),
    );
    expect(first.Contents?.map((object) => object.Key)).toEqual(['many/k00011.csv', 'many/k00012.csv']);
    expect(first).toMatchObject({ IsTruncated: true, StartAfter: 'many/k00010.csv', KeyCount: 2 });
    const token = first.NextContinuationToken;
    expect(token).toEqual(expect.any(String));
    const second = await s3.client.send(
      new ListObjectsV2Command({ Bucket: s3.bucket, Prefix: 'many/', MaxKeys: 2, ContinuationToken: token }),
    );
    expect(second.Contents?.map((object) => object.Key)).toEqual(['many/k00013.csv', 'many/k00014.csv']);
    expect(second.ContinuationToken).toBe(token);
    expect(second.StartAfter).toBeUndefined();
  });

  it('pages by keys and common prefixes together with a delimiter, a prefix never split', async () => {
    const pages: { keys: string[]; prefixes: string[] }[] = [];
    const paginator = paginateListObjectsV2(
      { client: s3.client, pageSize: 2 },
      { Bucket: s3.bucket, Delimiter: '/' },
    );
    for await (const page of paginator) {
      pages.push({
        keys: (page.Contents ?? []).map((object) => object.Key ?? ''),
        prefixes: (page.CommonPrefixes ?? []).map((prefix) => prefix.Prefix ?? ''),
      });
    }
    // Byte order: "-" (0x2d) before "/" (0x2f), so many-not/ comes before many/.
    expect(pages).toEqual([
      { keys: ['a-before.txt'], prefixes: ['many-not/'] },
      { keys: [], prefixes: ['many/', 'zz-after/'] },
    ]);
  });

  it('lists nothing of another bucket for a prefix that climbs out of its folder', async () => {
    await s3.client.send(new CreateBucketCommand({ Bucket: 'hopper-other' }));
    await s3.client.send(new PutObjectCommand({ Bucket: 'hopper-other', Key: 'secret.txt', Body: 'x' }));
    const page = await s3.client.send(
      new ListObjectsV2Command({ Bucket: s3.bucket, Prefix: '../hopper-other/' }),
    );
    expect(page.Contents ?? []).toEqual([]);
    expect(page.KeyCount).toBe(0);
  });

  it('refuses a continuation token it did not make, as S3 does', async () => {
    const refused = s3.client.send(
      new ListObjectsV2Command({ Bucket: s3.bucket, ContinuationToken: 'bm90LWEtdG9rZW4=' }),
    );
    await expect(refused).rejects.toBeInstanceOf(S3ServiceException);
    await expect(refused).rejects.toMatchObject({ name: 'InvalidArgument' });
  });

  it('still lists with version 1 markers', async () => {
    const page = await s3.client.send(
      new ListObjectsCommand({ Bucket: s3.bucket, Prefix: 'many/', Marker: 'many/k01200.csv' }),
    );
    expect(page.Contents?.map((object) => object.Key)).toEqual(['many/k01201.csv', 'many/k01202.csv']);
  });
});

describe('multipart uploads (local/s3/multipart-upload.ts)', () => {
  let s3: LocalS3;
  beforeAll(async () => {
    s3 = await startLocalS3();
  });
  afterAll(async () => {
    await s3.close();
  });

  const md5 = (bytes: Buffer) => createHash('md5').update(bytes).digest();
  /** `size` bytes that differ from those of any other `seed`. */
  const bytesOf = (seed: string, size: number) => Buffer.alloc(size, `${seed}:${String(size)};`);
  type Upload = readonly [part: number, bytes: Buffer];

  /**
   * One multipart upload: each round's parts sent at once, rounds one after another; then the
   * parts `listed` completed. Returns what a GET answers and what S3 would store.
   */
  async function multipart(key: string, rounds: readonly (readonly Upload[])[], listed: readonly number[]) {
    const { UploadId } = await s3.client.send(
      new CreateMultipartUploadCommand({ Bucket: s3.bucket, Key: key }),
    );
    const latest = new Map<number, Buffer>();
    for (const round of rounds) {
      await Promise.all(
        round.map(([PartNumber, Body]) =>
          s3.client.send(new UploadPartCommand({ Bucket: s3.bucket, Key: key, UploadId, PartNumber, Body })),
        ),
      );
      for (const [part, bytes] of round) latest.set(part, bytes);
    }
    const parts = listed.map((part) => latest.get(part) ?? Buffer.alloc(0));
    const completed = await s3.client.send(
      new CompleteMultipartUploadCommand({
        Bucket: s3.bucket,
        Key: key,
        UploadId,
        // s3rver does not check the parts' ETags (nor does this store).
        MultipartUpload: { Parts: listed.map((PartNumber) => ({ PartNumber, ETag: 'e' })) },
      }),
    );
    const answer = await s3.client.send(new GetObjectCommand({ Bucket: s3.bucket, Key: key }));
    return {
      stored: Buffer.from((await answer.Body?.transformToByteArray()) ?? []),
      etag: [completed.ETag, answer.ETag].map((etag) => etag?.replaceAll('"', '')),
      expected: Buffer.concat(parts),
      // S3's multipart ETag: the MD5 of the parts' MD5s, and their count.
      expectedEtag: `${createHash('md5')
        .update(Buffer.concat(parts.map(md5)))
        .digest('hex')}-${String(parts.length)}`,
    };
  }

  const PART = 64 * 1024;

  it('stores parts of one size and a shorter last one, sent at once in any order, byte for byte', async () => {
    const parts = [1, 2, 3, 4, 5].map((part) => bytesOf(`p${String(part)}`, part === 5 ? 1000 : PART));
    const sent: Upload[] = [
      [3, parts[2]!],
      [1, parts[0]!],
      [5, parts[4]!],
      [2, parts[1]!],
      [4, parts[3]!],
    ];
    const { stored, etag, expected, expectedEtag } = await multipart('mp/in-place', [sent], [1, 2, 3, 4, 5]);
    expect(stored.equals(expected)).toBe(true);
    expect(etag).toEqual([expectedEtag, expectedEtag]);
  });

  it('stores any other layout byte for byte: uneven parts, parts sent again, gaps, parts left out', async () => {
    const cases: [string, (readonly Upload[])[], number[]][] = [
      // The short last part first: its length is then the upload's part size, which the others exceed.
      [
        'last-first',
        [
          [[3, bytesOf('c', 10)]],
          [
            [1, bytesOf('a', PART)],
            [2, bytesOf('b', PART)],
          ],
        ],
        [1, 2, 3],
      ],
      // A part longer than the first, and one shorter than the part size before the last.
      [
        'uneven',
        [
          [[1, bytesOf('a', PART)]],
          [
            [2, bytesOf('b', 2 * PART)],
            [3, bytesOf('c', 99)],
            [4, bytesOf('d', PART)],
          ],
        ],
        [1, 2, 3, 4],
      ],
      // Part 2 sent again, shorter, then part 1 sent again with other bytes of the same length.
      [
        'again',
        [
          [
            [1, bytesOf('a', PART)],
            [2, bytesOf('b', PART)],
            [3, bytesOf('c', 7)],
          ],
          [[2, bytesOf('B', 500)]],
          [[1, bytesOf('A', PART)]],
        ],
        [1, 2, 3],
      ],
      // Part numbers with a gap, and a part uploaded but not completed.
      [
        'gap',
        [
          [
            [1, bytesOf('a', PART)],
            [3, bytesOf('c', PART)],
            [4, bytesOf('d', 5)],
            [5, bytesOf('e', PART)],
          ],
        ],
        [1, 3, 4],
      ],
      // Parts in place, and one past them uploaded but not completed: cut off.
      [
        'cut',
        [
          [
            [1, bytesOf('a', PART)],
            [2, bytesOf('b', PART)],
            [3, bytesOf('c', PART)],
          ],
        ],
        [1, 2],
      ],
      ['one-part', [[[1, bytesOf('a', 3)]]], [1]],
    ];
    for (const [name, rounds, listed] of cases) {
      const { stored, etag, expected, expectedEtag } = await multipart(`mp/${name}`, rounds, listed);
      expect({ name, bytes: stored.length, same: stored.equals(expected) }).toEqual({
        name,
        bytes: expected.length,
        same: true,
      });
      expect(etag).toEqual([expectedEtag, expectedEtag]);
    }
  });

  /** The ids of the unfinished uploads in the bucket of `server`, from its folder. */
  const uploadsOn = (server: LocalS3) =>
    readdir(join(server.directory, 'objects', server.bucket, '._S3rver_uploads')).catch(() => []);
  /** What AbortMultipartUpload of `UploadId` answers: its status, or the S3 error. */
  const abort = (server: LocalS3, Key: string, UploadId: string | undefined) =>
    server.client.send(new AbortMultipartUploadCommand({ Bucket: server.bucket, Key, UploadId })).then(
      (answer) => answer.$metadata.httpStatusCode,
      (error: unknown) => error,
    );

  it('aborts an upload as S3 does: 204 and its parts gone; an upload it does not hold is NoSuchUpload', async () => {
    const Key = 'mp/aborted';
    const { UploadId } = await s3.client.send(new CreateMultipartUploadCommand({ Bucket: s3.bucket, Key }));
    for (const PartNumber of [1, 2])
      await s3.client.send(
        new UploadPartCommand({ Bucket: s3.bucket, Key, UploadId, PartNumber, Body: bytesOf('a', PART) }),
      );
    expect(await uploadsOn(s3)).toContain(UploadId);

    expect(await abort(s3, Key, UploadId)).toBe(204);

    expect(await uploadsOn(s3)).not.toContain(UploadId);
    const read = s3.client.send(new GetObjectCommand({ Bucket: s3.bucket, Key }));
    await expect(read).rejects.toThrow(NoSuchKey);
    // Aborted already, never made, or a path rather than an id: 404 NoSuchUpload, nothing removed.
    const kept = await s3.client.send(new CreateMultipartUploadCommand({ Bucket: s3.bucket, Key }));
    for (const unknown of [UploadId, 'f'.repeat(32), `../${kept.UploadId ?? ''}`]) {
      const refusal = await abort(s3, Key, unknown);
      expect(refusal).toBeInstanceOf(NoSuchUpload);
      expect((refusal as NoSuchUpload).$metadata.httpStatusCode).toBe(404);
    }
    expect(await uploadsOn(s3)).toContain(kept.UploadId);
    expect(await abort(s3, Key, kept.UploadId)).toBe(204);
  });

  it('starting on a directory clears the uploads an earlier process left unfinished, and only those', async () => {
    const directory = await mkdtemp(join(tmpdir(), 'hopper-s3-restart-'));
    try {
      // A process killed mid-copy: an upload with a part stored, never completed nor aborted, and
      // an object half-written (local-s3.ts writes objects in `partial` first).
      const before = await startLocalS3({ directory });
      const { UploadId } = await before.client.send(
        new CreateMultipartUploadCommand({ Bucket: before.bucket, Key: 'mp/left' }),
      );
      await before.client.send(
        new UploadPartCommand({
          Bucket: before.bucket,
          Key: 'mp/left',
          UploadId,
          PartNumber: 1,
          Body: bytesOf('a', PART),
        }),
      );
      await before.client.send(new PutObjectCommand({ Bucket: before.bucket, Key: 'kept', Body: 'kept' }));
      await writeFile(join(directory, 'partial', 'half-written'), 'half');
      await before.close();
      expect(await uploadsOn(before)).toEqual([UploadId]);

      const after = await startLocalS3({ directory });
      try {
        expect(await uploadsOn(after)).toEqual([]);
        expect(await readdir(join(directory, 'partial'))).toEqual([]);
        expect(await abort(after, 'mp/left', UploadId)).toBeInstanceOf(NoSuchUpload);
        const kept = await after.client.send(new GetObjectCommand({ Bucket: after.bucket, Key: 'kept' }));
        expect(await kept.Body?.transformToString()).toBe('kept');
      } finally {
        await after.close();
      }
    } finally {
      await rm(directory, { recursive: true, force: true });
    }
  });

  it('leaves no upload behind once completed', async () => {
    await multipart(
      'mp/tidy',
      [
        [
          [1, bytesOf('a', PART)],
          [2, bytesOf('b', 10)],
        ],
      ],
      [1, 2],
    );
    const uploads = await readdir(join(s3.directory, 'objects', s3.bucket, '._S3rver_uploads'));
    expect(uploads).toEqual([]);
  });
});
