/**
 * The one rule for a paid model: whether a run holds a training that kept its credit and is not
 * copied yet. Pure over the run state, so the status (which records it) and ownership/ (which acts
 * on it) both ask it without importing each other.
 */
import { holdsCredit } from '../../service-client/contract.js';
import type { RunErrorCode } from '../errors/codes.js';
import { modelCopied, type ModelSlot, type RunState } from './state.js';

/** Failures after which the run's model holds nothing to adopt: it is gone, or its files are. */
const MODEL_LOST: readonly RunErrorCode[] = ['model_gone', 'model_files_gone'];

/**
 * The run's paid model: its latest training while that holds a credit (contract.ts holdsCredit)
 * and is not copied yet; else null. The one rule for "this run has a paid model": supersede, the
 * training claim, the status file's `paid_model`, the report's message and resuming all ask it.
 * @param failure the code the run failed with, when it did (a model lost with it is not held)
 */
export function paidModelOf(state: RunState, failure?: RunErrorCode): ModelSlot | null {
  const { model } = state;
  if (model === undefined || modelCopied(state) || !holdsCredit(model.status, model.nextAction)) return null;
  return failure !== undefined && MODEL_LOST.includes(failure) ? null : model;
}

/** True while the run holds a paid model (paidModelOf). */
export function holdsPaidModel(state: RunState, failure?: RunErrorCode): boolean {
  return paidModelOf(state, failure) !== null;
}
