/** The error a step, a parser or a command line ends with, for tests that look at its code and message. */
import { RunError } from '../../lambdas/core/errors/index.js';
import { rejectionOf } from '../client/helpers.js';

/** The error of class `kind` that `action` throws; fails the test if it throws nothing, rethrows any other error. */
export function thrownBy<E extends Error>(
  kind: abstract new (...args: never[]) => E,
  action: () => unknown,
): E {
  try {
    action();
  } catch (error) {
    if (error instanceof kind) return error;
    throw error;
  }
  throw new Error(`no ${kind.name} was thrown`);
}

/** The RunError `action` throws; fails the test if it throws nothing, rethrows any other error. */
export function runErrorThrownBy(action: () => unknown): RunError {
  return thrownBy(RunError, action);
}

/** The RunError `promise` rejects with; fails the test if it resolves, rethrows any other error. */
export async function runErrorOf(promise: Promise<unknown>): Promise<RunError> {
  const error = await rejectionOf(promise);
  if (error instanceof RunError) return error;
  throw error;
}

/**
 * A refusal `hopper check <folder>` printed, in the words the run in the bucket uses for the same
 * drop: check names the folder on disk and itself to run again (DropPlace), the run inbox/<drop>/
 * and uploading train.json again. Everything else must already agree.
 */
export function inBucketWords(message: string, folder: string, drop: string): string {
  return message
    .replaceAll(`${folder}/`, `inbox/${drop}/`)
    .replaceAll('run hopper check again', 'upload train.json again');
}
