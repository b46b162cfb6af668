/** The local S3 server: on a port of the user's choice, and listing past 1000 keys. */
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import {
  CreateBucketCommand,
  ListObjectsCommand,
  ListObjectsV2Command,
  paginateListObjectsV2,
  PutObjectCommand,
  S3ServiceException,
} from '@aws-sdk/client-s3';
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
