/**
 * The credit budget's ledger (lambdas/ownership/credit-ledger.ts) on the real local S3 server, whose
 * conditional writes behave as S3's: many runs taking credits at once, each invocation retried
 * while the first still runs, never take more than the budget and never count an attempt twice;
 * refused starts and failed trainings give their credit back; the windows roll.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { RunError, toRunError } from '../../lambdas/core/errors/index.js';
import { creditsOf, readCreditUse, type CreditBudget } from '../../lambdas/ownership/index.js';
import type { RunInput } from '../../lambdas/core/state/index.js';
import { NoCreditsError, type Model } from '../../lambdas/service-client/index.js';
import { CREDIT_LEDGER_KEY } from '../../lambdas/storage/keys.js';
import { deleteObject } from '../../lambdas/storage/objects.js';
import { startLocalS3, type LocalS3 } from '../../local/s3/local-s3.js';
import { rejectionOf } from '../client/helpers.js';
import { readText } from '../helpers/pipeline.js';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const T0 = Date.parse('2025-03-01T12:00:00.000Z');

let s3: LocalS3;
beforeAll(async () => {
  s3 = await startLocalS3();
});
afterAll(async () => {
  await s3.close();
});
beforeEach(async () => {
  await deleteObject(s3.client, s3.bucket, CREDIT_LEDGER_KEY);
});

function runOf(n: number): RunInput {
  const drop = `drop-${String(n).padStart(3, '0')}`;
  return {
    runId: `${drop}-run`,
    bucket: s3.bucket,
    drop,
    key: `inbox/${drop}/train.json`,
    etag: 'e',
    startedAt: '',
  };
}

function creditsAt(budget: CreditBudget, clock: { now: number }, taken?: (share: number) => void) {
  return creditsOf(s3.client, budget, () => clock.now, taken);
}

const model = (status: Model['status']) => ({ id: 'm-1', status }) as Model;

async function ledgerEntries(): Promise<{ run: string; attempt: number; at: string }[]> {
  const text = await readText(s3.client, s3.bucket, CREDIT_LEDGER_KEY);
  return text === null
    ? []
    : (JSON.parse(text) as { credits: { run: string; attempt: number; at: string }[] }).credits;
}

/**
 * `npm test` runs 100 runs at once (12.5 s here); `npm run test:reliability` (HOPPER_RELIABILITY=full)
 * 500 (226 s on a busy 2-core machine: every take rewrites one object of the local S3).
 */
const FULL = process.env.HOPPER_RELIABILITY === 'full';
const RUNS = FULL ? 500 : 100;
const BUDGET = RUNS / 5;

describe('the credit ledger', () => {
  it(
    `lets exactly the budget through when ${String(RUNS)} runs take at once, each invocation retried while the first runs`,
    async () => {
      const clock = { now: T0 };
      const shares: number[] = [];
      const credits = creditsAt({ perDay: BUDGET }, clock, (share) => shares.push(share));
      const started: string[] = [];
      const invocation = async (n: number): Promise<unknown> => {
        // As the state machine retries a step whose ledger stayed contended (storage_error), at most 3 times.
        for (let retry = 0; ; retry++) {
          try {
            return await credits.spend(runOf(n), 1, () => {
              started.push(runOf(n).runId);
              return Promise.resolve(model('queued'));
            });
          } catch (error) {
            if (toRunError(error).code !== 'storage_error' || retry === 3) throw error;
          }
        }
      };
      const began = performance.now();
      // Two invocations of each run's attempt at once: a Lambda retry racing the first.
      const outcomes = await Promise.allSettled(
        Array.from({ length: RUNS }, (_, n) => [invocation(n), invocation(n)]).flat(),
      );
      console.log(
        `credit ledger: ${String(2 * RUNS)} takes at once, budget ${String(BUDGET)}, on the local S3: ${String(Math.round(performance.now() - began))} ms`,
      );

      const through = new Set(started);
      expect(through.size).toBe(BUDGET);
      const entries = await ledgerEntries();
      expect(entries).toHaveLength(BUDGET);
      expect(new Set(entries.map((entry) => entry.run))).toEqual(through);
      // A run's two invocations agree: both took its one credit, or both were refused.
      for (let n = 0; n < RUNS; n++) expect(outcomes[2 * n + 1]?.status).toBe(outcomes[2 * n]?.status);
      const refused = outcomes.flatMap((outcome) =>
        outcome.status === 'rejected' ? [outcome.reason as unknown] : [],
      );
      expect(refused).toHaveLength(2 * (RUNS - BUDGET));
      for (const reason of refused) {
        expect(toRunError(reason)).toMatchObject({ code: 'credit_budget', retryable: false });
      }
      expect(Math.max(...shares)).toBe(100);
    },
    FULL ? 900_000 : 120_000,
  );

  it('gives the credit back when the service refuses the start or the training fails, and only then', async () => {
    const clock = { now: T0 };
    const credits = creditsAt({ perDay: 2 }, clock);
    // The service's answer as start_training gets it: a 402, mapped to the run's error.
    const answer = new NoCreditsError({
      message: 'no credits left',
      endpoint: 'POST /v1/models',
      status: 402,
    });
    const refusal = new RunError('no_credits', 'the account has no credits', { cause: answer });
    expect(await rejectionOf(credits.spend(runOf(1), 1, () => Promise.reject(refusal)))).toBe(refusal);
    await credits.spend(runOf(2), 1, () => Promise.resolve(model('failed')));
    expect(await ledgerEntries()).toEqual([]);

    // A transient failure keeps the credit: the retried invocation finds its entry (or adopts the training).
    const lost = new RunError('service_unavailable', 'no answer', { retryable: true });
    await rejectionOf(credits.spend(runOf(3), 1, () => Promise.reject(lost)));
    await credits.spend(runOf(3), 1, () => Promise.resolve(model('queued')));
    await credits.spend(runOf(4), 1, () => Promise.resolve(model('training')));
    expect((await ledgerEntries()).map((entry) => entry.run)).toEqual([runOf(3).runId, runOf(4).runId]);
    expect(
      toRunError(await rejectionOf(credits.spend(runOf(5), 1, () => Promise.resolve(model('queued'))))),
    ).toMatchObject({
      code: 'credit_budget',
    });

    // Run 4's training failed (poll_model saw it): its credit is free for run 5, once.
    await credits.giveBack(runOf(4), 1);
    await credits.giveBack(runOf(4), 1);
    await credits.spend(runOf(5), 1, () => Promise.resolve(model('queued')));
    expect((await ledgerEntries()).map((entry) => entry.run)).toEqual([runOf(3).runId, runOf(5).runId]);
  });

  it('counts a rolling 24 hours and 30 days, says when the budget frees up, and prunes old entries', async () => {
    const clock = { now: T0 };
    const credits = creditsAt({ perDay: 2, per30Days: 3 }, clock);
    const take = (n: number) => credits.spend(runOf(n), 1, () => Promise.resolve(model('queued')));
    await take(1);
    clock.now = T0 + HOUR;
    await take(2);
    clock.now = T0 + 2 * HOUR;
    const overDay = toRunError(await rejectionOf(take(3)));
    expect(overDay.code).toBe('credit_budget');
    expect(overDay.message).toContain('2 of 2 credits taken in the last 24 h');
    // The oldest counted credit's time + 24 h, and how to raise the budget.
    expect(overDay.message).toContain(`frees a credit at ${new Date(T0 + DAY).toISOString()}`);
    expect(overDay.message).toContain('-c creditBudget=N');
    expect(overDay.message).toContain('--credit-budget N');
    expect(overDay.message).toContain(`hopper retry ${runOf(3).drop}`);
    expect(await readCreditUse(s3.client, s3.bucket, clock.now)).toEqual([
      { window: '24 h', limit: 2, used: 2, freesAt: new Date(T0 + DAY).toISOString() },
      { window: '30 days', limit: 3, used: 2, freesAt: new Date(clock.now).toISOString() },
    ]);

    clock.now = T0 + DAY;
    await take(3);
    clock.now = T0 + 2 * DAY;
    const overMonth = toRunError(await rejectionOf(take(4)));
    expect(overMonth.message).toContain('3 of 3 credits taken in the last 30 days');
    expect(overMonth.message).toContain(`frees a credit at ${new Date(T0 + 30 * DAY).toISOString()}`);
    expect(overMonth.message).toContain('-c creditBudget30Days=N');

    clock.now = T0 + 30 * DAY;
    await take(4);
    // Run 1's entry aged out of the longest window and is gone.
    expect((await ledgerEntries()).map((entry) => entry.run)).toEqual([2, 3, 4].map((n) => runOf(n).runId));
  });
});
