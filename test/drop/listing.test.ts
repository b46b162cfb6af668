import { ListObjectsV2Command, type ListObjectsV2CommandOutput, type S3Client } from '@aws-sdk/client-s3';
import { describe, expect, it } from 'vitest';
import { listDrop, MAX_LIST_PAGES } from '../../lambdas/drop/listing.js';
import { RunError } from '../../lambdas/core/errors/index.js';

/**
 * An S3 client that answers ListObjectsV2 from `keys` in pages of `pageSize`. The local S3
 * server cannot serve a second page (s3rver's continuation tokens need DES, which Node's
 * OpenSSL 3 lacks), so paging is tested here against S3's documented behaviour.
 */
function pagingS3(keys: readonly string[], pageSize: number) {
  const requests: ListObjectsV2Command['input'][] = [];
  const client = {
    send(command: unknown): Promise<Partial<ListObjectsV2CommandOutput>> {
      if (!(command instanceof ListObjectsV2Command)) throw new Error('only ListObjectsV2 is expected');
      requests.push(command.input);
      const matching = keys.filter((key) => key.startsWith(command.input.Prefix ?? '')).sort();
      const start =
        command.input.ContinuationToken === undefined ? 0 : Number(command.input.ContinuationToken);
      const page = matching.slice(start, start + pageSize);
      const truncated = start + pageSize < matching.length;
      return Promise.resolve({
        Contents: page.map((key) => ({ Key: key, Size: key.length, ETag: `"etag-${key}"` })),
        IsTruncated: truncated,
        NextContinuationToken: truncated ? String(start + pageSize) : undefined,
      });
    },
  };
  return { client: client as unknown as S3Client, requests };
}

describe('listing a drop folder', () => {
  it('follows continuation tokens to the last page, under the drop prefix only', async () => {
    const keys = [
      'inbox/d/a.csv',
      'inbox/d/b.csv',
      'inbox/d/c.csv',
      'inbox/d/labels.csv',
      'inbox/d/sub/x.csv',
      'inbox/d/train.json',
      'inbox/d2/other.csv',
    ];
    const { client, requests } = pagingS3(keys, 2);
    const listing = await listDrop(client, 'bucket', 'd');
    expect([...listing.files.keys()]).toEqual(['a.csv', 'b.csv', 'c.csv', 'labels.csv', 'train.json']);
    expect(listing.files.get('b.csv')).toEqual({
      name: 'b.csv',
      bytes: 'inbox/d/b.csv'.length,
      etag: 'etag-inbox/d/b.csv',
    });
    expect(listing.nested).toEqual(['sub/x.csv']);
    expect(requests.map((request) => [request.Prefix, request.ContinuationToken])).toEqual([
      ['inbox/d/', undefined],
      ['inbox/d/', '2'],
      ['inbox/d/', '4'],
    ]);
  });

  it('gives up on a folder with more pages than a drop can have', async () => {
    const keys = Array.from(
      { length: MAX_LIST_PAGES + 1 },
      (_, index) => `inbox/big/f${String(index).padStart(5, '0')}.csv`,
    );
    const { client, requests } = pagingS3(keys, 1);
    const error = await listDrop(client, 'bucket', 'big').catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(RunError);
    expect((error as RunError).detail).toContain('inbox/big/ holds more objects than a drop can');
    expect(requests).toHaveLength(MAX_LIST_PAGES);
  });
});
