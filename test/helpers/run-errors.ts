/** The RunError a step or a parser ends with, for tests that look at its code and message. */
import { RunError } from '../../lambdas/run/errors/index.js';

/** The RunError `action` throws; fails the test if it throws nothing, rethrows any other error. */
export function runErrorThrownBy(action: () => unknown): RunError {
  try {
    action();
  } catch (error) {
    if (error instanceof RunError) return error;
    throw error;
  }
  throw new Error('no RunError was thrown');
}

/** The RunError `promise` rejects with; fails the test if it resolves, rethrows any other error. */
export async function runErrorOf(promise: Promise<unknown>): Promise<RunError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof RunError) return error;
    throw error;
  }
  throw new Error('no RunError was thrown');
}
