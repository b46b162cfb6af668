/**
 * A local S3 endpoint on loopback (s3rver), with its bucket made and an S3 client configured
 * the way s3rver needs it. Local mode and the tests use it in place of S3.
 */
import { once } from 'node:events';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { S3Client } from '@aws-sdk/client-s3';
import S3rver from 's3rver';
import { finishCommits, useConsistentStore } from './consistent-store.js';
import { useWorkingContinuationTokens } from './continuation-tokens.js';
import { answerNotificationConfiguration } from './notification.js';

/** Static credentials s3rver accepts (it checks signatures against these). */
export const LOCAL_S3_CREDENTIALS = { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' } as const;
export const LOCAL_S3_REGION = 'us-east-1';
/** The one bucket the local S3 holds. */
const LOCAL_BUCKET = 'hopper-local';

export interface LocalS3Options {
  /** Default: a free port. */
  readonly port?: number;
  /**
   * Where the objects live, kept after close (and found again by the next start). Default: a
   * temporary folder, removed on close.
   */
  readonly directory?: string;
  /**
   * Whether its buckets' events are delivered as EventBridge's (local mode connects them): what
   * GetBucketNotificationConfiguration answers. Default false.
   */
  readonly eventBridge?: boolean;
}

/** A local S3 running: what startLocalS3 returns. */
export interface LocalS3 {
  /** `http://127.0.0.1:<port>` */
  readonly endpoint: string;
  readonly bucket: string;
  readonly client: S3Client;
  /** The s3rver instance, for its 'event' notifications (local triggers). */
  readonly server: S3rver;
  /** The folder holding the server's objects (a temporary one, removed by close()). */
  readonly directory: string;
  /** The file holding the bytes of the object `key`, as they were uploaded. */
  objectFile(key: string): string;
  /** Leaves `directory` on disk at close(), e.g. for a model that could not be saved elsewhere. */
  keep(): void;
  close(): Promise<void>;
}

export async function startLocalS3(options: LocalS3Options = {}): Promise<LocalS3> {
  const bucket = LOCAL_BUCKET;
  // s3rver reports a failed listen as an unhandled 'error' event, which ends the process.
  if (options.port !== undefined && options.port !== 0) await assertPortFree(options.port);
  // A directory given by the caller (--data-dir) is theirs to keep; a temporary one is removed
  // at close() unless keep() was called.
  let kept = options.directory !== undefined;
  const { directory, objects, partial } = await prepareDirectory(options.directory);
  const server = new S3rver({
    address: '127.0.0.1',
    port: options.port ?? 0,
    directory: objects,
    silent: true,
    configureBuckets: [{ name: bucket, configs: [] }],
  });
  dropRequestLog(server);
  // s3rver's own continuation tokens need a cipher Node's OpenSSL lacks (continuation-tokens.ts).
  useWorkingContinuationTokens();
  // s3rver's own store breaks a read racing a write of the same key (consistent-store.ts).
  const store = useConsistentStore(server, objects, partial);
  answerNotificationConfiguration(server, options.eventBridge === true);
  await rm(store.getResourcePath(bucket, undefined, 'uploads'), { recursive: true, force: true });
  let address: AddressInfo;
  try {
    address = await server.run();
  } catch (error) {
    if (!kept) await rm(directory, { recursive: true, force: true });
    throw error;
  }
  const endpoint = `http://127.0.0.1:${String(address.port)}`;
  const client = localS3Client(endpoint);
  return {
    endpoint,
    bucket,
    client,
    server,
    directory,
    objectFile: (key: string): string => store.getResourcePath(bucket, key, 'object'),
    keep(): void {
      kept = true;
    },
    async close(): Promise<void> {
      client.destroy();
      await server.close();
      if (!kept) await rm(directory, { recursive: true, force: true });
    },
  };
}

/**
 * Takes s3rver's request log (koa-logger) off the server: `silent` only quiets what it prints,
 * and it still wraps every response body in a counting stream and colours a line for it, about a
 * tenth of the server's CPU. Koa composes its middleware when the server starts listening.
 */
function dropRequestLog(server: S3rver): void {
  const { middleware } = server as unknown as { middleware: { name: string }[] };
  const index = middleware.findIndex((handler) => handler.name === 'logger');
  // An s3rver without it is fine as it is.
  if (index !== -1) middleware.splice(index, 1);
}

/** The server's folder (`given`, or a temporary one) with its objects and partial writes. */
async function prepareDirectory(given: string | undefined) {
  const directory = given === undefined ? await mkdtemp(join(tmpdir(), 'hopper-s3-')) : resolve(given);
  const objects = join(directory, 'objects');
  const partial = join(directory, 'partial');
  // What an earlier process on this directory left unfinished (it was killed mid-write) is no
  // one's now, no client of it living: an object whose bytes were in place gets its metadata,
  // one half-written goes, and so do its multipart uploads
  // below, as the bucket's lifecycle rule aborts them on AWS.
  await mkdir(objects, { recursive: true });
  await finishCommits(objects, partial);
  await rm(partial, { recursive: true, force: true });
  await mkdir(partial, { recursive: true });
  return { directory, objects, partial };
}

/**
 * An S3 client for the local S3: path-style addressing, and otherwise the SDK's defaults, as in
 * Lambda (a CRC32 on every upload, checked by the local S3: checksums.ts).
 */
export function localS3Client(endpoint: string): S3Client {
  return new S3Client({
    endpoint,
    region: LOCAL_S3_REGION,
    credentials: LOCAL_S3_CREDENTIALS,
    forcePathStyle: true,
  });
}

/** Throws a clear error when 127.0.0.1:`port` cannot be listened on (in use, not allowed). */
async function assertPortFree(port: number): Promise<void> {
  const probe = createServer();
  try {
    await once(probe.listen(port, '127.0.0.1'), 'listening');
  } catch (error) {
    const { code, message } = error as NodeJS.ErrnoException;
    const why = code === 'EADDRINUSE' ? 'is in use' : `cannot be used (${message})`;
    throw new Error(
      `the local S3 port ${String(port)} on 127.0.0.1 ${why}: choose another (--s3-port), or leave it out for a free one`,
      { cause: error },
    );
  }
  await once(probe.close(), 'close');
}
