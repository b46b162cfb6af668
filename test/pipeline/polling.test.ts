import { describe, expect, it } from 'vitest';
import { RunError } from '../../lambdas/run/errors.js';
import {
  MAX_POLLS_PER_RUN,
  MAX_WAIT_SECONDS_PER_RUN,
  nextPoll,
  noWait,
  POLL_FIRST_SECONDS,
  POLL_MAX_SECONDS,
  pollCeilingSeconds,
} from '../../lambdas/run/polling.js';
import type { PollSchedule } from '../../lambdas/run/state.js';

const NOW = Date.parse('2026-01-01T00:00:00.000Z');
const inSeconds = (seconds: number): string => new Date(NOW + seconds * 1000).toISOString();

/** The schedules of `count` polls in a row that all find the record at `wait`. */
function waitsInARow(count: number, deadline: string | null = null): PollSchedule[] {
  const schedules: PollSchedule[] = [];
  let previous: PollSchedule | undefined;
  for (let i = 0; i < count; i++) {
    previous = nextPoll('wait', previous, deadline, NOW);
    schedules.push(previous);
  }
  return schedules;
}

describe('nextPoll', () => {
  it('backs off by 1.5 from 2 s to 60 s while the record stays at wait', () => {
    const schedules = waitsInARow(14);
    expect(schedules.map((schedule) => schedule.waitSeconds)).toEqual([
      2, 3, 5, 7, 10, 15, 23, 34, 51, 60, 60, 60, 60, 60,
    ]);
    expect(schedules.map((schedule) => schedule.polls)).toEqual([
      0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13,
    ]);
    expect(schedules.map((schedule) => schedule.totalPolls)).toEqual([
      1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14,
    ]);
    expect(schedules[0]?.waitSeconds).toBe(POLL_FIRST_SECONDS);
    // What was slept before each wait, and in the whole run including it.
    expect(schedules.slice(0, 4).map((schedule) => schedule.waitedSeconds)).toEqual([0, 2, 5, 10]);
    expect(schedules.slice(0, 4).map((schedule) => schedule.totalWaitSeconds)).toEqual([2, 5, 10, 17]);
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
      expect(nextPoll(action, waiting, inSeconds(60), NOW)).toEqual({
        waitSeconds: 0,
        polls: 0,
        waitedSeconds: 0,
        totalPolls: 3,
        totalWaitSeconds: 10,
      });
    }
    expect(nextPoll('structure', undefined, null, NOW)).toEqual(noWait());
  });

  it('starts the backoff afresh after a stretch without waiting, counting on for the run', () => {
    const waiting = waitsInARow(5).at(-1)!;
    const moved = nextPoll('structure', waiting, null, NOW);
    expect(nextPoll('wait', moved, null, NOW)).toEqual({
      waitSeconds: 2,
      polls: 0,
      waitedSeconds: 0,
      totalPolls: 6,
      totalWaitSeconds: 29,
    });
  });

  it('never sleeps past the deadline: whole seconds left, at least 1', () => {
    const backedOff: PollSchedule = {
      waitSeconds: 60,
      polls: 20,
      waitedSeconds: 1000,
      totalPolls: 20,
      totalWaitSeconds: 1060,
    };
    expect(nextPoll('wait', backedOff, inSeconds(600), NOW).waitSeconds).toBe(60);
    expect(nextPoll('wait', backedOff, inSeconds(45.9), NOW).waitSeconds).toBe(45);
    expect(nextPoll('wait', backedOff, inSeconds(0.4), NOW).waitSeconds).toBe(1);
    expect(nextPoll('wait', backedOff, inSeconds(-30), NOW).waitSeconds).toBe(1);
    // The clamp does not reset the backoff: the next poll goes on from where it was.
    expect(nextPoll('wait', backedOff, inSeconds(10), NOW)).toEqual({
      waitSeconds: 10,
      polls: 21,
      waitedSeconds: 1060,
      totalPolls: 21,
      totalWaitSeconds: 1070,
    });
    // A short first wait stays short.
    expect(nextPoll('wait', undefined, inSeconds(600), NOW).waitSeconds).toBe(2);
  });

  it('reads a schedule written before waitedSeconds and totalWaitSeconds existed', () => {
    const legacy = { waitSeconds: 120, polls: 20, totalPolls: 20 } as unknown as PollSchedule;
    expect(nextPoll('wait', legacy, null, NOW)).toEqual({
      waitSeconds: 60,
      polls: 21,
      waitedSeconds: 120,
      totalPolls: 21,
      totalWaitSeconds: 60,
    });
  });

  it('stops the run with wait_limit past the run-wide poll budget', () => {
    const last = nextPoll(
      'wait',
      {
        waitSeconds: 60,
        polls: 50,
        waitedSeconds: 0,
        totalPolls: MAX_POLLS_PER_RUN - 1,
        totalWaitSeconds: 0,
      },
      null,
      NOW,
    );
    expect(last.totalPolls).toBe(MAX_POLLS_PER_RUN);
    const caught = thrownBy(() => nextPoll('wait', last, null, NOW));
    expect(caught).toBeInstanceOf(RunError);
    expect(caught).toMatchObject({ code: 'wait_limit', retryable: false, name: 'Hopper.Failed' });
    expect((caught as RunError).message).toContain(String(MAX_POLLS_PER_RUN));
    // Only waiting counts: a record that moved on at the limit is fine.
    expect(nextPoll('download', last, null, NOW)).toMatchObject({
      waitSeconds: 0,
      polls: 0,
      totalPolls: MAX_POLLS_PER_RUN,
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
    expect(nextPoll('wait', nearly, null, NOW).totalWaitSeconds).toBe(MAX_WAIT_SECONDS_PER_RUN);
    const caught = thrownBy(() => nextPoll('wait', nextPoll('wait', nearly, null, NOW), null, NOW));
    expect(caught).toMatchObject({ code: 'wait_limit', retryable: false });
    expect((caught as RunError).message).toContain('a run waits at most 14 days');
  });
});

function thrownBy(action: () => unknown): unknown {
  try {
    action();
  } catch (error) {
    return error;
  }
  throw new Error('nothing was thrown');
}

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
      schedule = nextPoll('wait', schedule, null, NOW, pollCeilingSeconds(40));
      waits.push(schedule.waitSeconds);
    }
    expect(waits).toEqual([2, 3, 5, 7, 10, 10, 10, 10, 10, 10]);
  });
});
