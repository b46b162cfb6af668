/**
 * How long a run may take, derived in one place from the limit the handlers enforce on waiting
 * (lambdas/run/polling.ts): the state machine's execution timeout and the slow-run alarm's
 * threshold. docs/deploy.md ("The alarms") explains the figures.
 */
import { MAX_POLLS_PER_RUN, POLL_MAX_SECONDS } from '../lambdas/run/polling.js';

const HOUR = 3600;

/**
 * The longest a run can spend in its Wait states: every poll it may make, each at the longest
 * interval (2,000 x 120 s, 66 h 40 min). One poll more and the run fails with `wait_limit`.
 */
export const MAX_WAIT_SECONDS = MAX_POLLS_PER_RUN * POLL_MAX_SECONDS;

/**
 * Time for the work between the waits: uploads and labelling in batches of at most 15 minutes,
 * starting trainings, the copy, and every retry. A day is far more than any drop Hopper is meant
 * for needs (docs/pipeline.md, "Limits"), and keeps the timeout within four days.
 */
export const WORK_ALLOWANCE_SECONDS = 24 * HOUR;

/**
 * The state machine's execution timeout (90 h 40 min). A run that waits as long as it may still
 * has a day of work in hand, so it ends with `wait_limit` and a status file that says so; only a
 * run beyond what Hopper supports reaches this, and Step Functions stops it there (TimedOut).
 */
export const EXECUTION_TIMEOUT_SECONDS = MAX_WAIT_SECONDS + WORK_ALLOWANCE_SECONDS;

/**
 * A run that took longer than this (33 h 20 min, half its wait budget) took much longer than it
 * should: the slow-run alarm fires, before runs like it start ending with `wait_limit`.
 */
export const SLOW_RUN_SECONDS = MAX_WAIT_SECONDS / 2;

/** A duration as the docs and alarm texts write it: `90 h 40 min`, `24 h`. */
export function hoursAndMinutes(seconds: number): string {
  const minutes = Math.round(seconds / 60);
  const hours = Math.floor(minutes / 60);
  const rest = minutes % 60;
  return rest === 0 ? `${String(hours)} h` : `${String(hours)} h ${String(rest)} min`;
}
