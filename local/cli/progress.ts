/**
 * Progress of a local run, read from its execution's events: the state it is in, the service's
 * `step` and `next_action` for the record it is at (the model once there is one, as in the
 * status file), and the time since it started. On a terminal it is one line rewritten in
 * place; anywhere else (a pipe, CI's log) a plain line per Task or Wait state entered.
 */
import type { Writable } from 'node:stream';
import { describeFailure } from '../../lambdas/core/errors/index.js';
import type { RunState } from '../../lambdas/core/state/index.js';
import type { ExecutionEvent } from '../emulator/state-machine.js';

export interface RunProgress {
  /** The state machine's state (`PollDataset`, `WaitForModel`, ...). */
  readonly state: string;
  readonly step: number | null;
  readonly nextAction: string | null;
  /** Seconds a Wait state sleeps before the next poll. */
  readonly waitSeconds: number | null;
  /** Milliseconds it really sleeps when local mode shortens waits (`--wait-ms`). */
  readonly waitOverrideMs?: number;
  /** A failed attempt of the state, with its error (it is retried or caught next). */
  readonly failure: string | null;
}

/**
 * What an event says about the run's progress, or null when it says nothing worth showing.
 * @param waitMs what every Wait state really sleeps, when local mode shortens waits
 */
export function progressOf(event: ExecutionEvent, waitMs?: number): RunProgress | null {
  if (event.type !== 'StateEntered' && event.type !== 'StateFailed') return null;
  const { name, type, input } = event.state;
  if (type !== 'Task' && type !== 'Wait') return null;
  const state = input as RunState | null;
  const record = state?.model ?? state?.dataset;
  return {
    state: name,
    step: record?.step ?? null,
    nextAction: record?.nextAction ?? null,
    waitSeconds: type === 'Wait' ? (record?.waitSeconds ?? null) : null,
    ...(type === 'Wait' && waitMs !== undefined ? { waitOverrideMs: waitMs } : {}),
    failure: event.type === 'StateFailed' ? describeFailure(event.Error, event.Cause) : null,
  };
}

/** `12.3s  PollDataset  step 2  next_action wait` */
export function formatProgress(elapsedMs: number, progress: RunProgress): string {
  const parts = [
    `${(elapsedMs / 1000).toFixed(1).padStart(5)}s`,
    progress.state.padEnd(16),
    `step ${progress.step === null ? '-' : String(progress.step)}`,
    `next_action ${progress.nextAction ?? '-'}`,
  ];
  if (progress.waitSeconds !== null) {
    const shortened =
      progress.waitOverrideMs === undefined ? '' : `, shortened to ${String(progress.waitOverrideMs)} ms`;
    parts.push(`(next poll in ${String(progress.waitSeconds)} s${shortened})`);
  }
  if (progress.failure !== null) parts.push(`failed: ${progress.failure}`);
  return parts.join('  ');
}

/** `1.0 MiB`, `292.9 KiB`, `12 B` */
export function formatBytes(bytes: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  // Each unit is 2^10 of the one before.
  const unit = bytes < 1024 ? 0 : Math.min(units.length - 1, Math.floor(Math.log2(bytes) / 10));
  return `${unit === 0 ? String(bytes) : (bytes / 1024 ** unit).toFixed(1)} ${units[unit] ?? 'B'}`;
}

export interface ProgressReporter {
  /** The run moved on. */
  update(progress: RunProgress): void;
  /** A line that stays (the run's start and end). */
  line(text: string): void;
  /** No more updates: stop redrawing. */
  finish(): void;
}

/** How often the live line redraws to keep the elapsed time current. */
const REDRAW_MS = 250;

/** One line rewritten in place, for a terminal. */
export function liveReporter(stream: Writable, startedAt = Date.now()): ProgressReporter {
  let current: RunProgress | null = null;
  const draw = (): void => {
    if (current !== null) stream.write(`\r\x1b[2K${formatProgress(Date.now() - startedAt, current)}`);
  };
  const timer = setInterval(draw, REDRAW_MS).unref();
  return {
    update(progress) {
      current = progress;
      draw();
    },
    line(text) {
      stream.write(`\r\x1b[2K${text}\n`);
      draw();
    },
    finish() {
      clearInterval(timer);
      if (current !== null) stream.write('\n');
      current = null;
    },
  };
}

/** A plain line per update, for logs and pipes. */
export function lineReporter(stream: Writable, startedAt = Date.now()): ProgressReporter {
  return {
    update(progress) {
      stream.write(`${formatProgress(Date.now() - startedAt, progress)}\n`);
    },
    line(text) {
      stream.write(`${text}\n`);
    },
    finish() {
      // Nothing is drawn in place.
    },
  };
}

/** The reporter that suits `stream`: live on a terminal, plain lines otherwise. */
export function reporterFor(
  stream: Writable & { isTTY?: boolean },
  startedAt = Date.now(),
): ProgressReporter {
  return stream.isTTY === true ? liveReporter(stream, startedAt) : lineReporter(stream, startedAt);
}
