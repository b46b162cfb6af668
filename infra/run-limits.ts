/**
 * How long a run may take, derived in one place from the limit the handlers enforce on waiting
 * (lambdas/core/schedule/polling.ts): the state machine's execution timeout and the slow-run alarm's
 * threshold. docs/deploy.md ("The alarms") explains the figures.
 */
import { MAX_WAIT_SECONDS_PER_RUN } from '../lambdas/core/schedule/index.js';

const HOUR = 3600;

/**
 * The longest a run can spend in its Wait states (14 days): the poll schedule counts what it
 * sleeps, and one wait past this fails the run with `wait_limit`.
 */
export const MAX_WAIT_SECONDS = MAX_WAIT_SECONDS_PER_RUN;

/**
 * Time for the work between the waits: uploads and labelling in batches of at most 15 minutes,
 * starting trainings, the copy, and every retry. A day is far more than any drop Hopper is meant
 * for needs (docs/pipeline.md, "Limits"). The timeout (15 days) also stays under 24.8 days, the
 * longest timer Node.js can set, which local mode's interpreter uses for it.
 */
export const WORK_ALLOWANCE_SECONDS = 24 * HOUR;

/**
 * The state machine's execution timeout (15 days). A run that waits as long as it may still
 * has a day of work in hand, so it ends with `wait_limit` and a status file that says so; only a
 * run beyond what Hopper supports reaches this, and Step Functions stops it there (TimedOut).
 */
export const EXECUTION_TIMEOUT_SECONDS = MAX_WAIT_SECONDS + WORK_ALLOWANCE_SECONDS;

/**
 * A run that took longer than this (2 days) took much longer than it should: trainings take
 * hours, so the slow-run alarm fires long before runs like it near `wait_limit`.
 */
export const SLOW_RUN_SECONDS = 2 * 24 * HOUR;

/** A duration as the docs and alarm texts write it: `90 h 40 min`, `24 h`. */
export function hoursAndMinutes(seconds: number): string {
  const minutes = Math.round(seconds / 60);
  const hours = Math.floor(minutes / 60);
  const rest = minutes % 60;
  return rest === 0 ? `${String(hours)} h` : `${String(hours)} h ${String(rest)} min`;
}
