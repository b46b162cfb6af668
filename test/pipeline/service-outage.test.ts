/**
 * A training service that does not answer (hung, or answering only after a minute) ends a run
 * with service_unavailable within a bound: the client's per-call budget in each invocation,
 * times the invocations the state machine's Retry allows, plus its pauses. The bound is computed
 * from the synthesized definition and the Lambda client settings, so a change to either that
 * stretches it fails here; the local-mode run below shows the same mechanism end to end, with
 * the client's timings shrunk to milliseconds.
 */
import '../../local/mode/with-resolvers.js';
import { describe, expect, it } from 'vitest';
import { synthesizeLocalDefinition } from '../../local/mode/definition.js';
import { RETRYABLE_ERROR } from '../../lambdas/run/errors.js';
import { LAMBDA_CLIENT_OPTIONS } from '../../lambdas/run/runtime.js';
import { dropAndRun, statesEntered, useLocalMode } from '../helpers/local-mode.js';
import { expectFailed, LABELS_BY_ID, REVIEWS_CSV } from '../helpers/local-runs.js';

/** What docs/pipeline.md and docs/errors.md promise: a hung service fails a run within 5 minutes. */
const PROMISED_BOUND_SECONDS = 5 * 60;

interface RetrierJson {
  readonly ErrorEquals: readonly string[];
  readonly IntervalSeconds?: number;
  readonly BackoffRate?: number;
  readonly MaxAttempts?: number;
  readonly MaxDelaySeconds?: number;
}

/** The longest a Task can spend on Hopper.Retryable: every invocation, every (full) pause. */
function worstCaseSeconds(retry: RetrierJson, invocationSeconds: number): number {
  const retries = retry.MaxAttempts ?? 3;
  let pauses = 0;
  for (let index = 0; index < retries; index++) {
    const pause = (retry.IntervalSeconds ?? 1) * (retry.BackoffRate ?? 2) ** index;
    pauses += Math.min(pause, retry.MaxDelaySeconds ?? Infinity);
  }
  return (retries + 1) * invocationSeconds + pauses;
}

describe('a service that does not answer', () => {
  it('fails a run within 5 minutes, by the definition and the client settings', () => {
    const { definition } = synthesizeLocalDefinition();
    const invocationSeconds = (LAMBDA_CLIENT_OPTIONS.callBudgetMs + LAMBDA_CLIENT_OPTIONS.timeoutMs) / 1000;
    const bounds = Object.entries(definition.States).flatMap(([name, state]) => {
      const retriers = ('Retry' in state ? state.Retry : undefined) as readonly RetrierJson[] | undefined;
      const retry = retriers?.find((retrier) => retrier.ErrorEquals.includes(RETRYABLE_ERROR));
      return retry === undefined ? [] : [{ name, seconds: worstCaseSeconds(retry, invocationSeconds) }];
    });
    expect(bounds.map((bound) => bound.name)).toContain('CreateDataset');
    for (const bound of bounds) expect(bound.seconds, bound.name).toBeLessThanOrEqual(PROMISED_BOUND_SECONDS);
  });

  const fixture = useLocalMode();

  it('ends the run at CreateDataset with service_unavailable, each invocation within its call budget', async () => {
    const local = await fixture.start({
      simulated: { faults: [{ endpoint: 'createDataset', kind: 'stall', stallMs: 3_000 }] },
      // Lambda's settings scaled down a hundredfold: 200 ms per attempt, no retry after 400 ms.
      clientOptions: { ...LAMBDA_CLIENT_OPTIONS, timeoutMs: 200, callBudgetMs: 400, backoffCapMs: 100 },
    });
    const started = Date.now();
    const run = await dropAndRun(local, 'hung', {
      'reviews.csv': REVIEWS_CSV,
      'labels.csv': LABELS_BY_ID,
      'train.json': '{}',
    });

    const status = await expectFailed(local, run, 'service_unavailable');
    expect(status.error?.message).toContain('no answer within 200 ms');
    expect(statesEntered(run.events).filter((state) => state === 'CreateDataset')).toHaveLength(1);
    // 4 invocations (the first and 3 retries), each stopping after at most 3 attempts.
    const attempts = local.simulated?.requestCount('createDataset') ?? 0;
    expect(attempts).toBeGreaterThanOrEqual(4);
    expect(attempts).toBeLessThanOrEqual(12);
    expect(Date.now() - started).toBeLessThan(4 * (400 + 200 + 100) + 2_000);
    expect(local.simulated?.credits()).toBe(10);
  });
});
