import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { InvocationContext } from '../../lambdas/runtime/index.js';
import { LAMBDA_TIMEOUT_ERROR, retryable, RunError } from '../../lambdas/core/errors/index.js';
import { GetObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import {
  AbandonedInvocationError,
  asLambda,
  LambdaInvocationError,
  refuseAbandonedRequests,
  RunningInvocations,
} from '../../local/emulator/lambda-invoke.js';
import { localS3Client, startLocalS3 } from '../../local/s3/local-s3.js';
import { withResolvers } from '../../local/emulator/with-resolvers.js';
import { withTimeout } from '../../testkit/timeout.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** What the invocation rejected with; fails the test when it resolved. */
async function rejection(invocation: Promise<unknown>): Promise<Error> {
  const settled = await invocation.then(
    (value: unknown) => ({ value }),
    (error: unknown) => ({ error }),
  );
  if (!('error' in settled)) throw new Error(`expected a failure, got ${JSON.stringify(settled.value)}`);
  if (!(settled.error instanceof Error)) throw new Error(`expected an Error, got ${String(settled.error)}`);
  return settled.error;
}

/** The `{ errorType, errorMessage }` a Lambda error carries as its message. */
function causeOf(error: Error): unknown {
  return JSON.parse(error.message);
}

afterEach(() => {
  vi.useRealTimers();
});

describe('asLambda', () => {
  it("passes the event through and returns the handler's result", async () => {
    const invoke = asLambda((event) => Promise.resolve({ got: event }), 5);
    await expect(invoke({ run: { drop: 'a' } })).resolves.toEqual({ got: { run: { drop: 'a' } } });
  });

  it('gives the handler the time left before the timeout, counting down', async () => {
    vi.useFakeTimers({ now: 1_000_000 });
    const seen: number[] = [];
    const invoke = asLambda(async (_event, context) => {
      seen.push(context.getRemainingTimeInMillis());
      await new Promise((resolve) => setTimeout(resolve, 1_200));
      seen.push(context.getRemainingTimeInMillis());
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      seen.push(context.getRemainingTimeInMillis());
      return 'done';
    }, 3);
    const result = invoke({});
    await vi.advanceTimersByTimeAsync(2_200);
    await expect(result).resolves.toBe('done');
    expect(seen).toEqual([3_000, 1_800, 800]);
    // The timeout's timer does not outlive the invocation.
    expect(vi.getTimerCount()).toBe(0);
  });

  it('never reports negative time left (a handler that ignores it gets 0, then the timeout)', async () => {
    vi.useFakeTimers({ now: 1_000_000 });
    let context: InvocationContext | undefined;
    const invoke = asLambda((_event, given) => {
      context = given;
      return new Promise(() => undefined);
    }, 1);
    const result = rejection(invoke({}));
    await vi.advanceTimersByTimeAsync(1_000);
    expect((await result).name).toBe(LAMBDA_TIMEOUT_ERROR);
    vi.setSystemTime(Date.now() + 5_000);
    expect(context?.getRemainingTimeInMillis()).toBe(0);
  });

  it('gives every invocation its own request id', async () => {
    const ids: string[] = [];
    const invoke = asLambda((_event, context) => {
      ids.push(context.awsRequestId);
      return Promise.resolve(null);
    }, 5);
    await invoke({});
    await invoke({});
    await invoke({});
    expect(ids).toHaveLength(3);
    for (const id of ids) expect(id).toMatch(UUID);
    expect(new Set(ids).size).toBe(3);
  });

  it("fails with the handler's error name and a JSON cause, as Step Functions sees a Lambda error", async () => {
    const thrown = retryable('service_unavailable', 'the service answered 503');
    const error = await rejection(asLambda(() => Promise.reject(thrown), 5)({}));
    expect(error).toBeInstanceOf(LambdaInvocationError);
    expect(error.name).toBe('Hopper.Retryable');
    expect(causeOf(error)).toEqual({
      errorType: 'Hopper.Retryable',
      errorMessage: 'service_unavailable: the service answered 503',
    });

    const final = await rejection(
      asLambda(() => Promise.reject(new RunError('no_credits', 'buy credits')), 5)({}),
    );
    expect(final.name).toBe('Hopper.Failed');
    expect(causeOf(final)).toEqual({ errorType: 'Hopper.Failed', errorMessage: 'no_credits: buy credits' });
  });

  it('fails as Error with the text of something thrown that is not an Error', async () => {
    const error = await rejection(asLambda(() => Promise.reject(new Error('boom')), 5)({}));
    expect(causeOf(error)).toEqual({ errorType: 'Error', errorMessage: 'boom' });
    // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- what is being tested
    const odd = await rejection(asLambda(() => Promise.reject('a string'), 5)({}));
    expect(odd.name).toBe('Error');
    expect(causeOf(odd)).toEqual({ errorType: 'Error', errorMessage: 'a string' });
  });

  it('fails with Sandbox.Timedout when the handler runs past its timeout', async () => {
    const started = Date.now();
    const error = await rejection(asLambda(() => new Promise(() => undefined), 0.05)({}));
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(error).toBeInstanceOf(LambdaInvocationError);
    expect(error.name).toBe(LAMBDA_TIMEOUT_ERROR);
    expect(causeOf(error)).toMatchObject({
      errorType: LAMBDA_TIMEOUT_ERROR,
      errorMessage: expect.stringMatching(/^Task timed out after /) as unknown,
    });
  });

  it('words the timeout as Lambda does (`Task timed out after 3.00 seconds`)', async () => {
    vi.useFakeTimers();
    const result = rejection(asLambda(() => new Promise(() => undefined), 3)({}));
    await vi.advanceTimersByTimeAsync(2_999);
    let settled = false;
    void result.then(() => (settled = true));
    await vi.advanceTimersByTimeAsync(0);
    expect(settled).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(causeOf(await result)).toEqual({
      errorType: LAMBDA_TIMEOUT_ERROR,
      errorMessage: 'Task timed out after 3.00 seconds',
    });
  });

  it('lets an abandoned handler fail later without an unhandled rejection', async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown): void => {
      unhandled.push(reason);
    };
    process.on('unhandledRejection', onUnhandled);
    try {
      let failedLate = false;
      const invoke = asLambda(async () => {
        await sleep(150);
        failedLate = true;
        throw retryable('service_unavailable', 'too late');
      }, 0.05);
      const error = await rejection(invoke({}));
      expect(error.name).toBe(LAMBDA_TIMEOUT_ERROR);
      // Bounded: the handler fails 150 ms after it started.
      await vi.waitFor(
        () => {
          expect(failedLate).toBe(true);
        },
        { timeout: 2_000, interval: 25 },
      );
      await sleep(50); // unhandled rejections are reported after the microtasks of the tick
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });
});

describe("an invocation's requests after its timeout", () => {
  it('are refused, so its late writes never land; before the timeout and outside an invocation they pass', async () => {
    const s3 = await startLocalS3();
    const client = localS3Client(s3.endpoint);
    refuseAbandonedRequests(client);
    const put = (key: string) =>
      client.send(new PutObjectCommand({ Bucket: s3.bucket, Key: key, Body: key }));
    const exists = (key: string) =>
      s3.client.send(new GetObjectCommand({ Bucket: s3.bucket, Key: key })).then(
        () => true,
        () => false,
      );
    try {
      const late = withResolvers<unknown>();
      const invoke = asLambda(async () => {
        await put('status/early.json');
        await sleep(200);
        // Past the 50 ms timeout: the state machine has moved on (and may have retried the Task).
        await put('status/late.json').then(late.resolve, late.resolve);
      }, 0.05);
      expect((await rejection(invoke({}))).name).toBe(LAMBDA_TIMEOUT_ERROR);
      const refused = await withTimeout(late.promise, 'the late write', 5_000);
      expect(refused).toBeInstanceOf(AbandonedInvocationError);
      expect(await exists('status/early.json')).toBe(true);
      expect(await exists('status/late.json')).toBe(false);
      // Another invocation of the same function, and code outside any, still write.
      await asLambda(() => put('status/next.json'), 5)({});
      await put('status/outside.json');
      expect(await exists('status/next.json')).toBe(true);
      expect(await exists('status/outside.json')).toBe(true);
    } finally {
      client.destroy();
      await s3.close();
    }
  });
});

describe('RunningInvocations', () => {
  const context: InvocationContext = { getRemainingTimeInMillis: () => 1_000, awsRequestId: 'test' };

  it('waits for an invocation its execution no longer awaits (abandoned at the timeout)', async () => {
    const invocations = new RunningInvocations();
    let wrote = false;
    const invoke = asLambda(
      invocations.track(async () => {
        await sleep(200);
        wrote = true; // a status write landing after the state machine moved on
      }),
      0.05,
    );
    expect((await rejection(invoke({}))).name).toBe(LAMBDA_TIMEOUT_ERROR);
    expect(wrote).toBe(false);
    await invocations.settled(5_000);
    expect(wrote).toBe(true);
  });

  it('waits for a failed invocation too, and for one started while it waited', async () => {
    const invocations = new RunningInvocations();
    const order: string[] = [];
    const handler = invocations.track(async (event) => {
      await sleep(event === 'first' ? 50 : 150);
      order.push(String(event));
      if (event === 'first') {
        void handler('second', context).catch(() => undefined);
        throw new Error('first failed');
      }
    });
    void handler('first', context).catch(() => undefined);
    await invocations.settled(5_000);
    expect(order).toEqual(['first', 'second']);
  });

  it('gives up at its bound on an invocation that never ends', async () => {
    const invocations = new RunningInvocations();
    void invocations.track(() => new Promise(() => undefined))({}, context);
    const started = Date.now();
    await invocations.settled(100);
    expect(Date.now() - started).toBeGreaterThanOrEqual(90);
    expect(Date.now() - started).toBeLessThan(2_000);
  });
});
