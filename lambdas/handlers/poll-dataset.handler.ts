import { stepHandler, STEP_FUNCTIONS, TRAINING_SERVICE } from '../runtime/index.js';
import { pollDatasetStep } from '../steps/poll-dataset.js';

/**
 * Task PollDataset: reads the dataset after a Wait and schedules the next poll. A ready dataset
 * waiting for the drop's training claim waits in this loop, so it asks Step Functions whether
 * the claim's holder still runs (infra/tasks.ts: its access names `executions`).
 */
export const handler = stepHandler(pollDatasetStep, {
  service: TRAINING_SERVICE,
  executions: STEP_FUNCTIONS,
});
