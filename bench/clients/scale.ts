/**
 * Measured client of the scale benchmark (bench/scale.ts): local mode (its S3, the state
 * machine and the real handlers, all in this process) against the simulated service in its own
 * process, with many drops put at once.
 */
import { startLocalMode } from '../../local/emulator/local-mode.js';
import { sharedRateLimiter } from '../../lambdas/service-client/rate-limit.js';
import { dropAllAtOnce, SCALE_LOCAL_MODE } from '../../testkit/scale-run.js';
import type { ClientResult, Measure } from '../harness/protocol.js';
import { numberArg } from './setup.js';

/** Puts `drops` drops at once and waits for every run (within `timeoutMs`); measures that alone. */
export async function dropMany(args: Record<string, unknown>, measure: Measure): Promise<ClientResult> {
  const { apiUrl, apiKey } = args;
  if (typeof apiUrl !== 'string' || typeof apiKey !== 'string') {
    throw new Error('client args: apiUrl and apiKey are missing');
  }
  // Synthesis, the S3 server and the handlers' modules before the measured part.
  const local = await startLocalMode({ ...SCALE_LOCAL_MODE, service: { url: apiUrl, apiKey } });
  try {
    const { result, measurement } = await measure(() =>
      dropAllAtOnce(local, numberArg(args, 'drops'), numberArg(args, 'timeoutMs')),
    );
    // The limiter local mode's runs shared (one per process and service).
    const limiter = sharedRateLimiter(apiUrl).stats();
    return {
      ...result,
      ...measurement,
      // What Hopper's pacing did (lambdas/service-client/rate-limit.ts); Infinity does not cross IPC.
      limiterPerSecond: Number.isFinite(limiter.perSecond) ? limiter.perSecond : null,
      limiterDelayed: limiter.delayed,
      limiterDelayedMs: limiter.delayedMs,
    };
  } finally {
    await local.close();
  }
}
