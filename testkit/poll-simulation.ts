/**
 * A training polled by the schedule function alone, on a simulated clock: where the polls land
 * and how late the finish is noticed. Shared by the schedule's tests and the polling benchmark.
 */
import { nextPoll, type ExpectedFinish } from '../lambdas/core/schedule/index.js';
import type { PollSchedule } from '../lambdas/core/state/index.js';

const START = Date.parse('2026-01-01T00:00:00.000Z');

export interface SimulatedPolling {
  /** Polls (PollModel invocations) until the finish was noticed. */
  readonly polls: number;
  /** Seconds between the finish and the poll that noticed it. */
  readonly delaySeconds: number;
  /** Seconds after the training's creation of every poll. */
  readonly pollTimes: readonly number[];
}

export interface SimulationContext {
  readonly expected?: ExpectedFinish | null;
  readonly maxSeconds?: number;
}

/**
 * Polls a training created at 0 that finishes `durationSeconds` later: StartTraining's slot sets
 * the first Wait, each poll before the finish sets the next. Bounded to `maxPolls`.
 * @param fixedSeconds poll every this many seconds instead of the schedule (the baseline)
 */
export function simulatePolling(
  durationSeconds: number,
  context: SimulationContext = {},
  fixedSeconds?: number,
  maxPolls = 5000,
): SimulatedPolling {
  const since = new Date(START).toISOString();
  const schedule = (previous: PollSchedule | undefined, elapsed: number): PollSchedule =>
    nextPoll('wait', previous, {
      now: START + elapsed * 1000,
      deadline: null,
      since,
      ...(context.maxSeconds === undefined ? {} : { maxSeconds: context.maxSeconds }),
      expected: context.expected ?? null,
    });
  const pollTimes: number[] = [];
  let slot = schedule(undefined, 0);
  let elapsed = 0;
  while (pollTimes.length < maxPolls) {
    elapsed += fixedSeconds ?? slot.waitSeconds;
    pollTimes.push(elapsed);
    if (elapsed >= durationSeconds) {
      return { polls: pollTimes.length, delaySeconds: elapsed - durationSeconds, pollTimes };
    }
    // The fixed baseline never asks the schedule (whose poll budget it would pass).
    if (fixedSeconds === undefined) slot = schedule(slot, elapsed);
  }
  throw new Error(`not noticed within ${String(maxPolls)} polls`);
}

/**
 * The worst delay the schedule allows for a training that finishes at any time in (0, until]:
 * the finish comes just after a poll, and is noticed at the next one. Returned with the finish
 * time where the delay is largest against the bound max(60 s, 5% of the finish time).
 */
export function worstCaseDelay(
  untilSeconds: number,
  context: SimulationContext = {},
): { readonly delaySeconds: number; readonly atSeconds: number; readonly boundRatio: number } {
  const { pollTimes } = simulatePolling(untilSeconds, context);
  let worst = { delaySeconds: 0, atSeconds: 0, boundRatio: 0 };
  let previous = 0;
  for (const time of pollTimes) {
    // A finish just after `previous` (the creation, or a poll) waits the whole interval.
    const delay = time - previous;
    const ratio = delay / Math.max(60, 0.05 * previous);
    if (ratio > worst.boundRatio) worst = { delaySeconds: delay, atSeconds: previous, boundRatio: ratio };
    previous = time;
  }
  return worst;
}

/** The median of a non-empty list. */
export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1
    ? (sorted[middle] ?? 0)
    : ((sorted[middle - 1] ?? 0) + (sorted[middle] ?? 0)) / 2;
}
