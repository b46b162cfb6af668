import { describe, expect, it } from 'vitest';
import {
  ConnectionError,
  InvalidRequestError,
  NoCreditsError,
  RateLimitedError,
  ServerError,
  TimeoutError,
  UnavailableError,
  type ServiceError,
} from '../../lambdas/service-client/index.js';
import {
  backoffDelayMs,
  mayRetry,
  parseRetryAfterMs,
  retryDelayMs,
  SILENT_LOGGER,
  withRetries,
  type RetrySettings,
} from '../../lambdas/service-client/retry.js';

const endpoint = 'GET /v1/test';

function settings(overrides: Partial<RetrySettings> = {}): RetrySettings & { slept: number[] } {
  const slept: number[] = [];
  return {
    maxRetries: 5,
    backoffBaseMs: 250,
    backoffCapMs: 20_000,
    maxRetryAfterMs: 60_000,
    callBudgetMs: Infinity,
    now: () => 0,
    random: () => 0.5,
    logger: SILENT_LOGGER,
    sleep: (ms) => {
      slept.push(ms);
      return Promise.resolve();
    },
    ...overrides,
    slept,
  };
}

describe('backoffDelayMs (full jitter)', () => {
  it('is random(0, min(cap, base * 2^n))', () => {
    const almostOne = settings({ random: () => 0.999999 });
    expect([0, 1, 2, 3].map((n) => backoffDelayMs(n, almostOne))).toEqual([249, 499, 999, 1999]);
    expect(backoffDelayMs(3, settings({ random: () => 0.5 }))).toBe(1000);
  });

  it('stays under the cap however many retries', () => {
    const almostOne = settings({ random: () => 0.999999 });
    expect(backoffDelayMs(7, almostOne)).toBe(19_999);
    expect(backoffDelayMs(2000, almostOne)).toBe(19_999);
  });

  it('can be zero: the jitter is full, not added to a floor', () => {
    expect(backoffDelayMs(4, settings({ random: () => 0 }))).toBe(0);
  });
});

describe('parseRetryAfterMs', () => {
  const now = Date.parse('2025-01-01T00:00:00Z');

  it('reads delta-seconds', () => {
    expect(parseRetryAfterMs('3', now)).toBe(3000);
    expect(parseRetryAfterMs(' 0 ', now)).toBe(0);
    expect(parseRetryAfterMs('1.5', now)).toBe(1500);
  });

  it('reads an HTTP date relative to now, never negative', () => {
    expect(parseRetryAfterMs('Wed, 01 Jan 2025 00:00:07 GMT', now)).toBe(7000);
    expect(parseRetryAfterMs('Tue, 31 Dec 2024 23:59:00 GMT', now)).toBe(0);
  });

  it('gives undefined for absent or unreadable values', () => {
    expect(parseRetryAfterMs(undefined, now)).toBeUndefined();
    expect(parseRetryAfterMs('', now)).toBeUndefined();
    expect(parseRetryAfterMs('-1', now)).toBeUndefined();
    expect(parseRetryAfterMs('soon', now)).toBeUndefined();
    expect(parseRetryAfterMs('2025-01-01', now)).toBeUndefined();
    expect(parseRetryAfterMs('Wed, 99 Foo 2025 nonsense', now)).toBeUndefined();
  });
});

describe('retryDelayMs', () => {
  it('honours Retry-After, capped by maxRetryAfterMs, plus a full-jitter spread', () => {
    const s = settings({ maxRetryAfterMs: 10_000, random: () => 0 });
    const limited = (retryAfterMs: number) => new RateLimitedError({ message: 'x', endpoint, retryAfterMs });
    expect(retryDelayMs(limited(2000), 0, s)).toBe(2000);
    expect(retryDelayMs(limited(120_000), 0, s)).toBe(10_000);
    // random 0.5: half of min(cap, 250 * 2^n) on top, never less than Retry-After.
    const spread = settings({ maxRetryAfterMs: 10_000, random: () => 0.5 });
    expect(retryDelayMs(limited(2000), 0, spread)).toBe(2125);
    expect(retryDelayMs(limited(2000), 2, spread)).toBe(2500);
  });

  it('falls back to backoff without Retry-After', () => {
    const error = new UnavailableError({ message: 'x', endpoint, status: 503, retryable: true });
    expect(retryDelayMs(error, 2, settings())).toBe(500);
  });
});

describe('mayRetry', () => {
  const transient: ServiceError[] = [
    new RateLimitedError({ message: 'x', endpoint, status: 429, retryable: true }),
    new ServerError({ message: 'x', endpoint, status: 500, retryable: true }),
    new UnavailableError({ message: 'x', endpoint, status: 503, retryable: true }),
    new ConnectionError({ message: 'x', endpoint, requestSent: true }),
    new ConnectionError({ message: 'x', endpoint, requestSent: false }),
    new TimeoutError({ message: 'x', endpoint, requestSent: true }),
  ];

  it("retries every transient failure under 'transient'", () => {
    expect(transient.map((error) => mayRetry(error, 'transient'))).toEqual([
      true,
      true,
      true,
      true,
      true,
      true,
    ]);
  });

  it("retries only proven-unprocessed failures under 'unprocessed'", () => {
    expect(transient.map((error) => mayRetry(error, 'unprocessed'))).toEqual([
      true, // 429
      false, // 500
      false, // 503
      false, // dropped after sending
      true, // refused before sending
      false, // timeout
    ]);
  });

  it('never retries a final error', () => {
    const final = new NoCreditsError({ message: 'x', endpoint, status: 402 });
    expect(mayRetry(final, 'transient')).toBe(false);
    expect(mayRetry(final, 'unprocessed')).toBe(false);
  });
});

describe('withRetries', () => {
  it('retries transient failures with backoff, then succeeds', async () => {
    const s = settings();
    let calls = 0;
    const result = await withRetries(endpoint, 'transient', s, () => {
      calls++;
      if (calls < 4)
        return Promise.reject(new ServerError({ message: 'x', endpoint, status: 500, retryable: true }));
      return Promise.resolve('ok');
    });
    expect(result).toBe('ok');
    expect(calls).toBe(4);
    expect(s.slept).toEqual([125, 250, 500]);
  });

  it('gives up after maxRetries and throws the last error', async () => {
    const s = settings({ maxRetries: 2 });
    let calls = 0;
    const failing = () => {
      calls++;
      return Promise.reject(
        new UnavailableError({ message: `x${calls}`, endpoint, status: 503, retryable: true }),
      );
    };
    await expect(withRetries(endpoint, 'transient', s, failing)).rejects.toMatchObject({ message: 'x3' });
    expect(calls).toBe(3);
    expect(s.slept).toHaveLength(2);
  });

  it('starts no retry past the call budget: a hung service ends the call within budget + one timeout', async () => {
    let clock = 0;
    const s = settings({ maxRetries: 10, callBudgetMs: 40_000, now: () => clock });
    let calls = 0;
    // Each attempt waits out a 20 s timeout, as against a service that never answers.
    const hung = () => {
      calls++;
      clock += 20_000;
      return Promise.reject(new TimeoutError({ message: 'no answer', endpoint, requestSent: true }));
    };
    await expect(withRetries(endpoint, 'transient', s, hung)).rejects.toBeInstanceOf(TimeoutError);
    // Attempt 1 ends at 20 s, attempt 2 at 40 s + the backoff: no third attempt.
    expect(calls).toBe(2);
    expect(s.slept).toEqual([125]);
  });

  it('does not retry a final error, nor an error that is not a ServiceError', async () => {
    const s = settings();
    let calls = 0;
    const final = () => {
      calls++;
      return Promise.reject(new InvalidRequestError({ message: 'x', endpoint, status: 400 }));
    };
    await expect(withRetries(endpoint, 'transient', s, final)).rejects.toBeInstanceOf(InvalidRequestError);
    const bug = () => {
      calls++;
      return Promise.reject(new TypeError('bug'));
    };
    await expect(withRetries(endpoint, 'transient', s, bug)).rejects.toBeInstanceOf(TypeError);
    expect(calls).toBe(2);
    expect(s.slept).toEqual([]);
  });

  it('tells the hook about each failure it retries, and logs a warning', async () => {
    const warnings: string[] = [];
    const s = settings({ logger: { debug: () => undefined, warn: (line) => warnings.push(line) } });
    const seen: string[] = [];
    let calls = 0;
    await withRetries(
      endpoint,
      'transient',
      s,
      () => {
        calls++;
        if (calls === 1)
          return Promise.reject(new TimeoutError({ message: 'x', endpoint, requestSent: true }));
        return Promise.resolve(calls);
      },
      { onRetry: (error) => seen.push(error.code) },
    );
    expect(seen).toEqual(['timeout']);
    expect(warnings).toEqual([`${endpoint}: timeout; retry 1 of 5 in 125 ms`]);
  });
});
