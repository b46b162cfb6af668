/**
 * The slots a step reads from earlier Tasks, as its declaration says (STEPS in vocabulary.ts).
 * The state machine guarantees them (CreateDataset runs after ValidateDrop, PollModel after
 * StartTraining, ...), so a missing one means the definition or the local runner is broken: a
 * bug in Hopper, not in the user's drop.
 */
import { RunError } from '../errors/errors.js';
import { missingSlotMessage } from '../errors/messages.js';
import type { RunState, SlotName, StateFor } from './state.js';
import { STEPS, type StepName } from './vocabulary.js';

/** `state`, typed with step `name`'s needed slots present. @throws RunError internal_error when one is not */
export function withNeededSlots<N extends StepName>(name: N, state: RunState): StateFor<N> {
  const needs: readonly SlotName[] = STEPS[name].needs;
  for (const slot of needs) {
    if (state[slot] === undefined) throw new RunError('internal_error', missingSlotMessage(name, slot));
  }
  return state as StateFor<N>;
}
