/**
 * The slots a step reads from earlier Tasks. The state machine guarantees them (CreateDataset
 * runs after ValidateDrop, PollModel after StartTraining, ...), so a missing one means the
 * definition or the local runner is broken: a bug in Hopper, not in the user's drop.
 */
import { RunError } from './errors.js';
import type { RunState } from './state.js';

type InputSlot = 'config' | 'dataset' | 'model';

export function requireSlot<K extends InputSlot>(
  state: RunState,
  slot: K,
  stage: string,
): NonNullable<RunState[K]> {
  const value = state[slot];
  if (value === undefined) {
    throw new RunError(
      'internal_error',
      `${stage} ran without $.${slot} in its input: Hopper's state machine definition is broken; report this as a bug`,
    );
  }
  return value;
}
