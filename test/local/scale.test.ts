/**
 * Many drops at once against the simulated service limited to 20 API requests per second: the
 * client's shared, adaptive rate limit keeps Hopper under the limit instead of spending its
 * retries on 429s, so every run succeeds and no credit is spent twice.
 */
import { describe, expect, it } from 'vitest';
import { runManyDrops } from '../helpers/scale-run.js';

// Bounded: 50 runs of some 14 requests, 35 s at 20 per second; minutes when the machine is busy.
describe('scale: 50 drops at once, the service limited to 20 requests per second', () => {
  it('every run succeeds, one credit per model, and 429s stay few', async () => {
    const result = await runManyDrops({ drops: 50, maxRequestsPerSecond: 20, timeoutMs: 400_000 });
    expect(result.failures).toEqual([]);
    expect(result.succeeded).toBe(50);
    // Net credits = models: no training started twice for a drop.
    expect(result.models).toBe(50);
    expect(result.creditsSpent).toBe(50);
    // The limiter learns the limit from the first 429s and then stays under it.
    expect(result.rateLimited).toBeLessThanOrEqual(0.1 * result.requestsServed);
    expect(result.failedInvocations).toBe(0);
  }, 420_000);
});
