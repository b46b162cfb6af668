/**
 * How long the state machine waits before polling a record again. Short at first, backing off
 * while the service stays at `wait`, never sleeping past the record's deadline, and bounded over
 * the whole run: each poll adds about ten events to the execution's history, which Step
 * Functions caps at 25,000.
 */
import { RunError } from './errors.js';
import type { PollSchedule } from './state.js';

export const POLL_FIRST_SECONDS = 2;
export const POLL_BACKOFF_FACTOR = 1.5;
export const POLL_MAX_SECONDS = 120;
/**
 * The longest interval as a share of how long the service keeps a done model's files: a model
 * that finishes just after a poll is noticed with at least three quarters of its files'
 * retention left for the copy.
 */
export const RETENTION_POLL_FRACTION = 0.25;
/** About 66 hours of waiting at the longest interval; 20,000 history events. */
export const MAX_POLLS_PER_RUN = 2000;

/** The schedule while not waiting: no sleep, the run's poll count carried on. */
export function noWait(previous?: Pick<PollSchedule, 'totalPolls'>): PollSchedule {
  return { waitSeconds: 0, polls: 0, totalPolls: previous?.totalPolls ?? 0 };
}

/**
 * The schedule after a service call that left the record at `nextAction`.
 * @param previous the schedule the record had before (consecutive waits back off)
 * @param deadline an ISO timestamp not to sleep past (e.g. the dataset's `expires_at`), or null
 * @param maxSeconds the longest interval (pollCeilingSeconds for a model)
 */
export function nextPoll(
  nextAction: string,
  previous: PollSchedule | undefined,
  deadline: string | null,
  now: number,
  maxSeconds = POLL_MAX_SECONDS,
): PollSchedule {
  if (nextAction !== 'wait') return noWait(previous);
  const totalPolls = (previous?.totalPolls ?? 0) + 1;
  if (totalPolls > MAX_POLLS_PER_RUN) {
    throw new RunError(
      'wait_limit',
      `the training service kept Hopper waiting for ${String(MAX_POLLS_PER_RUN)} polls; the run stops to stay within Step Functions' history limit. Check the dataset or model at the service, then drop train.json again`,
    );
  }
  const polls = previous !== undefined && previous.waitSeconds > 0 ? previous.polls + 1 : 0;
  let seconds = Math.min(maxSeconds, Math.round(POLL_FIRST_SECONDS * POLL_BACKOFF_FACTOR ** polls));
  if (deadline !== null) {
    const secondsLeft = Math.floor((Date.parse(deadline) - now) / 1000);
    seconds = Math.min(seconds, Math.max(1, secondsLeft));
  }
  return { waitSeconds: seconds, polls, totalPolls };
}

/**
 * The longest interval between polls of a training: POLL_MAX_SECONDS, or less when the account's
 * earlier models show that the service keeps a done model's files only briefly (a finished model
 * must be noticed while its files can still be copied).
 * @param filesRetentionSeconds the shortest retention seen, or null when none was seen
 */
export function pollCeilingSeconds(filesRetentionSeconds: number | null): number {
  if (filesRetentionSeconds === null) return POLL_MAX_SECONDS;
  return Math.max(1, Math.min(POLL_MAX_SECONDS, Math.floor(filesRetentionSeconds * RETENTION_POLL_FRACTION)));
}
