/**
 * The credit budget (`-c creditBudget=N` per day, `-c creditBudget30Days=M`, `--credit-budget N` in
 * local mode): at most N credits taken in any 24 hours (and M in any 30 days), counted in one
 * ledger for the bucket, status/.credits/ledger.json. start_training takes a credit before it
 * starts a training (spend) and a run over budget stops there, `credit_budget`, having spent
 * nothing; a start the service refuses (any 4xx answer: no training) and a training that failed
 * give the credit back, as the service gives it back to the account.
 *
 * One entry per training attempt, keyed by run id and attempt number: a retried invocation finds
 * its own entry and takes nothing more. Taking is a conditional write of the ledger
 * (updateJsonConditionally, as the training claim is): of takers that read the same ledger
 * exactly one writes, the others read it again, so no number of runs at once can take more
 * than the budget. Entries older than the longest window are pruned on each take.
 *
 * S3 rather than a DynamoDB conditional update: no new resource to deploy, grant and pay for, and
 * local mode runs the same code on its local S3. The price is contention: every taker rewrites
 * one object, so k takers at the same moment need up to k rounds of a GET and a conditional PUT
 * (one wins each round; docs/spending.md has the figures). A drop's trainings start minutes
 * apart after its upload and processing, so takers rarely meet.
 */
import type { S3Client } from '@aws-sdk/client-s3';
import { keepsCredit, ServiceError, wasRefused, type Model } from '../service-client/index.js';
import { CREDIT_LEDGER_KEY } from '../storage/keys.js';
import { readJson, updateJsonConditionally, type JsonUpdate } from '../storage/objects.js';
import { contendedWrite, RunError } from '../core/errors/errors.js';
import { creditBudgetMessage } from '../core/errors/messages.js';
import type { RunInput } from '../core/state/state.js';

/** Credits trainings may take in any 24 hours, and in any 30 days; either may be left out. */
export type CreditBudget = Readonly<{ perDay?: number | undefined; per30Days?: number | undefined }>;

/** status/.credits/ledger.json: a credit per training attempt, and the budget last checked against. */
type Ledger = Readonly<{ budget: CreditBudget; credits: readonly CreditEntry[] }>;
type CreditEntry = Readonly<{ run: string; attempt: number; drop: string; at: string }>;

const DAY_MS = 86_400_000;
const WINDOWS = [
  { window: '24 h', field: 'perDay', ms: DAY_MS },
  { window: '30 days', field: 'per30Days', ms: 30 * DAY_MS },
] as const;
/** Writes tried before the step is retried: many runs may take at once. */
const LEDGER_ATTEMPTS = 40;

/** A window's use: `used` of `limit`, and when it has room for one more (`freesAt`). */
export type WindowUse = ReturnType<typeof windowUse>[number];
/** A take refused: the windows that are full, and the credits the run already holds. */
type OverBudget = { readonly full: WindowUse[]; readonly spent: number };

export interface Credits {
  /**
   * Takes the credit of `run`'s training `attempt` (once, however often it is asked), runs
   * `start`, and gives the credit back when the service refuses the start or the training failed
   * at once. Without a budget it runs `start` alone.
   * @throws RunError credit_budget, before `start`, when the budget has no credit left
   */
  spend(run: RunInput, attempt: number, start: () => Promise<Model>): Promise<Model>;
  /** Gives back the credit of a training that failed (the service gave it back to the account). */
  giveBack(run: RunInput, attempt: number): Promise<void>;
}

/** The budget's credits; `taken` is told the share in use (percent) after each credit taken. */
export function creditsOf(
  s3: S3Client,
  budget: CreditBudget,
  now: () => number,
  taken?: (share: number) => void,
): Credits {
  if (budget.perDay === undefined && budget.per30Days === undefined) {
    return { spend: (_run, _attempt, start) => start(), giveBack: () => Promise.resolve() };
  }
  const isOf = (run: RunInput, attempt: number) => (entry: CreditEntry) =>
    entry.run === run.runId && entry.attempt === attempt;
  /** Takes the attempt's credit, or finds it taken: the share of the budget in use after. */
  const take = async (run: RunInput, attempt: number): Promise<number> => {
    const at = now();
    const over = await updateLedger<number | OverBudget>(s3, run.bucket, (ledger) => {
      // Entries older than the longest window count no more.
      const longest = budget.per30Days === undefined ? DAY_MS : 30 * DAY_MS;
      const credits = ledger.credits.filter((entry) => at - Date.parse(entry.at) < longest);
      const mine = credits.some(isOf(run, attempt));
      const full = windowUse({ budget, credits }, at).filter((use) => use.used >= use.limit);
      // The run's earlier trainings that kept their credit (a sweep's encoders trained before).
      const spent = credits.filter((entry) => entry.run === run.runId).length;
      if (!mine && full.length > 0) return { write: null, result: { full, spent } };
      const entry = { run: run.runId, attempt, drop: run.drop, at: new Date(at).toISOString() };
      const after = { budget, credits: mine ? credits : [...credits, entry] };
      const share = Math.max(...windowUse(after, at).map((use) => (100 * use.used) / use.limit));
      return { write: mine ? null : after, result: share };
    });
    if (typeof over === 'number') return over;
    // Room again once every full window has some.
    const last = over.full.reduce((latest, use) => (use.freesAt > latest.freesAt ? use : latest));
    throw new RunError('credit_budget', creditBudgetMessage({ ...last, drop: run.drop, spent: over.spent }));
  };
  const giveBack = (run: RunInput, attempt: number): Promise<void> =>
    updateLedger(s3, run.bucket, ({ budget: last, credits }) => {
      const mine = credits.some(isOf(run, attempt));
      const kept = { budget: last, credits: credits.filter((entry) => !isOf(run, attempt)(entry)) };
      return { write: mine ? kept : null, result: undefined };
    });
  return {
    giveBack,
    async spend(run, attempt, start) {
      const share = await take(run, attempt);
      taken?.(share);
      const model = await start().catch(async (error: unknown) => {
        const answer = error instanceof RunError ? error.cause : error;
        if (answer instanceof ServiceError && wasRefused(answer)) await giveBack(run, attempt);
        throw error;
      });
      if (!keepsCredit(model.status)) await giveBack(run, attempt);
      return model;
    },
  };
}

/** Each window of the budget: the credits taken in it and when it has room for one more. */
function windowUse(ledger: Ledger, now: number) {
  return WINDOWS.flatMap(({ window, field, ms }) => {
    const limit = ledger.budget[field];
    if (limit === undefined) return [];
    const times = ledger.credits.map((entry) => Date.parse(entry.at)).filter((at) => now - at < ms);
    // Now while it has room; once full, when all but limit - 1 of them have aged out.
    const freeing = times.sort((a, b) => a - b)[times.length - limit] ?? now - ms;
    return [{ window, limit, used: times.length, freesAt: new Date(freeing + ms).toISOString() }];
  });
}

/** The budget's use as the ledger last recorded it: none when no credit was ever taken. */
export async function readCreditUse(s3: S3Client, bucket: string, now: number): Promise<WindowUse[]> {
  return windowUse((await readLedger(s3, bucket)) ?? { budget: {}, credits: [] }, now);
}

async function readLedger(s3: S3Client, bucket: string): Promise<(Ledger & { etag: string }) | null> {
  const read = await readJson(s3, bucket, CREDIT_LEDGER_KEY);
  const ledger = (read?.value ?? {}) as Partial<Ledger>;
  return read && { budget: ledger.budget ?? {}, credits: ledger.credits ?? [], etag: read.etag };
}

async function updateLedger<T>(
  s3: S3Client,
  bucket: string,
  decide: (ledger: Ledger) => JsonUpdate<T, Ledger>,
): Promise<T> {
  return await updateJsonConditionally(s3, {
    bucket,
    key: CREDIT_LEDGER_KEY,
    attempts: LEDGER_ATTEMPTS,
    read: () => readLedger(s3, bucket),
    decide: (current) => decide(current ?? { budget: {}, credits: [] }),
    contended: contendedWrite(`the credit ledger (${CREDIT_LEDGER_KEY})`),
  });
}
