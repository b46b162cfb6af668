/**
 * How long the state machine waits before polling a record again. Short at first, backing off
 * while the service stays at `wait` and then growing with the time waited, never sleeping past
 * the record's deadline or a quarter of the files' retention, and bounded over the whole run.
 */
import { RunError } from './errors.js';
import type { PollSchedule } from './state.js';

export const POLL_FIRST_SECONDS = 2;
export const POLL_BACKOFF_FACTOR = 1.5;
/** Where the backoff levels off: from here the interval grows only with the time waited. */
export const POLL_STEADY_SECONDS = 60;
/**
 * Past the backoff, the interval is this share of the time the record has been waiting: a
 * result is noticed within max(60 s, 5% of the wait), and a long training costs few polls (the
 * count grows with the logarithm of its length, not in proportion to it).
 */
export const POLL_WAITED_FRACTION = 0.05;
/** The longest interval when nothing shorter applies: a result is noticed within an hour. */
export const POLL_MAX_SECONDS = 3600;
/**
 * The longest interval as a share of how long the service keeps a done model's files: a model
 * that finishes just after a poll is noticed with at least three quarters of its files'
 * retention left for the copy.
 */
export const RETENTION_POLL_FRACTION = 0.25;
/**
 * The longest a run waits on the service in all: 14 days, far past any training Hopper is meant
 * for; the state machine's execution timeout is derived from it (infra/run-limits.ts).
 */
export const MAX_WAIT_SECONDS_PER_RUN = 14 * 24 * 3600;
/**
 * A backstop on the count: each poll adds about ten events to the execution's history, which
 * Step Functions caps at 25,000. The schedule above stays far below it (about 430 polls in 14
 * days); only a very short interval held for days (a service that keeps files for seconds,
 * training for days) could reach it.
 */
export const MAX_POLLS_PER_RUN = 2000;

/** The schedule while not waiting: no sleep, the run's counts carried on. */
export function noWait(previous?: Pick<PollSchedule, 'totalPolls' | 'totalWaitSeconds'>): PollSchedule {
  return {
    waitSeconds: 0,
    polls: 0,
    waitedSeconds: 0,
    totalPolls: previous?.totalPolls ?? 0,
    totalWaitSeconds: previous?.totalWaitSeconds ?? 0,
  };
}

/**
 * The schedule after a service call that left the record at `nextAction`: the one function
 * that decides how long every Wait state sleeps (docs/pipeline.md, "Polling").
 * @param previous the schedule the record had before (consecutive waits back off)
 * @param deadline an ISO timestamp not to sleep past (e.g. the dataset's `expires_at`), or null
 * @param maxSeconds the longest interval (pollCeilingSeconds for a model)
 * @throws RunError wait_limit past MAX_WAIT_SECONDS_PER_RUN or MAX_POLLS_PER_RUN
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
  const continuing = previous !== undefined && previous.waitSeconds > 0;
  const polls = continuing ? previous.polls + 1 : 0;
  // Partial: a schedule written before waitedSeconds existed has none.
  const waitedSeconds = continuing
    ? ((previous as Partial<PollSchedule>).waitedSeconds ?? 0) + previous.waitSeconds
    : 0;
  const backoff = Math.min(
    POLL_STEADY_SECONDS,
    Math.round(POLL_FIRST_SECONDS * POLL_BACKOFF_FACTOR ** polls),
  );
  let seconds = Math.min(maxSeconds, Math.max(backoff, Math.floor(POLL_WAITED_FRACTION * waitedSeconds)));
  if (deadline !== null) {
    const secondsLeft = Math.floor((Date.parse(deadline) - now) / 1000);
    seconds = Math.min(seconds, Math.max(1, secondsLeft));
  }
  const totalWaitSeconds = ((previous as Partial<PollSchedule> | undefined)?.totalWaitSeconds ?? 0) + seconds;
  if (totalPolls > MAX_POLLS_PER_RUN || totalWaitSeconds > MAX_WAIT_SECONDS_PER_RUN) {
    throw new RunError(
      'wait_limit',
      `the training service kept Hopper waiting for ${String(totalPolls - 1)} polls over ${String(Math.round((totalWaitSeconds - seconds) / 3600))} h; a run waits at most ${String(MAX_WAIT_SECONDS_PER_RUN / 86400)} days or ${String(MAX_POLLS_PER_RUN)} polls (Step Functions' history limit). Check the dataset or model at the service, then drop train.json again`,
    );
  }
  return { waitSeconds: seconds, polls, waitedSeconds, totalPolls, totalWaitSeconds };
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
