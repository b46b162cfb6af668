/**
 * Many drops at once in local mode against the simulated service limited to N API requests per
 * second: what the scale test (test/reliability/scale.test.ts) and the scale benchmark
 * (bench/scale.ts) both run. Each drop is
 * one small data file without held-out examples; every run's outcome, the credits, the
 * service's request log and the client's rate limiter are reported.
 *
 * In parts, so the benchmark can put them in different processes: the service's knobs
 * (scaleServiceOptions), local mode's (SCALE_LOCAL_MODE), the drops and their runs
 * (dropAllAtOnce, in local mode's process), and what the service counted (serviceTally, wherever
 * the service's counters can be read). runManyDrops puts them together in one process.
 */
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { ENDPOINTS, type EndpointName, type SimulatedServiceOptions } from '../local/service/index.js';
import { startLocalMode, type LocalMode, type LocalModeOptions } from '../local/emulator/local-mode.js';
import { readStatus, type RunStatus } from '../lambdas/records/status/index.js';
import { inboxKey, TRAIN_JSON } from '../lambdas/storage/keys.js';
import { BRISK_SERVICE } from './brisk-service.js';
import { withTimeout } from './timeout.js';

export interface ScaleOptions {
  readonly drops: number;
  readonly maxRequestsPerSecond: number;
  /** How long all runs may take before the run fails (a bound, not a goal). */
  readonly timeoutMs: number;
}

/** What local mode saw of the drops' runs. */
export interface DropsOutcome {
  readonly drops: number;
  readonly succeeded: number;
  /** Error codes of the runs that did not succeed. */
  readonly failures: readonly string[];
  /** Lambda invocations that failed (and were retried by the state machine). */
  readonly failedInvocations: number;
  /** From the first drop put to the last run ended. */
  readonly wallMs: number;
}

/** What the service counted over the drops' runs. */
export interface ServiceTally {
  readonly creditsSpent: number;
  /** Models the service holds: one per training started. */
  readonly models: number;
  /** API requests the service served (its request log, the 429s it gave left out). */
  readonly requestsServed: number;
  /** Answered 429 by the service's rate limit. */
  readonly rateLimited: number;
  /**
   * The least time the service's limit lets requestsServed take: its token bucket holds one
   * second's worth (local/service/faults/rate-limit.ts), so the first maxRequestsPerSecond go at once
   * and the rest at the limit. No client can do them faster.
   */
  readonly lowerBoundMs: number;
}

export type ScaleResult = DropsOutcome & ServiceTally;

/** The simulated service's counters, read in its process or over the benchmark's IPC. */
export interface ServiceCounters {
  readonly apiUrl: string;
  readonly apiKey: string;
  requestCount(endpoint: EndpointName): number | Promise<number>;
  rateLimited(): number | Promise<number>;
  credits(): number | Promise<number>;
}

/** Local mode's knobs for the scale runs: short waits, drops taken at once, real retry pauses. */
export const SCALE_LOCAL_MODE = { waitMs: 10, dropQuietMs: 0 } as const satisfies LocalModeOptions;

/** The simulated service of a scale run of `drops`, limited to `maxRequestsPerSecond`. */
export function scaleServiceOptions(drops: number, maxRequestsPerSecond: number) {
  return {
    ...BRISK_SERVICE,
    heldOutCount: 0,
    credits: creditsFor(drops),
    maxRequestsPerSecond,
  } as const satisfies Partial<SimulatedServiceOptions>;
}

/** Credits to start with: enough for every drop and a few to spare, so a second credit shows. */
function creditsFor(drops: number): number {
  return drops + 10;
}

const FILE_ENDPOINTS: readonly EndpointName[] = ['fileUpload', 'fileDownload'];
const CSV = ['id,text', 'r1,The lamp is bright.', 'r2,The strap broke on day one.'].join('\n');

export async function runManyDrops(options: ScaleOptions): Promise<ScaleResult> {
  const local = await startLocalMode({
    ...SCALE_LOCAL_MODE,
    simulated: scaleServiceOptions(options.drops, options.maxRequestsPerSecond),
  });
  try {
    const service = local.simulated!;
    const outcome = await dropAllAtOnce(local, options.drops, options.timeoutMs);
    const tally = await serviceTally(
      {
        apiUrl: local.serviceUrl,
        apiKey: service.apiKey,
        requestCount: (endpoint) => service.requestCount(endpoint),
        rateLimited: () => service.rateLimited(),
        credits: () => service.credits(),
      },
      options.drops,
      options.maxRequestsPerSecond,
    );
    return { ...outcome, ...tally };
  } finally {
    await local.close();
  }
}

/** Puts `drops` drops into local mode's inbox at once and waits for every run to end. */
export async function dropAllAtOnce(
  local: LocalMode,
  drops: number,
  timeoutMs: number,
): Promise<DropsOutcome> {
  const names = Array.from({ length: drops }, (_, index) => `scale-${String(index).padStart(4, '0')}`);
  const startedAt = performance.now();
  // One waiter per drop on the state machine's `started` (none on its events, which every waiter
  // would hear for every run): as many listeners as drops, which the state machine allows.
  const machine = local.stateMachine;
  const runs = names.map((drop) => {
    const key = inboxKey(drop, TRAIN_JSON);
    return withTimeout(
      machine.nextStarted((started) => started.input.run.key === key),
      `no run started for ${key}`,
      timeoutMs,
    );
  });
  const put = (drop: string, name: string, body: string) =>
    local.s3.client.send(
      new PutObjectCommand({ Bucket: local.bucket, Key: inboxKey(drop, name), Body: body }),
    );
  // train.json last: it starts the run.
  await Promise.all(
    names.map(async (drop) => put(drop, 'reviews.csv', CSV).then(() => put(drop, TRAIN_JSON, '{}'))),
  );
  const statuses = await Promise.all(
    runs.map(async (run, index) => {
      const execution = await run;
      await withTimeout(execution.done, `run ${execution.name} did not end`, timeoutMs);
      return readStatus(local.s3.client, local.bucket, names[index]!);
    }),
  );
  return {
    drops,
    succeeded: statuses.filter((status) => status?.state === 'succeeded').length,
    failures: statuses.filter((status) => status?.state !== 'succeeded').map(failureOf),
    failedInvocations: statuses.reduce((sum, status) => sum + failedInvocations(status), 0),
    wallMs: performance.now() - startedAt,
  };
}

/**
 * What the service started for a scale run of `drops` counted. Read once every run has ended:
 * the model count's own requests come after the request counts.
 */
export async function serviceTally(
  service: ServiceCounters,
  drops: number,
  maxRequestsPerSecond: number,
): Promise<ServiceTally> {
  const apiEndpoints = ENDPOINTS.filter((endpoint) => !FILE_ENDPOINTS.includes(endpoint));
  let requests = 0;
  for (const endpoint of apiEndpoints) requests += await service.requestCount(endpoint);
  const rateLimited = await service.rateLimited();
  const requestsServed = requests - rateLimited;
  const creditsSpent = creditsFor(drops) - (await service.credits());
  const models =
    (await service.requestCount('startTraining')) === 0
      ? 0
      : await countModels(service.apiUrl, service.apiKey);
  return {
    creditsSpent,
    models,
    requestsServed,
    rateLimited,
    lowerBoundMs: (Math.max(0, requestsServed - maxRequestsPerSecond) / maxRequestsPerSecond) * 1000,
  };
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
