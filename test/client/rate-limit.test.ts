import { describe, expect, it } from 'vitest';
import { AdaptiveRateLimiter, sharedRateLimiter } from '../../lambdas/service-client/rate-limit.js';

/** A limiter on a clock that only the test and the limiter's sleeps move. */
function onFakeClock() {
  let now = 0;
  const starts: number[] = [];
  const limiter = new AdaptiveRateLimiter({
    now: () => now,
    // The clock moves when the sleep ends (on a later turn of the event loop), so that what was
    // let go before it has recorded its start first.
    sleep: (ms) =>
      new Promise((resolve) =>
        setImmediate(() => {
          now += ms;
          resolve();
        }),
      ),
  });
  const request = async () => {
    await limiter.acquire();
    starts.push(now);
  };
  return {
    limiter,
    starts,
    request,
    advance: (ms: number) => {
      now += ms;
    },
    now: () => now,
  };
}

describe('AdaptiveRateLimiter', () => {
  it('does not hold back a request before the service has answered 429', async () => {
    const { limiter, starts, request } = onFakeClock();
    for (let i = 0; i < 50; i++) await request();
    expect(starts.every((start) => start === 0)).toBe(true);
    expect(limiter.stats()).toMatchObject({ perSecond: Infinity, delayed: 0 });
  });

  it('after a 429, spaces requests at half the rate the service refused', async () => {
    const { limiter, starts, request, advance } = onFakeClock();
    // 40 requests in the last second, then a 429.
    for (let i = 0; i < 40; i++) {
      advance(25);
      await request();
    }
    limiter.throttled();
    expect(limiter.stats().perSecond).toBe(20);
    starts.length = 0;
    for (let i = 0; i < 5; i++) await request();
    // 50 ms apart (20 per second, a little more as it grows).
    const gaps = starts.slice(1).map((start, index) => start - (starts[index] ?? 0));
    for (const gap of gaps) expect(gap).toBeGreaterThan(45);
    for (const gap of gaps) expect(gap).toBeLessThanOrEqual(50);
  });

  it('halves once per burst of 429s, then grows by one request per second each second', async () => {
    const { limiter, request, advance } = onFakeClock();
    for (let i = 0; i < 20; i++) await request();
    limiter.throttled();
    const after = limiter.stats().perSecond;
    expect(after).toBe(10);
    // The requests already in flight get 429 too: the same burst.
    limiter.throttled();
    limiter.throttled();
    expect(limiter.stats().perSecond).toBe(10);
    advance(5000);
    await request();
    expect(limiter.stats().perSecond).toBeCloseTo(15, 5);
    // A 429 later halves what was sent in the last second (one request here), never below the floor.
    limiter.throttled();
    expect(limiter.stats().perSecond).toBe(0.5);
    expect(limiter.stats().throttled).toBe(4);
  });

  it('drains a queue built at a low rate at the rate of each moment, as it grows back', async () => {
    const { limiter, starts, request, advance, now } = onFakeClock();
    for (let i = 0; i < 4; i++) {
      advance(250);
      await request();
    }
    limiter.throttled();
    expect(limiter.stats().perSecond).toBe(2);
    starts.length = 0;
    const queuedAt = now();
    await Promise.all(Array.from({ length: 20 }, () => request()));
    // At the 2 per second they queued at, the last would start 9.5 s on; at the rate of each
    // moment (2 + t per second) the 20 start within about 5 s, one at a time, in order.
    const last = Math.max(...starts) - queuedAt;
    expect(last).toBeGreaterThan(3_000);
    expect(last).toBeLessThan(6_000);
    const gaps = starts.slice(1).map((start, index) => start - (starts[index] ?? 0));
    for (const gap of gaps) expect(gap).toBeGreaterThan(0);
    expect(gaps[gaps.length - 1]).toBeLessThan(gaps[0] ?? 0);
    expect(limiter.stats().delayed).toBe(20);
  });

  it('is one limiter per service origin for the whole process', () => {
    const a = sharedRateLimiter('http://127.0.0.1:9001/v1');
    expect(sharedRateLimiter('http://127.0.0.1:9001')).toBe(a);
    expect(sharedRateLimiter('http://127.0.0.1:9002')).not.toBe(a);
  });
});
