import { describe, expect, it } from 'vitest';
import { RunError } from '../../lambdas/core/errors/index.js';
import {
  FILES_EXPIRY_MARGIN_SECONDS,
  DENSE_POLL_SECONDS,
  expectedFinish,
  MAX_DENSE_POLLS,
  MAX_LOOP_ROUNDS_PER_RUN,
  MAX_WAIT_SECONDS_PER_RUN,
  nextPoll,
  noWait,
  POLL_FIRST_SECONDS,
  POLL_MAX_SECONDS,
  pollCeilingSeconds,
} from '../../lambdas/core/schedule/index.js';
import type { PollSchedule } from '../../lambdas/core/state/index.js';
import { median, simulatePolling, worstCaseDelay } from '../../testkit/poll-simulation.js';
import { runErrorThrownBy } from '../helpers/run-errors.js';

const NOW = Date.parse('2026-01-01T00:00:00.000Z');
const inSeconds = (seconds: number): string => new Date(NOW + seconds * 1000).toISOString();
/** No deadline, nothing known about earlier trainings. */
const NONE = { now: NOW, deadline: null } as const;

/** The schedules of `count` polls in a row that all find the record at `wait`. */
function waitsInARow(count: number, deadline: string | null = null): PollSchedule[] {
  const schedules: PollSchedule[] = [];
  let previous: PollSchedule | undefined;
  for (let i = 0; i < count; i++) {
    previous = nextPoll('wait', previous, { now: NOW, deadline });
    schedules.push(previous);
  }
  return schedules;
}

/** A schedule 20 polls into its backoff, waiting the 60 s it has reached. */
const BACKED_OFF: PollSchedule = {
  waitSeconds: 60,
  polls: 20,
  waitedSeconds: 1000,
  totalPolls: 20,
  totalWaitSeconds: 1060,
};

describe('nextPoll', () => {
  it('backs off by 3 from 2 s to 60 s while the record stays at wait', () => {
    const schedules = waitsInARow(8);
    expect(schedules.map((schedule) => schedule.waitSeconds)).toEqual([2, 6, 18, 54, 60, 60, 60, 60]);
    expect(schedules.map((schedule) => schedule.polls)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect(schedules.map((schedule) => schedule.totalPolls)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(schedules[0]?.waitSeconds).toBe(POLL_FIRST_SECONDS);
    // What was slept before each wait, and in the whole run including it.
    expect(schedules.slice(0, 4).map((schedule) => schedule.waitedSeconds)).toEqual([0, 2, 8, 26]);
    expect(schedules.slice(0, 4).map((schedule) => schedule.totalWaitSeconds)).toEqual([2, 8, 26, 80]);
  });

  it('then waits 5% of the time already waited, up to an hour: few polls for a long wait', () => {
    const schedules = waitsInARow(400);
    const waits = schedules.map((schedule) => schedule.waitSeconds);
    // Every wait is at most max(60 s, 5% of the time waited before it), and never over an hour.
    for (const schedule of schedules) {
      expect(schedule.waitSeconds).toBeLessThanOrEqual(Math.max(60, 0.05 * schedule.waitedSeconds));
    }
    expect(Math.max(...waits)).toBe(POLL_MAX_SECONDS);
    const pollsWithin = (seconds: number) =>
      schedules.filter((schedule) => schedule.waitedSeconds < seconds).length;
    expect(pollsWithin(2 * 3600)).toBeLessThanOrEqual(65);
    expect(pollsWithin(72 * 3600)).toBeLessThanOrEqual(200);
    expect(pollsWithin(7 * 24 * 3600)).toBeLessThanOrEqual(260);
  });

  it('does not wait at any other next_action, and keeps the run-wide counts', () => {
    const waiting = waitsInARow(3).at(-1)!;
    for (const action of ['upload_files', 'structure', 'download', 'retry', 'none', 'expired']) {
      expect(nextPoll(action, waiting, { now: NOW, deadline: inSeconds(60) })).toEqual({
        waitSeconds: 0,
        polls: 0,
        waitedSeconds: 0,
        totalPolls: 3,
        totalWaitSeconds: 26,
      });
    }
    expect(nextPoll('structure', undefined, { now: NOW, deadline: null })).toEqual(noWait());
  });

  it('starts the backoff afresh after a stretch without waiting, counting on for the run', () => {
    const waiting = waitsInARow(5).at(-1)!;
    const moved = nextPoll('structure', waiting, { now: NOW, deadline: null });
    expect(nextPoll('wait', moved, { now: NOW, deadline: null })).toEqual({
      waitSeconds: 2,
      polls: 0,
      waitedSeconds: 0,
      totalPolls: 6,
      totalWaitSeconds: 142,
    });
  });

  it('never sleeps past the deadline: whole seconds left, at least 1', () => {
    expect(nextPoll('wait', BACKED_OFF, { now: NOW, deadline: inSeconds(600) }).waitSeconds).toBe(60);
    expect(nextPoll('wait', BACKED_OFF, { now: NOW, deadline: inSeconds(45.9) }).waitSeconds).toBe(45);
    expect(nextPoll('wait', BACKED_OFF, { now: NOW, deadline: inSeconds(0.4) }).waitSeconds).toBe(1);
    expect(nextPoll('wait', BACKED_OFF, { now: NOW, deadline: inSeconds(-30) }).waitSeconds).toBe(1);
    // The clamp does not reset the backoff: the next poll goes on from where it was.
    expect(nextPoll('wait', BACKED_OFF, { now: NOW, deadline: inSeconds(10) })).toEqual({
      waitSeconds: 10,
      polls: 21,
      waitedSeconds: 1060,
      totalPolls: 21,
      totalWaitSeconds: 1070,
    });
    // A short first wait stays short.
    expect(nextPoll('wait', undefined, { now: NOW, deadline: inSeconds(600) }).waitSeconds).toBe(2);
  });

  it("with a margin (a model's files_expire_at), wakes before it; inside it, after half of what is left", () => {
    const margin = FILES_EXPIRY_MARGIN_SECONDS;
    const at = (seconds: number) =>
      nextPoll('wait', BACKED_OFF, { now: NOW, deadline: inSeconds(seconds), marginSeconds: margin })
        .waitSeconds;
    expect(at(margin + 3600)).toBe(60);
    // 30 s before the margin: wake when it begins, with the margin left to copy.
    expect(at(margin + 30.5)).toBe(30);
    // Inside the margin: half of what is left, at least 1 s.
    expect(at(100)).toBe(50);
    expect(at(margin)).toBe(60);
    expect(at(1.5)).toBe(1);
    expect(at(-5)).toBe(1);
  });

  it('stops the run with history_limit past the run-wide rounds of its loops', () => {
    const last = nextPoll(
      'wait',
      {
        waitSeconds: 60,
        polls: 50,
        waitedSeconds: 0,
        totalPolls: MAX_LOOP_ROUNDS_PER_RUN - 1,
        totalWaitSeconds: 0,
      },
      NONE,
    );
    expect(last.totalPolls).toBe(MAX_LOOP_ROUNDS_PER_RUN);
    const caught = runErrorThrownBy(() => nextPoll('wait', last, NONE));
    expect(caught).toBeInstanceOf(RunError);
    expect(caught).toMatchObject({ code: 'history_limit', retryable: false, name: 'Hopper.Failed' });
    expect(caught.message).toContain(String(MAX_LOOP_ROUNDS_PER_RUN));
    // Only waiting counts: a record that moved on at the limit is fine.
    expect(nextPoll('download', last, NONE)).toMatchObject({
      waitSeconds: 0,
      polls: 0,
      totalPolls: MAX_LOOP_ROUNDS_PER_RUN,
    });
  });

  it('stops the run with wait_limit past 14 days of waiting', () => {
    const nearly: PollSchedule = {
      waitSeconds: 3600,
      polls: 300,
      waitedSeconds: MAX_WAIT_SECONDS_PER_RUN - 7200,
      totalPolls: 300,
      totalWaitSeconds: MAX_WAIT_SECONDS_PER_RUN - 3600,
    };
    expect(nextPoll('wait', nearly, NONE).totalWaitSeconds).toBe(MAX_WAIT_SECONDS_PER_RUN);
    const caught = runErrorThrownBy(() => nextPoll('wait', nextPoll('wait', nearly, NONE), NONE));
    expect(caught).toMatchObject({ code: 'wait_limit', retryable: false });
    expect(caught.message).toContain('a run waits at most 14 days');
  });
});

describe('pollCeilingSeconds', () => {
  it('is a quarter of the shortest retention seen, at least 1 s and at most the usual ceiling', () => {
    expect(pollCeilingSeconds(null)).toBe(POLL_MAX_SECONDS);
    expect(pollCeilingSeconds(8)).toBe(2);
    expect(pollCeilingSeconds(3)).toBe(1);
    expect(pollCeilingSeconds(0)).toBe(1);
    expect(pollCeilingSeconds(24 * 3600)).toBe(POLL_MAX_SECONDS);
    expect(pollCeilingSeconds(3600)).toBe(900);
  });

  it('caps the backoff it is given', () => {
    let schedule: PollSchedule | undefined;
    const waits: number[] = [];
    for (let i = 0; i < 10; i++) {
      schedule = nextPoll('wait', schedule, { ...NONE, maxSeconds: pollCeilingSeconds(40) });
      waits.push(schedule.waitSeconds);
    }
    expect(waits).toEqual([2, 6, 10, 10, 10, 10, 10, 10, 10, 10]);
  });
});

const HOUR_S = 3600;

describe('the poll schedule of a training (simulated clock)', () => {
  it('a 2-hour training: at most 60 polls, noticed within max(60 s, 5% of the wait) wherever it finishes', () => {
    const twoHours = simulatePolling(2 * HOUR_S);
    expect(twoHours.polls).toBeLessThanOrEqual(60);
    expect(twoHours.delaySeconds).toBeLessThanOrEqual(0.05 * 2 * HOUR_S);
    // The worst case over every finish time up to 2 h: a finish just after a poll.
    const worst = worstCaseDelay(2 * HOUR_S);
    expect(worst.boundRatio).toBeLessThanOrEqual(1);
    expect(worst.delaySeconds).toBeLessThanOrEqual(360);
  });

  it.each([
    { hours: 72, maxPolls: 160 },
    { hours: 7 * 24, maxPolls: 256 },
  ])('a training of $hours h: at most $maxPolls polls, within the same bound', ({ hours, maxPolls }) => {
    const polling = simulatePolling(hours * HOUR_S);
    expect(polling.polls).toBeLessThanOrEqual(maxPolls);
    expect(worstCaseDelay(hours * HOUR_S).boundRatio).toBeLessThanOrEqual(1);
  });

  it("measures the wait from the record's creation when given it, so the time between sleeps counts", () => {
    const since = new Date(NOW).toISOString();
    const previous: PollSchedule = {
      waitSeconds: 60,
      polls: 20,
      waitedSeconds: 1940,
      totalPolls: 20,
      totalWaitSeconds: 2000,
    };
    // Slept 2,000 s in all, but the model was created 4,000 s ago: 5% of 4,000 s.
    expect(nextPoll('wait', previous, { now: NOW + 4000_000, deadline: null, since }).waitSeconds).toBe(200);
    expect(nextPoll('wait', previous, { now: NOW + 4000_000, deadline: null }).waitSeconds).toBe(100);
  });
});

describe('expectedFinish', () => {
  it('spans the 10th to 90th percentile of earlier durations, one dense interval wider each side', () => {
    expect(expectedFinish([])).toBeNull();
    expect(expectedFinish([7200])).toEqual({ fromSeconds: 7190, toSeconds: 7210 });
    const durations = Array.from({ length: 11 }, (_, index) => 7000 + index * 40); // 7000..7400
    expect(expectedFinish(durations)).toEqual({ fromSeconds: 7030, toSeconds: 7370 });
    expect(expectedFinish([3, Number.NaN, -1])).toEqual({ fromSeconds: 2, toSeconds: 4 });
  });
});

describe('polling around the expected finish', () => {
  // Earlier trainings of the account took 2 h ± 1 minute.
  const earlier = Array.from({ length: 25 }, (_, index) => 2 * HOUR_S - 60 + index * 5);
  const expected = expectedFinish(earlier);

  it("polls every 10 s from the window's start to its end, and at the usual pace elsewhere", () => {
    expect(expected).not.toBeNull();
    const { fromSeconds, toSeconds } = expected!;
    const { pollTimes } = simulatePolling(3 * HOUR_S, { expected });
    // No backoff from 2 s when earlier trainings took hours: the first poll after a minute.
    expect(pollTimes[0]).toBe(60);
    expect(pollTimes).toContain(fromSeconds);
    const inside = pollTimes.filter((time) => time >= fromSeconds && time <= toSeconds);
    const gaps = inside.slice(1).map((time, index) => time - (inside[index] ?? 0));
    expect(Math.max(...gaps)).toBe(DENSE_POLL_SECONDS);
    // Past the window, the interval grows with the wait again.
    const after = pollTimes.filter((time) => time > toSeconds);
    expect((after[1] ?? 0) - (after[0] ?? 0)).toBeGreaterThan(300);
  });

  it('notices a training like the earlier ones within 15 s at the median, the worst case still bounded', () => {
    const durations = Array.from({ length: 61 }, (_, index) => 2 * HOUR_S - 60 + index * 2);
    const withHistory = durations.map((duration) => simulatePolling(duration, { expected }));
    const without = durations.map((duration) => simulatePolling(duration));
    expect(median(withHistory.map((run) => run.delaySeconds))).toBeLessThan(15);
    expect(median(without.map((run) => run.delaySeconds))).toBeGreaterThan(60);
    expect(worstCaseDelay(4 * HOUR_S, { expected }).boundRatio).toBeLessThanOrEqual(1);
    // What the density costs: a few polls more than without history.
    const polls = withHistory.map((run) => run.polls);
    expect(Math.max(...polls)).toBeLessThanOrEqual(72);
  });

  it('spreads the dense polls over a wide window: no more polls in it than without history, but one', () => {
    const wide = expectedFinish([3600, 5400, 7200, 9000, 10800])!;
    const inside = (times: readonly number[]) =>
      times.filter((time) => time >= wide.fromSeconds && time < wide.toSeconds).length;
    const withHistory = simulatePolling(4 * HOUR_S, { expected: wide });
    const without = simulatePolling(4 * HOUR_S);
    expect(inside(withHistory.pollTimes)).toBeLessThanOrEqual(inside(without.pollTimes) + 1);
    // A narrower window of the same kind gets at most MAX_DENSE_POLLS polls at the dense interval.
    const narrow = { fromSeconds: 7000, toSeconds: 7000 + MAX_DENSE_POLLS * 30 };
    const narrowTimes = simulatePolling(4 * HOUR_S, { expected: narrow }).pollTimes;
    expect(narrowTimes.filter((time) => time >= 7000 && time < narrow.toSeconds)).toHaveLength(
      MAX_DENSE_POLLS,
    );
    expect(worstCaseDelay(4 * HOUR_S, { expected: wide }).boundRatio).toBeLessThanOrEqual(1);
  });

  it('keeps the backoff from 2 s when earlier trainings took seconds, and then polls every second', () => {
    const quick = expectedFinish([2.5, 2.5, 3]);
    expect(quick).toEqual({ fromSeconds: 2, toSeconds: 4 });
    expect(simulatePolling(2.5, { expected: quick }).pollTimes).toEqual([2, 3]);
    expect(simulatePolling(2.5).pollTimes).toEqual([2, 8]);
  });
});
