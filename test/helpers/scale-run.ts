/**
 * Many drops at once in local mode against the simulated service limited to N API requests per
 * second: what the scale test and the scale benchmark both run. Each drop is one small data file
 * without held-out examples; every run's outcome, the credits, the service's request log and the
 * client's rate limiter are reported.
 */
import { ENDPOINTS, type EndpointName } from '../../local/service/index.js';
import { startLocalMode } from '../../local/mode/local-mode.js';
import { sharedRateLimiter } from '../../lambdas/service-client/rate-limit.js';
import type { RunStatus } from '../../lambdas/run/status.js';
import { inboxKey, TRAIN_JSON } from '../../lambdas/storage/keys.js';
import { BRISK_SERVICE, finished, nextExecution } from './local-mode.js';
import { putDrop } from './pipeline.js';

export interface ScaleOptions {
  readonly drops: number;
  readonly maxRequestsPerSecond: number;
  /** How long all runs may take before the run fails (a bound, not a goal). */
  readonly timeoutMs: number;
}

export interface ScaleResult {
  readonly drops: number;
  readonly succeeded: number;
  /** Error codes of the runs that did not succeed. */
  readonly failures: readonly string[];
  readonly creditsSpent: number;
  /** Models the service holds: one per training started. */
  readonly models: number;
  /** API requests the service served (its request log, the 429s it gave left out). */
  readonly requestsServed: number;
  /** Answered 429 by the service's rate limit. */
  readonly rateLimited: number;
  /** Lambda invocations that failed (and were retried by the state machine). */
  readonly failedInvocations: number;
  readonly wallMs: number;
  /** requestsServed / maxRequestsPerSecond: no client can do them faster. */
  readonly lowerBoundMs: number;
}

const FILE_ENDPOINTS: readonly EndpointName[] = ['fileUpload', 'fileDownload'];
const CSV = ['id,text', 'r1,The lamp is bright.', 'r2,The strap broke on day one.'].join('\n');

export async function runManyDrops(options: ScaleOptions): Promise<ScaleResult> {
  const credits = options.drops + 10;
  const local = await startLocalMode({
    waitMs: 10,
    dropQuietMs: 0,
    simulated: {
      ...BRISK_SERVICE,
      heldOutCount: 0,
      credits,
      maxRequestsPerSecond: options.maxRequestsPerSecond,
    },
  });
  try {
    const service = local.simulated!;
    const names = Array.from(
      { length: options.drops },
      (_, index) => `scale-${String(index).padStart(4, '0')}`,
    );
    const startedAt = performance.now();
    const runs = names.map((drop) => nextExecution(local, inboxKey(drop, TRAIN_JSON)));
    await Promise.all(
      names.map((drop) =>
        putDrop(local.s3.client, local.bucket, drop, { 'reviews.csv': CSV, 'train.json': '{}' }),
      ),
    );
    const statuses = await Promise.all(
      runs.map(async (run) => (await finished(local, await run.execution, [], options.timeoutMs)).status),
    );
    const wallMs = performance.now() - startedAt;
    const apiEndpoints = ENDPOINTS.filter((endpoint) => !FILE_ENDPOINTS.includes(endpoint));
    const requests = apiEndpoints.reduce((sum, endpoint) => sum + service.requestCount(endpoint), 0);
    const rateLimited = service.rateLimited();
    const requestsServed = requests - rateLimited;
    const models =
      service.requestCount('createModel') === 0 ? 0 : await countModels(local.serviceUrl, service.apiKey);
    return {
      drops: options.drops,
      succeeded: statuses.filter((status) => status?.state === 'succeeded').length,
      failures: statuses.filter((status) => status?.state !== 'succeeded').map(failureOf),
      creditsSpent: credits - service.credits(),
      models,
      requestsServed,
      rateLimited,
      failedInvocations: statuses.reduce((sum, status) => sum + failedInvocations(status), 0),
      wallMs,
      lowerBoundMs: (requestsServed / options.maxRequestsPerSecond) * 1000,
    };
  } finally {
    await local.close();
  }
}

/** The client limiter local mode's runs shared (one per process and service). */
export function limiterOf(serviceUrl: string) {
  return sharedRateLimiter(serviceUrl);
}

function failureOf(status: RunStatus | null): string {
  return status?.error?.code ?? status?.state ?? 'no status';
}

function failedInvocations(status: RunStatus | null): number {
  return Object.values(status?.summary?.steps ?? {}).reduce((sum, step) => sum + step.failed, 0);
}

/** Models at the service, paged (at most 100 a page), without going through the rate limit twice. */
async function countModels(serviceUrl: string, apiKey: string): Promise<number> {
  let count = 0;
  let cursor: string | null = null;
  for (let page = 0; page < 1000; page++) {
    const query: string = cursor === null ? 'limit=100' : `limit=100&cursor=${encodeURIComponent(cursor)}`;
    for (let attempt = 0; ; attempt++) {
      const answer = await fetch(`${serviceUrl}/v1/models?${query}`, {
        headers: { authorization: `Bearer ${apiKey}` },
      });
      if (answer.status === 429 && attempt < 50) {
        await new Promise((resolve) => setTimeout(resolve, 1000));
        continue;
      }
      const body = (await answer.json()) as { data: unknown[]; next: string | null };
      count += body.data.length;
      cursor = body.next;
      break;
    }
    if (cursor === null) return count;
  }
  throw new Error('countModels: more than 1000 pages');
}
