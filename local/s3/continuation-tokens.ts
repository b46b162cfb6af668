/**
 * ListObjectsV2 past one page (1000 keys) on any Node version.
 *
 * s3rver 3.7.1 (its last release) makes and reads continuation tokens with the DES cipher, which
 * the OpenSSL 3 of current Node versions leaves out (ERR_OSSL_EVP_UNSUPPORTED): a listing with
 * more keys than a page fails with InternalError, and any drop or bucket listing past 1000 keys
 * with it. Its controller does everything else right, so here it is wrapped, not rewritten: a
 * token of ours (the bucket and the last key listed, base64url; S3 tokens are opaque) comes in
 * as start-after, the store's "truncated" is kept from the controller (which would cipher a
 * token) and the page is marked truncated with our token afterwards. The store is the one in
 * key order (key-order-listing.ts), which says the last key a page covers. routes.js calls the
 * controller through its module's exports, so replacing the export is enough.
 */
import { createRequire } from 'node:module';
import { S3Error } from './s3-error.js';
import type { KeyOrderListing } from './key-order-listing.js';

/** What the wrapper touches of s3rver's Koa context (untyped in s3rver). */
interface ListContext {
  readonly query: Record<string, string | string[] | undefined>;
  readonly params: { readonly bucket: string };
  readonly store: ObjectStore;
  body: unknown;
}

interface ObjectStore {
  listObjects(bucket: string, options: unknown): Promise<KeyOrderListing>;
}

interface BucketControllers {
  getBucket(ctx: ListContext): Promise<void>;
}

const require = createRequire(import.meta.url);
const controllers = require('s3rver/lib/controllers/bucket.js') as BucketControllers;

/** Marks tokens of ours: anything else is refused as S3 refuses a foreign token. */
const TOKEN_PREFIX = 'hopper-local-1.';

/** s3rver's own controller, taken at load: installing ours again replaces ours with itself. */
const original = controllers.getBucket.bind(controllers);

/** Replaces s3rver's GET-bucket controller with one whose ListObjectsV2 pages work (idempotent). */
export function useWorkingContinuationTokens(): void {
  controllers.getBucket = getBucket;
}

export function continuationToken(bucket: string, lastKey: string): string {
  return `${TOKEN_PREFIX}${Buffer.from(JSON.stringify([bucket, lastKey])).toString('base64url')}`;
}

/** The key a token of `bucket` continues after; throws S3's InvalidArgument for any other token. */
export function keyAfterToken(bucket: string, token: string): string {
  if (token.startsWith(TOKEN_PREFIX)) {
    try {
      const value: unknown = JSON.parse(
        Buffer.from(token.slice(TOKEN_PREFIX.length), 'base64url').toString(),
      );
      if (Array.isArray(value) && value[0] === bucket && typeof value[1] === 'string') return value[1];
    } catch {
      // Not JSON: refused below.
    }
  }
  throw new S3Error('InvalidArgument', 'The continuation token provided is incorrect', {
    ArgumentName: 'continuation-token',
  });
}

async function getBucket(ctx: ListContext): Promise<void> {
  if (ctx.query['list-type'] !== '2') return original(ctx);
  const bucket = ctx.params.bucket;
  const token = ctx.query['continuation-token'];
  const query = { ...ctx.query };
  delete query['continuation-token'];
  if (typeof token === 'string' && token !== '') query['start-after'] = keyAfterToken(bucket, token);
  let lastKeyOfTruncatedPage: string | undefined;
  const store: ObjectStore = {
    async listObjects(listed, options) {
      const result = await ctx.store.listObjects(listed, options);
      if (!result.isTruncated) return result;
      lastKeyOfTruncatedPage = result.lastKey;
      return { ...result, isTruncated: false };
    },
  };
  // The controller sees our query and store; it sets the body on the real response through
  // Koa's delegating accessors, which the view inherits.
  const view = Object.create(ctx, { query: { value: query }, store: { value: store } }) as ListContext;
  await original(view);
  const answer = (ctx.body as { ListBucketResult: Record<string, unknown> }).ListBucketResult;
  if (typeof token === 'string' && token !== '') {
    answer.ContinuationToken = token;
    answer.StartAfter = undefined;
  }
  if (lastKeyOfTruncatedPage !== undefined) {
    answer.IsTruncated = true;
    answer.NextContinuationToken = continuationToken(bucket, lastKeyOfTruncatedPage);
  }
}
