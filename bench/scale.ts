/**
 * Many drops at once in local mode against the simulated service limited to 20 API requests
 * per second (issue 10's scale goal: 500 drops, every run succeeds, no credit spent twice, wall
 * time within 1.5x of the lower bound the limit sets). The service runs in its own process, a
 * fresh one each round; local mode (its S3, the state machine, the real handlers) is the
 * measured client, in a fresh process each round. The drops, the runs and the counting are
 * testkit/scale-run.ts, which the scale test runs too.
 *
 * 500 drops do not fit in the bench's 10 minutes (at the limit alone they take some 350 s a
 * run, and a figure wants 3), so the default is fewer: the figures carry their drop count in
 * their names, and `scale.drops` records how far that falls short of the goal's 500. The CPU
 * figures say whether this machine's CPU, rather than the limit or Hopper's pacing, set the pace.
 *
 * Knob: BENCH_SCALE_DROPS (default 20).
 */
import { availableParallelism, loadavg } from 'node:os';
import {
  scaleServiceOptions,
  serviceTally,
  type DropsOutcome,
  type ServiceTally,
} from '../testkit/scale-run.js';
import type { EndpointName } from '../local/service/index.js';
import { envInteger, sideBySide, type Benchmark } from './harness/benchmark.js';
import { figure, median, round, type Figure } from './harness/figures.js';
import { runClient, startServer } from './harness/processes.js';
import type { ClientResult } from './harness/protocol.js';

const MODULE = 'clients/scale.ts';
const CORES = availableParallelism();
/** The issue's scale goal. */
const GOAL_DROPS = 500;
const REQUESTS_PER_SECOND = 20;
const WALL_GOAL = 1.5;
/** Bounds on the runs (not goals): some 1 s per drop on a loaded 2-core machine, plus start-up. */
const runsTimeoutMs = (drops: number) => 120_000 + drops * 3_000;

/** What the client (bench/clients/scale.ts) reports beside its measurement. */
interface ScaleClientResult extends DropsOutcome {
  /** The client limiter's rate at the end, requests/s (null: it never saw a 429). */
  readonly limiterPerSecond: number | null;
  /** Requests the limiter held back for their turn, and for how long in all. */
  readonly limiterDelayed: number;
  readonly limiterDelayedMs: number;
}

type ScaleRun = ClientResult &
  ScaleClientResult &
  ServiceTally & {
    readonly serviceCpuMs: number;
    /** The machine's 1-minute load average as the round ended: other work takes CPU from it. */
    readonly loadAverage: number;
  };

export const scale: Benchmark = {
  name: 'scale',
  title: `many drops at once in local mode, the service limited to ${String(REQUESTS_PER_SECOND)} requests/s`,
  async run(context) {
    const drops = envInteger('BENCH_SCALE_DROPS', 20);
    const timeoutMs = runsTimeoutMs(drops);

    const oneRound = async (): Promise<ScaleRun> => {
      const service = await startServer('service', scaleServiceOptions(drops, REQUESTS_PER_SECOND));
      try {
        const { apiUrl, apiKey } = service.info;
        const serviceCpuBefore = await service.cpuMs();
        const client = await runClient<ClientResult & ScaleClientResult>(
          { module: MODULE, export: 'dropMany', args: { apiUrl, apiKey, drops, timeoutMs } },
          [],
          // The client's start-up (synthesis, the handlers' modules) on top of the runs' bound.
          timeoutMs + 120_000,
        );
        const serviceCpuMs = (await service.cpuMs()) - serviceCpuBefore;
        const tally = await serviceTally(
          {
            apiUrl,
            apiKey,
            requestCount: (endpoint: EndpointName) =>
              service.request<number>({ op: 'requestCount', endpoint }),
            rateLimited: () => service.request<number>({ op: 'rateLimited' }),
            credits: () => service.request<number>({ op: 'credits' }),
          },
          drops,
          REQUESTS_PER_SECOND,
        );
        const run = { ...client, ...tally, serviceCpuMs, loadAverage: loadavg()[0] ?? NaN };
        context.log(
          `    ${String(run.succeeded)}/${String(drops)} succeeded${run.failures.length > 0 ? ` (failed: ${run.failures.join(', ')})` : ''}, ` +
            `${String(run.creditsSpent)} credits, ${String(run.models)} models, ${String(run.requestsServed)} requests served, ` +
            `${String(run.rateLimited)} answered 429; wall ${(run.wallMs / 1000).toFixed(1)} s vs ` +
            `${(run.lowerBoundMs / 1000).toFixed(1)} s lower bound; service CPU ${(serviceCpuMs / 1000).toFixed(2)} s; ` +
            `the limiter held ${String(run.limiterDelayed)} requests (${(run.limiterDelayedMs / 1000).toFixed(0)} s in all), ` +
            `${run.limiterPerSecond === null ? 'never slowed' : `ended at ${run.limiterPerSecond.toFixed(1)}/s`}; load average ${run.loadAverage.toFixed(1)}`,
        );
        return run;
      } finally {
        await service.close();
      }
    };

    context.log(`scale: ${String(context.runs)} rounds of ${String(drops)} drops at once`);
    const { hopper: runs } = await sideBySide(context.runs, { hopper: oneRound }, context.log);
    const prefix = `scale.drops_${String(drops)}`;
    const at = `${String(drops)} drops at once`;
    const requestsPerDrop = median(runs.map((run) => run.requestsServed / drops));
    const clientCpuPerDrop = median(runs.map((run) => run.cpuMs / 1000 / drops));
    const load =
      `load average ${String(round(median(runs.map((run) => run.loadAverage))))} on ${String(CORES)} cores ` +
      `as the rounds ended (above ${String(CORES)}, other work took part of the CPU and lengthened the wall time)`;
    const figures: Figure[] = [
      figure({
        name: 'scale.drops',
        label: `scale: drops started at once (the goal is stated at ${String(GOAL_DROPS)})`,
        unit: 'drops',
        runs: runs.map((run) => run.drops),
        goal: { on: 'value', op: '>=', limit: GOAL_DROPS },
        note:
          drops >= GOAL_DROPS
            ? `the goal's size`
            : `the figures below are at ${String(drops)} drops (BENCH_SCALE_DROPS), not the goal's ${String(GOAL_DROPS)}. ` +
              `An estimate, not measured: at the ${String(round(requestsPerDrop))} requests per drop measured here, ` +
              `${String(GOAL_DROPS)} drops need some ${String(round((GOAL_DROPS * requestsPerDrop - REQUESTS_PER_SECOND) / REQUESTS_PER_SECOND))} s at the limit alone, ` +
              `more than the bench's 10 minutes leave beside the other entries; at the ${String(round(clientCpuPerDrop))} s of ` +
              `local mode's CPU per drop measured here, enough to keep ${String(CORES)} cores busy some ${String(round((GOAL_DROPS * clientCpuPerDrop) / CORES))} s`,
      }),
      figure({
        name: `${prefix}.wall_vs_rate_bound`,
        label: `scale: ${at}, wall time (baseline: the lower bound ${String(REQUESTS_PER_SECOND)} requests/s sets)`,
        unit: 's',
        runs: runs.map((run) => run.wallMs / 1000),
        baselineRuns: runs.map((run) => run.lowerBoundMs / 1000),
        goal: { on: 'ratio', op: '<=', limit: WALL_GOAL },
        note:
          `the goal's ratio, held at ${String(drops)} drops, not ${String(GOAL_DROPS)}; lower bound: the API requests served (${String(round(requestsPerDrop))} per drop) less the first second's ${String(REQUESTS_PER_SECOND)}, at ${String(REQUESTS_PER_SECOND)} per s; ` +
          `Hopper's limiter held back a median of ${String(median(runs.map((run) => run.limiterDelayed)))} requests for their turn; ${load}`,
      }),
      figure({
        name: `${prefix}.succeeded`,
        label: `scale: ${at}, runs succeeded`,
        unit: 'runs',
        runs: runs.map((run) => run.succeeded),
        goal: { on: 'value', op: '>=', limit: drops },
        ...(runs.some((run) => run.failures.length > 0)
          ? { note: `failed: ${[...new Set(runs.flatMap((run) => run.failures))].join(', ')}` }
          : {}),
      }),
      figure({
        name: `${prefix}.credits`,
        label: `scale: ${at}, credits spent (baseline: models at the service)`,
        unit: 'credits',
        runs: runs.map((run) => run.creditsSpent),
        baselineRuns: runs.map((run) => run.models),
        goal: { on: 'ratio', op: '<=', limit: 1 },
        note: `models per round: ${runs.map((run) => String(run.models)).join(', ')} for ${String(drops)} drops; a second credit for a drop shows as more credits than drops`,
      }),
      figure({
        name: `${prefix}.rate_limited`,
        label: `scale: ${at}, requests answered 429 (share of those served)`,
        unit: '%',
        runs: runs.map((run) => (100 * run.rateLimited) / run.requestsServed),
        note: `Hopper's shared limiter learns the limit from the first 429s and then stays under it`,
      }),
      figure({
        name: `${prefix}.client_cpu_per_drop`,
        label: `scale: ${at}, local mode's CPU per drop (S3, state machine, handlers)`,
        unit: 's',
        runs: runs.map((run) => run.cpuMs / 1000 / drops),
        note: `the measured client's process; the simulated service's own CPU per drop: ${String(round(median(runs.map((run) => run.serviceCpuMs / 1000 / drops))))} s`,
      }),
      figure({
        name: `${prefix}.cpu_floor_vs_rate_bound`,
        label: `scale: ${at}, least wall time the CPU allows (baseline: the rate limit's)`,
        unit: 's',
        // Local mode's and the service's CPU spread over every core: no pacing runs faster.
        runs: runs.map((run) => (run.cpuMs + run.serviceCpuMs) / 1000 / CORES),
        baselineRuns: runs.map((run) => run.lowerBoundMs / 1000),
        note: `${String(CORES)} cores shared by local mode and the service; a ratio above ${String(WALL_GOAL)} means this machine's CPU, not the rate limit, sets the pace; ${load}`,
      }),
    ];
    return figures;
  },
};
