/**
 * Many drops at once against the simulated service limited to 20 API requests per second: the
 * client's shared, adaptive rate limit keeps Hopper under the limit instead of spending its
 * retries on 429s, so every run succeeds and no credit is spent twice.
 *
 * `npm test` runs 20 drops (about 280 requests: 13 s at the limit, the first 20 at once); `npm run test:reliability`
 * (HOPPER_RELIABILITY=full) runs 100. Both print the wall time against the lower bound the limit
 * sets; only the full form holds it to the goal's 1.5x, since at 20 drops local mode's start-up
 * and the last runs' tail weigh too much (docs/performance.md, Scale).
 */
import { describe, expect, it } from 'vitest';
import { runManyDrops } from '../../testkit/scale-run.js';

const FULL = process.env.HOPPER_RELIABILITY === 'full';
const DROPS = FULL ? 100 : 20;
const RATE = 20;
// Bounds, not goals: 100 runs took 78 to 169 s here, quiet or loaded.
const TIMEOUT_MS = FULL ? 900_000 : 300_000;

describe(`scale: ${DROPS} drops at once, the service limited to ${RATE} requests per second`, () => {
  it(
    'every run succeeds, one credit per model, and 429s stay few',
    async () => {
      const result = await runManyDrops({ drops: DROPS, maxRequestsPerSecond: RATE, timeoutMs: TIMEOUT_MS });
      const ratio = result.wallMs / result.lowerBoundMs;
      console.log(
        `scale: ${result.succeeded}/${result.drops} succeeded, ${result.creditsSpent} credits, ${result.models} models, ` +
          `${result.requestsServed} requests served, ${result.rateLimited} answered 429, ` +
          `${(result.wallMs / 1000).toFixed(1)} s wall vs ${(result.lowerBoundMs / 1000).toFixed(1)} s lower bound (${ratio.toFixed(2)}x)`,
      );
      expect(result.failures).toEqual([]);
      expect(result.succeeded).toBe(DROPS);
      // Net credits = models: no training started twice for a drop.
      expect(result.models).toBe(DROPS);
      expect(result.creditsSpent).toBe(DROPS);
      // The limiter learns the limit from the first 429s and then stays under it.
      expect(result.rateLimited).toBeLessThanOrEqual(0.1 * result.requestsServed);
      expect(result.failedInvocations).toBe(0);
      // Start-up and the last runs' tail weigh too much in the bounded form to hold it to the goal.
      if (FULL) expect(ratio).toBeLessThanOrEqual(1.5);
    },
    TIMEOUT_MS + 60_000,
  );
});
