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
  HeadObjectCommand,
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
import { Readable } from 'node:stream';
import { crc32 as zlibCrc32 } from 'node:zlib';
import { Crc32c } from '@aws-sdk/checksums/crc';
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
      // Without its request log (koa-logger), which costs CPU on every request and prints nothing.
      const { middleware } = s3.server as unknown as { middleware: { name: string }[] };
      expect(middleware.length).toBeGreaterThan(0);
      expect(middleware.map((handler) => handler.name)).not.toContain('logger');
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

describe('checksums, as S3 checks and keeps them (local/s3/checksums.ts)', () => {
  let s3: LocalS3;
  beforeAll(async () => {
    s3 = await startLocalS3();
  });
  afterAll(async () => {
    await s3.close();
  });

  const Bucket = () => s3.bucket;
  /** Big-endian CRC32 in base64, as S3 writes it (computed here apart from the SDK's). */
  const crc32 = (bytes: Uint8Array) => {
    const digest = Buffer.alloc(4);
    digest.writeUInt32BE(zlibCrc32(bytes));
    return digest.toString('base64');
  };
  const sha = (algorithm: 'sha1' | 'sha256', bytes: Uint8Array) =>
    createHash(algorithm).update(bytes).digest('base64');
  const refusal = async (sending: Promise<unknown>) => {
    const error = await sending.then(
      () => null,
      (thrown: unknown) => thrown,
    );
    expect(error).toBeInstanceOf(S3ServiceException);
    const { name, message, $metadata } = error as S3ServiceException;
    return { name, message, status: $metadata.httpStatusCode };
  };

  it('refuses a PutObject whose checksum is not its bytes, with BadDigest, for each algorithm', async () => {
    const body = Buffer.from('the bytes sent');
    const wrong = Buffer.from('other bytes');
    const given = {
      ChecksumCRC32: crc32(wrong),
      ChecksumCRC32C: Buffer.from(await new Crc32c().digest()).toString('base64'),
      ChecksumCRC64NVME: 'AAAAAAAAAAA=',
      ChecksumSHA1: sha('sha1', wrong),
      ChecksumSHA256: sha('sha256', wrong),
    };
    for (const [field, value] of Object.entries(given)) {
      const algorithm = field.slice('Checksum'.length);
      const put = new PutObjectCommand({ Bucket: Bucket(), Key: `sum/${field}`, Body: body, [field]: value });
      expect(await refusal(s3.client.send(put))).toEqual({
        name: 'BadDigest',
        message: `The ${algorithm} you specified did not match the calculated checksum.`,
        status: 400,
      });
      await expect(
        s3.client.send(new HeadObjectCommand({ Bucket: Bucket(), Key: `sum/${field}` })),
      ).rejects.toThrow();
    }
  });

  it('refuses a checksum value that is no checksum with InvalidRequest', async () => {
    const put = new PutObjectCommand({
      Bucket: Bucket(),
      Key: 'sum/bad',
      Body: 'x',
      ChecksumCRC32: 'not-it',
    });
    expect(await refusal(s3.client.send(put))).toEqual({
      name: 'InvalidRequest',
      message: 'Value for x-amz-checksum-crc32 header is invalid.',
      status: 400,
    });
  });

  it("keeps the SDK's own checksums and answers them on Head and Get with ChecksumMode ENABLED", async () => {
    const body = Buffer.from('checked by S3');
    const cases = [
      ['CRC32', crc32(body)],
      ['SHA1', sha('sha1', body)],
      ['SHA256', sha('sha256', body)],
    ] as const;
    for (const [algorithm, expected] of cases) {
      const Key = `sum/kept-${algorithm}`;
      const field = `Checksum${algorithm}` as const;
      const put = await s3.client.send(
        new PutObjectCommand({ Bucket: Bucket(), Key, Body: body, ChecksumAlgorithm: algorithm }),
      );
      expect(put[field]).toBe(expected);
      const head = await s3.client.send(
        new HeadObjectCommand({ Bucket: Bucket(), Key, ChecksumMode: 'ENABLED' }),
      );
      expect([head[field], head.ChecksumType]).toEqual([expected, 'FULL_OBJECT']);
      const got = await s3.client.send(
        new GetObjectCommand({ Bucket: Bucket(), Key, ChecksumMode: 'ENABLED' }),
      );
      expect([got[field], got.ChecksumType]).toEqual([expected, 'FULL_OBJECT']);
      expect(Buffer.from((await got.Body?.transformToByteArray()) ?? []).equals(body)).toBe(true);
    }
    // Not asked for, or a range of the object: no checksum, as S3 answers.
    const plain = await s3.client.send(new HeadObjectCommand({ Bucket: Bucket(), Key: 'sum/kept-CRC32' }));
    expect(plain.ChecksumCRC32).toBeUndefined();
    const range = await s3.client.send(
      new GetObjectCommand({
        Bucket: Bucket(),
        Key: 'sum/kept-CRC32',
        Range: 'bytes=0-3',
        ChecksumMode: 'ENABLED',
      }),
    );
    expect([await range.Body?.transformToString(), range.ChecksumCRC32]).toEqual(['chec', undefined]);
  });

  it('takes a streamed PutObject (aws-chunked, its CRC32 in the trailer) byte for byte, and refuses a wrong trailer', async () => {
    const body = Buffer.alloc(200_000, 'streamed; ');
    const streamed = (Key: string) =>
      new PutObjectCommand({
        Bucket: Bucket(),
        Key,
        Body: Readable.from([body]),
        ContentLength: body.length,
      });
    const put = await s3.client.send(streamed('sum/streamed'));
    expect(put.ChecksumCRC32).toBe(crc32(body));
    const got = await s3.client.send(new GetObjectCommand({ Bucket: Bucket(), Key: 'sum/streamed' }));
    expect(got.ContentEncoding).toBeUndefined();
    expect(Buffer.from((await got.Body?.transformToByteArray()) ?? []).equals(body)).toBe(true);

    const corrupt = streamed('sum/streamed-wrong');
    corrupt.middlewareStack.add(
      (next) => async (args) => {
        const request = args.request as { headers: Record<string, string>; body: Readable };
        expect(request.headers['x-amz-trailer']).toBe('x-amz-checksum-crc32');
        expect(request.headers['x-amz-content-sha256']).toBe('STREAMING-UNSIGNED-PAYLOAD-TRAILER');
        const framed = Buffer.concat(await request.body.toArray()).toString('latin1');
        const wrong = framed.replace(
          /x-amz-checksum-crc32:[^\r]*/,
          `x-amz-checksum-crc32:${crc32(Buffer.from('no'))}`,
        );
        expect(wrong).not.toBe(framed);
        return next({
          ...args,
          request: { ...request, body: Readable.from([Buffer.from(wrong, 'latin1')]) },
        });
      },
      { step: 'finalizeRequest', name: 'corruptTrailer' },
    );
    expect(await refusal(s3.client.send(corrupt))).toMatchObject({ name: 'BadDigest', status: 400 });
  });

  const PART = 5 * 1024 * 1024;
  const partsOf = (...sizes: number[]) =>
    sizes.map((size, index) => Buffer.alloc(size, `part ${String(index + 1)};`));

  async function crc32Upload(Key: string, parts: readonly Buffer[]) {
    const { UploadId } = await s3.client.send(
      new CreateMultipartUploadCommand({ Bucket: Bucket(), Key, ChecksumAlgorithm: 'CRC32' }),
    );
    const sent = await Promise.all(
      parts.map((Body, index) =>
        s3.client.send(
          new UploadPartCommand({
            Bucket: Bucket(),
            Key,
            UploadId,
            PartNumber: index + 1,
            Body,
            ChecksumAlgorithm: 'CRC32',
          }),
        ),
      ),
    );
    return { UploadId, sent };
  }

  it('refuses an UploadPart whose checksum is not its bytes with BadDigest', async () => {
    const Key = 'sum/part-wrong';
    const { UploadId } = await s3.client.send(
      new CreateMultipartUploadCommand({ Bucket: Bucket(), Key, ChecksumAlgorithm: 'CRC32' }),
    );
    const part = new UploadPartCommand({
      Bucket: Bucket(),
      Key,
      UploadId,
      PartNumber: 1,
      Body: Buffer.from('a part'),
      ChecksumCRC32: crc32(Buffer.from('another part')),
    });
    expect(await refusal(s3.client.send(part))).toEqual({
      name: 'BadDigest',
      message: 'The CRC32 you specified did not match the calculated checksum.',
      status: 400,
    });
  });

  it('completes a CRC32 upload with the composite checksum, -N, of its parts', async () => {
    const Key = 'sum/composite';
    const parts = partsOf(PART, PART, 1000);
    const { UploadId, sent } = await crc32Upload(Key, parts);
    expect(sent.map((answer) => answer.ChecksumCRC32)).toEqual(parts.map(crc32));
    const completed = await s3.client.send(
      new CompleteMultipartUploadCommand({
        Bucket: Bucket(),
        Key,
        UploadId,
        MultipartUpload: {
          Parts: sent.map(({ ETag, ChecksumCRC32 }, index) => ({
            PartNumber: index + 1,
            ETag,
            ChecksumCRC32,
          })),
        },
      }),
    );
    const composite = `${crc32(Buffer.concat(parts.map((part) => Buffer.from(crc32(part), 'base64'))))}-3`;
    expect([completed.ChecksumCRC32, completed.ChecksumType]).toEqual([composite, 'COMPOSITE']);
    const head = await s3.client.send(
      new HeadObjectCommand({ Bucket: Bucket(), Key, ChecksumMode: 'ENABLED' }),
    );
    expect([head.ChecksumCRC32, head.ChecksumType]).toEqual([composite, 'COMPOSITE']);
    const got = await s3.client.send(new GetObjectCommand({ Bucket: Bucket(), Key }));
    expect(Buffer.from((await got.Body?.transformToByteArray()) ?? []).equals(Buffer.concat(parts))).toBe(
      true,
    );
  });

  it('refuses a completion that names a part checksum other than the stored one, or none; the upload then completes', async () => {
    const Key = 'sum/complete-wrong';
    const parts = partsOf(PART, 10);
    const { UploadId, sent } = await crc32Upload(Key, parts);
    const complete = (checksums: readonly (string | undefined)[]) =>
      s3.client.send(
        new CompleteMultipartUploadCommand({
          Bucket: Bucket(),
          Key,
          UploadId,
          MultipartUpload: {
            Parts: sent.map(({ ETag }, index) => ({
              PartNumber: index + 1,
              ETag,
              ChecksumCRC32: checksums[index],
            })),
          },
        }),
      );
    const right = sent.map((answer) => answer.ChecksumCRC32);
    expect(await refusal(complete([right[0], crc32(Buffer.from('not part 2'))]))).toMatchObject({
      name: 'InvalidPart',
      status: 400,
    });
    expect(await refusal(complete([right[0], undefined]))).toEqual({
      name: 'InvalidRequest',
      message:
        'The upload was created using a crc32 checksum. The complete request must include the checksum for each part. It was missing for part 2 in the request.',
      status: 400,
    });
    await expect(s3.client.send(new HeadObjectCommand({ Bucket: Bucket(), Key }))).rejects.toThrow();
    expect((await complete(right)).ChecksumCRC32).toMatch(/-2$/);
  });
});
