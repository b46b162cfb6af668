/**
 * A training service that does not answer (hung, or answering only after a minute) ends a run
 * with service_unavailable within a bound: the client's per-call budget in each invocation,
 * times the invocations the state machine's Retry allows, plus its pauses. The bound is computed
 * from the synthesized definition and the Lambda client settings, so a change to either that
 * stretches it fails here; the local-mode run below shows the same mechanism end to end, with
 * the client's timings shrunk to milliseconds.
 */
import '../../local/emulator/with-resolvers.js';
import { describe, expect, it } from 'vitest';
import { readFile } from 'node:fs/promises';
import type { AslState } from '../../local/emulator/definition.js';
import { synthesizeLocalDefinition } from '../infra/helpers.js';
import { RETRYABLE_ERROR } from '../../lambdas/core/errors/index.js';
import {
  DEADLINE_MARGIN_MS,
  LAMBDA_CLIENT_OPTIONS,
  LAMBDA_DEATH_RETRY,
  TRANSIENT_RETRY,
  type RetrierSettings,
} from '../../lambdas/runtime/index.js';
import { TASKS } from '../../infra/tasks.js';
import { dropAndRun, statesEntered, useLocalMode } from '../helpers/local-mode.js';
import { expectFailed } from '../helpers/local-runs.js';
import { reviewsDrop } from '../helpers/fixtures.js';

/** What docs/pipeline.md and docs/errors.md promise: a hung service fails a run within 5 minutes. */
const PROMISED_BOUND_SECONDS = 5 * 60;

/** What the client and state machine settings allow one service call against a failing service. */
interface RetryBound {
  /** Invocations of the Task: the first, and the state machine's retries of Hopper.Retryable. */
  readonly invocations: number;
  /** Requests of the call within one invocation: the first attempt and the client's retries. */
  readonly requestsPerInvocation: number;
  /** Requests of the call in all: the most a failing service sees of it. */
  readonly requests: number;
  /** The longest one invocation spends on the call, seconds. */
  readonly invocationSeconds: number;
  /** From the call's first request until the run gives up on it, seconds (pauses at their longest). */
  readonly seconds: number;
}

/** The longest pauses of `retrier` before each of its retries, seconds. */
function retryPausesSeconds(retrier: RetrierSettings): number[] {
  return Array.from({ length: retrier.maxAttempts }, (_, index) =>
    Math.min(retrier.intervalSeconds * retrier.backoffRate ** index, retrier.maxDelaySeconds ?? Infinity),
  );
}

/**
 * The bound of one logical service call: a failing service makes the client give up within
 * `callBudgetMs + timeoutMs` after at most `maxRetries + 1` requests, the step throws
 * Hopper.Retryable, and the state machine invokes the Task again `transient.maxAttempts` times.
 */
function retryBound(
  client: Pick<typeof LAMBDA_CLIENT_OPTIONS, 'maxRetries' | 'callBudgetMs' | 'timeoutMs'>,
  transient: RetrierSettings,
): RetryBound {
  const invocations = 1 + transient.maxAttempts;
  const requestsPerInvocation = client.maxRetries + 1;
  const invocationSeconds = (client.callBudgetMs + client.timeoutMs) / 1000;
  const pauses = retryPausesSeconds(transient).reduce((sum, pause) => sum + pause, 0);
  return {
    invocations,
    requestsPerInvocation,
    requests: invocations * requestsPerInvocation,
    invocationSeconds,
    seconds: invocations * invocationSeconds + pauses,
  };
}

/** The bound of Hopper's own settings (its figures are in docs/pipeline.md, checked by a test). */
const RETRY_BOUND: RetryBound = retryBound(LAMBDA_CLIENT_OPTIONS, TRANSIENT_RETRY);

interface RetrierJson {
  readonly ErrorEquals: readonly string[];
  readonly IntervalSeconds?: number;
  readonly BackoffRate?: number;
  readonly MaxAttempts?: number;
  readonly MaxDelaySeconds?: number;
}

/** The Task's retrier of `error` as the definition holds it (Step Functions' defaults filled in). */
function retrierOf(state: AslState, error: string): RetrierSettings | undefined {
  const retriers = (state.Retry ?? []) as readonly RetrierJson[];
  const retrier = retriers.find((candidate) => candidate.ErrorEquals.includes(error));
  if (retrier === undefined) return undefined;
  return {
    intervalSeconds: retrier.IntervalSeconds ?? 1,
    backoffRate: retrier.BackoffRate ?? 2,
    maxAttempts: retrier.MaxAttempts ?? 3,
    maxDelaySeconds: retrier.MaxDelaySeconds,
  };
}

describe('a service that does not answer', () => {
  const { definition } = synthesizeLocalDefinition();
  const tasks = Object.entries(definition.States).filter(([, state]) => state.Type === 'Task');

  it('gets at most RETRY_BOUND.requests requests per call, failing the run within 5 minutes, by the definition', () => {
    expect(tasks.map(([name]) => name)).toContain('CreateDataset');
    for (const [name, state] of tasks) {
      // Every Task retries transient errors and timeouts with the settings of retry-budget.ts ...
      const transient = retrierOf(state, RETRYABLE_ERROR);
      expect(transient, name).toEqual(TRANSIENT_RETRY);
      expect(retrierOf(state, 'States.Timeout'), name).toEqual(LAMBDA_DEATH_RETRY);
      // ... so what the definition allows one call, with the client's retries, is the bound.
      const bound = retryBound(LAMBDA_CLIENT_OPTIONS, transient ?? TRANSIENT_RETRY);
      expect(bound, name).toEqual(RETRY_BOUND);
    }
    expect(RETRY_BOUND.requests).toBe(
      (LAMBDA_CLIENT_OPTIONS.maxRetries + 1) * (TRANSIENT_RETRY.maxAttempts + 1),
    );
    expect(RETRY_BOUND.seconds).toBeLessThanOrEqual(PROMISED_BOUND_SECONDS);
  });

  it("keeps one invocation's call, retries included, inside the shortest service Task's Lambda, with the deadline margin", () => {
    const serviceTasks = TASKS.filter((task) => task.access.apiKey);
    const shortest = Math.min(...serviceTasks.map((task) => task.timeoutSeconds));
    expect(RETRY_BOUND.invocationSeconds * 1000 + DEADLINE_MARGIN_MS).toBeLessThanOrEqual(shortest * 1000);
  });

  it('is documented with the figures the settings give', async () => {
    const pipeline = await readFile(new URL('../../docs/pipeline.md', import.meta.url), 'utf8');
    const text = pipeline.replace(/\s+/g, ' ');
    expect(text).toContain(`at most ${RETRY_BOUND.requests} requests`);
    expect(text).toContain(`${RETRY_BOUND.requestsPerInvocation} per invocation`);
    expect(text).toContain(`${RETRY_BOUND.invocations} invocations`);
    expect(text).toContain(`within ${RETRY_BOUND.seconds} s`);
  });

  const fixture = useLocalMode();

  it('ends the run at CreateDataset with service_unavailable, each invocation within its call budget', async () => {
    const local = await fixture.start({
      // The whole dataset API is silent: the create, and the list CreateDataset looks in first for
      // a dataset a lost answer created (docs/reliability.md).
      simulated: {
        faults: [
          { endpoint: 'createDataset', kind: 'stall', stallMs: 3_000 },
          { endpoint: 'listDatasets', kind: 'stall', stallMs: 3_000 },
        ],
      },
      // Lambda's settings scaled down a hundredfold: 200 ms per attempt, no retry after 400 ms.
      clientOptions: { ...LAMBDA_CLIENT_OPTIONS, timeoutMs: 200, callBudgetMs: 400, backoffCapMs: 100 },
    });
    const run = await dropAndRun(local, 'hung', reviewsDrop());

    const status = await expectFailed(local, run, 'service_unavailable');
    expect(status.error?.message).toContain('no answer within 200 ms');
    expect(statesEntered(run.events).filter((state) => state === 'CreateDataset')).toHaveLength(1);
    // 4 invocations (the first and 3 retries), each stopping after at most 3 attempts.
    const attempts =
      (local.simulated?.requestCount('createDataset') ?? 0) +
      (local.simulated?.requestCount('listDatasets') ?? 0);
    expect(attempts).toBeGreaterThanOrEqual(4);
    expect(attempts).toBeLessThanOrEqual(12);
    expect(attempts).toBeLessThanOrEqual(RETRY_BOUND.requests);
    expect(local.simulated?.credits()).toBe(10);
  });
});
