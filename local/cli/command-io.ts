/**
 * What every hopper command writes to and how it is stopped, kept apart from the commands so
 * that loading one command (or --help) does not load local mode and the CDK app with it.
 */
import type { Writable } from 'node:stream';

export interface CommandIo {
  readonly stdout: Writable & { isTTY?: boolean };
  readonly stderr: Writable;
  /** Stops the command as Ctrl-C does. Default: SIGINT and SIGTERM. */
  readonly signal?: AbortSignal;
}

/** The exit codes of the hopper commands (docs/local-mode.md). */
export const EXIT = { succeeded: 0, failed: 1, usage: 2, notSaved: 3, busy: 4, stopped: 130 } as const;

/** Aborts on the first SIGINT or SIGTERM. */
export function interruptSignal(): AbortSignal {
  const controller = new AbortController();
  const onSignal = (signal: NodeJS.Signals): void => {
    controller.abort(new Error(`stopped by ${signal}`));
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  return controller.signal;
}

export function processIo(): CommandIo {
  return { stdout: process.stdout, stderr: process.stderr };
}
