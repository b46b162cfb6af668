/**
 * Counting the S3 requests of one invocation, by price class, for the run's summary (usage.ts):
 * a middleware on the shared S3 client adds each request to the meter of the invocation that
 * sent it, found through the async context (invocation-scope.ts).
 */
import type { S3Client } from '@aws-sdk/client-s3';
import type { S3Requests } from '../records/status/usage.js';
import { currentInvocation } from './invocation-scope.js';

export type { S3Requests } from '../records/status/usage.js';

/**
 * The requests of the status write that ends an invocation: one PUT, conditional on the status
 * the invocation read as it began (counted then). A write that loses a race reads again.
 */
export const STATUS_WRITE_REQUESTS: S3Requests = { put: 1, get: 0 };

/** A counter of S3 requests, live while its invocation runs (see invocation-scope.ts). */
export class S3RequestMeter {
  #put = 0;
  #get = 0;
  #paused = 0;

  count(commandName: string): void {
    if (this.#paused > 0) return;
    const kind = priceClassOf(commandName);
    if (kind === 'put') this.#put += 1;
    else if (kind === 'get') this.#get += 1;
  }

  get requests(): S3Requests {
    return { put: this.#put, get: this.#get };
  }

  /** Runs `work` without counting its requests (ones already counted in advance). */
  async uncounted<T>(work: () => Promise<T>): Promise<T> {
    this.#paused += 1;
    try {
      return await work();
    } finally {
      this.#paused -= 1;
    }
  }
}

/** S3's request price classes; DELETE and abort requests are free. */
export function priceClassOf(commandName: string): 'put' | 'get' | 'free' {
  const action = commandName.replace(/Command$/, '');
  if (/^(Delete|AbortMultipartUpload)/.test(action)) return 'free';
  if (/^(Put|Copy|Create|Upload|Complete|List)/.test(action)) return 'put';
  return 'get';
}

const metered = new WeakSet<S3Client>();

/**
 * Counts `s3`'s requests into the meter of the invocation that sends them: the meter travels
 * with the async context, so two invocations sharing one client (local mode) count their own.
 * A middleware at the deserialize step runs once per HTTP attempt, retries included.
 */
export function countS3Requests(s3: S3Client): void {
  if (metered.has(s3)) return;
  metered.add(s3);
  s3.middlewareStack.add(
    (next, context) => (args) => {
      currentInvocation()?.meter.count(context.commandName ?? '');
      return next(args);
    },
    { step: 'deserialize', name: 'hopperRequestMeter', override: true },
  );
}

/** `requests` plus the status write that ends an invocation. */
export function withStatusWrite(requests: S3Requests): S3Requests {
  return { put: requests.put + STATUS_WRITE_REQUESTS.put, get: requests.get + STATUS_WRITE_REQUESTS.get };
}
