import { Writable } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { retryable } from '../../lambdas/core/errors/index.js';
import { describeOutcome } from '../../local/cli/local.js';
import { LambdaInvocationError } from '../../local/emulator/lambda-invoke.js';
import {
  formatBytes,
  formatProgress,
  lineReporter,
  liveReporter,
  progressOf,
  reporterFor,
  type RunProgress,
} from '../../local/cli/progress.js';
import type { ExecutionEvent } from '../../local/emulator/state-machine.js';

/** The part of a run's state progress reads: $.dataset and $.model. */
const DATASET = { id: 'ds_1', step: 2, nextAction: 'wait', waitSeconds: 15 };
const MODEL = { id: 'md_1', step: 4, nextAction: 'download', waitSeconds: 30 };
const RUN = { runId: 'r', bucket: 'b', drop: 'd', key: 'inbox/d/train.json', etag: 'e', startedAt: 'now' };

function stateEvent(
  type: 'StateEntered' | 'StateExited' | 'StateFailed',
  name: string,
  stateType: 'Task' | 'Wait' | 'Pass' | 'Choice',
  input: object | null,
  failure?: { Error: string; Cause: unknown },
): ExecutionEvent {
  // Built the way the interpreter dispatches them (a StateFailed carries Error and Cause).
  return {
    type,
    timestamp: 0,
    state: { name, type: stateType, input: input as never },
    ...failure,
  } as ExecutionEvent;
}

/** A stream that keeps what is written to it, chunk by chunk. */
function collectingStream(options: { isTTY?: boolean } = {}): Writable & { chunks: string[] } {
  const chunks: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer | string, _encoding, callback) {
      chunks.push(chunk.toString());
      callback();
    },
  });
  return Object.assign(stream, { chunks }, options);
}

const PROGRESS: RunProgress = {
  state: 'PollDataset',
  step: 2,
  nextAction: 'wait',
  waitSeconds: null,
  failure: null,
};

describe('progressOf', () => {
  it('reads a Task state entered: the dataset step and next_action before there is a model', () => {
    const progress = progressOf(
      stateEvent('StateEntered', 'PollDataset', 'Task', { run: RUN, dataset: DATASET }),
    );
    expect(progress).toEqual({
      state: 'PollDataset',
      step: 2,
      nextAction: 'wait',
      waitSeconds: null,
      failure: null,
    });
  });

  it("reads the model's step and next_action once there is a model", () => {
    const input = { run: RUN, dataset: DATASET, model: MODEL };
    expect(progressOf(stateEvent('StateEntered', 'CopyModel', 'Task', input))).toMatchObject({
      state: 'CopyModel',
      step: 4,
      nextAction: 'download',
    });
  });

  it('gives the seconds to the next poll for a Wait state only', () => {
    const wait = progressOf(stateEvent('StateEntered', 'WaitForModel', 'Wait', { run: RUN, model: MODEL }));
    expect(wait?.waitSeconds).toBe(30);
    const task = progressOf(stateEvent('StateEntered', 'PollModel', 'Task', { run: RUN, model: MODEL }));
    expect(task?.waitSeconds).toBeNull();
  });

  it('has no step or next_action before the run has a dataset', () => {
    expect(progressOf(stateEvent('StateEntered', 'ValidateDrop', 'Task', { run: RUN }))).toEqual({
      state: 'ValidateDrop',
      step: null,
      nextAction: null,
      waitSeconds: null,
      failure: null,
    });
    // A Task's input may be anything the definition passes; null included.
    expect(progressOf(stateEvent('StateEntered', 'Report', 'Task', null))?.step).toBeNull();
  });

  it('reads a failed attempt with its error as a person reads it', () => {
    const error = retryable('service_unavailable', 'the service answered 503');
    const failed = stateEvent(
      'StateFailed',
      'PollDataset',
      'Task',
      { run: RUN, dataset: DATASET },
      {
        Error: error.name,
        Cause: new LambdaInvocationError(error.name, error.message).message,
      },
    );
    expect(progressOf(failed)).toMatchObject({
      state: 'PollDataset',
      step: 2,
      failure: 'service_unavailable: the service answered 503',
    });
  });

  it('ignores events other than a Task or Wait state entered or failed', () => {
    const input = { run: RUN, dataset: DATASET };
    const ignored: ExecutionEvent[] = [
      stateEvent('StateExited', 'PollDataset', 'Task', input),
      stateEvent('StateEntered', 'NextAction', 'Choice', input),
      stateEvent('StateEntered', 'Stop', 'Pass', input),
      stateEvent('StateFailed', 'Stop', 'Pass', input, { Error: 'States.Runtime', Cause: 'x' }),
      { type: 'ExecutionStarted', timestamp: 0, input: {} },
      { type: 'ExecutionSucceeded', timestamp: 0, output: {} },
      { type: 'ExecutionFailed', timestamp: 0, Error: 'Hopper.Failed', Cause: 'x' },
    ];
    for (const event of ignored) expect(progressOf(event)).toBeNull();
  });
});

describe('formatProgress', () => {
  it('shows the elapsed time, state, step and next_action, then the wait or the failure', () => {
    expect(formatProgress(12_345, PROGRESS)).toBe(' 12.3s  PollDataset       step 2  next_action wait');
    expect(formatProgress(0, { ...PROGRESS, step: null, nextAction: null })).toContain(
      'step -  next_action -',
    );
    expect(formatProgress(0, { ...PROGRESS, state: 'WaitForDataset', waitSeconds: 15 })).toMatch(
      /next_action wait {2}\(next poll in 15 s\)$/,
    );
    expect(formatProgress(0, { ...PROGRESS, failure: 'service_error: 500' })).toMatch(
      /next_action wait {2}failed: service_error: 500$/,
    );
  });

  it('says when a wait is shortened (--wait-ms): the polled seconds and what it really sleeps', () => {
    const entered = stateEvent('StateEntered', 'WaitForDataset', 'Wait', { run: RUN, dataset: DATASET });
    const shortened = progressOf(entered, 20);
    expect(shortened?.waitOverrideMs).toBe(20);
    expect(formatProgress(0, shortened ?? PROGRESS)).toMatch(/\(next poll in 15 s, shortened to 20 ms\)$/);
    // Only Wait states sleep; a Task's line says nothing of waits.
    const task = progressOf(
      stateEvent('StateEntered', 'PollDataset', 'Task', { run: RUN, dataset: DATASET }),
      20,
    );
    expect(task?.waitOverrideMs).toBeUndefined();
    expect(formatProgress(0, task ?? PROGRESS)).not.toContain('shortened');
  });
});

describe('formatBytes', () => {
  it.each([
    [0, '0 B'],
    [12, '12 B'],
    [1023, '1023 B'],
    [1024, '1.0 KiB'],
    [1536, '1.5 KiB'],
    [300 * 1024, '300.0 KiB'],
    [1024 ** 2, '1.0 MiB'],
    [3.25 * 1024 ** 3, '3.3 GiB'],
    [2 * 1024 ** 4, '2.0 TiB'],
    [2048 * 1024 ** 4, '2048.0 TiB'],
  ])('%d bytes is %s', (bytes, text) => {
    expect(formatBytes(bytes)).toBe(text);
  });
});

describe('lineReporter', () => {
  it('writes one plain line per update and per line, and nothing on finish', () => {
    const stream = collectingStream();
    const reporter = lineReporter(stream, Date.now() - 2_000);
    reporter.line('hopper: starting');
    reporter.update(PROGRESS);
    reporter.update({ ...PROGRESS, state: 'WaitForDataset', waitSeconds: 15 });
    reporter.finish();
    expect(stream.chunks).toHaveLength(3);
    expect(stream.chunks[0]).toBe('hopper: starting\n');
    expect(stream.chunks[1]).toMatch(/^ {2}2\.\ds {2}PollDataset .*next_action wait\n$/);
    expect(stream.chunks[2]).toMatch(/WaitForDataset .*\(next poll in 15 s\)\n$/);
    const written = stream.chunks.join('');
    expect(written).not.toContain('\r');
    expect(written).not.toContain('\x1b');
  });
});

describe('liveReporter', () => {
  const CLEAR = '\r\x1b[2K';

  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval', 'Date'], now: 1_000_000 });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('rewrites one line in place on every update', () => {
    const stream = collectingStream({ isTTY: true });
    const reporter = liveReporter(stream);
    reporter.update(PROGRESS);
    vi.advanceTimersByTime(100);
    reporter.update({ ...PROGRESS, state: 'WaitForDataset', waitSeconds: 15 });
    expect(stream.chunks).toEqual([
      `${CLEAR}${formatProgress(0, PROGRESS)}`,
      `${CLEAR}${formatProgress(100, { ...PROGRESS, state: 'WaitForDataset', waitSeconds: 15 })}`,
    ]);
    reporter.finish();
  });

  it('redraws the line as time passes, so the elapsed time stays current', () => {
    const stream = collectingStream({ isTTY: true });
    const reporter = liveReporter(stream);
    vi.advanceTimersByTime(1_000);
    expect(stream.chunks).toEqual([]); // nothing to draw before the first update
    reporter.update(PROGRESS);
    vi.advanceTimersByTime(1_000);
    expect(stream.chunks.length).toBeGreaterThanOrEqual(4);
    expect(stream.chunks.at(-1)).toBe(`${CLEAR}${formatProgress(2_000, PROGRESS)}`);
    expect(stream.chunks.join('')).not.toContain('\n');
    reporter.finish();
  });

  it('writes a lasting line above the live one and draws the live one again', () => {
    const stream = collectingStream({ isTTY: true });
    const reporter = liveReporter(stream);
    reporter.update(PROGRESS);
    reporter.line('hopper: dropping');
    expect(stream.chunks.slice(1)).toEqual([
      `${CLEAR}hopper: dropping\n`,
      `${CLEAR}${formatProgress(0, PROGRESS)}`,
    ]);
    reporter.finish();
  });

  it('ends the line with a newline on finish and stops redrawing', () => {
    const stream = collectingStream({ isTTY: true });
    const reporter = liveReporter(stream);
    reporter.update(PROGRESS);
    reporter.finish();
    expect(stream.chunks.at(-1)).toBe('\n');
    const written = stream.chunks.length;
    vi.advanceTimersByTime(5_000);
    expect(stream.chunks).toHaveLength(written);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('writes nothing on finish when it never drew a line', () => {
    const stream = collectingStream({ isTTY: true });
    liveReporter(stream).finish();
    vi.advanceTimersByTime(1_000);
    expect(stream.chunks).toEqual([]);
  });
});

describe('reporterFor', () => {
  it('is live on a terminal and plain lines elsewhere', () => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    try {
      const terminal = collectingStream({ isTTY: true });
      const pipe = collectingStream();
      const live = reporterFor(terminal);
      const plain = reporterFor(pipe);
      live.update(PROGRESS);
      plain.update(PROGRESS);
      live.finish();
      plain.finish();
      expect(terminal.chunks[0]?.startsWith('\r\x1b[2K')).toBe(true);
      expect(pipe.chunks).toHaveLength(1);
      expect(pipe.chunks[0]).toMatch(/^[^\r]*\n$/);
    } finally {
      vi.useRealTimers();
    }
  });
});

describe("hopper local's line when a run ends", () => {
  it("says superseded, with the report's words, for a run a newer train.json took over; succeeded only for a run that trained", () => {
    const message =
      'a newer train.json of drop "reviews" (run reviews-2, uploaded 2026-12-03T10:00:00.000Z) took over';
    const superseded = { report: { outcome: 'superseded', error: { code: 'superseded', message } } };
    expect(describeOutcome({ status: 'SUCCEEDED', output: superseded })).toBe(`superseded: ${message}`);
    const trained = { report: { outcome: 'succeeded', error: null } };
    expect(describeOutcome({ status: 'SUCCEEDED', output: trained })).toBe(
      'succeeded: the model is under models/',
    );
  });
});
