/** Starting the local S3 server on a port of the user's choice. */
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { startLocalS3 } from '../../local/s3/local-s3.js';

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
