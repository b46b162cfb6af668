/**
 * How long the state machine waits before polling a record again: the one function that decides
 * every Wait state's seconds (docs/pipeline.md, "Polling"). Short at first, backing off while the
 * service stays at `wait`, then growing with the time waited, so that a result is noticed within
 * max(60 s, 5% of the wait) at the cost of few polls; dense around the time the account's earlier
 * trainings took; never sleeping past the record's deadline or a quarter of the files' retention;
 * bounded over the whole run.
 */
import { RunError } from '../errors/errors.js';
import { historyLimitMessage, waitLimitMessage } from '../errors/messages.js';
import type { ExpectedFinish, PollSchedule } from '../state/state.js';

export type { ExpectedFinish } from '../state/state.js';

export const POLL_FIRST_SECONDS = 2;
/**
 * ×3 from 2 s (2, 6, 18, 54): a phase of a few seconds is still seen within seconds, and the
 * backoff reaches the 60 s the bound allows in four polls (×1.5 took nine: 64 polls for 2 h).
 */
export const POLL_BACKOFF_FACTOR = 3;
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
 * The interval inside the window where earlier trainings finished (ExpectedFinish); a tenth of
 * the expected time when that is shorter.
 */
export const DENSE_POLL_SECONDS = 10;
/**
 * The dense interval is at least the window's width over this: a wide spread of earlier
 * durations makes the dense polls sparser rather than more numerous.
 */
export const MAX_DENSE_POLLS = 12;
/** The share of earlier durations the window covers: from their 10th to their 90th percentile. */
export const EXPECTED_LOW_QUANTILE = 0.1;
export const EXPECTED_HIGH_QUANTILE = 0.9;
/**
 * A wait whose deadline is the model's files_expire_at ends at least this long before it: time
 * for the copy itself (a model of gigabytes streams for minutes) and a retry or two. Inside the
 * margin a wait sleeps half of what is left, so the last chances to copy come closer together.
 */
export const FILES_EXPIRY_MARGIN_SECONDS = 600;
/**
 * The longest a run waits on the service in all: 14 days, far past any training Hopper is meant
 * for; the state machine's execution timeout is derived from it (infra/run-limits.ts).
 */
export const MAX_WAIT_SECONDS_PER_RUN = 14 * 24 * 3600;
/**
 * The backstop on the state machine's loops, one rule for all of them: a run goes round its loops
 * at most this many times in all. A round is a poll (WaitForDataset or WaitForModel, its Task and
 * Choice: 9 events of the execution's history), a copy put off (WaitToCopy, CopyModel, ModelCopied:
 * 9), or a Task that leaves its record at the action it was called for, so the Choice sends the
 * run back to it (another upload or label batch: the Task and RouteDataset, 7). Step Functions
 * keeps at most 25,000 events per execution and fails it past that without a Report; 2,000 rounds
 * of at most 9 are 18,000 events, which leaves the rest of a run (about 70) and Task retries (3
 * each) about 6,900. The schedule polls far less (about 300 times in 14 days), and batches are
 * few unless each makes very little progress (a label taking most of a minute).
 */
export const MAX_LOOP_ROUNDS_PER_RUN = 2000;

/** What the schedule knows besides the record's `next_action` and the schedule before. */
export interface PollContext {
  /** Milliseconds since the epoch. */
  readonly now: number;
  /** An ISO timestamp not to sleep past (the dataset's `expires_at`, the model's `files_expire_at`), or null. */
  readonly deadline: string | null;
  /**
   * Seconds before `deadline` that a sleep must end (FILES_EXPIRY_MARGIN_SECONDS when the deadline
   * is the model's files' expiry); inside the margin, half of what is left. Default 0.
   */
  readonly marginSeconds?: number;
  /** The longest interval (pollCeilingSeconds for a model). Default POLL_MAX_SECONDS. */
  readonly maxSeconds?: number;
  /**
   * When the record began to wait (a model's `created_at`): the time waited is measured from it
   * rather than summed from the sleeps, which leave out the time spent between them.
   */
  readonly since?: string | null;
  /** Where earlier trainings finished, relative to `since`; null when none tells. */
  readonly expected?: ExpectedFinish | null;
}

/** The schedule while not waiting: no sleep, the run's counts carried on (nextPoll adds a wait to it). */
export function noWait(
  previous?: Pick<PollSchedule, 'totalPolls' | 'totalWaitSeconds' | 'totalBatches'>,
): PollSchedule {
  return {
    waitSeconds: 0,
    polls: 0,
    waitedSeconds: 0,
    totalPolls: previous?.totalPolls ?? 0,
    totalWaitSeconds: previous?.totalWaitSeconds ?? 0,
    // The run's batch rounds: absent until its first, so most runs' slots stay as they were.
    ...(previous?.totalBatches === undefined ? {} : { totalBatches: previous.totalBatches }),
  };
}

/**
 * The schedule after a Task left its record at the action it was called for (another upload or
 * label batch follows): one more round of the run's loops.
 * @param doing what the run was doing, for the message (`labelling, 120 labels so far`)
 * @throws RunError history_limit past MAX_LOOP_ROUNDS_PER_RUN
 */
export function nextBatch(schedule: PollSchedule, doing: string): PollSchedule {
  const next = { ...schedule, totalBatches: (schedule.totalBatches ?? 0) + 1 };
  checkRounds(next, doing);
  return next;
}

/**
 * @throws RunError history_limit when the schedule's rounds pass MAX_LOOP_ROUNDS_PER_RUN
 */
function checkRounds(schedule: PollSchedule, doing: string): void {
  const batches = schedule.totalBatches ?? 0;
  const rounds = schedule.totalPolls + batches;
  if (rounds <= MAX_LOOP_ROUNDS_PER_RUN) return;
  const loops = { rounds, polls: schedule.totalPolls, batches, max: MAX_LOOP_ROUNDS_PER_RUN };
  throw new RunError('history_limit', historyLimitMessage(doing, loops));
}

/**
 * The schedule after a service call that left the record at `nextAction`:
 * 1. backoff: 2 s, then ×3 per poll while the record stays at `wait`, up to 60 s (straight to
 *    60 s when earlier trainings all took longer than a minute);
 * 2. then 5% of the time waited (the interval after a poll at t is at most max(60 s, 0.05 t),
 *    so a result that comes just after the poll is noticed within max(60 s, 5% of t));
 * 3. inside the expected window, every DENSE_POLL_SECONDS (fewer when the window is wide), and
 *    never sleeping past the window's start;
 * 4. at most `maxSeconds` (an hour, or a quarter of the files' retention), never past the deadline
 *    less `marginSeconds` (inside the margin, half of what is left; at least 1 s).
 * @param previous the schedule the record had before (consecutive waits back off)
 * @throws RunError wait_limit past MAX_WAIT_SECONDS_PER_RUN, history_limit past MAX_LOOP_ROUNDS_PER_RUN
 */
export function nextPoll(
  nextAction: string,
  previous: PollSchedule | undefined,
  context: PollContext,
): PollSchedule {
  if (nextAction !== 'wait') return noWait(previous);
  const {
    now,
    deadline,
    marginSeconds = 0,
    maxSeconds = POLL_MAX_SECONDS,
    since = null,
    expected = null,
  } = context;
  const totalPolls = (previous?.totalPolls ?? 0) + 1;
  const continuing = previous !== undefined && previous.waitSeconds > 0;
  const polls = continuing ? previous.polls + 1 : 0;
  const waitedSeconds = continuing ? previous.waitedSeconds + previous.waitSeconds : 0;
  const sinceMs = since === null ? NaN : Date.parse(since);
  const elapsed = Number.isFinite(sinceMs) ? Math.max(waitedSeconds, (now - sinceMs) / 1000) : waitedSeconds;

  const longWaitExpected = expected !== null && expected.fromSeconds >= POLL_STEADY_SECONDS;
  const backoff = longWaitExpected
    ? POLL_STEADY_SECONDS
    : Math.min(POLL_STEADY_SECONDS, Math.round(POLL_FIRST_SECONDS * POLL_BACKOFF_FACTOR ** polls));
  let seconds = Math.min(maxSeconds, Math.max(backoff, Math.floor(POLL_WAITED_FRACTION * elapsed)));
  if (expected !== null) seconds = Math.min(seconds, denseSeconds(expected, elapsed) ?? seconds);
  if (deadline !== null) {
    const secondsLeft = Math.floor((Date.parse(deadline) - now) / 1000);
    const beforeMargin = secondsLeft - marginSeconds;
    seconds = Math.min(seconds, Math.max(1, beforeMargin >= 1 ? beforeMargin : Math.floor(secondsLeft / 2)));
  }
  const totalWaitSeconds = (previous?.totalWaitSeconds ?? 0) + seconds;
  if (totalWaitSeconds > MAX_WAIT_SECONDS_PER_RUN) {
    const hours = Math.round((totalWaitSeconds - seconds) / 3600);
    throw new RunError(
      'wait_limit',
      waitLimitMessage(totalPolls - 1, hours, MAX_WAIT_SECONDS_PER_RUN / 86400),
    );
  }
  const schedule = {
    ...noWait(previous),
    waitSeconds: seconds,
    polls,
    waitedSeconds,
    totalPolls,
    totalWaitSeconds,
  };
  checkRounds(schedule, 'waiting on the service');
  return schedule;
}

/**
 * The longest sleep the expected window allows after `elapsed` seconds: up to the window's start
 * (whole seconds, at least 1), the dense interval inside it, nothing after it (undefined).
 */
function denseSeconds(expected: ExpectedFinish, elapsed: number): number | undefined {
  if (elapsed >= expected.toSeconds) return undefined;
  if (elapsed < expected.fromSeconds) return Math.max(1, Math.ceil(expected.fromSeconds - elapsed));
  const width = expected.toSeconds - expected.fromSeconds;
  // A training expected within seconds is polled every second or two, not every 10 s.
  const dense = Math.min(DENSE_POLL_SECONDS, Math.ceil(0.1 * expected.toSeconds));
  return Math.max(1, dense, Math.ceil(width / MAX_DENSE_POLLS));
}

/**
 * The window where a training is expected to finish, from how long earlier trainings took (in
 * seconds from creation to finish): their 10th to 90th percentile, widened each side by one
 * dense interval (10 s, or a tenth of a duration of seconds). Null when there is none.
 */
export function expectedFinish(durationsSeconds: readonly number[]): ExpectedFinish | null {
  const sorted = durationsSeconds
    .filter((value) => Number.isFinite(value) && value >= 0)
    .sort((a, b) => a - b);
  if (sorted.length === 0) return null;
  const low = quantile(sorted, EXPECTED_LOW_QUANTILE);
  const high = quantile(sorted, EXPECTED_HIGH_QUANTILE);
  return {
    fromSeconds: Math.floor(low - Math.min(DENSE_POLL_SECONDS, 0.1 * low)),
    toSeconds: Math.ceil(high + Math.min(DENSE_POLL_SECONDS, 0.1 * high)),
  };
}

/** Linear interpolation between the closest ranks of an ascending, non-empty list. */
function quantile(sorted: readonly number[], q: number): number {
  const rank = q * (sorted.length - 1);
  const below = sorted[Math.floor(rank)] ?? 0;
  const above = sorted[Math.ceil(rank)] ?? below;
  return below + (above - below) * (rank - Math.floor(rank));
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
