/**
 * Where a run stands by its status: the step the definition runs for a record's next_action, and
 * the step a run that is still running is in. Asked by the resume (lambdas/ownership/resume.ts) and
 * by local mode's restart (local/emulator/interrupted-runs.ts).
 */
import type { NextAction } from '../../service-client/index.js';
import type { RunStatus } from './status.js';
import type { StepName } from '../../core/state/vocabulary.js';

/**
 * The step the definition runs for a dataset's (RouteDataset) and a model's (RouteModel)
 * next_action (test/local/definition.test.ts checks them against it).
 */
export const DATASET_STEPS: Partial<Record<NextAction, StepName>> = {
  upload_files: 'upload_files',
  wait: 'poll_dataset',
  structure: 'structure',
  pick_decisions: 'pick_decisions',
  label_examples: 'label_examples',
  start_training: 'start_training',
  retry: 'start_training',
};
const MODEL_STEPS: Partial<Record<NextAction, StepName>> = {
  wait: 'poll_model',
  retry: 'start_training',
  download: 'copy_model',
};

/**
 * The step a running run is in (or waits before): the one its status's next_action leads to
 * after `hopper_step`, which names the step that last wrote the status, the one before (or,
 * in the first status the trigger writes, the step about to run).
 */
export function stepUnderWay(
  run: Pick<RunStatus, 'hopper_step' | 'next_action' | 'model_id' | 'model' | 'config_fingerprint'>,
): StepName {
  // The trigger's first status (nothing validated yet: no settings) is validate_drop's own.
  if (run.hopper_step === 'validate_drop')
    return run.config_fingerprint === null ? 'validate_drop' : 'create_dataset';
  if (run.hopper_step === 'copy_model' && run.model !== null) return 'report';
  const steps = run.model_id === null ? DATASET_STEPS : MODEL_STEPS;
  // An entry written before superseded_runs kept next_action has none.
  return (run.next_action === null ? undefined : steps[run.next_action]) ?? run.hopper_step;
}
